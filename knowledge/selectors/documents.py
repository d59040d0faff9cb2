"""Documents as their readers and owners see them: the list, one document's detail and versions,
its file, and the aliases with their status."""
from __future__ import annotations

import difflib
import re

from ..models import Document
from .index import index_cached


def aliases_with_status(*, include_corpus: bool = False) -> list[dict]:
    """Question aliases with whether their section still exists (an orphan otherwise), for
    the admin and `export_aliases`. Ordered by document, section, question."""
    from django.utils import timezone

    from ..models import Chunk, Document, SectionAlias

    aliases = SectionAlias.objects.select_related("created_by").order_by("document_path", "section_path", "id")
    if not include_corpus:
        aliases = aliases.filter(source=SectionAlias.Source.ADMIN)
    live = set(Chunk.objects.values_list("document__path", "section_path").distinct())
    titles = dict(Document.objects.values_list("path", "title"))
    return [{
        "id": a.pk, "document_path": a.document_path, "document_title": titles.get(a.document_path, a.document_path),
        "section_path": a.section_path, "question": a.question, "source": a.source,
        "orphan": (a.document_path, a.section_path) not in live,
        "who": a.created_by.username if a.created_by else "制度文档",
        "when": timezone.localtime(a.created_at).strftime("%Y-%m-%d"),
    } for a in aliases]


def documents_for(user):
    """The documents `user` may read (audience and scope), and those they manage (drafts too)."""
    from ..documents import managed_store_ids

    readable = Document.objects.visible_to(user).filter(current_version__isnull=False)
    ids = managed_store_ids(user) if user is not None else []
    if ids is None:  # head office: every document
        managed = Document.objects.filter(archived_at__isnull=True)
    elif ids:
        from ops.models import Store

        cities = set(Store.objects.filter(pk__in=ids).values_list("city", flat=True))
        tokens = [f"store:{i}" for i in ids] + [f"city:{c}" for c in cities]
        managed = Document.objects.filter(archived_at__isnull=True, scope__overlap=tokens).exclude(scope=[])
    else:
        managed = Document.objects.none()
    return (readable | managed).distinct().select_related("current_version").prefetch_related("scope_stores").order_by("title", "pk")


def titles_closed_to(titles, visibility) -> list[str]:
    """Of the document titles an answer names (「见《店长手册》」), those of published documents
    the reader's audiences do not include: a pointer they cannot follow."""
    if not titles:
        return []
    named = Document.objects.filter(title__in=set(titles), current_version__isnull=False, archived_at__isnull=True)
    readable = set(named.visible_to(visibility).values_list("title", flat=True))
    closed = set(named.values_list("title", flat=True)) - readable
    return [t for t in dict.fromkeys(titles) if t in closed]


def scope_label(tokens) -> str:
    """A chunk's scope tokens (knowledge.services.writing.scope_tokens) as a reader names them:
    「广州天河店」, 「深圳的门店」 ('' for every store)."""
    from ops.selectors import store_candidates

    names = {f"store:{store.pk}": store.name for _, store in store_candidates()}  # read once per question
    parts = [names.get(t, "") if t.startswith("store:") else f"{t.removeprefix('city:')}的门店" for t in tokens or ()]
    return "、".join(p for p in parts if p)


def status_of(document: Document) -> str:
    if document.current_version is not None:
        return document.current_version.status
    latest = document.versions.order_by("-number").first()
    return latest.status if latest else "draft"


def document_summary(document: Document, user) -> dict:
    from ..documents import may_manage

    return {
        "id": document.pk, "title": document.title, "status": status_of(document),
        "version": document.current_version.number if document.current_version else None,
        "audience": document.audience, "cities": list(document.scope_cities or []),
        "stores": [s.code for s in document.scope_stores.all()], "source": document.source,
        "chunks": document.chunks.count(), "can_manage": bool(user is not None and may_manage(user, document)),
    }


def _version_summary(v) -> dict:
    return {"version": v.number, "status": v.status, "status_label": v.get_status_display(), "file": v.original_name, "kind": v.kind,
            "sections": sum(1 for s in v.sections if s.get("enabled", True)), "chunks": v.chunks, "progress": v.progress,
            "error": v.error, "uploaded_at": v.created_at, "published_at": v.published_at, "diff": v.diff,
            "edits_undone": edits_undone(v)}


def _readable_or_not_found(user, pk: int) -> Document:
    """The document, when the user may read or manage it; else "not found", exactly like one that
    does not exist, with a refusal on the audit log when it does (another store's document)."""
    from core.audit import audit_denial
    from core.errors import NotFound

    document = documents_for(user).filter(pk=pk).first()
    if document is None:
        other = Document.objects.filter(pk=pk, archived_at__isnull=True).first()
        if other is not None and user is not None and getattr(user, "is_authenticated", False):
            audit_denial(actor=user, attempt="document_read", reason="document outside the user's audience or stores", target=other)
        raise NotFound("没有这篇文档。")
    return document


def managed_document(user, pk, *, missing: str = "没有这篇文档（或它不归你管理）。") -> Document:
    """A document the user may manage (upload a version of, publish, delete): not deleted, and
    theirs to manage; else "not found", exactly like an id that names nothing (a second DELETE
    of the same id too). The REST upload, publish and delete read it here."""
    from core.errors import NotFound

    from ..documents import may_manage

    document = Document.objects.filter(pk=pk, archived_at__isnull=True).first() if pk else None
    if document is None or not may_manage(user, document):
        raise NotFound(missing)
    return document


def document_detail(pk: int, user) -> dict:
    """A document the user may read or manage (else not found, like one that does not exist)."""

    from ..documents import may_manage

    document = _readable_or_not_found(user, pk)
    manages = may_manage(user, document)
    versions = list(document.versions.order_by("-number"))
    if not manages:
        versions = [v for v in versions if v.status in ("published", "superseded")]
    shown = versions[0] if manages and versions else document.current_version
    return {**document_summary(document, user), "versions": [_version_summary(v) for v in versions],
            "sections": [{"index": i, **s} for i, s in enumerate(shown.sections)] if shown else []}


def document_file_for(user, pk: int, number: int | None):
    """(version, bytes) of a document's original file, for someone who may read or manage it."""
    from core.errors import NotFound

    from ..documents import may_manage

    document = _readable_or_not_found(user, pk)
    versions = document.versions.all()
    if not may_manage(user, document):
        versions = versions.filter(status__in=("published", "superseded"))
    version = versions.filter(number=number).first() if number else (document.current_version or versions.order_by("-number").first())
    if version is None or not hasattr(version, "file"):
        raise NotFound("没有这个版本的原文件。")
    return version, bytes(version.file.data)


def neighbour_sections(document_id: int, section_path: str) -> list[str]:
    """The section paths just before and after `section_path` in its document (reading order):
    what a reader of one section is likely to ask next."""
    from ..models import Chunk

    def read():
        return tuple(dict.fromkeys(Chunk.objects.filter(document_id=document_id).order_by("ordinal").values_list("section_path", flat=True)))

    paths = list(index_cached(("section_order", document_id), read))  # read once per process and ingest
    if section_path not in paths:
        return []
    i = paths.index(section_path)
    return [p for p in (paths[i + 1] if i + 1 < len(paths) else None, paths[i - 1] if i > 0 else None) if p]


def edits_undone(version) -> list[str]:
    """The sections corrected by hand in the version in use (the preview's edits) that this newer
    draft has otherwise or not at all: publishing it would undo those corrections. A re-uploaded
    Word file brought back 12 位客人 where the admin had set 10, and nothing said so."""
    current = version.document.current_version
    if current is None or current.pk == version.pk or version.number < current.number:
        return []
    edited = (current.meta or {}).get("edited_sections") or []
    corrected = {" > ".join(s["path"]): s.get("text", "") for s in current.sections}
    now = {" > ".join(s["path"]): s.get("text", "") for s in version.sections}
    return [path.split(" > ")[-1] for path in edited if path in corrected and now.get(path) != corrected[path]]


def changes_baseline(version):
    """What a version's preview marks its changes against: a draft newer than the version in use,
    against that one (what publishing it would change); the version in use or an older one,
    against the version before it (what it changed). An old version was compared with the one in
    use, and showed the later edits as its own, backwards."""
    current = version.document.current_version
    if current is not None and current.pk != version.pk and version.number > current.number:
        return current
    return version.document.versions.filter(number__lt=version.number).order_by("-number").first()


def changes_label(version, baseline) -> str:
    """How the preview names what a version is compared with: 「在用的版本 v2」 or 「上一版 v1」."""
    if baseline is None:
        return ""
    return f"在用的版本 v{baseline.number}" if baseline.pk == version.document.current_version_id else f"上一版 v{baseline.number}"


def section_changes(version, against=None) -> dict[int, list[dict]]:
    """For each section of `version` whose text differs from the same section (by heading path)
    of `against` (by default `changes_baseline`), the lines that changed: removed and added, each
    as segments with the characters that differ marked. The preview said 「修改 2 节」 and left the
    reader to find 0.25 → 0.28 兆帕 in the text."""
    current = against if against is not None else changes_baseline(version)
    if current is None or current.pk == version.pk:
        return {}
    before = {tuple(s["path"]): s.get("text", "") for s in current.sections}
    out: dict[int, list[dict]] = {}
    for index, section in enumerate(version.sections):
        old = before.get(tuple(section["path"]))
        new = section.get("text", "")
        if old is None or old == new:
            continue
        out[index] = line_changes(old, new)
    return out


def line_changes(old: str, new: str) -> list[dict]:
    """The lines of a section's text that changed: removed and added, each as segments with the
    characters that differ marked."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    lines: list[dict] = []
    # Lines are matched without their list numbers: a step inserted as 4 renumbers the steps after
    # it, which were shown as removed and added again (at a glance, deleted).
    matcher = difflib.SequenceMatcher(None, [_unnumbered(t) for t in old_lines], [_unnumbered(t) for t in new_lines], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:  # line for line: mark the characters that differ
            for a, b in zip(old_lines[i1:i2], new_lines[j1:j2]):
                removed, added = _marked(a, b)
                lines += [{"kind": "removed", "segments": removed}, {"kind": "added", "segments": added}]
            continue
        lines += [{"kind": "removed", "segments": [(False, t)]} for t in old_lines[i1:i2]]
        lines += [{"kind": "added", "segments": [(False, t)]} for t in new_lines[j1:j2]]
    return lines


_LIST_NUMBER = re.compile(r"^\s*(\d{1,3}[.、．)）]|[（(]\d{1,3}[)）]|第[一二三四五六七八九十\d]+步[：:，,]?)\s*")


def _unnumbered(line: str) -> str:
    return _LIST_NUMBER.sub("", line, count=1)


def _marked(a: str, b: str) -> tuple[list[tuple[bool, str]], list[tuple[bool, str]]]:
    old, new = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if a[i1:i2]:
            old.append((tag != "equal", a[i1:i2]))
        if b[j1:j2]:
            new.append((tag != "equal", b[j1:j2]))
    return old, new
