"""Question aliases of a section: a manager's own (added, audited) and the generated ones (deleted
by a manager, audited); the permission is checked before the transaction, so a refusal is recorded."""
from __future__ import annotations

from django.db import transaction

from core.audit import audit_record
from core.models import AuditLog
from core.roles import require

from ..embedders import Embedder, get_embedder
from ..models import Chunk, SectionAlias, Sentence
from .vectors import embed_cached
from .writing import current_meta


def section_alias_require(user) -> None:
    """May `user` teach the index a question? Checked before any transaction opens, so a
    refusal's audit row is not rolled back with it (callers that hold a transaction check first)."""
    require(user, "knowledge.add_sectionalias", attempt="alias_add", message="只有店长可以为制度章节添加常见问法。")


def section_alias_add(*, document_path: str, section_path: str, question: str, user, embedder: Embedder | None = None) -> SectionAlias:
    """A manager teaches the index a question: it becomes a question alias of the section,
    embedded at once (no re-ingest) and audited. Idempotent for the same question."""
    from django.core.exceptions import ValidationError

    section_alias_require(user)
    question = " ".join((question or "").split())
    if not question or len(question) > 200:
        raise ValidationError({"question": "问法不能为空，且不超过 200 字。"})
    with transaction.atomic():
        chunk = (Chunk.objects.filter(document__path=document_path, section_path=section_path).order_by("ordinal").first())
        if chunk is None:
            raise ValidationError({"section_path": f"没有这个章节：{document_path} · {section_path}"})
        alias, created = SectionAlias.objects.get_or_create(
            document_path=document_path, section_path=section_path, question=question,
            defaults={"source": SectionAlias.Source.ADMIN, "created_by": user},
        )
        if created:
            embedder = embedder or get_embedder()
            vector = embed_cached(embedder, [question], kind="query")[0]
            Sentence.objects.create(chunk=chunk, kind=Sentence.Kind.ALIAS, text=question, audience=chunk.audience,
                                    embedding=list(map(float, vector)))
            audit_record(actor=user, action=AuditLog.Action.ALIAS_ADDED, target=alias,
                         after={"document": document_path, "section": section_path, "question": question})
    return alias


def generated_alias_delete(*, alias: SectionAlias, user) -> SectionAlias:
    """A knowledge owner deletes a question form the product wrote (自动生成的问法): its vector
    leaves the index at once, and the form is kept inactive so the next ingest does not write it
    again. Audited; idempotent. The permission is checked before the transaction opens: a refusal's
    audit row stays."""
    from django.core.exceptions import ValidationError

    require(user, "knowledge.manage_document", attempt="alias_delete", message="只有店长或总部的知识库管理员可以删除自动生成的问法。")
    if alias.source != SectionAlias.Source.GENERATED:
        raise ValidationError({"alias": "只有自动生成的问法可以在这里删除；手写的常见问法请改制度文档。"})
    with transaction.atomic():
        return _generated_alias_deactivate(alias, user)


def _generated_alias_deactivate(alias: SectionAlias, user) -> SectionAlias:
    alias = SectionAlias.objects.select_for_update().get(pk=alias.pk)
    if not alias.active:
        return alias
    removed, _ = Sentence.objects.filter(chunk__document__path=alias.document_path, chunk__section_path=alias.section_path,
                                         kind=Sentence.Kind.ALIAS, generated=True, text=alias.question).delete()
    alias.active = False
    alias.save(update_fields=["active"])
    meta = current_meta()
    if meta is not None:
        meta.save(update_fields=["updated_at"])  # every process's section snapshots are rebuilt
    audit_record(actor=user, action=AuditLog.Action.ALIAS_DELETED, target=alias,
                 before={"document": alias.document_path, "section": alias.section_path, "question": alias.question, "vectors": removed})
    return alias
