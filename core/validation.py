"""Input limits shared by every entry point (API, chat page, MCP, services).

One home for what a text, an amount, a quantity or a timestamp may be, so a value that
PostgreSQL would refuse (NUL bytes, lone surrogates, numeric overflow, impossible dates)
is a 400 naming the field, never a 500 from the database. Never touches the database.
"""
from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ValidationError
from django.utils.dateparse import parse_datetime

MAX_MONEY = Decimal("100000000")  # 10^8
MAX_QTY = 100_000
MAX_OFFSET = timedelta(hours=14)  # the widest real UTC offsets are -12:00 and +14:00
MIN_YEAR, MAX_YEAR = 2000, 2100
_SURROGATE = re.compile("[\ud800-\udfff]")
_OFFSET = re.compile(r"([+-])(\d{2}):?(\d{2})$")


def text_problem(value: str) -> str | None:
    """Why PostgreSQL (UTF-8 text) cannot store this string, or None."""
    if "\x00" in value:
        return "不能包含 NUL 字符（\\u0000）。"
    if _SURROGATE.search(value):
        return "包含无效的 Unicode 字符（单独的代理项，如 \\ud800）。"
    return None


# Characters that change nothing a person reads: zero-width spaces and joiners, the BOM, soft
# hyphens, and spaces between two Chinese characters. 「福\u200b田店」 and 「福 田 店」 were not read as
# 福田店 (the answer silently used the asker's own store); 「\u200b\u200b」 searched as if it said something.
_INVISIBLE = re.compile("[\u200b-\u200f\u2060\ufeff\u00ad]")
_SPACE_IN_CHINESE = re.compile(r"(?<=[\u4e00-\u9fff])[ \u3000]+(?=[\u4e00-\u9fff])")


# What a POS number may be: printable ASCII, no space at either end (the schema states this pattern).
EXTERNAL_ID = re.compile(r"^[!-~](?:[ -~]{0,62}[!-~])?$")


MAX_KEY_LENGTH = 64  # an idempotency key (POS order or adjustment number); the models' fields are as long


def key_problem(value) -> str | None:
    """Why `value` cannot be an idempotency key (a POS order or adjustment number), or None.
    The key is compared byte for byte, so what reads the same must be written the same:
    「TRIALB-ZW\u200b1」 and 「ＴＲＩＡＬＢ－１」 were each stored as a second sale next to the
    plain number. Such keys are refused, not rewritten: the POS must learn to send one form."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_KEY_LENGTH:
        return f"必须是 1 到 {MAX_KEY_LENGTH} 个字符的字符串。"
    if value != value.strip():
        return "开头或结尾不能有空格。"
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value):
        return "不能包含不可见字符或控制字符（如零宽空格 \\u200b）。"
    if unicodedata.normalize("NFKC", value) != value:
        return f"含有全角或兼容字符，请改用半角：「{unicodedata.normalize('NFKC', value)}」。"
    if not EXTERNAL_ID.fullmatch(value):
        return "只能由半角字母、数字、空格和符号组成（POS 单号）。"
    return None


def as_read(text: str) -> str:
    """A question or query as a person reads it (see above), stripped."""
    return _SPACE_IN_CHINESE.sub("", _INVISIBLE.sub("", text)).strip()


def find_bad_text(data, path: str = "") -> tuple[str, str] | None:
    """The first (field path, reason) of a string in a JSON value that cannot be stored.
    Keys are checked as well as values; paths look like ``orders[3].lines[0].sku``."""
    if isinstance(data, str):
        problem = text_problem(data)
        return (path or "non_field_errors", problem) if problem else None
    if isinstance(data, dict):
        for key, value in data.items():
            key_s = str(key)
            sub = f"{path}.{key_s}" if path else key_s
            if text_problem(key_s):
                return (path or "non_field_errors", f"字段名{text_problem(key_s)}")
            found = find_bad_text(value, sub)
            if found:
                return found
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            found = find_bad_text(value, f"{path}[{i}]")
            if found:
                return found
    return None


def reject_bad_text(data, path: str = "") -> None:
    found = find_bad_text(data, path)
    if found:
        raise ValidationError({found[0]: [found[1]]})


def unknown_fields(data: dict, allowed: set[str] | frozenset[str]) -> list[str]:
    return sorted(str(k) for k in data if k not in allowed)


def reject_unknown(data: dict, allowed, field: str = "non_field_errors") -> None:
    extra = unknown_fields(data, allowed)
    if extra:
        # 「确认」 takes no fields: 「（允许：）」 with an empty list read like a bug.
        accepts = f"允许：{'、'.join(sorted(allowed))}" if allowed else "这个接口不接受任何字段，请求体留空或发 {}"
        raise ValidationError({field: [f"不认识的字段：{'、'.join(extra)}（{accepts}）。"]})


def money_problem(value) -> tuple[Decimal | None, str | None]:
    """Parse an amount: at most 2 decimals (never rounded) and 0 ≤ |value| ≤ 10^8."""
    if isinstance(value, bool) or value is None or value == "" or not isinstance(value, (str, int, float, Decimal)):
        return None, "必须是数字。"
    try:
        d = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None, "必须是数字。"
    if not d.is_finite():
        return None, "必须是数字。"
    if abs(d) > MAX_MONEY:
        return None, f"金额不能超过 {MAX_MONEY:,}。"
    if d != d.quantize(Decimal("0.01"), rounding="ROUND_DOWN"):
        return None, "最多两位小数（不会替你四舍五入）。"
    return d, None


def qty_problem(value, *, allow_negative: bool = False) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return "必须是整数。"
    if allow_negative:
        if value == 0 or abs(value) > MAX_QTY:
            return f"必须是非零整数，绝对值不超过 {MAX_QTY}。"
    elif not 1 <= value <= MAX_QTY:
        return f"必须是 1 到 {MAX_QTY} 的整数。"
    return None


def parse_timestamp(value) -> tuple[datetime | None, str | None]:
    """An ISO 8601 timestamp with a real calendar date, an offset within ±14:00 and a year
    in 2000–2100. Naive values are returned naive (the caller knows the store's zone)."""
    hint = "必须是 ISO 8601 时间，如 2026-11-20T21:15:00+08:00。"
    if not isinstance(value, str) or len(value) > 40 or text_problem(value) or not re.search(r"\d[T ]\d{2}:\d{2}", value):
        return None, hint
    m = _OFFSET.search(value.strip())
    if m and (int(m.group(2)) * 60 + int(m.group(3)) > MAX_OFFSET.total_seconds() // 60 or int(m.group(3)) >= 60):
        return None, "时区偏移必须在 -14:00 到 +14:00 之间。"
    try:
        parsed = parse_datetime(value.strip())
    except (ValueError, OverflowError):
        return None, "不是有效的日期时间（例如 2 月没有 30 日）。"
    if parsed is None:
        return None, hint
    if not MIN_YEAR <= parsed.year <= MAX_YEAR:
        return None, f"年份必须在 {MIN_YEAR} 到 {MAX_YEAR} 之间。"
    try:
        if parsed.tzinfo is not None:
            parsed.utcoffset()
            parsed.timestamp()
    except (ValueError, OverflowError):
        return None, "不是有效的日期时间。"
    return parsed, None


def strict_positive_int(raw: str | None) -> int | None:
    """ASCII digits only: `str.isdigit()` accepts '²', which int() then refuses."""
    if raw is None or not re.fullmatch(r"[0-9]{1,6}", raw):
        return None
    return int(raw)


def known_query(params, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
    """The query parameters a read endpoint knows. An unknown, repeated or empty one is a 400,
    never ignored: 「?stroe=天河店」 silently answered for every store."""
    unknown = unknown_fields(params, {*allowed, "format"})  # DRF's own ?format=json
    if unknown:
        raise ValidationError({name: [f"不认识的参数；可用的参数：{'、'.join(allowed)}。"] for name in unknown})
    # 「?store=GZ-TH&store=SZ-FT」 answered for 福田 alone (the last value won, silently).
    repeated = [k for k in allowed if len(params.getlist(k)) > 1] if hasattr(params, "getlist") else []
    if repeated:
        raise ValidationError({name: ["这个参数只能给一次。"] for name in repeated})
    # 「?status=」 answered as if no filter were given: a client's blank filter read as 「all」.
    empty = [k for k in allowed if k in params and str(params.get(k)).strip() == ""]
    if empty:
        # 「?q=」 on search was told to leave the parameter out, though q is the one it needs.
        raise ValidationError({name: ["参数值不能为空。" if name in required else "参数值不能为空；不需要这个筛选时请不要传这个参数。"]
                               for name in empty})
    return {k: params[k] for k in allowed if params.get(k) is not None}


def limit_param(value, default: int, maximum: int) -> int:
    if value in (None, ""):
        return default
    number = strict_positive_int(str(value))  # 「?limit=²」 was a 500
    if number is None or not 1 <= number <= maximum:
        raise ValidationError({"limit": [f"limit 必须是 1 到 {maximum} 之间的整数。"]})
    return number
