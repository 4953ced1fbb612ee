"""Plans of the event-time and special operators (dry runs: nothing is read): which
operator each part runs on, and what is refused by name, where the user wrote it,
before anything runs."""
from __future__ import annotations

import pytest

from tests.support import dry_runs

TABLES = """
CREATE TABLE orders (id INT, uid STRING, amount INT, ts TIMESTAMP(3), p AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/orders', 'format' = 'json');
CREATE TABLE ships (sid INT, uid STRING, sts TIMESTAMP(3), WATERMARK FOR sts AS sts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/ships', 'format' = 'json');
CREATE TABLE rates (currency STRING, rate INT, rts TIMESTAMP(3), WATERMARK FOR rts AS rts,
  PRIMARY KEY (currency) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/rates', 'format' = 'debezium-json');
CREATE TABLE users (uid STRING, score INT, PRIMARY KEY (uid) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/users', 'format' = 'debezium-json');
CREATE TABLE customers (id STRING, region STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://127.0.0.1:1/none', 'table-name' = 'customers');
CREATE TABLE out_rows (a STRING, b STRING, c STRING) WITH ('connector' = 'blackhole');
"""


def dry_run(query: str) -> tuple[int, str]:
    return dry_runs.dry_run(TABLES, query)


@pytest.mark.parametrize("query, operator", [
    ("SELECT uid, CAST(id AS STRING), CAST(SUM(amount) OVER (PARTITION BY uid ORDER BY ts ROWS BETWEEN 2 PRECEDING AND "
     "CURRENT ROW) AS STRING) FROM orders", "[engine: over, on row time"),
    ("SELECT uid, CAST(COUNT(*) OVER w AS STRING), '' FROM orders WINDOW w AS (ORDER BY p)",
     "[engine: over, on proc time"),
    ("SELECT o.uid, CAST(s.sid AS STRING), '' FROM orders o LEFT JOIN ships s ON o.uid = s.uid AND "
     "o.ts BETWEEN s.sts - INTERVAL '1' MINUTE AND s.sts", "[Spark's stream-stream join"),
    ("SELECT o.uid, CAST(r.rate AS STRING), '' FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
     "ON o.uid = r.currency", "[engine: temporalJoin"),
    ("SELECT o.uid, c.region, '' FROM orders o LEFT JOIN customers FOR SYSTEM_TIME AS OF o.p AS c ON o.uid = c.id",
     "[engine: lookupJoin"),
    ("SELECT uid, CAST(window_start AS STRING), CAST(window_end AS STRING) FROM TABLE(CUMULATE(TABLE orders, "
     "DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '5' MINUTE))", "cumulate windows on ts"),
    ("SELECT uid, CAST(window_start AS STRING), CAST(COUNT(*) AS STRING) FROM TABLE(TUMBLE(TABLE orders, "
     "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, ROLLUP (uid)", "grouping sets"),
    ("SELECT uid, CAST(id AS STRING), '' FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
     "ORDER BY amount DESC) AS rn FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) WHERE rn <= 3",
     "[engine: windowRank"),
    ("SELECT L.uid, CAST(R.sid AS STRING), '' FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), "
     "INTERVAL '1' MINUTE))) L FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE ships, DESCRIPTOR(sts), INTERVAL '1' "
     "MINUTE))) R ON L.uid = R.uid AND L.window_start = R.window_start AND L.window_end = R.window_end",
     "[engine: windowJoin"),
])
def test_explain_names_the_operator(spark, query, operator):
    code, text = dry_run(query)
    assert code == 0, text
    assert operator in text, text


@pytest.mark.parametrize("query, at, message", [
    ("SELECT uid, CAST(COUNT(*) OVER (PARTITION BY uid ORDER BY score) AS STRING), '' FROM users", "COUNT(*) OVER (PARTITION",
     "OVER aggregations need an append-only input"),
    ("SELECT uid, CAST(COUNT(*) OVER (ORDER BY ts) AS STRING), CAST(SUM(id) OVER (PARTITION BY uid ORDER BY ts) AS "
     "STRING) FROM orders", "SUM(id) OVER", "must use the same window"),
    ("SELECT uid, CAST(LEAD(id) OVER (ORDER BY ts) AS STRING), '' FROM orders", "LEAD(id)", "LEAD is not supported"),
    ("SELECT uid, CAST(SUM(id) OVER (ORDER BY ts DESC) AS STRING), '' FROM orders", "ts DESC", "ordered ascending"),
    ("SELECT uid, CAST(SUM(id) OVER (ORDER BY amount) AS STRING), '' FROM orders", "amount)", "is not a time attribute"),
    ("SELECT uid, CAST(SUM(id) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS STRING), '' "
     "FROM orders", "1 PRECEDING", "must end at CURRENT ROW"),
    ("SELECT o.uid, '', '' FROM orders o LEFT JOIN ships s ON o.uid = s.uid AND o.ts > s.sts", "o.ts > s.sts",
     "bounds the time difference on one side only"),
    ("SELECT o.uid, '', '' FROM orders o JOIN users FOR SYSTEM_TIME AS OF o.ts AS u ON o.uid = u.uid", "users FOR",
     "is not a versioned table"),
    ("SELECT o.uid, '', '' FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.amount = r.rate", "o.amount = r.rate",
     "primary key [currency] must be included"),
    ("SELECT o.uid, '', '' FROM orders o JOIN ships FOR SYSTEM_TIME AS OF o.p AS s ON o.uid = s.uid", "o.p AS s",
     "not a 'jdbc' table"),
    ("SELECT L.uid, '', '' FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))) L "
     "LEFT JOIN (SELECT * FROM TABLE(TUMBLE(TABLE ships, DESCRIPTOR(sts), INTERVAL '1' MINUTE))) R ON L.uid = R.uid "
     "AND L.window_start = R.window_start AND L.window_end = R.window_end AND L.id < R.sid", "L.id < R.sid",
     "in a LEFT window join is not supported yet"),
    ("SELECT uid, '', CAST(COUNT(*) AS STRING) FROM TABLE(TUMBLE(TABLE users, DESCRIPTOR(score), "
     "INTERVAL '1' MINUTE)) GROUP BY uid, window_start, window_end", "score)", "is not a time attribute"),
])
def test_refused_by_name_at_the_users_position(spark, query, at, message):
    """``at``: the text the error points at (its line:col in the INSERT statement)."""
    dry_runs.assert_refused_at(TABLES, query, at, message)
