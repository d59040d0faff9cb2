"""The rules side: SOP documents, their chunks with pgvector embeddings, and the lexical index.

The embedding column's dimension is set by the ingest service to the embedder's dimension
(ALTER … TYPE vector(N)) whenever the index is rebuilt, so PostgreSQL itself refuses a
vector of any other size: vectors of different embedders can never be mixed.
"""
from __future__ import annotations

from django.db import models
from pgvector.django import VectorField


class Document(models.Model):
    class DocType(models.TextChoices):
        SOP = "sop", "SOP"
        RULE = "rule", "规则"
        PRODUCT = "product", "产品知识"
        POLICY = "policy", "制度"

    class Audience(models.TextChoices):
        STAFF = "staff", "全体员工"
        MANAGER = "manager", "仅店长"

    path = models.CharField("路径", max_length=255, unique=True)
    title = models.CharField("标题", max_length=128)
    doc_type = models.CharField("类型", max_length=16, choices=DocType.choices)
    audience = models.CharField("可见范围", max_length=16, choices=Audience.choices, default=Audience.STAFF)
    version = models.CharField("版本", max_length=32, blank=True)
    updated = models.DateField("更新日期", null=True, blank=True)
    content_hash = models.CharField("内容哈希", max_length=64)
    body = models.TextField("正文")
    meta = models.JSONField("元数据", default=dict, blank=True, help_text="front matter，含强制条款 mandatory")
    ingested_at = models.DateTimeField("入库时间", auto_now=True)

    class Meta:
        ordering = ["path"]
        verbose_name = verbose_name_plural = "文档"

    def __str__(self) -> str:
        return self.title


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks", verbose_name="文档")
    ordinal = models.PositiveIntegerField("序号")
    section_path = models.CharField("章节路径", max_length=512)
    text = models.TextField("正文")
    audience = models.CharField("可见范围", max_length=16, default=Document.Audience.STAFF, db_index=True)
    embedding = VectorField("向量")
    n_terms = models.PositiveIntegerField("词数", default=0)

    class Meta:
        ordering = ["document", "ordinal"]
        verbose_name = verbose_name_plural = "切片"
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="chunk_unique_ordinal")]

    def __str__(self) -> str:
        return self.section_path

    @property
    def heading(self) -> str:
        return self.section_path.split(" > ")[-1]


class Term(models.Model):
    """Inverted index for BM25: one row per (chunk, term) with the term frequency."""

    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="terms")
    term = models.CharField(max_length=64)
    tf = models.PositiveIntegerField()
    n_terms = models.PositiveIntegerField(default=0, help_text="the chunk's length, copied so scoring needs no join")

    class Meta:
        indexes = [models.Index(fields=["term"], name="term_term_idx", include=["chunk", "tf", "n_terms"])]
        constraints = [models.UniqueConstraint(fields=["chunk", "term"], name="term_unique_per_chunk")]

    def __str__(self) -> str:
        return f"{self.term}×{self.tf}"


class TermStat(models.Model):
    """Document frequency per term, refreshed with every ingest (BM25's idf without a COUNT per query)."""

    term = models.CharField(max_length=64, primary_key=True)
    df = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"{self.term}: {self.df}"


class IndexMeta(models.Model):
    """One row: what the index was built with, and the corpus statistics BM25 needs."""

    signature = models.CharField("嵌入器签名", max_length=255)
    backend = models.CharField(max_length=32)
    model = models.CharField(max_length=128)
    dimension = models.PositiveIntegerField()
    n_chunks = models.PositiveIntegerField(default=0)
    avg_terms = models.FloatField(default=0)
    avg_idf = models.FloatField(default=0)
    refusal_threshold = models.FloatField("拒答阈值", null=True, blank=True, help_text="eval calibrate 写入")
    judge_threshold = models.FloatField("判定阈值", null=True, blank=True, help_text="eval calibrate 写入")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = "索引元数据"

    def __str__(self) -> str:
        return self.signature
