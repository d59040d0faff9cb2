"""Everything `make run` does before serving: migrate, roles, demo users, seed, ingest."""
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.urls import NoReverseMatch, reverse

from core.roles import sync_roles
from ops import seed
from ops.services import demo_users_ensure


class Command(BaseCommand):
    help = "Prepare a working StoreMind: migrate, create roles, ingest the corpus; with SM_DEMO=1 also demo users and demo ops data."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="http://127.0.0.1:8000")

    def handle(self, *args, **opts):
        call_command("migrate", interactive=False, verbosity=0)
        sync_roles()
        if seed.has_ops_data():
            if settings.SM_DEMO:  # a demo seeded on an earlier day: its orders continue up to now
                added = seed.ops_top_up()
                self.stdout.write(f"ops data present: demo orders brought up to now (+{added.orders} orders, +{added.lines} lines)."
                                  if added.orders else "ops data present: not seeding again.")
            else:
                self.stdout.write("ops data present: not seeding again.")
        elif settings.SM_DEMO:
            call_command("seed_ops", verbosity=opts["verbosity"], stdout=self.stdout, stderr=self.stderr)
        else:
            # Production starts empty: POS terminals push real orders; demo orders would pollute reports.
            self.stdout.write("SM_DEMO is off: not seeding demo ops data (run `manage.py seed_ops` to add it).")
        if "knowledge" in settings.INSTALLED_APPS and _has_command("ingest"):
            call_command("ingest", stdout=self.stdout, stderr=self.stderr)
        lines = []
        if settings.SM_DEMO:
            demo = demo_users_ensure()
            lines.append(f"demo users (password {demo.password}):")
            lines += _demo_user_table(demo.usernames)
            lines.append(f"demo POS token for {demo.pos_store}: {demo.pos_token}")
        host = opts["host"].rstrip("/")
        for label, name in (("chat", "chat:index"), ("admin", "admin:index"), ("API docs", "api-docs"), ("OpenAPI", "schema")):
            try:
                lines.append(f"{label:9s} {host}{reverse(name)}")
            except NoReverseMatch:
                continue
        self.stdout.write("\n".join(lines))


def _demo_user_table(usernames: list[str]) -> list[str]:
    """One line per demo user: name, role, store code and name (the codes the admin and API show)."""
    from django.contrib.auth import get_user_model

    from core.roles import ROLE_LABELS

    users = get_user_model().objects.filter(username__in=usernames).prefetch_related("stores", "groups")
    out = []
    for user in sorted(users, key=lambda u: usernames.index(u.username)):
        groups = [g.name for g in user.groups.all()]
        role = "超级管理员" if user.is_superuser else "、".join(ROLE_LABELS.get(g, g) for g in groups) or "无角色"
        stores = "、".join(f"{s.code} {s.name}" for s in user.stores.all()) or "全部门店"
        out.append(f"  {user.username:16s} {role:6s} {stores}")
    return out


def _has_command(name: str) -> bool:
    from django.core.management import get_commands

    return name in get_commands()
