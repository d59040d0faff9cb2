"""What a file is, by its bytes, and whether it is safe to open: before any parser reads it.

The type comes from the content, never the extension (a renamed .exe is refused). Office files
are ZIP containers: refused when encrypted (an OLE container with EncryptedPackage), macro-
enabled (vbaProject.bin, a macroEnabled content type), a ZIP bomb (too many entries, too large
unpacked, a compression ratio no document has), or carrying a DTD in a part (entity expansion).
A ZIP of documents is unpacked in memory with the same limits, and no member name may leave
its folder.
"""
from __future__ import annotations

import io
import zipfile
from pathlib import PurePosixPath

from django.conf import settings

from .base import FileRejected, unreadable

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
MAX_ENTRIES = 2000
MAX_RATIO = 200  # unpacked ÷ packed, per member (text XML compresses ~10–30×)
EXTENSIONS = {"docx": "docx", "pdf": "pdf", "xlsx": "xlsx", "csv": "csv", "pptx": "pptx", "md": "md", "markdown": "md",
              "txt": "txt", "html": "html", "htm": "html", "zip": "zip"}
LABELS = {"docx": "Word", "pdf": "PDF", "xlsx": "Excel", "csv": "CSV", "pptx": "PowerPoint", "md": "Markdown", "txt": "文本",
          "html": "网页", "zip": "ZIP"}


def max_upload_bytes() -> int:
    return int(settings.SM_UPLOAD_MAX_MB) * 1024 * 1024


def _extension(name: str) -> str:
    return EXTENSIONS.get(PurePosixPath((name or "").lower()).suffix.lstrip("."), "")


def check_zip(data: bytes, *, what: str = "文件") -> zipfile.ZipFile:
    """The ZIP container, once its members are safe to read."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise unreadable(what, exc, code="corrupt") from None
    if len(members) > MAX_ENTRIES:
        raise FileRejected(f"{what}里的条目太多（{len(members)} 个），不像是正常文档。", code="zip_bomb")
    total = 0
    for m in members:
        name = m.filename.replace("\\", "/")
        if name.startswith("/") or ".." in PurePosixPath(name).parts or ":" in name.split("/")[0]:
            raise FileRejected(f"{what}里有不安全的路径「{m.filename}」。", code="path_traversal")
        if m.flag_bits & 0x1:
            raise FileRejected(f"{what}有密码保护，请先去掉密码再上传。", code="encrypted")
        total += m.file_size
        if m.compress_size and m.file_size / m.compress_size > MAX_RATIO and m.file_size > 1024 * 1024:
            raise FileRejected(f"{what}的压缩比异常（疑似压缩炸弹），已拒绝。", code="zip_bomb")
    if total > 4 * max_upload_bytes():
        raise FileRejected(f"{what}解压后超过 {4 * settings.SM_UPLOAD_MAX_MB} MB，已拒绝。", code="zip_bomb")
    return archive


def _office_kind(archive: zipfile.ZipFile) -> str | None:
    names = set(archive.namelist())
    try:
        content_types = archive.read("[Content_Types].xml").decode("utf-8", "replace") if "[Content_Types].xml" in names else ""
    except (zipfile.BadZipFile, OSError, RuntimeError) as exc:
        raise unreadable("文件", exc, code="corrupt") from None
    if any(n.lower().endswith("vbaproject.bin") for n in names) or "macroenabled" in content_types.lower():
        raise FileRejected("这是启用了宏的 Office 文件（.docm/.xlsm/.pptm），出于安全考虑不接收；请另存为不带宏的格式再上传。", code="macro")
    for part, kind in (("word/document.xml", "docx"), ("xl/workbook.xml", "xlsx"), ("ppt/presentation.xml", "pptx")):
        if part in names:
            for n in names:
                if n.endswith(".xml") or n.endswith(".rels"):
                    head = archive.read(n)[:4096]
                    if b"<!DOCTYPE" in head or b"<!ENTITY" in head:
                        raise FileRejected("文件里含有 XML 实体声明（Office 文档不会有），已拒绝。", code="malformed")
            return kind
    return None


def sniff(name: str, data: bytes) -> str:
    """The file's kind by its content (docx, pdf, xlsx, pptx, zip, csv, md, txt, html), or FileRejected."""
    if not data:
        raise FileRejected("文件是空的。", code="empty")
    if len(data) > max_upload_bytes():
        raise FileRejected(f"文件超过 {settings.SM_UPLOAD_MAX_MB} MB 的上限（{len(data) / 1024 / 1024:.1f} MB）。", code="too_large")
    ext = _extension(name)
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(OLE_MAGIC):
        if b"E\x00n\x00c\x00r\x00y\x00p\x00t\x00e\x00d\x00P\x00a\x00c\x00k\x00a\x00g\x00e" in data:
            raise FileRejected("文件有密码保护（已加密），请先在 Office 里去掉密码再上传。", code="encrypted")
        raise FileRejected("这是旧版 Office 格式（.doc/.xls/.ppt），请另存为 .docx/.xlsx/.pptx 再上传。", code="unsupported")
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
        archive = check_zip(data)
        kind = _office_kind(archive)
        if kind:
            return kind
        if ext == "zip" or not ext or ext in ("docx", "xlsx", "pptx"):
            if ext in ("docx", "xlsx", "pptx"):
                raise FileRejected(f"文件扩展名是 .{ext}，但内容不是 {LABELS[ext]} 文档。", code="wrong_type")
            return "zip"
        raise FileRejected(f"文件扩展名是 .{ext}，内容却是 ZIP 压缩包。", code="wrong_type")
    if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise FileRejected("无法识别的二进制文件：支持 Word、PDF、Excel、CSV、PowerPoint、Markdown、TXT 和 HTML。", code="wrong_type")
    if ext in ("docx", "xlsx", "pptx", "pdf", "zip"):
        raise FileRejected(f"文件扩展名是 .{ext}，内容却是纯文本，不是 {LABELS[ext]} 文件。", code="wrong_type")
    head = data[:2048].lower()
    if ext == "html" or head.lstrip().startswith((b"<!doctype html", b"<html")):
        return "html"
    return ext if ext in ("csv", "md", "txt") else "txt"


def decode_text(data: bytes) -> str:
    """Text in UTF-8 (with or without BOM), UTF-16 with a BOM, or GB18030/GBK (what Chinese
    Windows saves), detected; never silently garbled."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise FileRejected("无法识别文本的编码，请另存为 UTF-8 再上传。", code="encoding")
    return str(best)


def unpack_zip(data: bytes) -> list[tuple[str, bytes]]:
    """The documents inside a ZIP of documents: (name, bytes), folders and hidden files left out."""
    archive = check_zip(data, what="压缩包")
    out = []
    for m in archive.infolist():
        name = m.filename.replace("\\", "/")
        base = PurePosixPath(name).name
        if m.is_dir() or not base or base.startswith(("._", ".")) or "__MACOSX" in name:
            continue
        if m.file_size > max_upload_bytes():
            raise FileRejected(f"压缩包里的「{base}」超过 {settings.SM_UPLOAD_MAX_MB} MB 的上限。", code="too_large")
        try:
            out.append((name, archive.read(m)))
        except (zipfile.BadZipFile, OSError, RuntimeError, EOFError) as exc:
            raise unreadable(f"压缩包里的「{base}」", exc, code="corrupt") from None
    if not out:
        raise FileRejected("压缩包里没有文件。", code="empty")
    return out
