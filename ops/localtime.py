"""Moved to core.localtime (the audit log in core needs it); kept for imports in flight."""
from core.localtime import local_time, store_zone

__all__ = ["local_time", "store_zone"]
