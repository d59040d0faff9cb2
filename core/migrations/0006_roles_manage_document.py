"""Grant the roles knowledge.manage_document (managers and head office own the SOPs: upload,
preview, publish, roll back, delete generated question forms)."""
from django.db import migrations


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    from core.roles import sync_roles

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    sync_roles(apps, missing_ok=True)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0005_denial_repeat"),
        ("knowledge", "0012_generated_question_forms"),
    ]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
