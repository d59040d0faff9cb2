"""The knowledge owner's workflow: upload → draft (preview, corrections, audience and scope) →
publish (a Celery task: the version is indexed, then switched in atomically) → new versions,
rollback, scope changes. One code path for the admin, the REST API and `manage.py ingest`.

Permissions: `knowledge.manage_document` (managers and head office). Head office manages every
document; a store manager manages the documents scoped to their own stores only (a chain-wide
SOP is head office's). Every step writes its audit row in the same transaction; a refusal
writes a `permission_denied` row. Nothing half-written: a bad file is refused before any row
exists, and a version being indexed is never half-visible (the switch is one transaction).
"""
from __future__ import annotations

import hashlib
import logging
import re
import uuid
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from core.audit import audit_record
from core.errors import NotFound
from core.models import AuditLog
from core.roles import require
from core.scoping import ALL, store_ids_for

from .models import Document, DocumentFile, DocumentVersion
from .parsing import FileRejected, Section, parse_file  # noqa: F401  (Section: sections_of)
from .services import apply_document_scope, publish_versions, remove_documents, scope_tokens, sections_diff

log = logging.getLogger(__name__)
MANAGE = "knowledge.manage_document"
MAX_TITLE = 128
MAX_SECTION_TEXT = 20000
EDITABLE = (DocumentVersion.Status.DRAFT, DocumentVersion.Status.FAILED)


# --- who may manage which document ------------------------------------------------------------


def managed_store_ids(user) -> list[int] | None:
    """The stores `user` may scope documents to: ALL for head office, their own for a manager."""
    if not user.has_perm(MANAGE):
        return []
    if user.is_superuser or user.has_perm("ops.view_all_stores"):
        return ALL
    return store_ids_for(user, "ops.view_store") or []


def document_scope_store_ids(document: Document) -> set[int] | None:
    """The stores a document reaches (None: every store)."""
    from ops.models import Store

    cities = list(document.scope_cities or [])
    stores = set(document.scope_stores.values_list("pk", flat=True)) if document.pk else set()
    if not cities and not stores:
        return None
    return stores | set(Store.objects.filter(city__in=cities).values_list("pk", flat=True))


def may_manage(user, document: Document) -> bool:
    ids = managed_store_ids(user)
    if ids is ALL:
        return True
    if not ids:
        return False
    reach = document_scope_store_ids(document)
    return reach is not None and bool(reach) and reach <= set(ids)


def _require_manage(user, document: Document | None, attempt: str) -> None:
    require(user, MANAGE, attempt=attempt, message="只有店长或总部的知识库管理员可以管理制度文档。", target=document)
    if document is not None and not may_manage(user, document):
        from core.audit import audit_denial

        audit_denial(actor=user, attempt=attempt, reason="document outside the user's stores", target=document)
        raise PermissionDenied("这篇文档适用于全部门店或其他门店，只有总部可以修改；你可以上传只适用于自己门店的文档。")


# --- scope --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    audience: str
    cities: tuple[str, ...] = ()
    stores: tuple[int, ...] = ()

    def as_dict(self) -> dict:
        return {"audience": self.audience, "cities": list(self.cities), "stores": list(self.stores)}


def clean_scope(user, *, audience=None, cities=None, stores=None, default: Scope | None = None) -> Scope:
    """The audience and scope asked for, validated against what the user may scope to: store
    codes, names or ids, and city names (every store of that city, today's and tomorrow's)."""
    from ops.models import Store

    base = default or Scope("staff")
    audience = base.audience if audience in (None, "") else audience
    if audience not in Document.Audience.values:
        raise ValidationError({"audience": [f"可见范围只能是 {'、'.join(Document.Audience.values)}（staff 全体员工，manager 仅店长）。"]})
    errors = {}
    city_list = list(base.cities) if cities is None else [str(c).strip() for c in (cities or []) if str(c).strip()]
    known_cities = set(Store.objects.values_list("city", flat=True))
    unknown = [c for c in city_list if c not in known_cities]
    if unknown:
        errors["cities"] = [f"没有这些城市的门店：{'、'.join(unknown)}（现有：{'、'.join(sorted(known_cities))}）。"]
    store_ids: list[int] = list(base.stores) if stores is None else []
    bad = []
    for raw in ([] if stores is None else stores):
        key = str(raw).strip()
        found = Store.objects.filter(code=key).first() or Store.objects.filter(name=key).first() \
            or (Store.objects.filter(pk=int(key)).first() if key.isdigit() else None)
        if found is None:
            bad.append(key)
        else:
            store_ids.append(found.pk)
    if bad:
        errors["stores"] = [f"没有这些门店：{'、'.join(bad)}（写门店编码、名称或 id）。"]
    if errors:
        raise ValidationError(errors)
    allowed = managed_store_ids(user)
    if allowed is not ALL and allowed and stores is None and cities is None and not store_ids and not city_list:
        # A manager who names no store (not an empty list: that asks for every store) means their own: a manager of one store was refused for
        # leaving its only box unticked, and had to pick the file again.
        store_ids = list(allowed)
    if allowed is not ALL:
        reach = set(store_ids) | set(Store.objects.filter(city__in=city_list).values_list("pk", flat=True))
        if not reach or not reach <= set(allowed):
            from core.audit import audit_denial

            audit_denial(actor=user, attempt="document_scope", reason="scope outside the user's stores")
            raise PermissionDenied("店长上传的文档只能适用于自己的门店：请在「适用门店」里选你的门店（全部门店或其他城市的文档由总部上传）。")
    return Scope(audience, tuple(dict.fromkeys(city_list)), tuple(dict.fromkeys(store_ids)))


def document_scope(document: Document) -> Scope:
    return Scope(document.audience, tuple(document.scope_cities or ()), tuple(document.scope_stores.values_list("pk", flat=True)))


# --- upload ---------------------------------------------------------------------------------------


def _clean_title(title: str) -> str:
    from core.validation import reject_bad_text

    title = " ".join((title or "").split())
    reject_bad_text({"title": title})
    if len(title) > MAX_TITLE:
        raise ValidationError({"title": [f"标题不能超过 {MAX_TITLE} 个字。"]})
    return title


def _safe_name(name: str) -> str:
    base = re.sub(r"[^\w.\-\u4e00-\u9fff]+", "_", (name or "").replace("\\", "/").rsplit("/", 1)[-1]).strip("._") or "document"
    return base[:120]


def document_upload(*, user, name: str, data: bytes, title: str = "", audience=None, cities=None, stores=None,
                    document: Document | None = None) -> DocumentVersion:
    """A file becomes a draft version: of `document` when given, else of the document with the
    same title, else of a new document. Re-uploading the same bytes returns the version that
    already has them (a double submit makes nothing twice). Who may upload, and for whom, is
    settled before the upload's transaction, so a refusal's audit row survives it."""
    _require_manage(user, document, "document_upload")
    try:
        parsed = parse_file(name, data)
    except FileRejected as exc:
        raise ValidationError({"file": [exc.message]}, code=exc.code) from None
    title = _clean_title(title) or parsed.title
    if document is None:
        document = Document.objects.filter(title=title, archived_at__isnull=True).order_by("pk").first()
        if document is not None and not may_manage(user, document):
            raise PermissionDenied("已经有一篇同名文档，它适用于全部门店或其他门店，只有总部可以上传它的新版本；请换一个标题。")
    default = document_scope(document) if document is not None else Scope(str(parsed.meta.get("audience") or "staff"))
    scope = clean_scope(user, audience=audience, cities=cities, stores=stores, default=default)
    return _upload(user=user, name=name, data=data, parsed=parsed, title=title, scope=scope, document=document)


@transaction.atomic
def _upload(*, user, name: str, data: bytes, parsed, title: str, scope: Scope, document: Document | None) -> DocumentVersion:
    digest = hashlib.sha256(data).hexdigest()
    if document is not None:
        document = Document.objects.select_for_update().get(pk=document.pk)
        same = document.versions.filter(content_hash=digest).exclude(status=DocumentVersion.Status.DISCARDED).order_by("-number").first()
        if same is not None:
            same.replayed = True  # the same file again: no new version (the admin says so)
            return same
    else:
        document = Document.objects.create(
            path=f"uploads/{uuid.uuid4().hex[:12]}/{_safe_name(name)}", title=title, doc_type=Document.DocType.SOP,
            audience=scope.audience, content_hash=digest, body="", meta={}, source=Document.Source.UPLOAD,
            scope_cities=list(scope.cities), scope=scope_tokens(scope.cities, scope.stores))
        # Whose it is from the start (it reaches nobody before it is published): its owner manages it.
        document.scope_stores.set(scope.stores)
    current = document.current_version
    number = (document.versions.order_by("-number").values_list("number", flat=True).first() or 0) + 1
    sections = [s.as_dict() for s in parsed.sections]
    version = DocumentVersion.objects.create(
        document=document, number=number, kind=parsed.kind, original_name=name[:255], size=len(data), content_hash=digest,
        title=title, sections=sections, warnings=parsed.warnings, meta={**parsed.meta, "scope": scope.as_dict()},
        diff=sections_diff(current.sections if current else [], sections), created_by=user)
    DocumentFile.objects.create(version=version, data=data)
    audit_record(actor=user, action=AuditLog.Action.DOCUMENT_UPLOADED, target=version, after={
        "document": document.pk, "title": title, "version": number, "file": name[:255], "kind": parsed.kind, "bytes": len(data),
        "sections": len(sections), "warnings": parsed.warnings, "scope": scope.as_dict()})
    return version


def version_for(user, pk: int, *, for_manage: bool = True) -> DocumentVersion:
    version = DocumentVersion.objects.select_related("document").filter(pk=pk).first()
    if version is None or (for_manage and not (user.has_perm(MANAGE) and may_manage(user, version.document))):
        raise NotFound("没有这个文档版本。")
    return version


# --- preview corrections ----------------------------------------------------------------------


def version_edit(*, version: DocumentVersion, user, **changes) -> DocumentVersion:
    """Correct a draft before publishing: a section's heading or text, a section switched off,
    the title, the audience or the scope. Audited with before and after."""
    _require_manage(user, version.document, "document_edit")
    return _edit(version=version, user=user, **changes)


def _edit_section(sections: list[dict], section: int, *, heading, text, enabled, before: dict, after: dict) -> None:
    """One section's heading, text or switch, in place; before/after record what changed."""
    from core.validation import reject_bad_text

    if not 0 <= section < len(sections):
        raise ValidationError({"section": [f"没有第 {section} 节（共 {len(sections)} 节，从 0 数起）。"]})
    s = sections[section]
    reject_bad_text({"heading": heading or "", "text": text or ""})
    if heading is not None:
        heading = " ".join(heading.split())
        if not heading or len(heading) > 120:
            raise ValidationError({"heading": ["标题不能为空，且不超过 120 字。"]})
        before["heading"], after["heading"] = (s["path"] or [""])[-1], heading
        s["path"] = [*s["path"][:-1], heading] if s["path"] else [heading]
    if text is not None:
        if len(text) > MAX_SECTION_TEXT:
            raise ValidationError({"text": [f"一节的正文不能超过 {MAX_SECTION_TEXT} 字。"]})
        if not text.strip() and (s.get("text") or "").strip() and (enabled if enabled is not None else s.get("enabled", True)):
            # Saved as 「已保存」, the section then answered nothing and nothing said why.
            raise ValidationError({"text": ["正文不能清空：不要这一节的话，取消勾选「启用」。"]})
        before["text"], after["text"] = s.get("text", ""), text.strip()
        s["text"] = text.strip()
    if enabled is not None:
        before["enabled"], after["enabled"] = s.get("enabled", True), bool(enabled)
        s["enabled"] = bool(enabled)
    if len({tuple(x["path"]) for x in sections if x.get("enabled", True)}) < sum(1 for x in sections if x.get("enabled", True)):
        raise ValidationError({"heading": ["已经有一节用了这个标题路径；换一个标题，或停用其中一节。"]})
    before["section"] = after["section"] = section


@transaction.atomic
def _edit(*, version: DocumentVersion, user, section: int | None = None, heading: str | None = None, text: str | None = None,
          enabled: bool | None = None, title: str | None = None, audience=None, cities=None, stores=None) -> DocumentVersion:
    version = DocumentVersion.objects.select_for_update().get(pk=version.pk)
    if version.status not in EDITABLE:
        raise ValidationError({"version": [f"v{version.number} 已{version.get_status_display()}，不能再改；请上传新版本。"]})
    before, after = {}, {}
    sections = [dict(s) for s in version.sections]
    if section is not None:
        _edit_section(sections, section, heading=heading, text=text, enabled=enabled, before=before, after=after)
    if title is not None:
        before["title"], after["title"] = version.title, _clean_title(title) or version.title
        version.title = after["title"]
    if audience is not None or cities is not None or stores is not None:
        old = Scope(**{**version.meta.get("scope", {}), "cities": tuple(version.meta.get("scope", {}).get("cities", ())),
                       "stores": tuple(version.meta.get("scope", {}).get("stores", ()))}) if version.meta.get("scope") else document_scope(version.document)
        new = clean_scope(user, audience=audience, cities=cities, stores=stores, default=old)
        before["scope"], after["scope"] = old.as_dict(), new.as_dict()
        version.meta = {**version.meta, "scope": new.as_dict()}
    if not after:
        return version
    if any(k in after and before.get(k) != after[k] for k in ("text", "heading")):  # not a section only switched on or off
        # Which sections a person corrected here: a later upload of the same file that does not
        # carry the correction would undo it (selectors.edits_undone says so in its preview).
        edited = " > ".join(sections[section]["path"])
        version.meta = {**version.meta, "edited_sections": [*[p for p in version.meta.get("edited_sections", []) if p != edited], edited]}
    version.sections = sections
    current = version.document.current_version
    version.diff = sections_diff(current.sections if current and current.pk != version.pk else [], sections)
    version.save(update_fields=["sections", "title", "meta", "diff"])
    audit_record(actor=user, action=AuditLog.Action.DOCUMENT_EDITED, target=version, before=before, after=after)
    return version


# --- publish, rollback ----------------------------------------------------------------------------


def document_publish(*, version: DocumentVersion, user, run_now: bool = False) -> DocumentVersion:
    """Ask for `version` to be indexed and switched in (a Celery task; in this process with
    run_now or when Celery is eager). The version answers once indexed; until then the one in
    use keeps answering. Idempotent: a version already indexing or published is left alone."""
    _require_manage(user, version.document, "document_publish")
    with transaction.atomic():
        version = DocumentVersion.objects.select_for_update().get(pk=version.pk)
        if version.status in (DocumentVersion.Status.INDEXING, DocumentVersion.Status.PUBLISHED):
            return version
        if version.status == DocumentVersion.Status.DISCARDED:
            raise ValidationError({"version": [f"v{version.number} 已放弃，不能发布。"]})
        if not any(s.get("enabled", True) and (s.get("text") or "").strip() for s in version.sections):
            raise ValidationError({"version": ["所有章节都停用了或是空的：没有可发布的内容。"]})
        rollback = version.status == DocumentVersion.Status.SUPERSEDED
        version.status, version.progress, version.error = DocumentVersion.Status.INDEXING, 0, ""
        version.save(update_fields=["status", "progress", "error"])
        audit_record(actor=user, action=AuditLog.Action.DOCUMENT_ROLLBACK_REQUESTED if rollback else AuditLog.Action.DOCUMENT_PUBLISH_REQUESTED, target=version,
                     after={"document": version.document_id, "version": version.number})
        if not run_now:
            from .tasks import publish_version_task

            transaction.on_commit(lambda: publish_version_task.delay(version.pk, user.pk))
    if run_now:
        version_index(version.pk, user.pk)
        version.refresh_from_db()
    return version


def document_publish_many(*, versions: list[DocumentVersion], user, run_now: bool = False, progress=None, batch: int = 50) -> int:
    """Publish many drafts (a ZIP, a bulk upload) as one job: each marked `indexing` (audited), then
    indexed in batches of `batch` (one transaction and one statistics refresh per batch, not per
    document). Returns how many were asked for."""
    asked = []
    for version in versions:
        _require_manage(user, version.document, "document_publish")
    with transaction.atomic():
        for version in versions:
            v = DocumentVersion.objects.select_for_update().get(pk=version.pk)
            if v.status not in (DocumentVersion.Status.DRAFT, DocumentVersion.Status.FAILED, DocumentVersion.Status.SUPERSEDED):
                continue
            v.status, v.progress, v.error = DocumentVersion.Status.INDEXING, 0, ""
            v.save(update_fields=["status", "progress", "error"])
            audit_record(actor=user, action=AuditLog.Action.DOCUMENT_PUBLISH_REQUESTED, target=v, after={"document": v.document_id, "version": v.number})
            asked.append(v.pk)
        if not run_now and asked:
            from .tasks import publish_versions_task

            transaction.on_commit(lambda: publish_versions_task.delay(asked, user.pk))
    if run_now:
        done = 0
        for i in range(0, len(asked), batch):
            chunk = list(DocumentVersion.objects.filter(pk__in=asked[i : i + batch]).select_related("document").order_by("pk"))

            def tick(n, total, base=done):
                if progress:
                    progress(base + n, len(asked))

            publish_versions(chunk, actor=user, progress=tick)
            done += len(chunk)
    return len(asked)


def document_rollback(*, document: Document, user, number: int) -> DocumentVersion:
    """Publish an earlier version again: the one in use becomes history, audited as a rollback."""
    _require_manage(user, document, "document_rollback")
    version = document.versions.filter(number=number).first()
    if version is None or version.status != DocumentVersion.Status.SUPERSEDED:
        raise ValidationError({"version": [f"只能回滚到以前发布过的版本；v{number} 不是。"]})
    return document_publish(version=version, user=user)


def version_index(version_id: int, user_id: int | None, progress=None) -> DocumentVersion | None:
    """The task's body: index a version that is `indexing`, then switch it in atomically. A
    failure leaves the version in use as it was and says why on the version (retry: publish again)."""
    from django.contrib.auth import get_user_model

    version = DocumentVersion.objects.select_related("document").filter(pk=version_id).first()
    if version is None or version.status != DocumentVersion.Status.INDEXING:
        return version
    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    try:
        publish_versions([version], actor=user, progress=progress)
    except Exception as exc:  # the reason goes on the version, for the admin and the API
        log.exception("publishing %s failed", version)
        with transaction.atomic():
            DocumentVersion.objects.filter(pk=version.pk, status=DocumentVersion.Status.INDEXING).update(
                status=DocumentVersion.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000], progress=0)
            audit_record(actor=user, action=AuditLog.Action.DOCUMENT_PUBLISH_FAILED, target=version, after={"error": str(exc)[:500]})
    version.refresh_from_db()
    return version


def version_discard(*, version: DocumentVersion, user) -> DocumentVersion:
    _require_manage(user, version.document, "document_discard")
    with transaction.atomic():
        return _discard(version, user)


def _discard(version: DocumentVersion, user) -> DocumentVersion:
    version = DocumentVersion.objects.select_for_update().get(pk=version.pk)
    if version.status not in EDITABLE:
        raise ValidationError({"version": [f"v{version.number} 已{version.get_status_display()}，不能放弃。"]})
    version.status = DocumentVersion.Status.DISCARDED
    version.save(update_fields=["status"])
    audit_record(actor=user, action=AuditLog.Action.DOCUMENT_DISCARDED, target=version, after={"version": version.number})
    return version


def document_scope_set(*, document: Document, user, audience=None, cities=None, stores=None) -> Document:
    """Change who a published document reaches, at once (its chunks carry the scope): audited."""
    _require_manage(user, document, "document_scope")
    with transaction.atomic():
        return _change_scope(document, user, audience, cities, stores)


def _change_scope(document: Document, user, audience, cities, stores) -> Document:
    document = Document.objects.select_for_update().get(pk=document.pk)
    old = document_scope(document)
    new = clean_scope(user, audience=audience, cities=cities, stores=stores, default=old)
    if new == old:
        return document
    apply_document_scope(document, new)
    audit_record(actor=user, action=AuditLog.Action.DOCUMENT_SCOPE_CHANGED, target=document, before=old.as_dict(), after=new.as_dict())
    return document


def document_delete(*, document: Document, user) -> None:
    """Take a document out of the index and the list; its versions stay in the audit trail."""
    _require_manage(user, document, "document_delete")
    with transaction.atomic():
        _delete(document, user)


def _delete(document: Document, user) -> None:
    before = {"title": document.title, "path": document.path, "version": document.current_version.number if document.current_version else None}
    # Recorded while the row exists, so the audit names it (it read 「对象 -」); same transaction.
    audit_record(actor=user, action=AuditLog.Action.DOCUMENT_DELETED, target=document, before=before)
    remove_documents([document])


def sections_of(version: DocumentVersion) -> list[Section]:
    return [Section.from_dict(s) for s in version.sections]


__all__ = ["document_upload", "version_edit", "document_publish", "document_rollback", "version_index", "version_discard",
           "document_scope_set", "document_delete", "clean_scope", "scope_tokens", "Scope", "may_manage", "managed_store_ids",
           "timezone"]
