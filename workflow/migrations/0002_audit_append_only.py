from django.db import migrations

SQL = """
CREATE OR REPLACE FUNCTION workflow_audit_append_only() RETURNS trigger AS $$
BEGIN
    -- Deleting a user may null the actor (the username copy stays); nothing else may change.
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL
       AND (to_jsonb(NEW) - 'actor_id') = (to_jsonb(OLD) - 'actor_id') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'workflow_auditlog is append-only (% refused)', TG_OP;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER workflow_audit_append_only BEFORE UPDATE OR DELETE ON workflow_auditlog
FOR EACH ROW EXECUTE FUNCTION workflow_audit_append_only();
"""
REVERSE = "DROP TRIGGER IF EXISTS workflow_audit_append_only ON workflow_auditlog; DROP FUNCTION IF EXISTS workflow_audit_append_only();"


class Migration(migrations.Migration):
    dependencies = [("workflow", "0001_workflow")]
    operations = [migrations.RunSQL(SQL, REVERSE)]
