"""Two holes in 0006. A store's zone was checked only by the admin form's validator: a store
created or changed any other way with a zone PostgreSQL does not know made every order it sent
fail in the rollup's trigger (the POS read 「数据超出允许范围」). A trigger on ops_store now refuses
such a zone with a message that names it. And an order written before its store row (foreign keys
are checked at commit) was left out of the rollup by 0006's inner join; it is counted on the
stores' default zone instead."""
from django.db import migrations

# Frozen: the SQL this migration ran. The store's zone, or the field's default when the store row
# is not there yet.
STORE_DAY = "((n.created_at AT TIME ZONE COALESCE(s.timezone, 'Asia/Shanghai')) - interval '6 hours')::date"

FORWARD = f"""
CREATE OR REPLACE FUNCTION ops_storedaysales_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
        SELECT n.store_id, {STORE_DAY}, SUM(n.total), COUNT(*)
        FROM new_rows n LEFT JOIN ops_store s ON s.id = n.store_id WHERE n.status = 'paid'
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (day, store_id) DO UPDATE
        SET revenue = ops_storedaysales.revenue + EXCLUDED.revenue, orders = ops_storedaysales.orders + EXCLUDED.orders;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
        SELECT n.store_id, {STORE_DAY}, -SUM(n.total), -COUNT(*)
        FROM old_rows n LEFT JOIN ops_store s ON s.id = n.store_id WHERE n.status = 'paid'
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (day, store_id) DO UPDATE
        SET revenue = ops_storedaysales.revenue + EXCLUDED.revenue, orders = ops_storedaysales.orders + EXCLUDED.orders;
    ELSE
        INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
        SELECT store_id, day, SUM(total), SUM(k) FROM (
            SELECT n.store_id, {STORE_DAY} AS day, n.total, 1 AS k
            FROM new_rows n LEFT JOIN ops_store s ON s.id = n.store_id WHERE n.status = 'paid'
            UNION ALL
            SELECT n.store_id, {STORE_DAY} AS day, -n.total, -1 AS k
            FROM old_rows n LEFT JOIN ops_store s ON s.id = n.store_id WHERE n.status = 'paid'
        ) delta
        GROUP BY 1, 2 HAVING SUM(total) <> 0 OR SUM(k) <> 0 ORDER BY 1, 2
        ON CONFLICT (day, store_id) DO UPDATE
        SET revenue = ops_storedaysales.revenue + EXCLUDED.revenue, orders = ops_storedaysales.orders + EXCLUDED.orders;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION ops_store_check_timezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = NEW.timezone) THEN
        RAISE EXCEPTION '门店 % 的时区「%」不是 PostgreSQL 认识的时区（如 Asia/Shanghai）', NEW.code, NEW.timezone
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER ops_store_timezone_known BEFORE INSERT OR UPDATE OF timezone ON ops_store
    FOR EACH ROW EXECUTE FUNCTION ops_store_check_timezone();
"""


def reverse_sql() -> str:
    import importlib

    previous = importlib.import_module("ops.migrations.0006_store_time_zones")
    start = previous.FORWARD.index("CREATE OR REPLACE FUNCTION ops_storedaysales_apply()")
    end = previous.FORWARD.index("CREATE OR REPLACE FUNCTION ops_storedaysales_rezone()")
    return ("DROP TRIGGER IF EXISTS ops_store_timezone_known ON ops_store;\n"
            "DROP FUNCTION IF EXISTS ops_store_check_timezone();\n" + previous.FORWARD[start:end])


class Migration(migrations.Migration):

    dependencies = [
        ('ops', '0006_store_time_zones'),
    ]

    operations = [
        migrations.RunSQL(FORWARD, reverse_sql=reverse_sql()),
    ]
