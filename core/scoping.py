"""Scope, declared once: which stores a user may read or write, as a queryset method.

NetBox's `.restrict(user, action)`: every store-bound model's manager narrows a queryset to
the rows the user may `view` / `change` / ..., so a view, the admin, a tool, the MCP server
and a task cannot forget it. The rule:

- without the model permission for the action: nothing;
- a superuser: every store;
- a read (`view…`) by a holder of `ops.view_all_stores` (head office): every store;
- everyone else: the stores they are assigned to (`Store.members`).

This module never imports an app above core; the store relation is reached by name.
"""
from __future__ import annotations

from django.db import models

ALL = None  # "no store restriction"


def action_perm(model, action: str) -> str:
    """'view' → 'ops.view_order'; 'confirm_restock' → 'workflow.confirm_restock'; 'a.b' as is."""
    if "." in action:
        return action
    if action in ("view", "add", "change", "delete"):
        return f"{model._meta.app_label}.{action}_{model._meta.model_name}"
    return f"{model._meta.app_label}.{action}"


def is_read(perm: str) -> bool:
    return perm.split(".", 1)[-1].startswith("view_")


def assigned_store_ids(user) -> list[int]:
    """The stores a user is assigned to, cached on the user object for the request (the
    agent's guard threads read the cache instead of a connection that may not see the user)."""
    cached = getattr(user, "_sm_store_ids", None)
    if cached is None:
        cached = list(user.stores.values_list("id", flat=True)) if getattr(user, "pk", None) else []
        user._sm_store_ids = cached
    return cached


# The writes head office (every store readable) makes in every store: resolving the questions its
# chain-wide SOPs left unanswered, wherever they were asked.
CHAIN_WIDE_WRITES = frozenset({"agent.change_unansweredquestion"})


def store_ids_for(user, perm: str) -> list[int] | None:
    """Store ids the user may exercise `perm` on; ALL (None) means every store.
    `user=None` is an operator at the command line (no request, no identity to check)."""
    if user is None:
        return ALL
    if not getattr(user, "is_authenticated", False) or not user.has_perm(perm):
        return []
    if user.is_superuser or ((is_read(perm) or perm in CHAIN_WIDE_WRITES) and user.has_perm("ops.view_all_stores")):
        return ALL
    return assigned_store_ids(user)


def warm(user) -> None:
    """Load the user's permissions and stores now, in this thread's connection."""
    if user is not None and getattr(user, "is_authenticated", False):
        user.get_all_permissions()
        assigned_store_ids(user)


class StoreScopedQuerySet(models.QuerySet):
    """For models with a store: the model names the path with `store_path` (default "store")."""

    def restrict(self, user, action: str = "view"):
        ids = store_ids_for(user, action_perm(self.model, action))
        if ids is ALL:
            return self
        path = getattr(self.model, "store_path", "store")
        return self.filter(**{f"{path}__in": ids}) if ids else self.none()
