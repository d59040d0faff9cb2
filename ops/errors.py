from core.errors import Conflict, NotFound

__all__ = ["Conflict", "NotFound"]
