"""Domain errors that are not Django's own (ValidationError / PermissionDenied cover the rest), and
the one map from a refusal to what every channel answers (refusal_of)."""
from __future__ import annotations

from dataclasses import dataclass, field


class Conflict(Exception):
    """The request contradicts what is already recorded (HTTP 409)."""

    def __init__(self, message: str, **extra):
        super().__init__(message)
        self.message = message
        self.extra = extra


class NotFound(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# What every channel says while the database cannot be reached (REST and pages: a 503 with
# Retry-After; MCP: a JSON-RPC error, with 503 over HTTP).
DATABASE_DOWN = "数据库暂时不可用，请稍后重试。"
RETRY_AFTER_SECONDS = 5


def is_database_outage(exc: BaseException) -> bool:
    from django.db import InterfaceError, OperationalError

    return isinstance(exc, (OperationalError, InterfaceError))


def messages_of(exc) -> list[str]:
    """Every message of a ValidationError: field by field when it has fields, else in order."""
    return [m for ms in getattr(exc, "message_dict", {"": exc.messages}).values() for m in ms]


def message_text(exc) -> str:
    """One line a person reads: a ValidationError's messages joined by 「；」; any other refusal's
    own words (a PermissionDenied without any: 「没有权限。」)."""
    from django.core.exceptions import ValidationError

    if isinstance(exc, ValidationError):
        return "；".join(messages_of(exc))
    return str(exc) or "没有权限。"


@dataclass(frozen=True)
class Refusal:
    """How every channel reports a refusal: its HTTP status (REST, pages, HTMX; MCP maps 400 and
    503 to JSON-RPC errors and the rest to an error result), the words a person reads, and
    what a Conflict adds (the ids that clash)."""

    status: int
    message: str
    extra: dict = field(default_factory=dict)


def refusal_of(exc: BaseException) -> Refusal | None:
    """The one map from what services raise to what a channel answers; None: not a refusal
    (a bug, reported as such by the channel)."""
    from django.core.exceptions import PermissionDenied, ValidationError

    if isinstance(exc, ValidationError):
        return Refusal(400, message_text(exc))
    if isinstance(exc, PermissionDenied):
        return Refusal(403, message_text(exc))
    if isinstance(exc, NotFound):
        return Refusal(404, exc.message)
    if isinstance(exc, Conflict):
        return Refusal(409, exc.message, exc.extra)
    if is_database_outage(exc):
        return Refusal(503, DATABASE_DOWN)
    return None
