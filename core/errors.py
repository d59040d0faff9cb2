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
