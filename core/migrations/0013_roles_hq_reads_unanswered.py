"""Grant head office the unanswered-questions list: HQ owns and publishes the chain's SOPs
(knowledge.manage_document) but got a 403 on 后台 › 未解答问题, the list of what those SOPs miss."""
from django.db import migrations


def grant(apps, schema_editor):
    from core.roles import sync_roles

    sync_roles(apps, missing_ok=True)


class Migration(migrations.Migration):
    dependencies = [("core", "0012_more_audit_actions"), ("agent", "0014_conversation_im_channels")]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
