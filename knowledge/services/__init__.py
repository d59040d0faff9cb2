"""Writes to the knowledge index: ingestion of the corpus folder (ingest.py), publishing uploads (publish.py),
one document into the index (writing.py), embeddings (vectors.py), the vector indexes (schema.py), section
aliases (aliases.py). Every name is importable from `knowledge.services`."""
from .aliases import (
    generated_alias_delete,
    section_alias_add,
    section_alias_require,
)
from .ingest import (
    CORPUS_LISTS,
    CORPUS_SUFFIXES,
    IngestReport,
    corpus_embedded_texts,
    corpus_files,
    corpus_ingest,
    export_bundled_vectors,
)
from .publish import (
    apply_document_scope,
    publish_versions,
    remove_documents,
)
from .schema import (
    HNSW_INDEX,
    HNSW_INDEXES,
    RETIRED_INDEXES,
    VECTOR_TABLES,
    create_hnsw,
    drop_hnsw,
    retype_embedding,
)
from .vectors import (
    BUNDLED_VECTORS,
    bundled_vectors,
    embed_cached,
    embedding_digest,
    ensure_cache_column,
)
from .writing import (
    VALID_AUDIENCES,
    VALID_DOC_TYPES,
    current_meta,
    lexical_text,
    refresh_index_stats,
    scope_tokens,
    sections_diff,
    sections_markdown,
    write_scope,
)

__all__ = [
    "HNSW_INDEX",
    "HNSW_INDEXES",
    "RETIRED_INDEXES",
    "VECTOR_TABLES",
    "create_hnsw",
    "drop_hnsw",
    "retype_embedding",
    "BUNDLED_VECTORS",
    "bundled_vectors",
    "corpus_embedded_texts",
    "embed_cached",
    "embedding_digest",
    "ensure_cache_column",
    "export_bundled_vectors",
    "CORPUS_LISTS",
    "CORPUS_SUFFIXES",
    "IngestReport",
    "VALID_AUDIENCES",
    "VALID_DOC_TYPES",
    "apply_document_scope",
    "corpus_files",
    "corpus_ingest",
    "current_meta",
    "lexical_text",
    "publish_versions",
    "refresh_index_stats",
    "remove_documents",
    "scope_tokens",
    "sections_diff",
    "sections_markdown",
    "write_scope",
    "generated_alias_delete",
    "section_alias_add",
    "section_alias_require",
]
