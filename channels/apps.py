from django.apps import AppConfig


class ChannelsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "channels"
    verbose_name = "消息渠道"

    def ready(self):
        from django.db.models.signals import post_save

        from workflow.models import Proposal

        post_save.connect(_proposal_created, sender=Proposal, dispatch_uid="channels.proposal_cards")


def _proposal_created(sender, instance, created, raw=False, **kwargs):
    """A new proposal: the people who may decide it get a card in WeCom (when it is configured),
    after the proposal's transaction commits."""
    from django.db import transaction

    from .platforms import wecom

    if created and not raw and wecom.configured():  # not for fixtures being loaded
        from .tasks import proposal_cards_task

        transaction.on_commit(lambda: proposal_cards_task.delay(instance.pk))
