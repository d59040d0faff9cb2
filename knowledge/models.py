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
        permissions = [("view_manager_document", "查看仅店长可见的文档")]

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

    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="terms", verbose_name="切片")
    term = models.CharField("词", max_length=64)
    tf = models.PositiveIntegerField("词频")
    n_terms = models.PositiveIntegerField("切片词数", default=0, help_text="the chunk's length, copied so scoring needs no join")

    class Meta:
        verbose_name = verbose_name_plural = "词项索引"
        indexes = [models.Index(fields=["term"], name="term_term_idx", include=["chunk", "tf", "n_terms"])]
        constraints = [models.UniqueConstraint(fields=["chunk", "term"], name="term_unique_per_chunk")]

    def __str__(self) -> str:
        return f"{self.term}×{self.tf}"


class TermStat(models.Model):
    """Document frequency per term, refreshed with every ingest (BM25's idf without a COUNT per query)."""

    term = models.CharField("词", max_length=64, primary_key=True)
    df = models.PositiveIntegerField("文档频率")

    class Meta:
        verbose_name = verbose_name_plural = "词项统计"

    def __str__(self) -> str:
        return f"{self.term}: {self.df}"


class IndexMeta(models.Model):
    """One row: what the index was built with, and the corpus statistics BM25 needs."""

    signature = models.CharField("嵌入器签名", max_length=255)
    backend = models.CharField("嵌入后端", max_length=32)
    model = models.CharField("嵌入模型", max_length=128)
    dimension = models.PositiveIntegerField("向量维度")
    n_chunks = models.PositiveIntegerField("切片数", default=0)
    avg_terms = models.FloatField("平均词数", default=0)
    avg_idf = models.FloatField("平均 IDF", default=0)
    refusal_threshold = models.FloatField("拒答阈值", null=True, blank=True, help_text="eval calibrate 写入")
    judge_threshold = models.FloatField("判定阈值", null=True, blank=True, help_text="eval calibrate 写入")
    updated_at = models.DateTimeField("更新时间", auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = "索引元数据"

    def __str__(self) -> str:
        return self.signature
