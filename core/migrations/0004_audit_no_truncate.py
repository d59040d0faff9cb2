"""TRUNCATE on the audit log is refused too: the row triggers guard UPDATE and DELETE, but
TRUNCATE fires no row trigger, only a statement one."""
from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION core_audit_no_truncate() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only: TRUNCATE is refused';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER core_audit_no_truncate BEFORE TRUNCATE ON workflow_auditlog
FOR EACH STATEMENT EXECUTE FUNCTION core_audit_no_truncate();
"""
REVERSE = "DROP TRIGGER IF EXISTS core_audit_no_truncate ON workflow_auditlog; DROP FUNCTION IF EXISTS core_audit_no_truncate();"


class Migration(migrations.Migration):
    dependencies = [("core", "0003_roles_section_aliases")]
    operations = [migrations.RunSQL(FORWARD, REVERSE)]
