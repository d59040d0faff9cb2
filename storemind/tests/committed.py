"""Tests that need real, committed transactions (several connections at once, or a server
process): everything they write carries a prefix and is undone before and after each test, so
the shared test database is left as it was (other tests count its rows)."""
from contextlib import contextmanager


@contextmanager
def committed_writes(django_db_blocker, *, prefix: str, usernames: str):
    """Let the test commit; undo the inventory adjustments and orders whose external id starts
    with `prefix` (their stock given back) and the users whose name matches `usernames`."""
    with django_db_blocker.unblock():
        undo_committed_writes(prefix, usernames)
        try:
            yield
        finally:
            undo_committed_writes(prefix, usernames)


def undo_committed_writes(prefix: str, usernames: str) -> None:
    from django.contrib.auth import get_user_model
    from django.db.models import F

    from ops.models import Inventory, InventoryAdjustment, Order

    for adj in InventoryAdjustment.objects.filter(external_id__startswith=prefix):
        Inventory.objects.filter(store_id=adj.store_id, product_id=adj.product_id).update(on_hand=F("on_hand") - adj.delta)
        adj.delete()
    for order in Order.objects.filter(external_id__startswith=prefix).prefetch_related("lines"):
        for line in order.lines.all():
            Inventory.objects.filter(store_id=order.store_id, product_id=line.product_id).update(on_hand=F("on_hand") + line.qty)
        order.delete()
    get_user_model().objects.filter(username__regex=usernames).delete()
