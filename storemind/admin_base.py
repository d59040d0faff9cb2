"""Shared admin furniture: records written only by services (orders from POS, the index
from ingestion, audit rows) are shown in admin and never edited there."""
from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields or []

    def has_add_permission(self, request, obj=None):
        return False
