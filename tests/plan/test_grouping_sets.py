"""GROUPING SETS, ROLLUP and CUBE: their plan (each row copied once per grouping, then
the engine's aggregate or Spark's window aggregation), the groupings Flink computes for
repeated and nested sets, and what is refused by name where the user wrote it (dry runs:
nothing is read). Their rows are compared with Flink's in
tests/flink/cases/grouping_sets.yaml."""
from __future__ import annotations

import pytest

from job.errors import Origin
from job.plan import grouping_sets
from job.sql.flink.query import parse_query
from tests.support import dry_runs

TABLES = """
CREATE TABLE sales (region STRING, cat STRING, amount INT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/sales', 'format' = 'json');
CREATE TABLE users (uid STRING, score INT, PRIMARY KEY (uid) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/users', 'format' = 'debezium-json');
CREATE TABLE out_rows (a STRING, b STRING, c BIGINT) WITH ('connector' = 'blackhole');
"""


def dry_run(query: str) -> tuple[int, str]:
    return dry_runs.dry_run(TABLES, query)


def groupings(group_by: str) -> list[tuple]:
    tree = parse_query(f"SELECT 1 FROM t GROUP BY {group_by}", Origin("q", 1, 1)).tree
    found = grouping_sets.analyze(tree.args["group"].expressions)
    names = [e.sql() for e in found.exprs]
    return [({names[i] for i in v.keys}, {names[i] for i in v.declared}, v.group_id) for v in found.variants]


def test_sets_multiply_nest_and_repeat_as_flinks():
    assert groupings("a, ROLLUP (b, c)") == [({"a", "b", "c"}, {"a", "b", "c"}, 0), ({"a", "b"}, {"a", "b"}, 0),
                                             ({"a"}, {"a"}, 0)]
    assert groupings("CUBE ((a, b), c)") == [({"a", "b", "c"}, {"a", "b", "c"}, 0), ({"a", "b"}, {"a", "b"}, 0),
                                             ({"c"}, {"c"}, 0), (set(), set(), 0)]
    # () twice: the second copy, one set only, is grouped by every key in Flink 2.3.
    assert groupings("GROUPING SETS (a, ROLLUP (b), CUBE (c))") == [
        ({"a"}, {"a"}, 0), ({"b"}, {"b"}, 0), (set(), set(), 0), ({"c"}, {"c"}, 0), ({"a", "b", "c"}, set(), 1)]
    assert groupings("GROUPING SETS ((a), (a), ())") == [({"a"}, {"a"}, 0), (set(), set(), 0), ({"a"}, {"a"}, 1)]
    assert groupings("GROUPING SETS ((a > 1), ())") == [({"a > 1"}, {"a > 1"}, 0), (set(), set(), 0)]


@pytest.mark.parametrize("query, step", [
    ("SELECT region, cat, COUNT(*) FROM sales GROUP BY ROLLUP (region, cat)", "each row once per set of 3"),
    ("SELECT uid, CAST(score AS STRING), GROUPING_ID(uid, score) FROM users GROUP BY CUBE (uid, score)",
     "each row once per set of 4"),
    ("SELECT region, cat, COUNT(*) FROM TABLE(TUMBLE(TABLE sales, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) "
     "GROUP BY window_start, window_end, GROUPING SETS ((region, cat), ())", "each row once per set of 2"),
])
def test_each_row_is_copied_once_per_grouping(spark, query, step):
    code, text = dry_run(query)
    assert code == 0, text
    assert f"grouping sets: {step}" in text, text


@pytest.mark.parametrize("query, at, message", [
    ("SELECT region, cat, COUNT(*) FROM sales GROUP BY GROUPING SETS ((region), (region), (cat))", "region), (region), (cat)",
     "rejected by Flink 2.3"),
    ("SELECT region, cat, GROUPING(amount) FROM sales GROUP BY ROLLUP (region, cat)", "amount)",
     "the argument of GROUPING must be a GROUP BY expression"),
    ("SELECT region, cat, GROUPING_ID(region) FROM sales", "GROUPING_ID(region)",
     "GROUPING_ID is only allowed in the SELECT list or HAVING clause of a GROUP BY query"),
    ("SELECT region, cat, COUNT(*) FROM sales GROUP BY region, cat WITH ROLLUP", "region, cat WITH",
     "this form of GROUP BY is not Flink SQL"),
])
def test_refused_by_name_at_the_users_position(spark, query, at, message):
    dry_runs.assert_refused_at(TABLES, query, at, message)
