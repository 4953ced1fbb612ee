"""The 'avro-confluent' format against two real clients of a Confluent schema registry,
through the small registry of tests/support/schema_registry.py (which these tests prove
against them): confluent-kafka's Python AvroSerializer writes records the job reads,
across two versions of the writer's schema (a field the table lacks, a column the old
writer lacks), and Flink 2.3's avro-confluent format writes records the job reads and
reads the records the job writes, the same rows both ways.
"""
from __future__ import annotations

import json
import uuid

import pytest

from job.api import collect
from job.connectors.base import SinkContext
from job.errors import PipelineError
from job.pipeline.load import load_statements
from job.plan.program import declare
from tests.support.flink_sql import canonical, run_flink
from tests.support.schema_registry import RegistryServer


def kafka_ddl(name, topic, bootstrap, url, columns, extra="", fmt="avro-confluent"):
    options = f"'format' = '{fmt}', 'avro-confluent.url' = '{url}'" if fmt == "avro-confluent" else f"'format' = '{fmt}'"
    return (f"CREATE TABLE {name} ({columns}) WITH ('connector' = 'kafka', 'topic' = '{topic}', "
            f"'properties.bootstrap.servers' = '{bootstrap}', 'properties.group.id' = 'g', "
            f"'scan.startup.mode' = 'earliest-offset', {options}{extra})")


def job_rows(result) -> set:
    return {tuple(canonical(v) for v in row) for op, row in result.changes if op == "+I"}


def test_options_refused_by_name_and_unreachable_registry(spark, tmp_path):
    def bind(extra, url="http://127.0.0.1:1"):
        ddl = kafka_ddl("t", "x", "127.0.0.1:1", url, "id INT", extra)
        catalog, _, _ = declare(load_statements(args=[ddl]).statements)
        return catalog.bound_table("t", "source")

    for extra in (", 'avro-confluent.ssl.truststore.location' = '/x'", ", 'avro-confluent.bearer-auth.token' = 'zq9secret'",
                  ", 'avro-confluent.schema' = '\"int\"'"):
        with pytest.raises(PipelineError, match="avro-confluent.(ssl|bearer|schema)") as info:
            bind(extra)
        assert "zq9secret" not in str(info.value)
        assert info.value.option == extra.split("'")[1]  # pointed at the option itself
    from job.formats import avro_confluent
    from job.formats.avro_confluent import RegistryError

    # Credentials in the URL or the user-info never reach an error.
    with pytest.raises(RegistryError, match=r"table 't': the schema registry at http://127.0.0.1:1 "
                                            r"cannot be reached") as info:
        avro_confluent.check_reachable({"url": "http://alice:s3cret@127.0.0.1:1", "@table": "t",
                                        "basic-auth.user-info": "bob:hunter2"})
    assert "s3cret" not in str(info.value) and "hunter2" not in str(info.value)
    files = (f"CREATE TABLE t (id INT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}', "
             "'format' = 'avro-confluent', 'avro-confluent.url' = 'http://127.0.0.1:1')")
    with pytest.raises(PipelineError, match="'kafka' and 'upsert-kafka' connectors only"):
        collect([files], "SELECT * FROM t", spark=spark, checkpoint_dir=str(tmp_path / "ck"))

    # A dry run contacts no registry: the plan of a copy between two such tables is built.
    import io

    from job.api import RunOptions, run
    copy = ";\n".join([kafka_ddl("a", "x", "127.0.0.1:1", "http://127.0.0.1:1", "id INT"),
                        kafka_ddl("b", "y", "127.0.0.1:1", "http://127.0.0.1:1", "id INT"),
                        "INSERT INTO b SELECT * FROM a"])
    err = io.StringIO()
    assert run(RunOptions(statements=[copy], dry_run=True), out=io.StringIO(), err=err) == 0, err.getvalue()


@pytest.mark.slow
def test_confluent_kafka_serializer_records_are_read_with_schema_evolution(spark, tmp_path):
    """confluent-kafka writes two versions of its schema under '<topic>-value': the old one
    with a field the table does not have and without 'score', the new one with 'score'.
    The table reads both (the missing column takes the reader's default, NULL); a record
    that is no Confluent Avro record goes through 'on-error' with its offset. The registry
    wants basic auth: the job sends 'avro-confluent.basic-auth.user-info' (the test fails
    with HTTP 401 otherwise)."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from tests.support.services import ensure_kafka

    bootstrap = ensure_kafka()
    topic = f"ac-{uuid.uuid4().hex[:8]}"
    v1 = {"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "int"}, {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "dropped", "type": "string"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
    v2 = {"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "int"}, {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "score", "type": ["null", "double"], "default": None}]}
    import datetime
    at = datetime.datetime(2024, 1, 31, 12, 0, 0, 123000, tzinfo=datetime.timezone.utc)
    auth = ", 'avro-confluent.basic-auth.credentials-source' = 'USER_INFO', " \
           "'avro-confluent.basic-auth.user-info' = 'reader:pw1'"
    with RegistryServer(basic_auth="reader:pw1") as server:
        client = SchemaRegistryClient({"url": server.url, "basic.auth.user.info": "reader:pw1"})
        producer = Producer({"bootstrap.servers": bootstrap})
        context = SerializationContext(topic, MessageField.VALUE)
        old = AvroSerializer(client, json.dumps(v1))
        new = AvroSerializer(client, json.dumps(v2))
        producer.produce(topic, value=old({"id": 1, "name": "a", "dropped": "x", "ts": at}, context))
        producer.produce(topic, value=new({"id": 2, "name": None, "ts": at, "score": 2.5}, context))
        producer.produce(topic, value=b"\x00\x00\x00\x00\x63garbage")  # an id the registry does not have
        producer.flush(30)
        ids = server.registry.subjects[f"{topic}-value"]
        assert len(ids) == 2  # both versions registered under Flink's default subject

        columns = "id INT NOT NULL, name STRING, ts TIMESTAMP(3), score DOUBLE"
        with pytest.raises(Exception, match=r"(?s)table .t.: schema id 99 .*not in the schema registry.*offset 2"):
            collect([kafka_ddl("t", topic, bootstrap, server.url, columns, auth)], "SELECT * FROM t", spark=spark,
                    checkpoint_dir=str(tmp_path / "c1"))
        got = job_rows(collect([kafka_ddl("t", topic, bootstrap, server.url, columns, auth + ", 'on-error' = 'skip'")],
                               "SELECT * FROM t", spark=spark, checkpoint_dir=str(tmp_path / "c2")))
    assert got == {("1", "a", "2024-01-31 12:00:00.123000", "NULL"), ("2", "NULL", "2024-01-31 12:00:00.123000", "2.5")}


FLINK_COLUMNS = ("id INT NOT NULL, s STRING, n BIGINT, dc DECIMAL(10, 2), dt DATE, ts TIMESTAMP(3), "
                 "arr ARRAY<INT>, r ROW<x INT, y STRING>")
FLINK_ROWS = ("INSERT INTO t VALUES (1, 'a', 9000000000, CAST(12.34 AS DECIMAL(10, 2)), DATE '2024-01-31', "
              "TIMESTAMP '2024-01-31 12:00:00.123', ARRAY[1, CAST(NULL AS INT)], ROW(7, 'z')), "
              "(2, CAST(NULL AS STRING), CAST(NULL AS BIGINT), CAST(NULL AS DECIMAL(10, 2)), CAST(NULL AS DATE), "
              "CAST(NULL AS TIMESTAMP(3)), CAST(NULL AS ARRAY<INT>), CAST(NULL AS ROW<x INT, y STRING>))")
KEYED = ", 'key.format' = 'avro-confluent', 'key.avro-confluent.url' = '{url}', 'key.fields' = 'id'"


def keyed_ddl(name, topic, bootstrap, url, extra=""):
    """Key and value both avro-confluent: Flink names the formats 'key.format' and
    'value.format' then, with their options under 'key.' and 'value.'."""
    return (f"CREATE TABLE {name} ({FLINK_COLUMNS}) WITH ('connector' = 'kafka', 'topic' = '{topic}', "
            f"'properties.bootstrap.servers' = '{bootstrap}', 'properties.group.id' = 'g', "
            f"'scan.startup.mode' = 'earliest-offset', 'value.format' = 'avro-confluent', "
            f"'value.avro-confluent.url' = '{url}'" + KEYED.format(url=url) + f"{extra})")


@pytest.mark.slow
def test_avro_confluent_records_between_flink_and_the_job(spark, tmp_path):
    """Flink writes keyed avro-confluent records (schemas registered under '<topic>-key' and
    '<topic>-value') that the job reads; the job writes the same rows, registering under
    its topic's subjects the very schemas Flink registered (the same ids), and Flink reads
    them back: the same rows all three ways."""
    from tests.support.services import ensure_kafka

    bootstrap = ensure_kafka()
    topic, back = f"acf-{uuid.uuid4().hex[:8]}", f"acf-back-{uuid.uuid4().hex[:8]}"
    bounded = ", 'scan.bounded.mode' = 'latest-offset'"
    with RegistryServer() as server:
        url = server.url
        # One Flink process writes the rows and reads them back (the sink ignores the bounded
        # scan option): a Flink start costs most of this test's time.
        expected = set(run_flink([keyed_ddl("t", topic, bootstrap, url, bounded), FLINK_ROWS], "SELECT * FROM t"))
        subjects = server.registry.subjects
        assert set(subjects) == {f"{topic}-key", f"{topic}-value"}
        assert len(expected) == 2

        result = collect([keyed_ddl("t", topic, bootstrap, url)], "SELECT * FROM t", spark=spark,
                         checkpoint_dir=str(tmp_path / "c1"))
        assert job_rows(result) == expected

        # The job writes the rows it read to another topic; Flink reads that one.
        catalog, _, _ = declare(load_statements(args=[keyed_ddl("b", back, bootstrap, url)]).statements)
        bound = catalog.bound_table("b", "sink")
        df = spark.createDataFrame([row for _op, row in result.changes],
                                   ", ".join(f"{c.name} {c.spark_type}" for c in bound.table.physical_columns))
        bound.connector.create_sink(SinkContext(spark, bound.table, bound.options, str(tmp_path / "ck"))) \
            .write_append(df, 0)
        assert subjects[f"{back}-value"] == subjects[f"{topic}-value"]
        assert subjects[f"{back}-key"] == subjects[f"{topic}-key"]
        assert set(run_flink([keyed_ddl("b", back, bootstrap, url, bounded)], "SELECT * FROM b")) == expected


@pytest.mark.slow
def test_upsert_kafka_keys_values_and_tombstones(spark, tmp_path):
    """upsert-kafka with avro-confluent keys and values: the job's changes (an insert, an
    update, a delete as a tombstone) read back as the table's final rows, under the
    subjects '<topic>-key' and '<topic>-value'."""
    from tests.support.services import ensure_kafka

    bootstrap = ensure_kafka()
    topic = f"acu-{uuid.uuid4().hex[:8]}"
    with RegistryServer() as server:
        ddl = (f"CREATE TABLE u (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
               f"'connector' = 'upsert-kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}', "
               f"'key.format' = 'avro-confluent', 'key.avro-confluent.url' = '{server.url}', "
               f"'value.format' = 'avro-confluent', 'value.avro-confluent.url' = '{server.url}')")
        catalog, _, _ = declare(load_statements(args=[ddl]).statements)
        bound = catalog.bound_table("u", "sink")
        sink = bound.connector.create_sink(SinkContext(spark, bound.table, bound.options, str(tmp_path / "ck")))
        schema = "id int, v string, __op string"
        sink.write_changes(spark.createDataFrame([(1, "a", "+I"), (2, "b", "+I")], schema), 0)
        sink.write_changes(spark.createDataFrame([(1, "a2", "+U"), (2, "b", "-D")], schema), 1)
        assert set(server.registry.subjects) == {f"{topic}-key", f"{topic}-value"}
        result = collect([ddl], "SELECT * FROM u", spark=spark, checkpoint_dir=str(tmp_path / "c1"))
    assert sorted(result.rows) == [(1, "a2")]
