from django.contrib import admin

from .admin_base import ScopedReadOnlyAdmin
from .models import AuditLog


@admin.register(AuditLog)
class AuditLogAdmin(ScopedReadOnlyAdmin):
    """Read-only for everyone, superusers included; rows of the user's stores only."""

    list_display = ["created_at", "actor_username", "action", "target_repr", "store", "request_id"]
    list_filter = ["action", "store", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["actor_username", "target_repr", "request_id"]
    list_select_related = ["store"]
