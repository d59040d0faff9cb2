"""The trading day on each store's own clock: the daily rollup's trigger reads the store's time
zone (ops_store.timezone) instead of Asia/Shanghai for every store, a store whose zone changes
has its days rebuilt by a trigger on ops_store, and the rollup is rebuilt from the orders in
this one transaction (the lock on ops_order keeps writers out). A store's zone must be an IANA
name (the field's validator): PostgreSQL is handed it for every order the store sends."""
import importlib

from django.db import migrations, models

import ops.trading_day

# Frozen like 0005's: the SQL this migration ran. Its reverse is 0005's function, imported from
# that frozen record.
STORE_DAY = "((n.created_at AT TIME ZONE s.timezone) - interval '6 hours')::date"

FORWARD = f"""
CREATE OR REPLACE FUNCTION ops_storedaysales_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
        SELECT n.store_id, {STORE_DAY}, SUM(n.total), COUNT(*)
        FROM new_rows n JOIN ops_store s ON s.id = n.store_id WHERE n.status = 'paid'
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (day, store_id) DO UPDATE
        SET revenue = ops_storedaysales.revenue + EXCLUDED.revenue, orders = ops_storedaysales.orders + EXCLUDED.orders;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
        SELECT n.store_id, {STORE_DAY}, -SUM(n.total), -COUNT(*)
        FROM old_rows n JOIN ops_store s ON s.id = n.store_id WHERE n.status = 'paid'
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (day, store_id) DO UPDATE
        SET revenue = ops_storedaysales.revenue + EXCLUDED.revenue, orders = ops_storedaysales.orders + EXCLUDED.orders;
    ELSE
        INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
        SELECT store_id, day, SUM(total), SUM(k) FROM (
            SELECT n.store_id, {STORE_DAY} AS day, n.total, 1 AS k
            FROM new_rows n JOIN ops_store s ON s.id = n.store_id WHERE n.status = 'paid'
            UNION ALL
            SELECT n.store_id, {STORE_DAY} AS day, -n.total, -1 AS k
            FROM old_rows n JOIN ops_store s ON s.id = n.store_id WHERE n.status = 'paid'
        ) delta
        GROUP BY 1, 2 HAVING SUM(total) <> 0 OR SUM(k) <> 0 ORDER BY 1, 2
        ON CONFLICT (day, store_id) DO UPDATE
        SET revenue = ops_storedaysales.revenue + EXCLUDED.revenue, orders = ops_storedaysales.orders + EXCLUDED.orders;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION ops_storedaysales_rezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows s JOIN old_rows o ON o.id = s.id WHERE s.timezone IS DISTINCT FROM o.timezone) THEN
        RETURN NULL;
    END IF;
    -- Orders written while the days are rebuilt would be counted on the old clock: keep them out.
    LOCK TABLE ops_order IN SHARE MODE;
    DELETE FROM ops_storedaysales d USING new_rows s JOIN old_rows o ON o.id = s.id
    WHERE d.store_id = s.id AND s.timezone IS DISTINCT FROM o.timezone;
    INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
    SELECT n.store_id, {STORE_DAY}, SUM(n.total), COUNT(*)
    FROM ops_order n JOIN new_rows s ON s.id = n.store_id JOIN old_rows o ON o.id = s.id
    WHERE n.status = 'paid' AND s.timezone IS DISTINCT FROM o.timezone
    GROUP BY 1, 2;
    RETURN NULL;
END $$;

CREATE TRIGGER ops_store_daysales_rezone AFTER UPDATE ON ops_store
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ops_storedaysales_rezone();

LOCK TABLE ops_order IN SHARE MODE;
DELETE FROM ops_storedaysales;
INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
SELECT n.store_id, {STORE_DAY}, SUM(n.total), COUNT(*)
FROM ops_order n JOIN ops_store s ON s.id = n.store_id WHERE n.status = 'paid' GROUP BY 1, 2;
"""


def reverse_sql() -> str:
    previous = importlib.import_module("ops.migrations.0005_trading_day")
    return ("DROP TRIGGER IF EXISTS ops_store_daysales_rezone ON ops_store;\n"
            "DROP FUNCTION IF EXISTS ops_storedaysales_rezone();\n" + previous.function_sql(previous.TRADING_DAY))


class Migration(migrations.Migration):

    dependencies = [
        ('ops', '0005_trading_day'),
    ]

    operations = [
        migrations.AlterField(
            model_name='store',
            name='timezone',
            field=models.CharField(default='Asia/Shanghai', help_text='IANA 时区，如 Asia/Shanghai；营业日按本店时间 06:00 到次日 06:00 计', max_length=64, validators=[ops.trading_day.validate_time_zone], verbose_name='时区'),
        ),
        migrations.RunSQL(FORWARD, reverse_sql=reverse_sql()),
    ]
