from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ops.models import Store
from ops.selectors import UnknownStore, resolve_store
from ops.services import api_token_issue


class Command(BaseCommand):
    help = ("Issue an API token for a user; with --store it is a POS device token that writes only that store, "
            "which must be one the user is assigned to.")

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True)
        parser.add_argument("--store", help="store code, name or alias (POS device token)")
        parser.add_argument("--name", default="POS")

    def handle(self, *args, **opts):
        User = get_user_model()
        try:
            user = User.objects.get(username=opts["user"])
        except User.DoesNotExist:
            raise CommandError(f"no user named {opts['user']!r}") from None
        store: Store | None = None
        if opts["store"]:
            try:
                store = resolve_store(opts["store"])
            except UnknownStore as exc:
                raise CommandError(exc.messages[0]) from None
        try:
            token, key = api_token_issue(user=user, name=opts["name"], store=store)
        except ValidationError as exc:
            raise CommandError(exc.message_dict["store"][0]) from None
        self.stderr.write(f"token {token.prefix}… for {user.username}{' @ ' + store.name if store else ''} (shown once):")
        self.stdout.write(key)
