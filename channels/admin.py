"""「消息渠道」 in the admin: who is bound to which platform account (bind and unbind here, both
audited), what arrived, and every message sent with its attempts and the platform's last error."""
from django.contrib import admin

from .models import Delivery, Identity, Inbound
from .services import identity_bind, identity_unbind


@admin.register(Identity)
class IdentityAdmin(admin.ModelAdmin):
    """The form validates (a platform id bound already is refused on the form, by the model's
    constraint); the binding itself is identity_bind's, with its audit row."""

    fields = ["platform", "external_id", "user"]
    list_display = ["platform", "external_id", "user", "bound_by", "bound_at"]
    list_filter = ["platform"]
    search_fields = ["external_id", "user__username"]
    autocomplete_fields = ["user"]

    def has_change_permission(self, request, obj=None):
        return False if obj is not None else super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change):
        obj.pk = identity_bind(user=obj.user, platform=obj.platform, external_id=obj.external_id, by=request.user).pk

    def delete_model(self, request, obj):
        identity_unbind(identity=obj, by=request.user)

    def delete_queryset(self, request, queryset):
        for identity in queryset:
            identity_unbind(identity=identity, by=request.user)


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "platform", "to", "kind", "status", "attempts", "last_error", "sent_at"]
    list_filter = ["platform", "status", "kind"]
    search_fields = ["to", "last_error"]
    readonly_fields = [f.name for f in Delivery._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Inbound)
class InboundAdmin(admin.ModelAdmin):
    list_display = ["received_at", "platform", "external_id", "kind", "text", "status", "answered_at"]
    list_filter = ["platform", "status", "kind"]
    search_fields = ["external_id", "text"]
    readonly_fields = [f.name for f in Inbound._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
