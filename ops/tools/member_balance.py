"""A member's stored-value balance, masked."""
from __future__ import annotations

from ..models import Member, Store, mask_name, mask_phone
from .base import Tool, ToolResult, money, params_schema, yuan


def member_balance(*, member: Member, here: Store | None = None) -> ToolResult:
    """`here`: the one store the caller works at. The bonus balance is spent only at the home
    store (corpus: 跨店使用储值), so elsewhere the usable amount is the principal alone."""
    account = getattr(member, "account", None)
    principal = money(account.principal_balance if account else None)
    bonus = money(account.bonus_balance if account else None)
    row = {
        "member": member.number,
        "name": mask_name(member.name),
        "phone": mask_phone(member.phone),
        "home_store": member.home_store.name,
        "principal_balance": principal,
        "bonus_balance": bonus,
        "total_balance": round(principal + bonus, 2),
    }
    summary = (
        f"会员 {row['member']}（{row['name']}，{row['phone']}，开卡门店 {row['home_store']}）"
        f"储值本金 {yuan(principal)}，赠送余额 {yuan(bonus)}，合计 {yuan(row['total_balance'])}。"
    )
    if here is not None and here.pk != member.home_store_id:
        row["usable_here"] = principal
        summary += f"在{here.name}消费只能用本金 {yuan(principal)}（赠送余额只能在开卡门店{row['home_store']}使用）。"
    return ToolResult("member_balance", {}, [row], summary, list(row))


TOOL = Tool(
    "member_balance", "会员储值余额", "按手机号或会员号查会员储值本金和赠送余额；姓名和手机号脱敏显示。",
    params_schema({"member": {"type": "string", "description": "11 位手机号或会员号（如 M00012）"}}, ("member",)),
    member_balance, ("member", "name", "phone", "home_store", "principal_balance", "bonus_balance", "total_balance"),
    perm="ops.view_member_balance",
    row_sentence=lambda r: (
        f"会员 {r['member']}（{r['name']}，{r['phone']}）：本金 ¥{r['principal_balance']:,.2f}，赠送 ¥{r['bonus_balance']:,.2f}，开卡门店 {r['home_store']}"
        + (f"；本店可用 ¥{r['usable_here']:,.2f}（赠送余额只能在开卡门店使用）" if "usable_here" in r else "")
    ),
    scope="here",
)
