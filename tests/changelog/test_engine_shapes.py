"""More query shapes against batch Spark SQL: nested aggregates, computed and constant
group keys, conditional aggregates, RIGHT/FULL joins under an aggregate, join conditions
beyond the key, anti- and semi-joins written as joins, DISTINCT, UNION ALL, subqueries
in FROM and joined to their own table.

Same machinery as test_engine_properties.py (random Debezium changelogs with updates,
moves, deletes, absent deletes and duplicates; one file per micro-batch), one seed,
queries grouped into statement sets so each group starts one Spark job.
"""
from __future__ import annotations

import pytest

from job.api import RunOptions, run
from tests.changelog.engine_support import Clock, Query, Scenario, assert_sinks_match, fresh_topics, pipeline_sql

S, B, I, D = "STRING", "BIGINT", "INT", "DOUBLE"

SHAPES = [
    Query("nested", "SELECT n, COUNT(*) AS c FROM (SELECT accountId, COUNT(*) AS n FROM {users} GROUP BY accountId) t "
          "GROUP BY n", (("n", B), ("c", B)), "n", ("users",)),
    Query("constkey", "SELECT 'all' AS k, COUNT(*) AS n, SUM(score) AS s FROM {users}",
          (("k", S), ("n", B), ("s", B)), "k", ("users",)),
    Query("exprgroup", "SELECT UPPER(accountId) AS acc, AVG(score) AS a, COUNT(score) AS cs, MIN(uid) AS lo, "
          "COUNT(*) FILTER (WHERE score > 5) AS big FROM {users} GROUP BY UPPER(accountId)",
          (("acc", S), ("a", D), ("cs", B), ("lo", S), ("big", B)), "acc", ("users",),
          # Flink's AVG of an INT column is an INT (the sum divided by the count, truncated)
          "SELECT UPPER(accountId) AS acc, CAST(AVG(score) AS INT) AS a, COUNT(score) AS cs, MIN(uid) AS lo, "
          "COUNT(*) FILTER (WHERE score > 5) AS big FROM {users} GROUP BY UPPER(accountId)"),
    Query("distinct", "SELECT DISTINCT accountId FROM {users} WHERE score > 3", (("accountId", S),),
          "accountId", ("users",)),
    Query("subq", "SELECT t.accountId, t.n * 2 AS n2 FROM (SELECT accountId, COUNT(*) AS n FROM {users} "
          "GROUP BY accountId) t WHERE t.n > 1", (("accountId", S), ("n2", B)), "accountId", ("users",)),
    Query("joinsub", "SELECT u.uid, t.n FROM {users} u LEFT JOIN (SELECT accountId, COUNT(*) AS n FROM {users} "
          "GROUP BY accountId) t ON u.accountId = t.accountId", (("uid", S), ("n", B)), "uid", ("users",)),
    Query("rightagg", "SELECT a.plan, COUNT(u.uid) AS n, COUNT(*) AS rows_ FROM {users} u RIGHT JOIN {accounts} a "
          "ON u.accountId = a.accountId GROUP BY a.plan", (("plan", S), ("n", B), ("rows_", B)), "plan",
          ("users", "accounts")),
    Query("semi", "SELECT u.uid, u.accountId FROM {users} u JOIN (SELECT DISTINCT accountId FROM {accounts}) s "
          "ON u.accountId = s.accountId", (("uid", S), ("accountId", S)), "uid", ("users", "accounts")),
    Query("havalias", "SELECT a.plan, COUNT(*) AS n FROM {users} u JOIN {accounts} a ON u.accountId = a.accountId "
          "GROUP BY a.plan HAVING COUNT(*) > 1", (("plan", S), ("n", B)), "plan", ("users", "accounts")),
    Query("joincond", "SELECT u.uid, c.color, CASE WHEN u.score > 5 THEN 'hi' ELSE 'lo' END AS lvl FROM {users} u "
          "LEFT JOIN {colors} c ON u.uid = c.userUid AND c.color <> 'red'",
          (("uid", S), ("color", S), ("lvl", S)), "uid", ("users", "colors")),
    Query("anti", "SELECT u.uid, u.accountId FROM {users} u LEFT JOIN {colors} c ON u.uid = c.userUid "
          "WHERE c.userUid IS NULL", (("uid", S), ("accountId", S)), "uid", ("users", "colors")),
    Query("fullagg", "SELECT COALESCE(c.color, 'none') AS color, COUNT(u.uid) AS users_, COUNT(c.userUid) AS cs "
          "FROM {users} u FULL JOIN {colors} c ON u.uid = c.userUid GROUP BY COALESCE(c.color, 'none')",
          (("color", S), ("users_", B), ("cs", B)), "color", ("users", "colors")),
    Query("starsel", "SELECT u.*, c.color FROM {users} u JOIN {colors} c ON u.uid = c.userUid",
          (("uid", S), ("accountId", S), ("score", I), ("color", S)), "uid", ("users", "colors")),
    Query("union", "SELECT uid AS k, accountId AS v FROM {users} UNION ALL "
          "SELECT CONCAT('c', userUid) AS k, color AS v FROM {colors}", (("k", S), ("v", S)), "k", ("users", "colors")),
    # Subqueries in WHERE (semi and anti joins, as Flink plans them), under updates to both sides.
    Query("insub", "SELECT uid, accountId FROM {users} WHERE uid IN (SELECT userUid FROM {colors} WHERE color <> 'red')",
          (("uid", S), ("accountId", S)), "uid", ("users", "colors")),
    Query("notexists", "SELECT u.uid, u.score FROM {users} u WHERE NOT EXISTS "
          "(SELECT 1 FROM {colors} c WHERE c.userUid = u.uid AND c.color = 'teal') AND u.score > 2",
          (("uid", S), ("score", I)), "uid", ("users", "colors")),
]
GROUPS = {"aggregates": SHAPES[:6], "joins": SHAPES[6:10], "joins2": SHAPES[10:]}


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.parametrize("group", list(GROUPS))
def test_query_shapes_match_batch_sql_over_final_tables(spark, kafka_bootstrap, tmp_path, group):
    queries = GROUPS[group]
    scenario = Scenario.generate(tmp_path, 7, sorted({t for q in queries for t in q.tables}), files=(2, 4))
    scenario.write(Clock())
    topics = fresh_topics(queries)
    sql = pipeline_sql(scenario.directories, queries, topics, kafka_bootstrap)
    assert run(RunOptions(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "checkpoints"))) == 0
    assert_sinks_match(spark, kafka_bootstrap, topics, scenario, queries, f"group {group}")
