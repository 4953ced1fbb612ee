"""The engine's stateful operators get each key's rows together by a hash of the key
(engine/…/grouping/: a radix sort over the hash, then regrouping of keys that share one),
in the place of Spark's sort by the key itself.

The grouping must not change a single change of any query: the same random changelogs
run with Spark's sort, with the hash, and with a hash cut to one bit (so that half the
keys share each hash and every run of equal hashes mixes keys: the regrouping is all
that keeps a key's rows together) must give the same changelog and the same rows.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest
from chispa import assert_df_equality

from job.api import collect
from tests.changelog.engine_support import (CHEESES, COLORS, USERS, Clock, random_changelog, source_ddl,
                                            split_random, write_files)

QUERIES = {
    "group by": "SELECT accountId, COUNT(*) AS n, SUM(score) AS total FROM users GROUP BY accountId",
    "group by the key": "SELECT uid, COUNT(*) AS n FROM users GROUP BY uid",
    "3-way left join": ("SELECT u.uid, u.accountId, c.color, ch.cheese FROM users u "
                        "LEFT JOIN colors c ON u.uid = c.userUid LEFT JOIN cheeses ch ON u.uid = ch.userUid"),
    "top-n": ("SELECT uid, accountId, score FROM (SELECT uid, accountId, score, ROW_NUMBER() OVER ("
              "PARTITION BY accountId ORDER BY score DESC, uid) AS rn FROM users) WHERE rn <= 2"),
}
MODES = {  # the session's settings for each way of grouping
    "spark's sort": {"spark.streamsql.keyGrouping": "sort"},
    "hash": {},
    "one-bit hash": {"spark.streamsql.keyGrouping.hashBits": "1"},
}


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """Three changelogs over 300 keys, each in three files (three micro-batches)."""
    root = tmp_path_factory.mktemp("key_grouping")
    rng, clock, statements = random.Random(7), Clock(), []
    for table in (USERS, COLORS, CHEESES):
        events = random_changelog(table, rng, 1500, n_keys=300, sloppy=False)
        write_files(root / table.name, split_random(events, rng, 3), clock)
        statements.append(source_ddl(table, root / table.name))
    return statements


def _run(spark, statements, query, settings, checkpoint):
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        return collect(statements, query, spark=spark, checkpoint_dir=str(checkpoint))
    finally:
        for key in settings:
            spark.conf.unset(key)


@pytest.mark.parametrize("query", list(QUERIES))
def test_every_grouping_gives_the_same_changes(spark, tables, tmp_path, query):
    results = {mode: _run(spark, tables, QUERIES[query], settings, tmp_path / mode.replace(" ", "_"))
               for mode, settings in MODES.items()}
    expected = results["spark's sort"]
    assert len(expected.changes) >= 10  # the case exercises the operators
    columns = [name for name, _ in expected.columns]
    for mode, result in results.items():
        assert Counter(result.changes) == Counter(expected.changes), mode
        assert_df_equality(spark.createDataFrame(result.rows, columns), spark.createDataFrame(expected.rows, columns),
                           ignore_row_order=True, ignore_nullable=True)


def test_the_plan_groups_by_hash_instead_of_sorting(spark, tables, tmp_path):
    """Below each stateful operator: the hash grouping, and no sort of Spark's."""
    from job.errors import Origin
    from job.pipeline.load import load_statements
    from job.plan.program import declare
    from job.plan.queries import new_planner
    from job.run.queries import QuerySources
    from job.sql.flink.query import parse_query

    catalog, conf, _ = declare(load_statements(args=tables).statements, None)
    query = QUERIES["3-way left join"]
    planner = new_planner(spark, catalog, conf, QuerySources(spark, str(tmp_path / "ck"), once=True).open)
    df = planner.signed(planner.settle(planner.plan(parse_query(query, Origin("query"), query))))
    written = (df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck" / "plan"))
               .trigger(availableNow=True).start())
    written.awaitTermination(120)
    plan = written._jsq.streamingQuery().lastExecution().executedPlan().toString()
    _, below = plan.split("TransformWithState", 1)
    assert "GroupByKeyHash" in below.splitlines()[1]
    assert "Sort [" not in below.splitlines()[1]
