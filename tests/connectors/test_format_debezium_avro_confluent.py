"""The 'debezium-avro-confluent' format: Debezium change events in Avro through a schema
registry (tests/support/schema_registry.py), read as a changelog and written by updating
queries. Debezium's own envelope (its 'source', 'ts_ms' and 'transaction' fields, its own
record names) comes from confluent-kafka's AvroSerializer; Flink 2.3's format writes an
updating aggregation the job reads, and reads the updating aggregation the job writes.
"""
from __future__ import annotations

import io
import json
import uuid
from collections import Counter

import pytest

from job.api import RunOptions, collect, run
from job.connectors.base import SinkContext
from job.errors import PipelineError
from job.pipeline.load import load_statements
from job.plan.program import declare
from tests.support.flink_sql import run_flink
from tests.support.schema_registry import RegistryServer

FMT = "debezium-avro-confluent"


def ddl(name, topic, bootstrap, url, columns="k STRING, n BIGINT", extra="", connector="kafka"):
    options = (f"'format' = '{FMT}', '{FMT}.url' = '{url}'" if connector == "kafka" else
               f"'key.format' = 'raw', 'value.format' = '{FMT}', 'value.{FMT}.url' = '{url}'")
    return (f"CREATE TABLE {name} ({columns}) WITH ('connector' = '{connector}', 'topic' = '{topic}', "
            f"'properties.bootstrap.servers' = '{bootstrap}', 'properties.group.id' = 'g', {options}{extra})")


def final_rows(changes) -> Counter:
    """The rows a changelog leaves: (kind, *row) tuples, +I/+U add a row, -U/-D take one."""
    rows = Counter()
    for kind, *row in changes:
        rows[tuple(row)] += 1 if kind in ("+I", "+U") else -1
    assert all(n >= 0 for n in rows.values()), rows
    return +rows


def test_options_honoured_or_refused_by_name(spark, tmp_path):
    def bind(extra="", connector="kafka", url="http://127.0.0.1:1"):
        catalog, _, _ = declare(load_statements(args=[ddl("t", "x", "127.0.0.1:1", url, extra=extra,
                                                          connector=connector)]).statements)
        return catalog.bound_table("t", "source")

    assert bind(", 'debezium-avro-confluent.subject' = 's', 'debezium-avro-confluent.basic-auth.credentials-source' "
                "= 'USER_INFO', 'debezium-avro-confluent.basic-auth.user-info' = 'u:p'").mode == "changelog"
    for extra in (", 'debezium-avro-confluent.ssl.truststore.location' = '/x'",
                  ", 'debezium-avro-confluent.bearer-auth.token' = 'zq9secret'",
                  ", 'debezium-avro-confluent.schema' = '\"int\"'",
                  ", 'debezium-avro-confluent.properties.max.schemas.per.subject' = '5'"):
        with pytest.raises(PipelineError, match=r"option 'debezium-avro-confluent\.(ssl|bearer|schema|properties)")\
                as info:
            bind(extra)
        assert "zq9secret" not in str(info.value)
        assert info.value.option == extra.split("'")[1]  # pointed at the option itself
    with pytest.raises(PipelineError, match="'debezium-avro-confluent.basic-auth.credentials-source' = 'SASL_INHERIT'"):
        bind(", 'debezium-avro-confluent.basic-auth.credentials-source' = 'SASL_INHERIT'")
    # Flink's debezium format has no 'auto.register.schemas' (it always registers).
    with pytest.raises(PipelineError, match="unknown option 'debezium-avro-confluent.auto.register.schemas'"):
        bind(", 'debezium-avro-confluent.auto.register.schemas' = 'false'")
    with pytest.raises(PipelineError, match="missing required option 'debezium-avro-confluent.url'"):
        bind(url="")
    with pytest.raises(PipelineError, match="'upsert-kafka' connector doesn't support 'debezium-avro-confluent' as "
                                            "value format, because 'debezium-avro-confluent' is not in insert-only"):
        catalog, _, _ = declare(load_statements(args=[ddl("t", "x", "127.0.0.1:1", "http://127.0.0.1:1",
                                                          "k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED",
                                                          connector="upsert-kafka")]).statements)
        catalog.bound_table("t", "source")

    files = (f"CREATE TABLE t (k STRING, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}', "
             f"'format' = '{FMT}', '{FMT}.url' = 'http://127.0.0.1:1')")
    with pytest.raises(PipelineError, match="format 'debezium-avro-confluent' runs on the 'kafka' connector only"):
        collect([files], "SELECT * FROM t", spark=spark, checkpoint_dir=str(tmp_path / "ck"))

    # A dry run contacts no registry: an updating query into such a table is planned, while
    # one into a 'json' table is refused as Flink refuses it.
    # The plan shows the registry's URL without the password it carries.
    def dry_run(sink_format):
        url = "http://reader:s3cr3t@127.0.0.1:1"
        sink = ddl("b", "y", "127.0.0.1:1", url)
        if sink_format != FMT:
            sink = sink.replace(f"'format' = '{FMT}', '{FMT}.url' = '{url}'", f"'format' = '{sink_format}'")
        statements = ";\n".join([ddl("a", "x", "127.0.0.1:1", url), sink,
                                 "INSERT INTO b SELECT k, COUNT(*) FROM a GROUP BY k"])
        out, err = io.StringIO(), io.StringIO()
        code = run(RunOptions(statements=[statements], dry_run=True, explain=True), out=out, err=err)
        return code, out.getvalue() + err.getvalue()

    code, text = dry_run(FMT)
    assert code == 0, text
    assert "write every change as it comes" in text and "http://reader:****@127.0.0.1:1" in text
    assert "s3cr3t" not in text
    code, text = dry_run("json")
    assert code != 0 and "doesn't support consuming update and delete changes" in text


# Debezium's own envelope, as its Avro converter registers it: other record names than
# Flink's, a non-null 'op', and the fields the format skips.
DEBEZIUM = {"type": "record", "name": "Envelope", "namespace": "dbserver1.shop.orders", "fields": [
    {"name": "before", "type": ["null", {"type": "record", "name": "Value", "fields": [
        {"name": "id", "type": "int"}, {"name": "k", "type": ["null", "string"], "default": None},
        {"name": "n", "type": ["null", "long"], "default": None}]}], "default": None},
    {"name": "after", "type": ["null", "Value"], "default": None},
    {"name": "source", "type": {"type": "record", "name": "Source", "namespace": "io.debezium.connector.mysql",
                                "fields": [{"name": "db", "type": "string"}, {"name": "table", "type": "string"}]}},
    {"name": "op", "type": "string"},
    {"name": "ts_ms", "type": ["null", "long"], "default": None},
    {"name": "transaction", "type": ["null", {"type": "record", "name": "block", "namespace": "event",
                                              "fields": [{"name": "id", "type": "string"}]}], "default": None}]}


def debezium_event(op, before=None, after=None):
    row = lambda v: None if v is None else dict(zip(("id", "k", "n"), v))  # noqa: E731
    return {"before": row(before), "after": row(after), "source": {"db": "shop", "table": "orders"}, "op": op,
            "ts_ms": 1700000000000, "transaction": None}


@pytest.mark.slow
def test_debezium_events_through_an_updating_aggregation_and_back(spark, tmp_path):
    """Debezium's events (snapshot, inserts, an update that moves a row to another group,
    a delete and its tombstone) feed a GROUP BY; a record of an unknown schema id and an
    update without 'before' go through 'on-error' with their offsets. The job writes the
    aggregation's changes to a debezium-avro-confluent topic and reads them back: the same
    rows, written as Flink writes them (only 'c' and 'd' events, a group's delete before
    its new row); an append-only result is written as 'c' events."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from tests.support.services import ensure_kafka

    bootstrap = ensure_kafka()
    topic, out = f"dac-{uuid.uuid4().hex[:8]}", f"dac-out-{uuid.uuid4().hex[:8]}"
    columns = "id INT NOT NULL, k STRING, n BIGINT"
    with RegistryServer() as server:
        client = SchemaRegistryClient({"url": server.url})
        serialize = AvroSerializer(client, json.dumps(DEBEZIUM))
        context = SerializationContext(topic, MessageField.VALUE)
        producer = Producer({"bootstrap.servers": bootstrap})
        for value in (serialize(debezium_event("r", after=(1, "a", 10)), context),
                      serialize(debezium_event("c", after=(2, "a", 5)), context),
                      serialize(debezium_event("c", after=(3, "b", 7)), context),
                      serialize(debezium_event("u", before=(2, "a", 5), after=(2, "b", 5)), context),
                      serialize(debezium_event("d", before=(1, "a", 10)), context),
                      None,                                      # the tombstone after the delete: skipped
                      b"\x00\x00\x00\x00\x63garbage",            # offset 6: an id the registry does not have
                      serialize(debezium_event("u", after=(3, "b", 8)), context),  # offset 7: no 'before'
                      serialize(debezium_event("c", after=(4, "a", 1)), context)):
            producer.produce(topic, key=b"k", value=value)
        producer.flush(30)

        query = "SELECT k, COUNT(*) AS c, SUM(n) AS s FROM t GROUP BY k"
        source = ddl("t", topic, bootstrap, server.url, columns, ", 'scan.startup.mode' = 'earliest-offset'")
        with pytest.raises(Exception, match=r"(?s)table .t.: schema id 99 .*not in the schema registry.*offset 6"):
            collect([source], query, spark=spark, checkpoint_dir=str(tmp_path / "c1"))
        skip = source[:-1] + ", 'on-error' = 'skip')"
        expected = [("a", 1, 1), ("b", 2, 12)]
        assert sorted(collect([skip], query, spark=spark, checkpoint_dir=str(tmp_path / "c2")).rows) == expected
        # Three records a micro-batch: the groups change from batch to batch.
        bad = skip.replace("'on-error' = 'skip'", "'on-error' = 'dead-letter', 'dead-letter.table' = 'bad', "
                                                  "'scan.max-offsets-per-trigger' = '3'")
        dead = ("CREATE TABLE bad (error STRING, `position` STRING) WITH ('connector' = 'filesystem', "
                f"'path' = '{tmp_path / 'bad'}', 'format' = 'json')")

        # The job writes the aggregation's changes (an update of 'a' and 'b' each, the
        # delete of a group on the way) and reads them back.
        sink = ddl("o", out, bootstrap, server.url, "k STRING, c BIGINT, s BIGINT")
        code = run(RunOptions(statements=[";\n".join([bad, dead, sink, f"INSERT INTO o {query}"])], once=True,
                              checkpoint_dir=str(tmp_path / "c3")), out=io.StringIO(), err=io.StringIO())
        assert code == 0
        errors = [json.loads(line) for f in (tmp_path / "bad").glob("part-*") for line in f.read_text().splitlines()]
        assert sorted(e["position"].rsplit(" ", 1)[1] for e in errors) == ["6", "7"]
        assert "\"before\" field" in " ".join(e["error"] for e in errors)
        back = ddl("o", out, bootstrap, server.url, "k STRING, c BIGINT, s BIGINT",
                   ", 'scan.startup.mode' = 'earliest-offset'")
        assert sorted(collect([back], "SELECT * FROM o", spark=spark, checkpoint_dir=str(tmp_path / "c4")).rows) \
            == expected
        assert f"{out}-value" in server.registry.subjects

        events = topic_events(bootstrap, client, out)

        # An append-only result is written as 'c' events.
        plain = f"dac-plain-{uuid.uuid4().hex[:8]}"
        catalog, _, _ = declare(load_statements(args=[ddl("p", plain, bootstrap, server.url)]).statements)
        bound = catalog.bound_table("p", "sink")
        bound.connector.create_sink(SinkContext(spark, bound.table, bound.options, str(tmp_path / "c5"))) \
            .write_append(spark.createDataFrame([("x", 1), ("y", None)], "k string, n bigint"), 0)
        assert [e["op"] for e in topic_events(bootstrap, client, plain)] == ["c", "c"]
        earliest = ", 'scan.startup.mode' = 'earliest-offset'"
        assert sorted(collect([ddl("p", plain, bootstrap, server.url, extra=earliest)], "SELECT * FROM p",
                              spark=spark, checkpoint_dir=str(tmp_path / "c6")).rows, key=str) \
            == [("x", 1), ("y", None)]
    ops = Counter(e["op"] for e in events)
    assert set(ops) == {"c", "d"} and ops["d"] >= 1
    assert all((e["before"] is None) == (e["op"] == "c") and (e["after"] is None) == (e["op"] == "d") for e in events)
    # Each group's delete comes before its new row, as Flink writes -U before +U: a reader
    # that keys the events by group (a delete removes the group) ends with the same rows.
    groups = {}
    for e in events:
        if e["op"] == "c":
            groups[e["after"]["k"]] = tuple(e["after"].values())
        else:
            del groups[e["before"]["k"]]
    assert sorted(groups.values()) == expected


def topic_events(bootstrap, client, topic) -> list[dict]:
    """The Debezium events of a one-partition topic, in offset order, as confluent-kafka's
    AvroDeserializer reads them."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, 0)])
        deserialize, events = AvroDeserializer(client), []
        while len(events) < high:
            message = consumer.poll(30)
            assert message is not None and message.error() is None, message and message.error()
            events.append(deserialize(message.value(), SerializationContext(topic, MessageField.VALUE)))
        return events
    finally:
        consumer.close()


@pytest.mark.slow
def test_updating_aggregations_between_flink_and_the_job(spark, tmp_path):
    """Flink writes an updating aggregation (counts that grow, and groups a HAVING drops
    again) as debezium-avro-confluent and reads it back; the job reads the same topic to
    Flink's final rows, and writes its own aggregation over that changelog, registering
    the very schema Flink registered for the same columns (the same id), which Flink reads
    to the job's final rows."""
    from tests.support.services import ensure_kafka

    bootstrap = ensure_kafka()
    first, second = f"dacf-{uuid.uuid4().hex[:8]}", f"dacf-back-{uuid.uuid4().hex[:8]}"
    bounded = ", 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset'"
    keys = ["a", "b", "a", "c", "a", "b", "d", "c", "a", "e"]
    values = ", ".join(f"('{k}')" for k in keys)
    with RegistryServer() as server:
        flink = run_flink([ddl("t", first, bootstrap, server.url, extra=bounded),
                           f"INSERT INTO t SELECT k, COUNT(*) FROM (VALUES {values}) AS v(k) GROUP BY k "
                           "HAVING COUNT(*) < 3"],
                          "SELECT * FROM t", streaming=True)
        # Flink's own reading of its topic: -U/+U came out as a delete and an insert.
        assert {kind for kind, *_ in flink} == {"+I", "-D"}
        expected = final_rows(flink)
        assert expected == Counter({("b", "2"): 1, ("c", "2"): 1, ("d", "1"): 1, ("e", "1"): 1})
        source = ddl("t", first, bootstrap, server.url, extra=bounded)
        got = collect([source], "SELECT * FROM t", spark=spark, checkpoint_dir=str(tmp_path / "c1"))
        assert Counter((k, str(n)) for k, n in got.rows) == expected

        sink = ddl("o", second, bootstrap, server.url)
        query = ("SELECT g, SUM(n) FROM (SELECT CASE WHEN n > 1 THEN 'many' ELSE 'one' END AS g, n FROM t) "
                 "GROUP BY g")
        code = run(RunOptions(statements=[";\n".join([source, sink, f"INSERT INTO o {query}"])], once=True,
                              checkpoint_dir=str(tmp_path / "c2")), out=io.StringIO(), err=io.StringIO())
        assert code == 0
        assert server.registry.subjects[f"{second}-value"] == server.registry.subjects[f"{first}-value"]
        back = run_flink([ddl("o", second, bootstrap, server.url, extra=bounded)], "SELECT * FROM o", streaming=True)
    assert final_rows(back) == Counter({("many", "4"): 1, ("one", "2"): 1})
