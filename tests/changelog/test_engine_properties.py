"""The changelog engine against batch Spark SQL, on random changelogs.

For fixed seeds, random Debezium changelogs of users / colors / cheeses / accounts
(inserts, updates that move rows between groups and join keys, deletes, deletes of
absent keys, duplicated and replayed events) are written as files — each file one
micro-batch — and one pipeline (a statement set) runs several queries over them with
--once into upsert-kafka topics. Each topic must then hold exactly what the same SELECT
gives in batch Spark SQL over the tables' final contents.
"""
from __future__ import annotations

import pytest

from job.api import RunOptions, run
from tests.changelog.engine_support import (QUERIES, TABLES, Clock, Scenario, assert_sinks_match, changelog_stats,
                                            fresh_topics, pipeline_sql)

# Two statement sets, so each run starts few streaming queries at once; together they
# cover every query.
GROUPS = {
    "agg+join3+full": ("agg", "join3", "full"),
    "having+chain+joinagg+star": ("having", "chain", "joinagg", "star"),
}
# (seed, sloppy, files per micro-batch): sloppy changelogs (duplicated and replayed events,
# read with 'table.exec.source.cdc-events-duplicate': normalized by key) and a clean one
# (Flink's default: the changes are trusted as they come); one file per micro-batch, and
# two, so that events of one key from two files meet in one batch (ordered by the files'
# modification times).
SEEDS = [(11, True, 1), (22, False, 2), (34, True, 2)]
FILES = (2, 5)  # files per table (each costs a micro-batch of every query reading it)


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.parametrize("seed,sloppy,files_per_trigger", SEEDS, ids=[f"seed{s[0]}" for s in SEEDS])
@pytest.mark.parametrize("group", list(GROUPS))
def test_queries_match_batch_sql_over_final_tables(spark, kafka_bootstrap, tmp_path, group, seed, sloppy,
                                                   files_per_trigger):
    queries = [QUERIES[name] for name in GROUPS[group]]
    tables = sorted({t for q in queries for t in q.tables})
    scenario = Scenario.generate(tmp_path, seed, tables, files=FILES, sloppy=sloppy)
    scenario.write(Clock())
    topics = fresh_topics(queries)
    sql = pipeline_sql(scenario.directories, queries, topics, kafka_bootstrap, duplicates=sloppy,
                       files_per_trigger=files_per_trigger)
    code = run(RunOptions(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "checkpoints")))
    assert code == 0
    assert_sinks_match(spark, kafka_bootstrap, topics, scenario, queries, f"group {group}")


@pytest.mark.parametrize("seed", [s[0] for s in SEEDS if s[1]])
def test_changelogs_exercise_every_kind_of_change(seed, tmp_path):
    """The generator really produces what the engine tests claim to cover."""
    scenario = Scenario.generate(tmp_path, seed, list(TABLES), files=FILES)
    for name, events in scenario.events.items():
        stats = changelog_stats(TABLES[name], events)
        chunks = scenario.chunks[name]
        assert sum(chunks, []) == events and all(chunks), name
        assert len(events) <= 150 and len({(e[2] or e[1])[TABLES[name].key] for e in events}) <= 40, name
        if name == "accounts":
            assert stats["inserts"] and len(chunks) >= FILES[0], (name, stats)
            continue
        assert all(stats[k] for k in ("inserts", "updates", "moves", "deletes", "absent_deletes", "duplicates")), \
            (name, stats)
        assert FILES[0] <= len(chunks) <= FILES[1] and min(map(len, chunks)) < max(map(len, chunks)), name
    users = scenario.events["users"]
    assert any(op == "u" and b["accountId"] != a["accountId"] for op, b, a in users), "no user changed account"
