"""Test-fixture helpers only; the product never imports this module."""
from contextlib import contextmanager

AUDIT_TABLE = "workflow_auditlog"  # core.AuditLog keeps the table it had before it moved to core
NO_TRUNCATE_TRIGGER = "core_audit_no_truncate"


@contextmanager
def audit_truncate_allowed(cursor):
    """Let a test fixture TRUNCATE the audit log (a fresh test day, an empty production
    database): the statement trigger is switched off around it and on again."""
    cursor.execute(f"ALTER TABLE {AUDIT_TABLE} DISABLE TRIGGER {NO_TRUNCATE_TRIGGER}")
    try:
        yield cursor
    finally:
        cursor.execute(f"ALTER TABLE {AUDIT_TABLE} ENABLE TRIGGER {NO_TRUNCATE_TRIGGER}")
