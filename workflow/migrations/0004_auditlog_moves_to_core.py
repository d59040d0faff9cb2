"""AuditLog now lives in core (same table, same rows, same trigger): drop it from this
app's state only."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('workflow', '0003_chinese_labels'),
        ('core', '0001_auditlog'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name='AuditLog')], database_operations=[]),
    ]
