"""The rules side: SOP documents, their chunks with pgvector embeddings, and the lexical index.

The embedding column's dimension is set by the ingest service to the embedder's dimension
(ALTER … TYPE vector(N)) whenever the index is rebuilt, so PostgreSQL itself refuses a
vector of any other size: vectors of different embedders can never be mixed.
"""
from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from pgvector.django import VectorField


class DocumentQuerySet(models.QuerySet):
    def visible_to(self, viewer):
        """The documents `viewer` may read: a user (their role's audiences, their stores'
        scope), a knowledge.selectors.Visibility, or None, which fails closed (staff documents
        for every store only)."""
        from .selectors import as_visibility

        vis = as_visibility(viewer)
        qs = self.filter(audience__in=vis.audiences, archived_at__isnull=True)
        if vis.scope is None:
            return qs
        return qs.filter(models.Q(scope=[]) | models.Q(scope__overlap=list(vis.scope)))


class Document(models.Model):
    class Source(models.TextChoices):
        CORPUS = "corpus", "制度文档目录"
        UPLOAD = "upload", "后台上传"

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
    source = models.CharField("来源", max_length=16, choices=Source.choices, default=Source.CORPUS, db_default=Source.CORPUS)
    # Who it reaches: every store (both empty), the stores of some cities (today's and
    # tomorrow's), or named stores. `scope` is what retrieval matches ('city:深圳', 'store:3').
    scope_cities = models.JSONField("适用城市", default=list, blank=True, db_default=[])
    scope_stores = models.ManyToManyField("ops.Store", blank=True, related_name="+", verbose_name="适用门店")
    scope = ArrayField(models.CharField(max_length=64), default=list, blank=True, db_default=[], verbose_name="适用范围（检索用）")
    current_version = models.ForeignKey("DocumentVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                        verbose_name="当前版本")
    archived_at = models.DateTimeField("删除时间", null=True, blank=True)

    objects = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["path"]
        verbose_name = verbose_name_plural = "文档"
        permissions = [("view_manager_document", "查看仅店长可见的文档"),
                       ("manage_document", "管理知识库文档（上传、预览、发布、回滚、删除自动生成的问法）")]

    def __str__(self) -> str:
        return self.title


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks", verbose_name="文档")
    ordinal = models.PositiveIntegerField("序号")
    section_path = models.CharField("章节路径", max_length=512)
    text = models.TextField("正文")
    audience = models.CharField("可见范围", max_length=16, choices=Document.Audience.choices, default=Document.Audience.STAFF, db_index=True)
    embedding = VectorField("向量")
    n_terms = models.PositiveIntegerField("词数", default=0)
    version = models.PositiveIntegerField("版本号", default=1, db_default=1)
    page = models.PositiveIntegerField("页码", null=True, blank=True)
    scope = ArrayField(models.CharField(max_length=64), default=list, blank=True, db_default=[], verbose_name="适用范围")

    class Meta:
        ordering = ["document", "ordinal"]
        verbose_name = verbose_name_plural = "段落"
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="chunk_unique_ordinal")]
        # The chunks not every reader sees (manager-only, or scoped to some stores): usually a few
        # percent. BM25 excludes the ones hidden from the reader by probing this small index
        # once, instead of joining every posting of a query term to its chunk (1,700 probes for one
        # word at 100k chunks). Covering, so the probe reads no table page.
        indexes = [models.Index(fields=["id"], include=["audience", "scope"], name="chunk_restricted_idx",
                                condition=~models.Q(audience="staff") | ~models.Q(scope=[]))]

    def __str__(self) -> str:
        return self.section_path

    @property
    def heading(self) -> str:
        return self.section_path.split(" > ")[-1]


class Term(models.Model):
    """Inverted index for BM25: one row per (chunk, term) with the term frequency."""

    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="terms", verbose_name="段落", db_index=False)
    term = models.CharField("词", max_length=64)
    tf = models.PositiveIntegerField("词频")
    n_terms = models.PositiveIntegerField("段落词数", default=0, help_text="the chunk's length, copied so scoring needs no join")

    class Meta:
        verbose_name = verbose_name_plural = "词项索引"
        indexes = [models.Index(fields=["term"], name="term_term_idx", include=["chunk", "tf", "n_terms"])]
        # (chunk, term) covering tf and length: BM25's second phase scores each candidate chunk
        # from this index alone. It also serves every lookup by chunk, so the foreign key has
        # no index of its own.
        constraints = [models.UniqueConstraint(fields=["chunk", "term"], name="term_unique_per_chunk", include=["tf", "n_terms"])]

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


class Sentence(models.Model):
    """A unit embedded on its own and pointing at its chunk: one sentence / list item / table
    of the chunk, or one of the section's question aliases (常见问法). The answer to a
    sibling-section question is usually a single sentence inside a long section, and a
    question alias is worded the way staff ask, not the way the SOP is written."""

    class Kind(models.TextChoices):
        SENTENCE = "sentence", "句子"
        ALIAS = "alias", "常见问法"

    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="sentences", verbose_name="段落")
    kind = models.CharField("类型", max_length=16, choices=Kind.choices, default=Kind.SENTENCE)
    # An alias the product wrote itself at ingest (knowledge/questions.py), not one a person wrote:
    # every corpus has these, so the answerability score reads them and never the hand-written ones.
    generated = models.BooleanField("自动生成", default=False)
    text = models.TextField("内容")
    audience = models.CharField("可见范围", max_length=16, choices=Document.Audience.choices, default=Document.Audience.STAFF, db_index=True)
    scope = ArrayField(models.CharField(max_length=64), default=list, blank=True, db_default=[], verbose_name="适用范围")
    embedding = VectorField("向量")

    class Meta:
        verbose_name = verbose_name_plural = "句子向量"

    def __str__(self) -> str:
        return self.text[:40]


class SectionAlias(models.Model):
    """A question staff ask about a section (常见问法). From the corpus (the section's
    「常见问法：」 line, re-synced on every ingest), added by a manager in the admin, or written by
    the product from the section itself at ingest (自动生成的问法, re-written on every ingest of
    the document except those a manager deleted). It points
    at the section by document path + heading path, not by row id, so an admin alias survives
    re-ingest and rebuilds as long as that section exists (otherwise it is an orphan)."""

    class Source(models.TextChoices):
        CORPUS = "corpus", "制度文档"
        ADMIN = "admin", "后台添加"
        GENERATED = "generated", "自动生成的问法"

    document_path = models.CharField("文档路径", max_length=255, db_index=True)
    section_path = models.CharField("章节路径", max_length=512)
    question = models.CharField("问法", max_length=200)
    source = models.CharField("来源", max_length=16, choices=Source.choices, default=Source.CORPUS)
    # A generated question form a manager deleted: kept (inactive) so the next ingest does not write it again.
    active = models.BooleanField("启用", default=True)
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, verbose_name="添加人")
    created_at = models.DateTimeField("添加时间", auto_now_add=True)

    class Meta:
        ordering = ["document_path", "section_path", "id"]
        verbose_name = verbose_name_plural = "常见问法"
        constraints = [models.UniqueConstraint(fields=["document_path", "section_path", "question"], name="alias_unique_question")]

    def __str__(self) -> str:
        return f"{self.question} → {self.section_path}"


class Gram(models.Model):
    """Inverted index of character bigrams (the second lexical channel): immune to word
    segmentation errors such as 「存在天河店的酒」 read as 存在."""

    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="grams", verbose_name="段落", db_index=False)
    term = models.CharField("二元字", max_length=8)
    tf = models.PositiveIntegerField("词频")
    n_terms = models.PositiveIntegerField("段落二元字数", default=0, help_text="the chunk's bigram count")

    class Meta:
        verbose_name = verbose_name_plural = "二元字索引"
        indexes = [models.Index(fields=["term"], name="gram_term_idx", include=["chunk", "tf", "n_terms"])]
        constraints = [models.UniqueConstraint(fields=["chunk", "term"], name="gram_unique_per_chunk", include=["tf", "n_terms"])]

    def __str__(self) -> str:
        return f"{self.term}×{self.tf}"


class GramStat(models.Model):
    term = models.CharField("二元字", max_length=8, primary_key=True)
    df = models.PositiveIntegerField("文档频率")

    class Meta:
        verbose_name = verbose_name_plural = "二元字统计"

    def __str__(self) -> str:
        return f"{self.term}: {self.df}"


class EmbeddingCache(models.Model):
    """Vectors by (embedder signature, text digest): re-ingesting or rebuilding never embeds
    the same text twice with the same model."""

    signature = models.CharField("嵌入器签名", max_length=255)
    digest = models.CharField("文本摘要", max_length=40)
    embedding = VectorField("向量")

    class Meta:
        verbose_name = verbose_name_plural = "向量缓存"
        constraints = [models.UniqueConstraint(fields=["signature", "digest"], name="embedding_cache_key")]

    def __str__(self) -> str:
        return f"{self.signature} {self.digest[:8]}"


class IndexMeta(models.Model):
    """One row: what the index was built with, and the corpus statistics BM25 needs."""

    signature = models.CharField("嵌入器签名", max_length=255)
    backend = models.CharField("嵌入后端", max_length=32)
    model = models.CharField("嵌入模型", max_length=128)
    dimension = models.PositiveIntegerField("向量维度")
    n_chunks = models.PositiveIntegerField("段落数", default=0)
    avg_terms = models.FloatField("平均词数", default=0)
    avg_idf = models.FloatField("平均 IDF", default=0)
    avg_grams = models.FloatField("平均二元字数", default=0)
    avg_gram_idf = models.FloatField("二元字平均 IDF", default=0)
    fusion = models.JSONField("融合参数", default=dict, blank=True, help_text="eval tune-fusion 写入")
    answerability = models.JSONField("可答性模型", default=dict, blank=True, help_text="eval calibrate 写入")
    calibration = models.JSONField("自校准", default=dict, blank=True,
                                   help_text="入库时用本语料自动生成的问法和通用的反例题库校准的拒答阈值，以及怎么选出来的")
    forms_version = models.PositiveIntegerField("自动问法版本", default=0, help_text="生成问法的模板版本；变了就重写每篇文档的问法")
    refusal_threshold = models.FloatField("拒答阈值", null=True, blank=True, help_text="eval calibrate 写入")
    judge_threshold = models.FloatField("判定阈值", null=True, blank=True, help_text="eval calibrate 写入")
    updated_at = models.DateTimeField("更新时间", auto_now=True)

    class Meta:
        verbose_name = verbose_name_plural = "索引元数据"

    def __str__(self) -> str:
        return self.signature


class DocumentVersion(models.Model):
    """One version of a document: what was uploaded (or read from the corpus folder), the sections
    it parsed into (corrected in the preview before publishing), and where it stands. The index
    holds the chunks of one version per document, the published one; older versions stay here,
    readable, so an old answer's citation still shows what it quoted, and can be published again
    (rollback)."""

    class Status(models.TextChoices):
        DRAFT = "draft", "草稿（待发布）"
        INDEXING = "indexing", "索引中"
        PUBLISHED = "published", "已发布（正在使用）"
        SUPERSEDED = "superseded", "历史版本"
        FAILED = "failed", "发布失败"
        DISCARDED = "discarded", "已放弃"

    document = models.ForeignKey("Document", on_delete=models.CASCADE, related_name="versions", verbose_name="文档")
    number = models.PositiveIntegerField("版本号")
    status = models.CharField("状态", max_length=16, choices=Status.choices, default=Status.DRAFT, db_index=True)
    kind = models.CharField("文件类型", max_length=8, help_text="docx pdf xlsx csv pptx md txt html")
    original_name = models.CharField("原文件名", max_length=255)
    size = models.PositiveIntegerField("文件大小（字节）", default=0)
    content_hash = models.CharField("内容哈希", max_length=64)
    title = models.CharField("标题", max_length=128)
    sections = models.JSONField("章节", default=list, help_text="[{path, text, page, aliases, enabled}]，预览里可改")
    warnings = models.JSONField("解析提示", default=list, blank=True)
    diff = models.JSONField("与上一版的差异", default=dict, blank=True, help_text="{added, changed, removed}: 章节路径")
    meta = models.JSONField("元数据", default=dict, blank=True, help_text="Markdown front matter（mandatory 等）")
    progress = models.PositiveSmallIntegerField("发布进度", default=0)
    error = models.TextField("失败原因", blank=True)
    chunks = models.PositiveIntegerField("段落数", default=0)
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", verbose_name="上传人")
    created_at = models.DateTimeField("上传时间", auto_now_add=True)
    published_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", verbose_name="发布人")
    published_at = models.DateTimeField("发布时间", null=True, blank=True)

    class Meta:
        ordering = ["document", "-number"]
        verbose_name = verbose_name_plural = "文档版本"
        constraints = [models.UniqueConstraint(fields=["document", "number"], name="document_version_number")]

    def __str__(self) -> str:
        return f"{self.title} v{self.number}"


class DocumentFile(models.Model):
    """The original bytes of a version, in the database: every web and worker replica reads the
    same file, and an upload is written in the same transaction as its version or not at all."""

    version = models.OneToOneField(DocumentVersion, on_delete=models.CASCADE, related_name="file", verbose_name="版本")
    data = models.BinaryField("内容")

    class Meta:
        verbose_name = verbose_name_plural = "原始文件"

    def __str__(self) -> str:
        return f"{self.version}（{len(self.data or b'')} 字节）"
