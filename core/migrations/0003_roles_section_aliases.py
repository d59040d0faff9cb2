"""Grant the roles the permissions of models created after 0002 (knowledge.SectionAlias)."""
from django.db import migrations


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    from core.roles import sync_roles

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    sync_roles(apps, missing_ok=True)  # permissions of later migrations: granted by the later ones (0006)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0002_roles"),
        ("knowledge", "0008_sentences_aliases_grams"),
    ]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
