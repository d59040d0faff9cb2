"""Grant the POS role ops.view_product: a POS integrator reads GET /api/v1/catalog (SKUs, units,
list prices) to build its first order."""
from django.db import migrations


def grant(apps, schema_editor):
    from core.roles import sync_roles

    sync_roles(apps, missing_ok=True)


class Migration(migrations.Migration):
    dependencies = [("core", "0007_rate_counter")]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
