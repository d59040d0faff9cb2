"""Domain errors that are not Django's own (ValidationError / PermissionDenied cover the rest)."""


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
