"""End-to-end check of the "real parts": Maven-fetched jars, a real KRaft Kafka broker started by
scripts/kafka.sh, and Spark's Kafka connector (jars/spark) writing to and reading from it."""

from __future__ import annotations

import uuid

import pytest

from tests.support.services import ensure_kafka

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def bootstrap() -> str:
    return ensure_kafka()


def test_spark_kafka_roundtrip(bootstrap: str, spark) -> None:
    # The shared session (tests.support.spark_session) carries jars/spark: Spark's Kafka connector.
    topic = f"roundtrip-{uuid.uuid4().hex[:8]}"  # fresh; auto-created by the first write
    rows = [("k1", "v1"), ("k2", "v2"), ("k3", None)]  # a null value is a tombstone
    (
        spark.createDataFrame(rows, "key string, value string")
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .save()
    )

    got = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "topic", "partition")
        .collect()
    )
    assert sorted((r.key, r.value) for r in got) == sorted(rows, key=lambda kv: kv[0])
    assert {r.topic for r in got} == {topic}
    assert {r.partition for r in got} == {0}  # num.partitions=1 on the test broker


def test_spark_kafka_streaming_roundtrip(bootstrap: str, spark, tmp_path) -> None:
    """Spark's Kafka connector is Maven Central's newest (4.2.0), which may be older than the
    Spark in use (PySpark 4.3.0): its streaming source and sink, the parts the job runs on,
    must work against this Spark. A stream from one topic to another, then a restart on its
    checkpoint that reads only what came since (the connector's offsets, read back)."""
    src, out = (f"stream-{name}-{uuid.uuid4().hex[:8]}" for name in ("in", "out"))

    def produce(rows):
        (spark.createDataFrame(rows, "key string, value string").write.format("kafka")
         .option("kafka.bootstrap.servers", bootstrap).option("topic", src).save())

    def stream_once():
        query = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", src)
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr("key", "CONCAT(CAST(value AS STRING), '!') AS value")
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", out)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(180)
        assert query.exception() is None, f"Spark {spark.version}: {query.exception()}"

    def read_out():
        got = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", out).option("startingOffsets", "earliest")
               .option("endingOffsets", "latest").load()
               .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value").collect())
        return sorted((r.key, r.value) for r in got)

    produce([("k1", "a"), ("k2", "b")])
    stream_once()
    assert read_out() == [("k1", "a!"), ("k2", "b!")], f"Spark {spark.version}"
    produce([("k3", "c")])
    stream_once()
    assert read_out() == [("k1", "a!"), ("k2", "b!"), ("k3", "c!")], f"Spark {spark.version}"
