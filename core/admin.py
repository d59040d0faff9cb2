from django.contrib import admin

from .admin_base import ScopedReadOnlyAdmin
from .models import AuditLog


@admin.register(AuditLog)
class AuditLogAdmin(ScopedReadOnlyAdmin):
    """Read-only for everyone, superusers included; rows of the user's stores only."""

    list_display = ["created_at", "actor_username", "action", "target_repr", "times", "store", "request_id"]
    list_filter = ["action", "store", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["actor_username", "target_repr", "request_id"]
    list_select_related = ["store", "repeat"]

    @admin.display(description="次数")
    def times(self, obj) -> int:
        """A refused attempt repeated within a minute is one row with its count."""
        repeat = getattr(obj, "repeat", None)
        return repeat.times if repeat is not None else 1
