"""Shared admin furniture: records written only by services (orders from POS, the index
from ingestion, audit rows) are shown in admin and never edited there."""
from django.contrib import admin

from .models import AuditLog


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


def _json(value):
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


class ScopedStoreFilter(admin.RelatedFieldListFilter):
    """A store list filter that offers only the stores the user may see."""

    def field_choices(self, field, request, model_admin):
        return [(s.pk, str(s)) for s in field.related_model._default_manager.restrict(request.user, "view")]


class AuditedAdmin(admin.ModelAdmin):
    """Every change saved in the admin writes an `object_changed` audit row in the admin's
    transaction, with the changed fields before and after."""

    def save_model(self, request, obj, form, change):
        from .audit import audit_record

        before = {f: _json(form.initial.get(f)) for f in form.changed_data} if change else None
        super().save_model(request, obj, form, change)
        audit_record(actor=request.user, action=AuditLog.Action.OBJECT_CHANGED, target=obj, store=getattr(obj, "store", None),
                     before=before, after={f: _json(form.cleaned_data.get(f)) for f in form.changed_data} | {"change": change})


class ScopedAdmin(AuditedAdmin):
    """Admin furniture for store-bound models, from the model's `restrict()`:

    - the changelist and every lookup show only the user's stores (another store's row is
      "not found", like a missing one);
    - a change needs the model's change permission *for that row's store*;
    - store list filters offer the user's stores only;
    - every saved change writes an `object_changed` audit row in the admin's transaction, and
      every refused attempt a `permission_denied` row.
    """

    store_filter_fields = ("store", "home_store", "order__store", "member__home_store")

    def get_queryset(self, request):
        return super().get_queryset(request).restrict(request.user, "view")

    def get_list_filter(self, request):
        return [(f, ScopedStoreFilter) if isinstance(f, str) and f in self.store_filter_fields else f
                for f in super().get_list_filter(request)]

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        """A store field offers only the stores the user may add rows to: a form posted with
        another store's id fails validation (「选择一个有效的选项」) instead of handing the row over."""
        from .scoping import ALL, action_perm, store_ids_for

        if db_field.name in self.store_filter_fields:
            # The add form offers the stores the user may add rows to; a change form shows the
            # store read-only (get_readonly_fields).
            ids = store_ids_for(request.user, action_perm(self.model, "add"))
            if ids is not ALL:
                kwargs["queryset"] = db_field.related_model._default_manager.filter(pk__in=ids)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        """A saved row stays in its store: moving an inventory row would give one store's stock
        to another (and file the audit row where its author cannot read it)."""
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and "store" not in fields and any(f.name == "store" for f in self.model._meta.fields):
            fields.append("store")
        return fields

    def has_change_permission(self, request, obj=None):
        if not super().has_change_permission(request, obj):
            return False
        return obj is None or self.model._default_manager.restrict(request.user, "change").filter(pk=obj.pk).exists()

    def _deny(self, request, attempt, obj=None, reason="no permission"):
        from .audit import audit_denial

        store = getattr(obj, "store", None) if obj is not None else None
        audit_denial(actor=request.user, attempt=f"admin {attempt} {self.model._meta.label_lower}", reason=reason,
                     target=obj, store=store, channel="admin")

    def changelist_view(self, request, extra_context=None):
        if request.user.is_active and request.user.is_staff:
            if not self.has_view_or_change_permission(request):
                self._deny(request, "list")
            else:
                self._record_out_of_scope(request)
        return super().changelist_view(request, extra_context)

    def _record_out_of_scope(self, request):
        """A store filter or selected rows outside the user's stores show as empty; the attempt
        is still recorded."""
        from .scoping import ALL, action_perm, store_ids_for

        ids = store_ids_for(request.user, action_perm(self.model, "view"))
        for field in self.store_filter_fields:
            value = request.GET.get(f"{field}__id__exact") or request.GET.get(f"{field}__exact")
            if ids is not ALL and value and value.isdigit() and int(value) not in ids:
                self._deny(request, "filter", reason="store outside the user's stores")
        selected = [pk for pk in request.POST.getlist("_selected_action") if pk.isdigit()]
        if request.method == "POST" and selected:
            visible = set(self.get_queryset(request).filter(pk__in=selected).values_list("pk", flat=True))
            for obj in self.model._default_manager.filter(pk__in=selected).exclude(pk__in=visible):
                self._deny(request, f"action {request.POST.get('action', '')}", obj, "outside the user's stores")

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        if object_id is not None and request.user.is_active and request.user.is_staff:
            unscoped = self.model._default_manager.filter(pk=object_id).first() if str(object_id).isdigit() else None
            visible = self.get_queryset(request).filter(pk=object_id).exists() if unscoped is not None else False
            if unscoped is not None and not visible:
                self._deny(request, "open", unscoped, "outside the user's stores")
            elif visible and request.method == "POST" and not self.has_change_permission(request, unscoped):
                self._deny(request, "change", unscoped)
        return super().changeform_view(request, object_id, form_url, extra_context)


class ScopedReadOnlyAdmin(ScopedAdmin, ReadOnlyAdmin):
    pass
