"""The engine's stateful operators get each key's rows together by a hash of the key
(engine/…/grouping/: a radix sort over the hash, then regrouping of keys that share one),
in the place of Spark's sort by the key itself; and before the shuffle, each partition's
rows are reduced where the operator's result allows (ReduceExec, below the exchange): an
upsert table's normalization gets only each key's earliest and latest rows, a join of
upsert tables on their key each side's earliest and latest rows per key, an aggregation
equal rows netted, a join of changelogs equal rows netted per key and side.

Neither may change a single change of any query: the same random changelogs run with
Spark's sort, with the hash, and with a hash cut to one bit (so that half the keys share
each hash and every run of equal hashes mixes keys: the regrouping is all that keeps a
key's rows together) must give the same changelog and the same rows; and so must every
row shipped, the reductions, and the reductions with their table cut to three keys (so
that it is passed on and starts anew many times a batch).
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
REDUCTIONS = {  # each way of shipping an operator's rows
    "every row": {"spark.streamsql.reduceBeforeShuffle": "false"},
    "reduced": {},
    "reduced, three keys at a time": {"spark.streamsql.reduceBeforeShuffle.maxKeys": "3"},
}
REDUCED_QUERIES = {  # (query, over the normalized upsert tables?)
    "normalized, group by": (QUERIES["group by"], True),
    "normalized, projection": ("SELECT uid, accountId, score FROM users WHERE score > 10", True),
    "join of upsert tables on their key": (QUERIES["3-way left join"], True),
    "upsert tables, inner join on their key": ("SELECT u.uid, u.score, c.color FROM users u JOIN colors c "
                                               "ON u.uid = c.userUid", True),
    "group by": (QUERIES["group by"], False),
    "join of changelogs": (QUERIES["3-way left join"], False),
    "join of changelogs, many rows per key": ("SELECT a.uid, b.uid AS other, b.score FROM users a JOIN users b "
                                              "ON a.accountId = b.accountId WHERE a.score < 20", False),
    "global aggregate": ("SELECT COUNT(*) AS n, SUM(score) AS total, MAX(accountId) AS top FROM users", False),
    "group by, ordered calls": ("SELECT accountId, LISTAGG(uid) AS uids FROM users GROUP BY accountId", True),
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


@pytest.fixture(scope="module")
def upsert_tables(tmp_path_factory):
    """Changelogs with what a CDC source delivers twice or out of turn (duplicates, late
    replays, deletes of absent keys), read as upsert streams: normalized by key. Few keys,
    many changes each, in three files (three micro-batches)."""
    root = tmp_path_factory.mktemp("key_grouping_upsert")
    rng, clock = random.Random(11), Clock()
    statements = ["SET 'table.exec.source.cdc-events-duplicate' = 'true'"]
    for table, n_events in ((USERS, 3000), (COLORS, 1500), (CHEESES, 1500)):
        events = random_changelog(table, rng, n_events, n_keys=60, sloppy=True)
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


def _assert_every_mode_gives_the_same_changes(spark, statements, query, modes: dict, tmp_path, least: int):
    """The query run once per mode (session settings): the first mode's changelog and rows
    are every other mode's."""
    results = {mode: _run(spark, statements, query, settings, tmp_path / str(i))
               for i, (mode, settings) in enumerate(modes.items())}
    expected = results[next(iter(modes))]
    assert len(expected.changes) >= least  # the case exercises the operators
    columns = [name for name, _ in expected.columns]
    for mode, result in results.items():
        assert Counter(result.changes) == Counter(expected.changes), mode
        assert_df_equality(spark.createDataFrame(result.rows, columns), spark.createDataFrame(expected.rows, columns),
                           ignore_row_order=True, ignore_nullable=True)


@pytest.mark.parametrize("query", list(QUERIES))
def test_every_grouping_gives_the_same_changes(spark, tables, tmp_path, query):
    _assert_every_mode_gives_the_same_changes(spark, tables, QUERIES[query], MODES, tmp_path, least=10)


@pytest.mark.parametrize("query", list(REDUCED_QUERIES))
def test_reducing_rows_before_the_shuffle_gives_the_same_changes(spark, tables, upsert_tables, tmp_path, query):
    sql, normalized = REDUCED_QUERIES[query]
    _assert_every_mode_gives_the_same_changes(spark, upsert_tables if normalized else tables, sql, REDUCTIONS,
                                              tmp_path, least=3)


def _executed_plan(spark, statements, query, tmp_path) -> str:
    return _executed(spark, statements, query, tmp_path).toString()


def _executed(spark, statements, query, tmp_path):
    """The executed physical plan (a JVM object) of ``query`` run once to its end."""
    from job.errors import Origin
    from job.pipeline.load import load_statements
    from job.plan.program import declare
    from job.plan.queries import new_planner
    from job.plan.sources import QuerySources
    from job.sql.flink.query import parse_query

    catalog, conf, _ = declare(load_statements(args=statements).statements, None)
    planner = new_planner(spark, catalog, conf, QuerySources(spark, str(tmp_path / "ck"), once=True).open)
    df = planner.signed(planner.settle(planner.plan(parse_query(query, Origin("query"), query))))
    written = (df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck" / "plan"))
               .trigger(availableNow=True).start())
    written.awaitTermination(120)
    return written._jsq.streamingQuery().lastExecution().executedPlan()


def _nodes(plan) -> list:
    out, todo = [], [plan]
    while todo:
        node = todo.pop()
        out.append(node)
        children = node.children().iterator()
        while children.hasNext():
            todo.append(children.next())
    return out


def test_a_stateful_operators_tasks_carry_no_plan_below_its_grouping(spark, upsert_tables, tmp_path):
    """Spark ships a stateful operator's whole node to each of its tasks. The grouping node
    under it leaves its child out, so a task does not carry (and deserialize) the shuffle,
    the reductions, the other operators and the source below; what an executor reads of the
    grouping node, its columns, survives the trip."""
    jvm = spark._jvm
    serializer = jvm.org.apache.spark.serializer.JavaSerializer(spark.sparkContext._jsc.sc().conf()).newInstance()
    any_type = jvm.scala.reflect.ClassTag.Any()
    loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    nodes = _nodes(_executed(spark, upsert_tables, QUERIES["group by"], tmp_path))
    operators = [n for n in nodes if n.nodeName() == "TransformWithState"]
    assert len(operators) == 2  # the upsert table's normalization and the aggregation
    for operator in operators:
        shipped = serializer.serialize(operator, any_type)
        data = bytes(jvm.java.util.Arrays.copyOf(shipped.array(), shipped.limit()))
        assert b"streamsql.engine.grouping.KeyGroupExec" in data
        for below in ("ShuffleExchangeExec", "ReduceExec", "FileSourceScanExec"):
            assert below.encode() not in data, below
        grouping = operator.children().head()
        assert grouping.nodeName() == "GroupByKeyHash"
        copy = serializer.deserialize(serializer.serialize(grouping, any_type), loader, any_type)
        assert copy.output().toString() == grouping.output().toString()
        assert copy.children().isEmpty()
        assert "GroupByKeyHash" in copy.toString()
        # A copy without its child still compares and hashes (Spark's tree code may ask).
        assert copy.equals(serializer.deserialize(serializer.serialize(grouping, any_type), loader, any_type))
        assert not copy.equals(grouping)
        copy.hashCode()


def test_the_plan_groups_by_hash_instead_of_sorting(spark, tables, tmp_path):
    """Below each stateful operator: the hash grouping, and no sort of Spark's."""
    plan = _executed_plan(spark, tables, QUERIES["3-way left join"], tmp_path)
    _, below = plan.split("TransformWithState", 1)
    assert "GroupByKeyHash" in below.splitlines()[1]
    assert "Sort [" not in below.splitlines()[1]


def test_rows_are_reduced_below_the_exchange_of_the_normalization_and_of_the_aggregation(spark, upsert_tables,
                                                                                        tmp_path):
    plan = _executed_plan(spark, upsert_tables, QUERIES["group by"], tmp_path).splitlines()
    for reduction in ("FirstAndLatestPerKey", "NetEqualRows"):
        reduced = [i for i, line in enumerate(plan) if reduction in line]
        assert len(reduced) == 1, reduction
        i = reduced[0]
        assert "Exchange hashpartitioning(" in plan[i - 1] and "GroupByKeyHash" in plan[i - 2]
        assert "TransformWithState" in plan[i - 3]


def test_an_aggregation_whose_calls_read_rows_in_order_gets_every_row(spark, upsert_tables, tmp_path):
    plan = _executed_plan(spark, upsert_tables, REDUCED_QUERIES["group by, ordered calls"][0], tmp_path)
    assert "NetEqualRows" not in plan and "FirstAndLatestPerKey" in plan


def _reductions(plan: str) -> list[str]:
    """The plan's reductions (a ReduceExec shows as its reduction: name, then arguments)."""
    lines = (line.strip(" :+-") for line in plan.splitlines())
    return [line for line in lines if line.startswith(("NetEqualRows ", "NetEqualRowsPerKey ", "FirstAndLatestPerKey "))]


def test_a_join_of_changelogs_gets_equal_rows_netted_per_key_and_side(spark, tables, tmp_path):
    plan = _executed_plan(spark, tables, QUERIES["3-way left join"], tmp_path)
    reductions = _reductions(plan)
    assert len(reductions) == 1 and reductions[0].startswith("NetEqualRowsPerKey "), plan
    assert "__side" in reductions[0]


def test_a_join_of_upsert_tables_on_their_key_gets_each_sides_earliest_and_latest(spark, upsert_tables, tmp_path):
    plan = _executed_plan(spark, upsert_tables, QUERIES["3-way left join"], tmp_path)
    reductions = _reductions(plan)
    assert len(reductions) == 1 and reductions[0].startswith("FirstAndLatestPerKey "), plan
    assert "__side" in reductions[0]  # per key and side


def test_a_join_of_an_upsert_table_and_a_changelog_gets_every_row(spark, upsert_tables, tmp_path):
    """One side normalized in the join, one normalized before it (filtered first) and so a
    changelog: neither reduction holds for both, so the join's exchange ships every row."""
    query = "SELECT u.uid, c.color FROM users u LEFT JOIN (SELECT * FROM colors WHERE color <> 'x') c ON u.uid = c.userUid"
    plan = [line.strip(" :+-") for line in _executed_plan(spark, upsert_tables, query, tmp_path).splitlines()]
    join = next(i for i, line in enumerate(plan) if line.startswith("TransformWithState"))
    exchange = next(i for i in range(join, len(plan)) if plan[i].startswith("Exchange hashpartitioning(__k0"))
    assert not plan[exchange + 1].startswith(("NetEqualRows", "FirstAndLatestPerKey")), plan[exchange + 1]  # NetEqualRowsPerKey too
    # colors' own normalization below still gets its reduction
    assert [r.split(" ", 1)[0] for r in _reductions("\n".join(plan))] == ["FirstAndLatestPerKey"]
