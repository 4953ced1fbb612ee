"""The changelog engine over upsert-kafka sources with several partitions.

The same random changelogs as test_engine_properties.py, produced as upsert records
(an insert or update is the row under its key, a delete a tombstone, so there are
tombstones for absent keys and duplicates too) into three-partition topics: a key's
records share a partition, different keys' records interleave across partitions, and
micro-batches cut every partition at a different point. Each sink must then hold what
batch Spark SQL computes over the tables' final contents.
"""
from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from job.api import RunOptions, run
from tests.changelog.engine_support import (QUERIES, TABLES, assert_sinks_match, final_contents, fresh_topics,
                                            random_changelog, statement_set)
from tests.support.kafka_io import produce, topic_name

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 3


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """With the repository's own topic tool, as a user would (the test broker creates one
    partition per topic on its own)."""
    subprocess.run([str(ROOT / "scripts" / "kafka-topics.sh"), "--bootstrap-server", bootstrap, "--create",
                    "--topic", topic, "--partitions", str(partitions)], check=True, capture_output=True, timeout=120)


def partitions_used(spark, bootstrap: str, topic: str) -> int:
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").load())
    return df.select("partition").distinct().count()


class UpsertScenario:
    """Random changelogs, kept as events (for the reference) and produced as upsert records."""

    def __init__(self, seed: int, tables) -> None:
        rng = random.Random(seed)
        self.seed = seed
        self.events = {name: random_changelog(TABLES[name], rng, 150) for name in tables}

    def final(self, table: str) -> list[dict]:
        return final_contents(TABLES[table], self.events[table])

    def records(self, table: str):
        key = TABLES[table].key
        for op, before, after in self.events[table]:
            yield (before[key], None) if op == "d" else (after[key], after)


def source_ddl(table: str, topic: str, bootstrap: str, per_trigger: int) -> str:
    t = TABLES[table]
    return (f"CREATE TABLE {t.name} ({t.ddl_columns}, PRIMARY KEY ({t.key}) NOT ENFORCED) WITH ("
            f"'connector' = 'upsert-kafka', 'topic' = '{topic}', 'key.format' = 'raw', 'value.format' = 'json', "
            f"'properties.bootstrap.servers' = '{bootstrap}', 'scan.max-offsets-per-trigger' = '{per_trigger}')")


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.parametrize("seed,per_trigger", [(42, 17)])
def test_queries_over_partitioned_upsert_topics_match_batch_sql(spark, kafka_bootstrap, tmp_path, seed, per_trigger):
    queries = [QUERIES[name] for name in ("agg", "join3", "chain", "full")]
    tables = sorted({t for q in queries for t in q.tables})
    scenario = UpsertScenario(seed, tables)
    sources = []
    for table in tables:
        topic = topic_name(f"in-{table}")
        create_topic(kafka_bootstrap, topic, PARTITIONS)
        produce(spark, kafka_bootstrap, topic, scenario.records(table))
        assert partitions_used(spark, kafka_bootstrap, topic) == PARTITIONS
        sources.append(source_ddl(table, topic, kafka_bootstrap, per_trigger))
    topics = fresh_topics(queries)
    sql = statement_set(sources, queries, topics, kafka_bootstrap)
    assert run(RunOptions(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "checkpoints"))) == 0
    assert_sinks_match(spark, kafka_bootstrap, topics, scenario, queries, "upsert-kafka sources")
