"""Thread ids are part of the chat page's URLs (/threads/<id>/rename): one with a 「/」 (accepted
until now) made the user's page fail for good. Such a conversation keeps its turns under a new
id made of its old one's safe characters and a random suffix."""
import re
import uuid

from django.db import migrations

SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


def rename_unsafe(apps, schema_editor):
    Conversation = apps.get_model("agent", "Conversation")
    for conv in Conversation.objects.all().only("pk", "thread_id"):
        if SAFE.fullmatch(conv.thread_id):
            continue
        kept = re.sub(r"[^A-Za-z0-9_.:-]", "", conv.thread_id).lstrip("._:-")[:27]
        conv.thread_id = f"{kept}-{uuid.uuid4()}" if kept else str(uuid.uuid4())
        conv.save(update_fields=["thread_id"])


class Migration(migrations.Migration):
    dependencies = [("agent", "0007_conversation_thread_per_user")]
    operations = [migrations.RunPython(rename_unsafe, migrations.RunPython.noop)]
