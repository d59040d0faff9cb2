"""Grant each role group exactly its permissions (core.roles.ROLE_PERMISSIONS).

Permissions are normally created after migrations (post_migrate); they are created here
first so that a fresh database gets its roles in the same `migrate`."""
from django.contrib.auth.management import create_permissions
from django.db import migrations


def grant(apps, schema_editor):
    from core.roles import sync_roles

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    sync_roles(apps, missing_ok=True)  # models of later migrations: granted by 0003


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("core", "0001_auditlog"),
        ("ops", "0004_permissions_sales_members"),
        ("knowledge", "0007_view_manager_document_permission"),
        ("workflow", "0005_confirm_permissions_idempotency_per_user"),
        ("agent", "0004_view_trace_permission"),
    ]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
