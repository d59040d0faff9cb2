"""Roles and what they may do, declared once.

`ROLE_PERMISSIONS` is what the data migration grants to each auth group; services check
`user.has_perm(...)` against it (never a group name). `MATRIX` is the promise in plain
words: for each kind of caller and action, allowed, denied (403) or hidden (looks exactly
like something that does not exist: 404, or the unknown-store message). The permission
matrix test drives every channel from `MATRIX`, and the README table is generated from it.
"""
from __future__ import annotations

from django.core.exceptions import PermissionDenied

from .audit import audit_denial

_STAFF = (
    "ops.view_store", "ops.view_product", "ops.view_order", "ops.view_orderline", "ops.view_inventory",
    "ops.view_sales", "ops.view_storedaysales", "ops.view_member_balance",
    "workflow.view_proposal", "workflow.add_proposal", "workflow.confirm_ticket",
    "workflow.view_restockrequest", "workflow.view_ticket",
)
ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    # Store staff: reads their stores, proposes, confirms complaint tickets.
    "staff": _STAFF,
    # Store manager: also confirms restocks, edits inventory, reads the audit log of their stores.
    "manager": _STAFF + (
        "workflow.confirm_restock", "core.view_auditlog",
        "ops.change_inventory", "ops.add_inventoryadjustment", "ops.view_inventoryadjustment", "ops.view_apitoken",
        "agent.view_unansweredquestion", "agent.change_unansweredquestion", "agent.view_trace",
        "knowledge.view_document", "knowledge.view_chunk", "knowledge.view_manager_document",
        "knowledge.view_sectionalias", "knowledge.add_sectionalias", "knowledge.manage_document",
    ),
    # Region / head office: reads every store, lists members, confirms nothing.
    "hq": (
        "ops.view_all_stores", "ops.view_store", "ops.view_product", "ops.view_order", "ops.view_orderline",
        "ops.view_storedaysales",
        "ops.view_inventory", "ops.view_inventoryadjustment", "ops.view_sales", "ops.view_member",
        "ops.view_member_balance", "ops.view_storedvalueaccount", "ops.view_storedvaluetxn",
        "workflow.view_proposal", "workflow.view_restockrequest", "workflow.view_ticket", "core.view_auditlog",
        "knowledge.view_document", "knowledge.view_chunk", "knowledge.view_manager_document",
        "knowledge.view_sectionalias", "knowledge.manage_document",
        # what the SOPs it publishes miss, in every store, and teaching them (it got a 403 on 未解答问题)
        "agent.view_unansweredquestion", "agent.change_unansweredquestion", "knowledge.add_sectionalias",
    ),
    # A POS device: writes orders and inventory adjustments for its one store, reads the product
    # catalog (SKUs, units, list prices: what an order is made of) and nothing analytic.
    "pos": ("ops.add_order", "ops.add_inventoryadjustment", "ops.view_product"),
}
ROLE_LABELS = {"staff": "店员", "manager": "店长", "hq": "总部", "pos": "POS 设备"}

# The permission the assistant (chat, MCP) needs at all: a role-less account or a device gets nothing.
USE_ASSISTANT = "ops.view_store"

ALLOW, DENY, HIDDEN = "allow", "deny", "hidden"
CALLERS = {
    "staff_a": "A 店店员", "manager_a": "A 店店长", "manager_b": "B 店店长", "hq": "总部",
    "pos_a": "A 店 POS", "no_role": "无角色账号", "anonymous": "未登录",
}
ACTIONS = {
    "read_sales_a": "查 A 店营业额", "read_sales_b": "查 B 店营业额", "read_member_balance": "按会员号/手机号查余额",
    "list_members": "会员列表", "propose": "为 A 店提补货/工单", "confirm_restock": "确认 A 店补货",
    "confirm_ticket": "确认 A 店工单", "read_audit": "看审计日志", "write_order_a": "写 A 店订单",
    "write_order_b": "写 B 店订单", "adjust_inventory": "调整 A 店库存", "edit_inventory_admin": "后台改 A 店库存",
    "read_doc_a": "读只适用于 A 店的制度", "upload_doc_a": "为 A 店上传制度文档",
}
_A, _D, _H = ALLOW, DENY, HIDDEN
# columns in ACTIONS order
MATRIX: dict[str, dict[str, str]] = {
    caller: dict(zip(ACTIONS, row, strict=True))
    for caller, row in {
        "staff_a":   (_A, _H, _A, _D, _A, _D, _A, _D, _D, _D, _D, _D, _A, _D),
        "manager_a": (_A, _H, _A, _D, _A, _A, _A, _A, _D, _D, _A, _A, _A, _A),
        "manager_b": (_H, _A, _A, _D, _H, _H, _H, _A, _D, _D, _H, _H, _H, _D),
        "hq":        (_A, _A, _A, _A, _D, _D, _D, _A, _D, _D, _D, _D, _A, _A),
        "pos_a":     (_D, _D, _D, _D, _D, _D, _D, _D, _A, _H, _A, _D, _D, _D),
        "no_role":   (_D, _D, _D, _D, _D, _D, _D, _D, _D, _D, _D, _D, _D, _D),
        "anonymous": (_D, _D, _D, _D, _D, _D, _D, _D, _D, _D, _D, _D, _D, _D),
    }.items()
}
_SYMBOL = {ALLOW: "✓", DENY: "✗ 403", HIDDEN: "✗ 视同不存在"}


def matrix_markdown() -> str:
    """The README's "who can see and do what" table (a test keeps the README equal to this)."""
    lines = ["| | " + " | ".join(CALLERS.values()) + " |", "| --- |" + " --- |" * len(CALLERS)]
    for action, label in ACTIONS.items():
        lines.append(f"| {label} | " + " | ".join(
            "✗ 401 / 登录" if c == "anonymous" else _SYMBOL[MATRIX[c][action]] for c in CALLERS) + " |")
    return "\n".join(lines)


# Who grants a permission a role lacks, as the 403 page says it (a store manager was told to ask
# the store manager); the chat's refusals name who answers by the same roles (agent WHO_TO_ASK).
WHO_GRANTS = {"hq": "系统管理员", "manager": "区域经理或总部"}
DEFAULT_WHO_GRANTS = "店长或总部"


def role_label(user) -> str:
    """For display only (the page header); checks never use it."""
    if user is None or not user.is_authenticated:
        return ""
    for perm, role in (("workflow.confirm_restock", "manager"), ("workflow.add_proposal", "staff"),
                       ("ops.view_all_stores", "hq"), ("ops.add_order", "pos")):
        if user.has_perm(perm):
            return role
    return ""


def require(user, perm: str, *, attempt: str, message: str, store=None, target=None) -> None:
    """PermissionDenied (and an audit row) unless the user holds `perm`."""
    if user is not None and getattr(user, "is_authenticated", False) and user.has_perm(perm):
        return
    if user is not None and getattr(user, "is_authenticated", False):
        audit_denial(actor=user, attempt=attempt, reason=f"missing {perm}", store=store, target=target)
    raise PermissionDenied(message)


def sync_roles(apps=None, *, missing_ok: bool = False) -> None:
    """Create the groups and give each exactly its permissions (idempotent). Called by the
    data migrations with historical models (an early one grants what exists by then:
    `missing_ok`) and by `bootstrap`."""
    from django.apps import apps as global_apps

    apps = apps or global_apps
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, perms in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        wanted = []
        for perm in perms:
            app_label, codename = perm.split(".")
            found = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
            if found is None and missing_ok:
                continue
            if found is None:
                raise LookupError(f"permission {perm} does not exist (role {role})")
            wanted.append(found)
        group.permissions.set(wanted)
