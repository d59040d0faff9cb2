"""The stores a caller may write to: their role's stores, narrowed by a POS token to its own."""
from __future__ import annotations

from ..models import ApiToken, Store


def writable_stores(*, user, perm: str, token: ApiToken | None) -> list[Store]:
    """The stores the user may exercise `perm` on; a POS token narrows that to its own store."""
    stores = list(Store.objects.for_user(user, perm))
    if token is not None and token.store_id:
        return [s for s in stores if s.id == token.store_id]
    return stores
