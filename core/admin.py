import json

from django.contrib import admin
from django.utils.html import format_html_join

from .admin_base import ScopedReadOnlyAdmin
from .audit import reason_for_people
from .models import AuditLog

# The keys an audit row's before/after carry, as a store manager reads them; an unknown key shows
# as it is. The raw JSON stays on the page below, for whoever needs it exactly.
AUDIT_KEYS = {
    "reason": "原因", "attempt": "尝试的操作", "channel": "渠道", "status": "状态", "title": "标题", "path": "文件",
    "version": "版本", "payload": "内容", "quantity": "数量", "unit": "单位", "sku": "商品编码", "lines": "明细",
    "description": "描述", "category": "类别", "severity": "严重程度", "store": "门店", "question": "问题",
    "section": "章节", "audience": "可见范围", "scope": "适用范围", "note": "备注", "count": "数量",
}
CHANNELS = {"web": "网页", "api": "API", "mcp": "MCP", "admin": "后台", "wecom": "企业微信", "dingtalk": "钉钉", "feishu": "飞书"}


def _readable_value(key: str, value) -> str:
    if key == "reason" and isinstance(value, str):
        return reason_for_people(value)
    if key == "channel" and isinstance(value, str):
        return CHANNELS.get(value, value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)[:300]
    return "" if value is None else str(value)


@admin.register(AuditLog)
class AuditLogAdmin(ScopedReadOnlyAdmin):
    """Read-only for everyone, superusers included; rows of the user's stores only."""

    list_display = ["created_at", "actor_username", "action", "target_repr", "times", "store", "request_id"]
    list_filter = ["action", "store", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["actor_username", "target_repr", "request_id"]
    list_select_related = ["store", "repeat"]
    readonly_fields = ["readable"]

    @admin.display(description="说明")
    def readable(self, obj) -> str:
        """The row's before and after in Chinese: a denial read 「{"reason": "missing workflow.add_proposal"…}」."""
        rows = [(side, AUDIT_KEYS.get(k, k), _readable_value(k, v)) for side, data in (("变更前", obj.before), ("变更后", obj.after))
                if isinstance(data, dict) for k, v in data.items()]
        return format_html_join("", "<div>{}　{}：{}</div>", rows) if rows else "—"

    def get_fields(self, request, obj=None):
        return ["readable", *(f for f in super().get_fields(request, obj) if f != "readable")]

    @admin.display(description="次数")
    def times(self, obj) -> int:
        """A refused attempt repeated within a minute is one row with its count."""
        repeat = getattr(obj, "repeat", None)
        return repeat.times if repeat is not None else 1
