"""Correlated scalar subqueries: their plan (the subquery grouped by its correlated keys,
LEFT JOINed to the outer rows) and what is refused by name where the user wrote it (dry
runs: nothing is read). Their rows are compared with Flink's in
tests/flink/cases/subqueries.yaml."""
from __future__ import annotations

import pytest

from tests.support import dry_runs

TABLES = """
CREATE TABLE o (id INT, cat STRING, amount INT)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/o', 'format' = 'json');
CREATE TABLE p (pid INT, cat STRING, price INT, PRIMARY KEY (pid) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/p', 'format' = 'debezium-json');
CREATE TABLE out_rows (a STRING, b BIGINT, c BIGINT) WITH ('connector' = 'blackhole');
"""


def test_a_correlated_scalar_subquery_is_a_left_join_with_its_grouped_aggregation():
    code, text = dry_runs.dry_run(TABLES, "SELECT o.cat, o.id, (SELECT MAX(p.price) FROM p WHERE p.cat = o.cat) FROM o")
    assert code == 0, text
    assert "correlated scalar subquery" in text and "grouped by the correlated keys" in text, text


@pytest.mark.parametrize("query, at, message", [
    ("SELECT o.cat, COUNT(*), (SELECT MAX(p.price) FROM p WHERE p.cat = o.cat) FROM o GROUP BY o.cat",
     "MAX(p.price)", "a correlated scalar subquery in the select list of an aggregation is not supported"),
    ("SELECT o.cat, o.id, (SELECT p.price FROM p WHERE p.pid = o.id) FROM o", "p.price FROM",
     "a scalar subquery is supported when it is a global aggregation"),
    ("SELECT o.cat, o.id, (SELECT COUNT(*) + 1 FROM p WHERE p.cat = o.cat) FROM o", "COUNT(*) + 1",
     "whose value over no rows is an expression of COUNT"),
    ("SELECT o.cat, COUNT(*), (SELECT MAX(price) FROM p) FROM o", "MAX(price)",
     "in the select list of an aggregation without GROUP BY"),
])
def test_refused_by_name_where_written(query, at, message):
    dry_runs.assert_refused_at(TABLES, query, at, message)
