"""Writes of the ops domain: POS order ingestion (orders.py), inventory adjustments (inventory.py), API tokens
(tokens.py), roles and demo users (users.py). Every write validates first and then commits in one transaction:
a bad batch writes nothing. Every name is importable from `ops.services`."""
from .inventory import (
    ADJUSTMENT_FIELDS,
    AdjustmentResult,
    inventory_adjust,
)
from .orders import (
    CENT,
    LINE_FIELDS,
    MAX_LINES_PER_ORDER,
    MAX_PRICE_FACTOR,
    ORDER_FIELDS,
    STORE_EMPTY,
    IngestResult,
    orders_ingest,
)
from .stores import (
    writable_stores,
)
from .tokens import (
    api_token_issue,
    api_token_revoke,
    token_store_problem,
)
from .users import (
    DEMO_PASSWORD,
    DEMO_POS_TOKEN,
    DemoUsers,
    demo_users_ensure,
    roles_ensure,
)

__all__ = [
    "CENT",
    "IngestResult",
    "LINE_FIELDS",
    "MAX_LINES_PER_ORDER",
    "MAX_PRICE_FACTOR",
    "ORDER_FIELDS",
    "STORE_EMPTY",
    "orders_ingest",
    "writable_stores",
    "ADJUSTMENT_FIELDS",
    "AdjustmentResult",
    "inventory_adjust",
    "api_token_issue",
    "api_token_revoke",
    "token_store_problem",
    "DEMO_PASSWORD",
    "DEMO_POS_TOKEN",
    "DemoUsers",
    "demo_users_ensure",
    "roles_ensure",
]
