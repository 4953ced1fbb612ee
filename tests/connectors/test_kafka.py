"""The append-only 'kafka' connector end to end against the real broker: formats,
key fields, metadata columns, startup modes, and the append sink."""
from __future__ import annotations

import json

import pytest

from job.api import RunOptions, run
from tests.support.kafka_io import consume, produce, topic_name

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def source_ddl(topic, bootstrap, extra="", fmt="json", columns="id INT, name STRING"):
    return f"""CREATE TABLE src (
      {columns},
      k STRING,
      t STRING METADATA FROM 'topic' VIRTUAL,
      p INT METADATA FROM 'partition' VIRTUAL,
      o BIGINT METADATA FROM 'offset' VIRTUAL,
      ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
      upper_name AS UPPER(name)
    ) WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
            'key.format' = 'raw', 'key.fields' = 'k', 'value.format' = '{fmt}',
            'value.fields-include' = 'EXCEPT_KEY' {extra})"""


def sink_ddl(topic, bootstrap):
    return f"""CREATE TABLE out (id INT, name STRING, k STRING, t STRING, o BIGINT, has_ts BOOLEAN)
      WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
            'format' = 'json')"""


INSERT = "INSERT INTO out SELECT id, upper_name, k, t, o, ts IS NOT NULL FROM src"


def run_sql(statements, tmp_path, name="ck"):
    return run(RunOptions(statements=statements, once=True, checkpoint_dir=str(tmp_path / name)))


def values(spark, bootstrap, topic):
    return sorted((json.loads(v) for _k, v in consume(spark, bootstrap, topic)), key=lambda r: r["o"])


def test_json_with_key_fields_metadata_and_computed_columns(spark, kafka_bootstrap, tmp_path):
    src, out = topic_name("src"), topic_name("out")
    produce(spark, kafka_bootstrap, src, [("a", {"id": 1, "name": "ann"}), ("b", {"id": 2, "name": "bob"})])
    assert run_sql([source_ddl(src, kafka_bootstrap, ", 'scan.startup.mode' = 'earliest-offset'"),
                    sink_ddl(out, kafka_bootstrap), INSERT], tmp_path) == 0
    assert values(spark, kafka_bootstrap, out) == [
        {"id": 1, "name": "ANN", "k": "a", "t": src, "o": 0, "has_ts": True},
        {"id": 2, "name": "BOB", "k": "b", "t": src, "o": 1, "has_ts": True},
    ]
    # A second --once run continues from the checkpoint: only the new record arrives.
    produce(spark, kafka_bootstrap, src, [("c", {"id": 3, "name": "cy"})])
    assert run_sql([source_ddl(src, kafka_bootstrap, ", 'scan.startup.mode' = 'earliest-offset'"),
                    sink_ddl(out, kafka_bootstrap), INSERT], tmp_path) == 0
    assert [r["id"] for r in values(spark, kafka_bootstrap, out)] == [1, 2, 3]


def test_specific_offsets_and_csv(spark, kafka_bootstrap, tmp_path):
    src, out = topic_name("src"), topic_name("out")
    produce(spark, kafka_bootstrap, src, [(str(i), f"{i},n{i}") for i in range(5)])
    ddl = source_ddl(src, kafka_bootstrap, ", 'scan.startup.mode' = 'specific-offsets', "
                     "'scan.startup.specific-offsets' = 'partition:0,offset:3'", fmt="csv")
    assert run_sql([ddl, sink_ddl(out, kafka_bootstrap), INSERT], tmp_path) == 0
    assert [(r["id"], r["name"], r["o"]) for r in values(spark, kafka_bootstrap, out)] == [(3, "N3", 3), (4, "N4", 4)]


def test_latest_offset_skips_what_was_there(spark, kafka_bootstrap, tmp_path):
    src, out = topic_name("src"), topic_name("out")
    produce(spark, kafka_bootstrap, src, [("a", {"id": 1, "name": "old"})])
    ddl = source_ddl(src, kafka_bootstrap, ", 'scan.startup.mode' = 'latest-offset'")
    assert run_sql([ddl, sink_ddl(out, kafka_bootstrap), INSERT], tmp_path) == 0
    produce(spark, kafka_bootstrap, src, [("b", {"id": 2, "name": "new"})])
    assert run_sql([ddl, sink_ddl(out, kafka_bootstrap), INSERT], tmp_path) == 0
    assert [r["id"] for r in values(spark, kafka_bootstrap, out)] == [2]


def test_group_offsets_start_from_what_the_group_committed(spark, kafka_bootstrap, tmp_path):
    """With no committed offsets and auto.offset.reset = earliest, the query reads all."""
    src, out = topic_name("src"), topic_name("out")
    produce(spark, kafka_bootstrap, src, [("a", {"id": 1, "name": "x"}), ("b", {"id": 2, "name": "y"})])
    ddl = source_ddl(src, kafka_bootstrap, f", 'properties.group.id' = '{topic_name('g')}'")
    assert run_sql([ddl, sink_ddl(out, kafka_bootstrap), INSERT], tmp_path) == 0
    assert [r["id"] for r in values(spark, kafka_bootstrap, out)] == [1, 2]


def test_the_consumer_does_not_wait_at_the_end_of_the_data_unless_the_table_says():
    # Kafka's 500 ms long poll held up the batch that reached the end of a topic.
    from job.connectors.kafka.records import FETCH_MAX_WAIT_MS, consumer_options

    assert consumer_options({"properties.bootstrap.servers": "b:9092"})["kafka.fetch.max.wait.ms"] == FETCH_MAX_WAIT_MS
    assert int(FETCH_MAX_WAIT_MS) < 500
    own = consumer_options({"properties.bootstrap.servers": "b:9092", "properties.fetch.max.wait.ms": "250"})
    assert own["kafka.fetch.max.wait.ms"] == "250"


def test_a_running_querys_batch_waits_for_enough_records_unless_told_otherwise():
    # A batch costs about the same CPU for ten records as for thousands: a slow stream is
    # read about once a second rather than back to back.
    from job.connectors.kafka.records import batch_wait

    defaults = {"properties.bootstrap.servers": "b:9092", "scan.min-offsets-per-trigger": 5000,
                "scan.max-trigger-delay": 1000, "scan.max-offsets-per-trigger": 5_000_000}
    assert batch_wait(defaults, once=False) == {"minOffsetsPerTrigger": "5000", "maxTriggerDelay": "1000ms"}
    assert batch_wait(defaults, once=True) == {}  # --once reads the backlog to its end
    assert batch_wait({**defaults, "scan.bounded.mode": "latest-offset"}, once=False) == {}
    assert batch_wait({**defaults, "scan.min-offsets-per-trigger": 0}, once=False) == {}
    assert batch_wait({**defaults, "scan.max-offsets-per-trigger": 100}, once=False)["minOffsetsPerTrigger"] == "100"
    assert batch_wait({**defaults, "scan.max-trigger-delay": 250}, once=False)["maxTriggerDelay"] == "250ms"
    # A query reading three such tables: each waits for a third (rounded up).
    assert batch_wait(defaults, once=False, shared_by=3)["minOffsetsPerTrigger"] == "1667"


def test_a_batchs_default_bound_is_what_fits_in_execution_memory(spark):
    """No fixed count: the rows a micro-batch may hold are derived from the executor's
    memory and the table's row size, so a wider table reads smaller batches."""
    from job.connectors.kafka.records import records_per_batch
    from job.sql.statements import Column, CreateTable

    def table(*columns):
        return CreateTable(name="t", columns=tuple(Column(n, t.lower(), t) for n, t in columns), options={})

    heap = spark._jvm.java.lang.Runtime.getRuntime().maxMemory()
    execution = (heap - (300 << 20)) * float(spark.sparkContext.getConf().get("spark.memory.fraction", "0.6"))
    narrow = records_per_batch(spark, table(("id", "BIGINT"), ("n", "INT")))
    assert narrow == int(execution // (8 + 4 + 16))  # Spark's defaultSize of BIGINT and INT, the sorter's 16
    wide = records_per_batch(spark, table(("id", "BIGINT"), ("n", "INT"), ("s", "STRING"), ("b", "BINARY")))
    assert 0 < wide < narrow


def test_a_query_reading_several_kafka_tables_shares_the_wait_among_them(spark, tmp_path):
    """Spark holds each source's records back until that source alone has its minimum:
    with the whole minimum each, a table read slowly waited its full delay while the
    others filled batch after batch. Planned as a running query, without a broker."""
    import re

    from job.api import compile
    from job.plan.queries import plan_queries

    def table(name, extra=""):
        return (f"CREATE TABLE {name} (k STRING, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ("
                f"'connector' = 'upsert-kafka', 'topic' = '{name}', 'properties.bootstrap.servers' = 'b:9092', "
                f"'key.format' = 'json', 'value.format' = 'json' {extra})")

    def waits(query):
        program = compile(RunOptions(statements=[
            table("a"), table("b"), table("c", ", 'scan.min-offsets-per-trigger' = '0'"), table("d"),
            table("e", ", 'scan.bounded.mode' = 'latest-offset'"),
            "CREATE TABLE o (k STRING, x STRING, y STRING) WITH ('connector' = 'blackhole')", f"INSERT INTO o {query}"]))
        plans = plan_queries(spark, program, checkpoint_dir=str(tmp_path), offline=True)
        plan = plans[0].writer._df._jdf.queryExecution().logical().toString()
        return sorted(re.findall(r"subscribe=(\w+)", plan)), sorted(re.findall(r"minOffsetsPerTrigger=(\d+)", plan))

    three = "SELECT a.k, b.v, d.v FROM a LEFT JOIN b ON a.k = b.k LEFT JOIN d ON a.k = d.k"
    assert waits(three) == (["a", "b", "d"], ["1667", "1667", "1667"])
    # A table that does not wait ('0', or bounded: read to its end) takes no share; one
    # table alone waits for all.
    assert waits("SELECT a.k, c.v, c.v FROM a LEFT JOIN c ON a.k = c.k") == (["a", "c"], ["5000"])
    assert waits("SELECT a.k, e.v, e.v FROM a LEFT JOIN e ON a.k = e.k") == (["a", "e"], ["5000"])
    assert waits("SELECT k, v, v FROM a") == (["a"], ["5000"])


def test_the_batch_wait_options_are_the_tables():
    """Declared, typed and defaulted by the connector: what batch_wait reads."""
    from job.connectors.registry import bind
    from job.pipeline.load import load_statements
    from job.plan.program import declare

    ddl = ("CREATE TABLE t (k STRING, v STRING) WITH ('connector' = 'kafka', 'topic' = 't', "
           "'properties.bootstrap.servers' = 'b:9092', 'format' = 'json', 'scan.max-trigger-delay' = '2 s')")
    catalog, _, _ = declare(load_statements(args=[ddl]).statements, None)
    options = bind(next(iter(catalog.tables.values())), "source").options
    assert options["scan.min-offsets-per-trigger"] == 5000 and options["scan.max-trigger-delay"] == 2000


def test_the_sink_producer_fills_its_requests_unless_the_table_says():
    # Kafka 4's default linger; the kafka-clients 3.9 of Spark's connector sent each record alone.
    from job.connectors.kafka.records import write_options

    assert write_options({"properties.bootstrap.servers": "b:9092", "topic": "t"})["kafka.linger.ms"] == "5"
    own = write_options({"properties.bootstrap.servers": "b:9092", "topic": "t", "properties.linger.ms": "0"})
    assert own["kafka.linger.ms"] == "0"


def test_a_poll_returns_more_than_kafkas_500_records_unless_the_table_says():
    # Spark's reader asks the broker for the partition's offset range after every poll.
    from job.connectors.kafka.records import consumer_options

    assert int(consumer_options({"properties.bootstrap.servers": "b:9092"})["kafka.max.poll.records"]) > 500
    own = consumer_options({"properties.bootstrap.servers": "b:9092", "properties.max.poll.records": "100"})
    assert own["kafka.max.poll.records"] == "100"


def test_headers_are_read_where_a_column_declares_them(spark, kafka_bootstrap, tmp_path):
    """Records' headers are asked of Spark's source only for a table with a headers column
    (Spark builds them per record); such a table reads them."""
    src, out = topic_name("src"), topic_name("out")
    records = spark.createDataFrame(
        [("a", json.dumps({"id": 1, "name": "ann"}), [("trace", b"t1"), ("hop", b"2")]),
         ("b", json.dumps({"id": 2, "name": "bob"}), [])],
        "key string, value string, headers array<struct<key: string, value: binary>>")
    records.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", kafka_bootstrap) \
        .option("topic", src).save()
    ddl = f"""CREATE TABLE src (id INT, name STRING, h MAP<STRING, BYTES> METADATA FROM 'headers' VIRTUAL)
      WITH ('connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{kafka_bootstrap}',
            'format' = 'json', 'scan.startup.mode' = 'earliest-offset')"""
    sink = f"""CREATE TABLE out (id INT, trace STRING, headers INT)
      WITH ('connector' = 'kafka', 'topic' = '{out}', 'properties.bootstrap.servers' = '{kafka_bootstrap}',
            'format' = 'json')"""
    insert = "INSERT INTO out SELECT id, CAST(h['trace'] AS STRING), CARDINALITY(h) FROM src"
    assert run_sql([ddl, sink, insert], tmp_path) == 0
    rows = sorted((json.loads(v) for _k, v in consume(spark, kafka_bootstrap, out)), key=lambda r: r["id"])
    assert rows == [{"id": 1, "trace": "t1", "headers": 2}, {"id": 2, "trace": None, "headers": 0}]
