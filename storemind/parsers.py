"""The API's only parser: JSON whose strings PostgreSQL can store, nested no deeper than a
request of ours ever is."""
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.validation import find_bad_text, text_problem

MAX_DEPTH = 32  # the deepest request body (a POS batch: orders → lines → fields) is 4


def json_depth(data) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (iterative: any depth)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _where(python_message: str) -> str:
    """Where Python's JSON parser stopped, in Chinese (its own words are English, and one of them
    told the client to call sys.set_int_max_str_digits())."""
    if "int_max_str_digits" in python_message or "Exceeds the limit" in python_message:
        return "：数字的位数太多"
    found = re.search(r"line (\d+) column (\d+)", python_message)
    return f"（第 {found[1]} 行第 {found[2]} 列附近）" if found else ""


class _DuplicateKey(ValueError):
    pass


class _Charset(Exception):
    pass


def _no_duplicate_keys(pairs):
    """「{"external_id": "A", "external_id": "B"}」 was stored as B, silently: which one the POS
    meant is unknowable, so it is a 400."""
    data = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKey(key)
        data[key] = value
    return data


class StrictJSONParser(JSONParser):
    """A body that is not JSON, or nests more than MAX_DEPTH levels (Python's parser recurses
    and gave a 500 near a thousand), is a 400 in Chinese. A NUL byte or a lone surrogate (legal
    in JSON as \\u0000 / \\ud800) is a 400 naming the field, before any view code runs."""

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = dict(parser_context or {})
        if str(parser_context.get("encoding") or settings.DEFAULT_CHARSET).lower().replace("_", "-") in ("utf-8", "utf8"):
            parser_context["encoding"] = "utf-8-sig"  # a leading BOM (Windows tools write one) is not an error
        try:
            data = self._load(stream, parser_context)
        except _DuplicateKey as exc:
            key = str(exc)[:64]
            named = f"「{key}」" if not text_problem(key) else ""  # a lone surrogate would not render
            raise ParseError(f"请求体的同一个对象里字段{named}出现了两次，不知道该用哪一个。") from None
        except _Charset as exc:
            raise ParseError(f"不支持 Content-Type 里的字符集「{exc}」：请用 UTF-8。") from None
        except RecursionError:
            raise ParseError(f"请求体的 JSON 嵌套太深（最多 {MAX_DEPTH} 层）。") from None
        except ParseError as exc:
            if "codec can't decode" in str(exc.detail):  # DRF wraps the UnicodeDecodeError
                encoding = parser_context["encoding"].removesuffix("-sig").upper()
                raise ParseError(f"请求体不是 {encoding} 编码的文本（或 Content-Type 的 charset 写错了）。") from None
            raise ParseError(f"请求体不是合法的 JSON{_where(str(exc.detail))}。") from None
        if json_depth(data) > MAX_DEPTH:
            raise ParseError(f"请求体的 JSON 嵌套太深（最多 {MAX_DEPTH} 层）。")
        bad = find_bad_text(data)
        if bad:
            raise ValidationError({bad[0]: [bad[1]]})
        return data

    def _load(self, stream, parser_context):
        """DRF's JSONParser.parse, with duplicate keys refused."""
        import codecs

        from rest_framework.parsers import get_encoding
        from rest_framework.utils import json as drf_json

        try:
            # DRF's check: only text encodings (a charset=zlib_codec body would inflate past the size limit).
            encoding = get_encoding(parser_context)
        except ParseError:
            raise _Charset(str(parser_context.get("encoding"))[:40]) from None
        try:
            decoded = codecs.getreader(encoding)(stream)
            return drf_json.load(decoded, object_pairs_hook=_no_duplicate_keys,
                                 parse_constant=drf_json.strict_constant if self.strict else None)
        except _DuplicateKey:
            raise
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
