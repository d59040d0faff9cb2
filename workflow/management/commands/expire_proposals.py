from django.core.management.base import BaseCommand

from workflow.services import proposals_expire


class Command(BaseCommand):
    help = "Expire pending proposals older than SM_PROPOSAL_TTL_HOURS (also a Celery beat task)."

    def handle(self, *args, **opts):
        self.stdout.write(f"expire_proposals: {proposals_expire()} proposals expired")
