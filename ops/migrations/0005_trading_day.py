"""The daily rollup counts trading days, 06:00 to 06:00 local (ops.tools.DAY_STARTS_AT and
_bounds): a bar's night runs past midnight and its small hours belong to the evening before.
The trigger function of 0003 is replaced with that day and the rollup rebuilt from the
orders, in this one transaction (the function's lock on ops_order keeps writers out)."""
from django.db import migrations

# The function body is 0003's with the day expression as a parameter, copied rather than imported:
# a migration is a frozen record of what ran, and 0003 must keep building what it built (its
# calendar day is also this migration's reverse).
CALENDAR_DAY = "(created_at AT TIME ZONE 'Asia/Shanghai')::date"
TRADING_DAY = "((created_at AT TIME ZONE 'Asia/Shanghai') - interval '6 hours')::date"


def function_sql(day: str) -> str:
    return f"""
CREATE OR REPLACE FUNCTION ops_storedaysales_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
        SELECT store_id, {day}, SUM(total), COUNT(*) FROM new_rows WHERE status = 'paid'
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (day, store_id) DO UPDATE
        SET revenue = ops_storedaysales.revenue + EXCLUDED.revenue, orders = ops_storedaysales.orders + EXCLUDED.orders;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
        SELECT store_id, {day}, -SUM(total), -COUNT(*) FROM old_rows WHERE status = 'paid'
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (day, store_id) DO UPDATE
        SET revenue = ops_storedaysales.revenue + EXCLUDED.revenue, orders = ops_storedaysales.orders + EXCLUDED.orders;
    ELSE
        INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
        SELECT store_id, day, SUM(total), SUM(n) FROM (
            SELECT store_id, {day} AS day, total, 1 AS n FROM new_rows WHERE status = 'paid'
            UNION ALL
            SELECT store_id, {day} AS day, -total, -1 AS n FROM old_rows WHERE status = 'paid'
        ) delta
        GROUP BY 1, 2 HAVING SUM(total) <> 0 OR SUM(n) <> 0 ORDER BY 1, 2
        ON CONFLICT (day, store_id) DO UPDATE
        SET revenue = ops_storedaysales.revenue + EXCLUDED.revenue, orders = ops_storedaysales.orders + EXCLUDED.orders;
    END IF;
    RETURN NULL;
END $$;

LOCK TABLE ops_order IN SHARE MODE;
DELETE FROM ops_storedaysales;
INSERT INTO ops_storedaysales (store_id, day, revenue, orders)
SELECT store_id, {day}, SUM(total), COUNT(*) FROM ops_order WHERE status = 'paid' GROUP BY 1, 2;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('ops', '0004_permissions_sales_members'),
    ]

    operations = [
        migrations.RunSQL(function_sql(TRADING_DAY), reverse_sql=function_sql(CALENDAR_DAY)),
    ]
