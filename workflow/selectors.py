"""Read-side helpers for the workflow domain."""
from __future__ import annotations

from collections import defaultdict

from ops.models import Store

from .models import RestockLine, RestockRequest


def open_restock_quantities(store: Store, skus: list[str]) -> dict[str, tuple[int, list[int]]]:
    """Per product, what confirmed restock requests of `store` still have on the way (approved or
    ordered, not yet received), in the product's sales unit, with the requests' numbers: stock
    that is coming is not asked for again."""
    out: dict[str, list] = defaultdict(lambda: [0, []])
    lines = (RestockLine.objects.filter(request__store=store, product__sku__in=skus,
                                        request__status__in=[RestockRequest.Status.APPROVED, RestockRequest.Status.ORDERED])
             .select_related("product", "request").order_by("request_id"))
    for line in lines:
        qty = line.product.in_sales_units(line.quantity, line.unit)
        entry = out[line.product.sku]
        entry[0] += qty
        if line.request.proposal_id not in entry[1]:
            entry[1].append(line.request.proposal_id)
    return {sku: (qty, ids) for sku, (qty, ids) in out.items()}
