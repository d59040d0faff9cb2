"""Sentences and question aliases get one partial HNSW index each (the single index over both
kinds is dropped). Only where the vector column is typed already: an index that has never
been built is created by the next ingest, as before."""
from django.db import migrations

INDEXES = (
    ("knowledge_sentence_sentence_hnsw", "kind = 'sentence'"),
    ("knowledge_sentence_alias_hnsw", "kind = 'alias'"),
)


def forwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        cur.execute("SELECT atttypmod FROM pg_attribute WHERE attrelid = 'knowledge_sentence'::regclass AND attname = 'embedding'")
        row = cur.fetchone()
        if not row or row[0] <= 0:
            return
        cur.execute("DROP INDEX IF EXISTS knowledge_sentence_embedding_hnsw")
        for name, predicate in INDEXES:
            cur.execute(f"CREATE INDEX IF NOT EXISTS {name} ON knowledge_sentence USING hnsw (embedding vector_cosine_ops) "
                        f"WITH (m = 16, ef_construction = 64) WHERE {predicate}")


def backwards(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        for name, _ in INDEXES:
            cur.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0008_sentences_aliases_grams")]
    operations = [migrations.RunPython(forwards, backwards)]
