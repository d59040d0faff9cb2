"""Roles and the demo accounts a fresh clone starts with."""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db import transaction

from core.roles import sync_roles

from ..models import ApiToken, Store

DEMO_PASSWORD = "storemind-demo"


DEMO_POS_TOKEN = "sm_demo_pos_GZ-TH_do_not_use_in_production"


@dataclass
class DemoUsers:
    usernames: list[str]
    password: str
    pos_store: str
    pos_token: str


def roles_ensure() -> None:
    """The auth groups and exactly their permissions (core.roles.ROLE_PERMISSIONS)."""
    sync_roles()


@transaction.atomic
def demo_users_ensure() -> DemoUsers:
    """Demo accounts for SM_DEMO=1 only: a staff and a manager per store, plus demo_admin."""
    if not settings.SM_DEMO:
        raise PermissionDenied("Demo users are only created when SM_DEMO=1.")
    roles_ensure()
    accounts = _DemoAccounts({g.name: g for g in Group.objects.all()})
    stores = list(Store.objects.all())
    home = next((s for s in stores if s.code == "GZ-TH"), stores[0] if stores else None)
    accounts.ensure("demo_staff", "staff", home)
    accounts.ensure("demo_manager", "manager", home)
    for store in stores:
        if store != home:
            suffix = store.code.lower().replace("-", "_")
            accounts.ensure(f"staff_{suffix}", "staff", store)
            accounts.ensure(f"manager_{suffix}", "manager", store)
    accounts.ensure("demo_hq", "hq", None)
    accounts.ensure("demo_admin", None, None, superuser=True)
    if home:
        _demo_pos_token(accounts.ensure(f"pos_{home.code.lower().replace('-', '_')}", "pos", home), home)
    return DemoUsers(accounts.names, DEMO_PASSWORD, home.name if home else "", DEMO_POS_TOKEN)


class _DemoAccounts:
    """Demo accounts made once, each with the demo password, its role's group and its store."""

    def __init__(self, groups: dict):
        self.groups, self.names = groups, []

    def ensure(self, username: str, role: str | None, store: Store | None, superuser: bool = False):
        user, created = get_user_model().objects.get_or_create(
            username=username, defaults={"is_staff": True, "is_superuser": superuser})
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
        if role:
            user.groups.add(self.groups[role])
        if store:
            store.members.add(user)
        self.names.append(username)
        return user


def _demo_pos_token(pos_user, home: Store) -> None:
    """The demo POS token the README's quick start uses, issued once."""
    if not ApiToken.lookup(DEMO_POS_TOKEN):
        token = ApiToken(user=pos_user, store=home, name=f"{home.name} 演示 POS")
        token.set_key(DEMO_POS_TOKEN)
        token.save()
