"""The vector columns and their HNSW indexes: dropped before a bulk load and built after it, the
embedding column retyped when the embedder's dimension changes."""
from __future__ import annotations

from django.db import connection

HNSW_INDEX = "knowledge_chunk_embedding_hnsw"


# Sentences and question aliases share a table but are searched apart, each through its own
# partial index: the alias channel walks a graph of aliases only (a few per section), not one
# ten times its size where most neighbours are sentences it would throw away.
HNSW_INDEXES = (
    ("knowledge_chunk", HNSW_INDEX, ""),
    ("knowledge_sentence", "knowledge_sentence_sentence_hnsw", "kind = 'sentence'"),
    ("knowledge_sentence", "knowledge_sentence_alias_hnsw", "kind = 'alias'"),
)


RETIRED_INDEXES = ("knowledge_sentence_embedding_hnsw",)  # one index over both kinds (before 0009)


VECTOR_TABLES = ("knowledge_chunk", "knowledge_sentence")


def _column_dimension(table: str = "knowledge_chunk") -> int | None:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'embedding'", [table]
        )
        row = cur.fetchone()
    return row[0] if row and row[0] > 0 else None


def drop_hnsw() -> None:
    with connection.cursor() as cur:
        for index in (*(i for _, i, _ in HNSW_INDEXES), *RETIRED_INDEXES):
            cur.execute(f"DROP INDEX IF EXISTS {index}")


def create_hnsw() -> None:
    with connection.cursor() as cur:
        for index in RETIRED_INDEXES:
            cur.execute(f"DROP INDEX IF EXISTS {index}")
        for table, index, predicate in HNSW_INDEXES:
            cur.execute(
                f"CREATE INDEX IF NOT EXISTS {index} ON {table} USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = 16, ef_construction = 64){f' WHERE {predicate}' if predicate else ''}"
            )


def retype_embedding(dimension: int) -> None:
    with connection.cursor() as cur:
        for table in VECTOR_TABLES:
            cur.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dimension)})")
