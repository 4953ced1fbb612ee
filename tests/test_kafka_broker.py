"""End-to-end check of the "real parts": Maven-fetched jars, a real KRaft Kafka broker started by
scripts/kafka.sh, and Spark's Kafka connector (jars/spark) writing to and reading from it."""

from __future__ import annotations

import os
import uuid

import pytest

try:
    from tests.services import LOG4J_CONF, ensure_kafka, spark_jars
except ImportError:  # run with plain `pytest` (tests/ on sys.path, repo root not)
    from services import LOG4J_CONF, ensure_kafka, spark_jars

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def bootstrap() -> str:
    return ensure_kafka()


@pytest.fixture(scope="module")
def kafka_spark():
    """A SparkSession with jars/spark on its classpath.

    spark.jars only takes effect when the JVM starts, so an already-running SparkContext
    without them cannot be fixed here: reuse one that has them, else skip (the shared session
    should be built with tests.services.spark_jars()).
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    jars = spark_jars()
    active = SparkContext._active_spark_context
    if active is not None:
        loaded = active.getConf().get("spark.jars", "")
        if all(os.path.basename(j) in loaded for j in jars):
            yield SparkSession.builder.getOrCreate()
            return
        pytest.skip("a SparkSession without jars/spark is already running in this process")

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("test_kafka_broker")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{LOG4J_CONF}")
        .getOrCreate()
    )
    yield spark
    # Ours: stop it so later modules can build a session with their own settings.
    spark.stop()


def test_spark_kafka_roundtrip(bootstrap: str, kafka_spark) -> None:
    spark = kafka_spark
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
