"""Producing to and reading from the test broker with Spark's own Kafka connector.

Tests never use a Python Kafka client: records go in with ``df.write.format("kafka")``
and come back with ``spark.read.format("kafka")``, the same connector the job uses.
"""
from __future__ import annotations

import json
import uuid
from typing import Iterable, Optional


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(spark, bootstrap: str, topic: str, records: Iterable[tuple[Optional[str], Optional[object]]]) -> None:
    """Write (key, value) records in order; a value of None is a tombstone, a dict is JSON."""
    rows = [(k, v if v is None or isinstance(v, str) else json.dumps(v)) for k, v in records]
    df = spark.createDataFrame(rows, "key string, value string").coalesce(1)
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()


def consume(spark, bootstrap: str, topic: str) -> list[tuple[Optional[str], Optional[str]]]:
    """Every record of the topic as (key, value) strings, in offset order."""
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").load())
    try:
        rows = df.selectExpr("partition", "offset", "CAST(key AS STRING) k", "CAST(value AS STRING) v").collect()
    except Exception as exc:  # the sink has not created its topic yet
        if "UnknownTopicOrPartition" in str(exc):
            return []
        raise
    return [(r.k, r.v) for r in sorted(rows, key=lambda r: (r.partition, r.offset))]


def upsert_state(records) -> dict[str, dict]:
    """The table an upsert topic stands for: last value per key, tombstones delete."""
    state: dict[str, dict] = {}
    for key, value in records:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = json.loads(value)
    return state


def produce_frame(df, bootstrap: str, topic: str) -> None:
    """Write a DataFrame of ``key`` and ``value`` strings (a null value is a tombstone) as
    it is, in bulk: the rows never pass through Python."""
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()


def upsert_table(spark, bootstrap: str, topic: str, schema: str):
    """The table an upsert topic stands for, computed by Spark (any size): the last value
    per key, tombstones delete; the JSON value's columns of ``schema`` plus ``__key``, the
    record's key. Every record of a key sits in one partition, so its offsets order it."""
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").load())
    df.createOrReplaceTempView("__upsert_records")
    last = spark.sql("SELECT CAST(key AS STRING) AS __key, CAST(value AS STRING) AS __value FROM ("
                     "  SELECT key, value, ROW_NUMBER() OVER (PARTITION BY key ORDER BY offset DESC) AS __n"
                     "  FROM __upsert_records) WHERE __n = 1 AND value IS NOT NULL")
    columns = [c.split()[0] for c in schema.split(", ")]
    from pyspark.sql import functions as F

    parsed = last.select("__key", F.from_json("__value", schema).alias("__v"))
    return parsed.select(*[F.col(f"__v.{c}").alias(c) for c in columns], "__key")
