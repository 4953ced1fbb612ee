"""--dry-run / --explain name the operator every part of a query runs on — the engine's
stateful operators (join, aggregate, rank, over, temporalJoin …), Spark's own (windowed
aggregation, stream-stream join, explode) or a stateless step — for every feature; and
what does not run on processing time yet is refused by name (Nexmark q13)."""
from __future__ import annotations

import pytest

from tests.plan.test_event_time_plans import TABLES
from tests.support import dry_runs

MORE_TABLES = TABLES + """
CREATE TABLE tags (id INT, arr ARRAY<STRING>, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/tags', 'format' = 'json');
CREATE VIEW timed AS SELECT *, PROCTIME() AS pt FROM ships;
"""


def dry_run(query: str) -> tuple[int, str]:
    return dry_runs.dry_run(MORE_TABLES, query)


TUMBLE = "TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE))"


@pytest.mark.parametrize("query, operators", [
    # Top-N and deduplication
    ("SELECT uid, CAST(id AS STRING), '' FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY uid ORDER BY amount DESC) "
     "AS rn FROM orders) WHERE rn <= 3", ["top 3 by row_number() over (uid)", "[engine: rank;"]),
    ("SELECT uid, CAST(id AS STRING), '' FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY uid ORDER BY ts) AS rn "
     "FROM orders) WHERE rn = 1", ["deduplicate by row_number() over (uid) order by ts [engine: rank;"]),
    # window table functions, their aggregations, Top-N, deduplication and joins
    (f"SELECT uid, CAST(window_start AS STRING), CAST(COUNT(*) AS STRING) FROM {TUMBLE} "
     "GROUP BY uid, window_start, window_end",
     ["tumble windows on ts", "[stateless]", "tumble window aggregation on ts [Spark's windowed aggregation"]),
    ("SELECT uid, CAST(window_start AS STRING), CAST(COUNT(*) AS STRING) FROM TABLE(HOP(TABLE orders, "
     "DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '5' MINUTE)) GROUP BY uid, window_start, window_end",
     ["hop window aggregation on ts [Spark's windowed aggregation"]),
    ("SELECT uid, CAST(window_start AS STRING), CAST(COUNT(*) AS STRING) FROM TABLE(SESSION(TABLE orders "
     "PARTITION BY uid, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY uid, window_start, window_end",
     ["session window aggregation on ts [Spark's windowed aggregation"]),
    ("SELECT uid, CAST(SESSION_START(ts, INTERVAL '1' MINUTE) AS STRING), CAST(COUNT(*) AS STRING) FROM orders "
     "GROUP BY uid, SESSION(ts, INTERVAL '1' MINUTE)", ["session window aggregation on ts [Spark's windowed"]),
    (f"SELECT uid, CAST(id AS STRING), '' FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY uid, window_start, "
     f"window_end ORDER BY ts) AS rn FROM {TUMBLE}) WHERE rn = 1", ["window deduplication", "[engine: windowRank;"]),
    # OVER aggregations
    ("SELECT uid, CAST(SUM(amount) OVER (PARTITION BY uid ORDER BY ts RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING "
     "AND CURRENT ROW) AS STRING), '' FROM orders", ["over aggregation", "[engine: over, on row time"]),
    # joins: regular, interval, temporal, lookup, UNNEST, a constant row, subqueries
    ("SELECT o.uid, CAST(u.score AS STRING), '' FROM orders o LEFT JOIN users u ON o.uid = u.uid",
     ["scan users: changelog source", "left join on o.uid = u.uid [engine: join; stateful"]),
    ("SELECT o.uid, CAST(s.sid AS STRING), '' FROM orders o JOIN ships s ON o.uid = s.uid AND o.ts BETWEEN "
     "s.sts - INTERVAL '1' MINUTE AND s.sts", ["inner interval join", "[Spark's stream-stream join"]),
    ("SELECT o.uid, CAST(r.rate AS STRING), '' FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r "
     "ON o.uid = r.currency", ["inner temporal join FOR SYSTEM_TIME AS OF ts", "[engine: temporalJoin;"]),
    ("SELECT o.uid, c.region, '' FROM orders o JOIN customers FOR SYSTEM_TIME AS OF o.p AS c ON o.uid = c.id",
     ["inner lookup join of customers", "[engine: lookupJoin;"]),
    ("SELECT CAST(id AS STRING), a, '' FROM tags CROSS JOIN UNNEST(arr) AS x(a)",
     ["cross join unnest arr [stateless: Spark's explode"]),
    ("SELECT CAST(id AS STRING), a, '' FROM tags LEFT JOIN UNNEST(arr) AS x(a) ON TRUE",
     ["left join unnest arr [stateless: Spark's explode"]),
    ("SELECT uid, c.x, '' FROM orders CROSS JOIN (SELECT 'k' AS x) c",
     ["join with a constant row: adds x to every row [stateless]"]),
    ("SELECT uid, '', '' FROM orders o WHERE EXISTS (SELECT 1 FROM users u WHERE u.uid = o.uid)",
     ["exists subquery as a semi join", "[engine: join;"]),
    # aggregations, DISTINCT, set operations, VALUES
    ("SELECT uid, CAST(COUNT(*) AS STRING), '' FROM orders GROUP BY uid HAVING COUNT(*) > 2",
     ["aggregate by (uid) computing COUNT(*) [engine: aggregate;", "filter: COUNT(*) > 2"]),
    ("SELECT DISTINCT uid, '', '' FROM orders", ["distinct rows of (uid, EXPR$1, EXPR$2) [engine: aggregate;"]),
    ("SELECT uid, '', '' FROM orders UNION SELECT uid, '', '' FROM ships",
     ["union all [stateless", "distinct rows of (uid, EXPR$1, EXPR$2) [engine: aggregate;"]),
    ("SELECT uid, '', '' FROM orders INTERSECT ALL SELECT uid, '', '' FROM users",
     ["INTERSECT ALL: each row of (uid, EXPR$1, EXPR$2) counted on both sides [engine: aggregate;",
      "INTERSECT ALL: each row min(left, right) times [stateless"]),
    ("SELECT uid, '', '' FROM orders EXCEPT SELECT uid, '', '' FROM users",
     ["EXCEPT: each row of (uid, EXPR$1, EXPR$2) counted on both sides [engine: aggregate;"]),
    ("SELECT uid, '', '' FROM orders WHERE amount NOT IN (SELECT score FROM users)",
     ["not in subquery as a null-aware anti join", "[engine: join;"]),
    ("SELECT a, b, c FROM (VALUES ('x', 'y', 'z')) AS v(a, b, c)", ["VALUES (1 rows) [a bounded source"]),
    # ORDER BY … LIMIT, scalar subqueries, joins without an equality
    ("SELECT uid, CAST(amount AS STRING), '' FROM orders ORDER BY amount DESC LIMIT 3 OFFSET 1",
     ["keep rows 2..4 ordered by amount DESC [engine: rank;"]),
    # Nexmark q12: a window on a PROCTIME() attribute a view computes
    ("SELECT uid, CAST(window_start AS STRING), CAST(COUNT(*) AS STRING) FROM TABLE(TUMBLE(TABLE timed, "
     "DESCRIPTOR(pt), INTERVAL '10' SECOND)) GROUP BY uid, window_start, window_end",
     ["tumble window aggregation on pt [Spark's windowed aggregation; a window is emitted once the processing time"]),
    ("SELECT uid, CAST(TUMBLE_END(p, INTERVAL '10' SECOND) AS STRING), CAST(COUNT(*) AS STRING) FROM orders "
     "GROUP BY uid, TUMBLE(p, INTERVAL '10' SECOND)", ["tumble window aggregation on p [Spark's windowed aggregation"]),
    ("SELECT uid, '', '' FROM orders LIMIT 3", ["keep the first 3 rows in arrival order [engine: rank;"]),
    ("SELECT uid, CAST(score AS STRING), '' FROM users WHERE score > 0 LIMIT 2 OFFSET 1",
     ["keep rows 2..3 in arrival order [engine: rank;"]),
    ("SELECT uid, CAST(ts AS STRING), '' FROM orders ORDER BY ts, uid DESC",
     ["sort by ts, uid DESC [engine: temporalSort, one group;"]),
    ("SELECT uid, CAST(amount AS STRING), '' FROM orders ORDER BY ts",
     ["sort by ts [engine: temporalSort"]),
    ("SELECT uid, CAST(pt AS STRING), '' FROM timed ORDER BY pt",
     ["order by pt [rows pass in arrival order, which is processing-time order"]),
    ("SELECT uid, CAST(amount AS STRING), '' FROM (SELECT * FROM orders ORDER BY amount) WHERE amount > 1",
     ["scan orders"]),
    ("SELECT uid, CAST((SELECT MAX(score) FROM users) AS STRING), '' FROM orders",
     ["scalar subquery (SELECT MAX(score) FROM users) as a LEFT JOIN ON TRUE",
      "left join on a constant key (every row meets every row: one operator instance) [engine: join;"]),
    ("SELECT o.uid, s.uid, '' FROM orders o JOIN ships s ON o.amount < s.sid",
     ["inner join on a constant key (every row meets every row: one operator instance) [engine: join;"]),
    ("SELECT uid, CAST(CURRENT_WATERMARK(ts) AS STRING), '' FROM orders WHERE ts > CURRENT_WATERMARK(ts)",
     ["CURRENT_WATERMARK(ts): the watermark of the rows before each row [engine: currentWatermark;"]),
    ("SELECT uid, CAST(STDDEV_POP(amount) AS STRING), '' FROM orders GROUP BY uid",
     ["SUM(CAST(amount AS DOUBLE) * CAST(amount AS DOUBLE))", "[engine: aggregate;"]),
])
def test_every_feature_names_its_operator(spark, query, operators):
    code, text = dry_run(query)
    assert code == 0, text
    for operator in operators:
        assert operator in text, text
    steps = [line.strip() for line in text.splitlines() if line.strip().startswith("- ")]
    assert steps and not any("_c" in step.split("[")[0] for step in steps), "internal column names shown: " + text


@pytest.mark.parametrize("query, at, message", [
    ("SELECT uid, CAST(window_start AS STRING), '' FROM TABLE(SESSION(TABLE timed PARTITION BY uid, "
     "DESCRIPTOR(pt), INTERVAL '10' SECOND)) GROUP BY uid, window_start, window_end", "pt)",
     "SESSION windows on processing time (PROCTIME()) are not supported yet"),
    ("SELECT uid, CAST(window_start AS STRING), '' FROM TABLE(TUMBLE(TABLE timed, DESCRIPTOR(pt), "
     "INTERVAL '10' SECOND))", "TABLE(TUMBLE(TABLE timed",
     "the rows of a window table function on processing time (PROCTIME()) are supported only in a window "
     "aggregation"),
    ("SELECT uid, CAST(COUNT(*) AS STRING), '' FROM TABLE(TUMBLE(TABLE timed, DESCRIPTOR(pt), INTERVAL '10' SECOND)) "
     "GROUP BY uid, window_start, window_end UNION ALL SELECT uid, CAST(COUNT(*) AS STRING), '' FROM "
     "TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY uid, window_start, window_end",
     "SELECT uid", "a query with a window on processing time (PROCTIME()) cannot also have event-time operators"),
    # Nexmark q13: a processing-time temporal join against a table that cannot be looked up
    ("SELECT B.uid, CAST(S.rate AS STRING), '' FROM (SELECT *, PROCTIME() AS p_time FROM orders) B "
     "JOIN rates FOR SYSTEM_TIME AS OF B.p_time AS S ON B.uid = S.currency", "B.p_time AS S",
     "Processing-time temporal join is not supported yet"),
])
def test_processing_time_is_refused_by_name(spark, query, at, message):
    dry_runs.assert_refused_at(MORE_TABLES, query, at, message)


@pytest.mark.parametrize("query, message", [
    # order-dependent aggregates over a relation whose order the job does not keep
    ("SELECT o.uid, LISTAGG(s.uid), '' FROM orders o JOIN ships s ON o.uid = s.uid GROUP BY o.uid",
     "LISTAGG over the result of a join, an aggregation, a union or a window is not supported yet"),
    ("SELECT uid, CAST(FIRST_VALUE(n) AS STRING), '' FROM (SELECT uid, COUNT(*) AS n FROM orders GROUP BY uid) "
     "GROUP BY uid", "FIRST_VALUE over the result of a join"),
    ("SELECT uid, CAST(VAR_POP(DISTINCT amount) AS STRING), '' FROM orders GROUP BY uid",
     "VAR_POP(DISTINCT …) is not supported yet"),
    ("SELECT uid, CAST(pt AS STRING), '' FROM timed ORDER BY pt, uid",
     "ORDER BY the processing-time attribute pt and then other keys (Flink's processing-time sort) is not "
     "supported yet"),
    ("SELECT currency, CAST(rts AS STRING), '' FROM rates ORDER BY rts",
     "a sort by time needs an append-only input, but this one has updates and deletes"),
    ("SELECT uid, CAST(score AS STRING), '' FROM users LIMIT 2",
     "LIMIT 2 without ORDER BY directly over the filesystem table users, read as a changelog ('format' = "
     "'debezium-json'): Flink pushes this limit into the file reader"),
    # Flink's temporal sort needs the time attribute first and ascending; otherwise it refuses the sort
    ("SELECT uid, '', '' FROM orders ORDER BY ts DESC", "Sort on a non-time-attribute field is not supported"),
    ("SELECT uid, '', '' FROM orders ORDER BY uid, ts", "Sort on a non-time-attribute field is not supported"),
    ("SELECT uid, '', '' FROM orders o WHERE amount NOT IN (SELECT score FROM users u WHERE u.uid = o.uid)",
     "NOT IN (subquery) over values that can be NULL is supported for one column and an uncorrelated subquery; "
     "this one is correlated"),
    ("SELECT uid, '', '' FROM orders WHERE (uid, amount) NOT IN (SELECT uid, score FROM users)",
     "this one compares several columns"),
    ("SELECT DISTINCT uid, '', '' FROM orders ORDER BY amount LIMIT 3",
     "SELECT DISTINCT … ORDER BY … LIMIT on something the query does not select is not supported yet"),
])
def test_what_the_job_does_not_run_yet_is_refused_by_name(spark, query, message):
    code, text = dry_run(query)
    assert code == 2, text
    assert message in text, text
