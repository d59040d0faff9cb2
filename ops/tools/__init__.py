"""Whitelisted query tools: the only way the agent, the API and MCP read ops facts.

One `Tool` object per tool, in a module of its own (`ops/tools/<name>.py`): its JSON schema,
query, columns, chart, row sentence and permission. The planner, the composer, REST and MCP ask
`TOOLS[name]`; adding a tool is one module here and a vocabulary entry in the agent.

Each call's parameters are resolved by `ops.tools.params` (store against the caller's scope,
period through the period parser, bounded integers); queries are parameterised ORM only, never SQL
built from user text. Every call returns a ToolResult with the exact parameters used, the rows and
a one-line summary.

Every call is made on behalf of a caller (`run_tool(..., user=...)`): the tool's permission is
checked (403 and an audit row otherwise), a store outside the caller's scope is answered
exactly like an unknown store, "all stores" means the caller's stores, and each member
balance lookup is audited.
"""
from __future__ import annotations

from datetime import date
from typing import Any

from django.core.exceptions import ValidationError

from core.roles import require

from ..selectors import store_list_read_once
from ..trading_day import DAY_STARTS_AT, TZ, local_today  # noqa: F401 (imported from here by callers)
from . import (
    channel_sales,
    compare_stores,
    daily_trend,
    hourly_peak,
    low_stock,
    member_balance,
    period_compare,
    product_daily,
    product_sales,
    product_stock,
    store_sales,
    top_products,
)
from .base import COLUMNS, Chart, Column, Tool, ToolResult, column, format_cell, paid_orders, paid_sales  # noqa: F401
from .compare_stores import MAX_COMPARED  # noqa: F401
from .daily_trend import MAX_TREND_DAYS  # noqa: F401
from .params import resolve
from .stock import VELOCITY_DAYS, restock_suggestion  # noqa: F401
from .top_products import MAX_TOP_N  # noqa: F401

# The whitelist, in the order people read it (the MCP and API listings keep it).
TOOLS: dict[str, Tool] = {
    module.TOOL.name: module.TOOL
    for module in (store_sales, period_compare, channel_sales, top_products, product_sales, compare_stores, hourly_peak,
                   daily_trend, product_daily, low_stock, product_stock, member_balance)
}


def run_tool(name: str, params: dict[str, Any] | None = None, *, user, today: date | None = None) -> ToolResult:
    """Validate parameters and run one whitelisted tool for `user`. Raises ValidationError, or
    PermissionDenied when the user may not use the tool. `user=None` is an operator at the
    command line (eval, bench): every store."""
    tool = TOOLS.get(name)
    if tool is None:
        raise ValidationError({"tool": [f"没有工具 {name}。可用工具：{'、'.join(TOOLS)}。"]})
    if user is not None:
        require(user, tool.perm, attempt=f"tool {name}", message=f"你的账号没有查询这类数据的权限（{tool.title}）。")
    with store_list_read_once():  # REST and MCP too: the stores' names and clocks read once per call
        kwargs, used = resolve(tool, params or {}, today or local_today(), user)
        result = tool.func(**kwargs)
    result.params = {**used, **result.params}
    return result
