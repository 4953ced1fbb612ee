"""Planning the changelog engine's queries (dry runs: nothing is read or written).

Regression tests for what the randomized engine tests (test_engine_properties.py) found,
fast enough for every run.
"""
from __future__ import annotations

import io

import pytest

from job.api import RunOptions, run

SOURCES = """
CREATE TABLE users (uid STRING, accountId STRING, score INT, PRIMARY KEY (uid) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/users', 'format' = 'debezium-json');
CREATE TABLE colors (userUid STRING, color STRING, PRIMARY KEY (userUid) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/nonexistent/colors', 'format' = 'debezium-json');
"""


def sink(name: str, columns: str, key: str) -> str:
    return (f"CREATE TABLE {name} ({columns}, PRIMARY KEY ({key}) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', "
            f"'topic' = '{name}', 'key.format' = 'raw', 'value.format' = 'json', "
            f"'properties.bootstrap.servers' = '127.0.0.1:1')")


def dry_run(*statements: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(RunOptions(statements=[SOURCES, *statements], dry_run=True), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


AGG_SINK = sink("by_account", "accountId STRING, n BIGINT, hi INT", "accountId")


@pytest.mark.parametrize("having", [
    "COUNT(*) >= 3",                                  # an aggregate of the select list
    "COUNT(*) >= 3 AND MAX(score) > 6",
    "SUM(score) > 10 AND MIN(score) IS NOT NULL",     # aggregates only HAVING computes
    "COUNT(DISTINCT score) > 1",
    "accountId <> 'a1' AND users.accountId IS NOT NULL",  # the group key
])
def test_having_reads_the_aggregates_results(spark, having):
    """HAVING used to be planned over the aggregate's output without its aggregate
    calls and group keys: any HAVING was rejected (a column the output does not have)
    or handed to Spark as an aggregate inside a streaming filter."""
    code, out, err = dry_run(AGG_SINK, "INSERT INTO by_account SELECT accountId, COUNT(*) AS n, MAX(score) AS hi "
                                       f"FROM users GROUP BY accountId HAVING {having}")
    assert code == 0, err


def test_having_does_not_see_select_aliases_as_in_flink(spark):
    code, out, err = dry_run(AGG_SINK, "INSERT INTO by_account SELECT accountId, COUNT(*) AS n, MAX(score) AS hi "
                                       "FROM users GROUP BY accountId HAVING n >= 2")
    assert code == 2, out + err
    assert "Column 'n' not found in any table (in HAVING" in err, err


FULL_SINK = sink("full_sink", "k STRING, uid STRING, accountId STRING, cuid STRING, color STRING", "k")
FULL_INSERT = ("INSERT INTO full_sink SELECT COALESCE(u.uid, c.userUid) AS k, u.uid, u.accountId, c.userUid AS cuid, "
               "c.color FROM users u FULL JOIN colors c ON u.uid = c.userUid")


def test_full_join_keyed_by_an_expression_is_materialized(spark):
    """The FULL JOIN's rows are unique on (uid, cuid), which is not within the sink's
    key k = COALESCE(uid, cuid): like Flink, the sink materializes by k instead of
    rejecting the INSERT (the same query without the uid/cuid columns always did)."""
    code, out, err = dry_run(FULL_SINK, FULL_INSERT)
    assert code == 0, err
    assert "sink fed as upsert (materialized)" in out, out


def test_query_key_within_the_sink_key_is_not_materialized(spark):
    code, out, err = dry_run(sink("joined", "uid STRING, color STRING", "uid"),
                             "INSERT INTO joined SELECT u.uid, c.color FROM users u LEFT JOIN colors c ON u.uid = c.userUid")
    assert code == 0, err
    assert "sink fed as upsert," in out and "materialized" not in out, out


@pytest.mark.parametrize("sink_table,insert", [
    # GROUP BY is finer than the sink key: two accounts' rows per score
    (sink("by_score", "hi INT, accountId STRING, n BIGINT", "hi"),
     "INSERT INTO by_score SELECT MAX(score) AS hi, accountId, COUNT(*) AS n FROM users GROUP BY accountId"),
    # the sink is keyed by an aggregate's result
    (sink("by_n", "accountId STRING, n BIGINT", "n"),
     "INSERT INTO by_n SELECT accountId, COUNT(*) AS n FROM users GROUP BY accountId"),
    # an upsert table re-keyed by a non-key column
    (sink("by_account_rows", "accountId STRING, uid STRING", "accountId"),
     "INSERT INTO by_account_rows SELECT accountId, uid FROM users"),
])
def test_sink_key_that_cannot_match_the_querys_key_is_rejected(spark, sink_table, insert):
    code, out, err = dry_run(sink_table, insert)
    assert code == 2, out + err
    assert "PRIMARY KEY" in err and "unique on" in err and "Traceback" not in err, err


def test_sink_key_computed_from_the_key_is_materialized_not_rejected(spark):
    code, out, err = dry_run(sink("by_upper", "uid STRING, accountId STRING", "uid"),
                             "INSERT INTO by_upper SELECT UPPER(uid) AS uid, accountId FROM users")
    assert code == 0, err
    assert "materialized" in out, out


@pytest.mark.parametrize("select,message", [
    # Not Flink SQL: Spark's and other dialects' syntax is refused, never run as Spark reads it.
    ("SELECT uid, v AS accountId FROM users LATERAL VIEW explode(array(accountId)) e AS v", "LATERAL"),
    ("SELECT uid, accountId FROM users QUALIFY ROW_NUMBER() OVER (PARTITION BY accountId ORDER BY score) = 1",
     "SQL parse failed"),
    ("SELECT uid, accountId FROM users GROUP BY ALL", "GROUP BY ALL is not Flink SQL"),
    ("SELECT uid, COUNT_IF(score > 1) AS accountId FROM users GROUP BY uid", "'COUNT_IF' is not a Flink function"),
    ("SELECT uid, accountId FROM users GROUP BY uid, accountId WITH ROLLUP", "this form of GROUP BY is not Flink SQL"),
])
def test_what_the_job_cannot_run_is_refused_while_planning(spark, select, message):
    """Refused at --dry-run (exit 2), located, in Flink's terms, never with Spark's
    message about internal columns."""
    code, out, err = dry_run(sink("rows", "uid STRING, accountId STRING", "uid"), f"INSERT INTO rows {select}")
    assert code == 2, out + err
    assert message in err and "_c" not in err and "Traceback" not in err, err


def test_aggregate_filter_clause_is_planned(spark):
    code, out, err = dry_run(sink("filtered", "accountId STRING, big BIGINT, small BIGINT, hi INT", "accountId"),
                             "INSERT INTO filtered SELECT accountId, COUNT(*) FILTER (WHERE score > 4) AS big, "
                             "COUNT(*) FILTER (WHERE score < 3) AS small, MAX(score) FILTER (WHERE accountId <> 'a1') AS hi "
                             "FROM users GROUP BY accountId")
    assert code == 0, err
    assert "COUNT(*) FILTER(WHERE score > 4)" in out, out


def test_distinct_over_several_columns_is_rejected(spark):
    code, out, err = dry_run(sink("pairs", "accountId STRING, n BIGINT", "accountId"),
                             "INSERT INTO pairs SELECT accountId, COUNT(DISTINCT score, uid) AS n FROM users "
                             "GROUP BY accountId")
    assert code == 2, out + err
    assert "COUNT(DISTINCT …) over several columns is not supported yet" in err, err
