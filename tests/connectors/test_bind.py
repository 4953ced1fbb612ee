"""Binding a table to its connector (job.connectors.registry.bind) and the hooks the run
asks of connectors, without Spark."""
from __future__ import annotations

import pytest

from job.connectors import registry
from job.connectors.base import APPEND, CHANGELOG, UPSERT, BoundTable, addresses
from job.errors import EXIT_UNREACHABLE, PipelineError
from job.options import table_error
from job.sql.statements import Column, CreateTable

COLUMNS = (Column("id", "int", "INT"), Column("name", "string", "STRING"))
KAFKA = {"connector": "kafka", "topic": "orders", "properties.bootstrap.servers": "b1:9093,b2",
         "format": "json"}


def table(columns=COLUMNS, primary_key=(), **options) -> CreateTable:
    return CreateTable(name="t", columns=columns, options=options, primary_key=primary_key)


def test_bind_types_the_options_fills_defaults_and_resolves_formats():
    bound = registry.bind(table(**KAFKA, **{"json.ignore-parse-errors": "true"}), "source")
    assert isinstance(bound, BoundTable) and bound.name == "t" and bound.role == "source"
    assert bound.connector.identifier == "kafka"
    assert bound.options["json.ignore-parse-errors"] is True
    assert bound.options["scan.startup.mode"] == "group-offsets"      # a default
    assert bound.options["on-error"] == "fail"                        # a common option's default
    assert bound.value_format.name == "json" and set(bound.formats) == {"format"}
    assert bound.mode == APPEND
    with pytest.raises(TypeError):
        bound.options["topic"] = "other"  # downstream reads the bound options, never changes them


@pytest.mark.parametrize("options, primary_key, mode", [
    (KAFKA, (), APPEND),
    ({**KAFKA, "format": "debezium-json"}, (), CHANGELOG),
    ({"connector": "upsert-kafka", "topic": "t", "properties.bootstrap.servers": "b:9092", "key.format": "json",
      "value.format": "json"}, ("id",), UPSERT),
    ({"connector": "jdbc", "url": "jdbc:postgresql://h/db", "table-name": "t"}, ("id",), UPSERT),
    ({"connector": "jdbc", "url": "jdbc:postgresql://h/db", "table-name": "t"}, (), APPEND),
])
def test_the_changelog_mode_is_the_bound_tables(options, primary_key, mode):
    t = table(primary_key=primary_key, **options)
    assert registry.bind(t).mode == mode


def test_a_program_binds_each_table_once_per_role_and_its_catalog_keeps_it(monkeypatch):
    """Planning, explaining, the run's checks and the checkpoint fingerprint all read the
    catalog's bound tables: nothing binds a table again."""
    from job.pipeline.load import load_statements
    from job.plan.program import build_program

    calls = []
    bind = registry.bind
    monkeypatch.setattr(registry, "bind", lambda t, role=None: calls.append((t.name, role)) or bind(t, role))
    program = build_program(load_statements(args=[
        "CREATE TABLE src (id INT) WITH ('connector' = 'kafka', 'topic' = 'a', 'properties.bootstrap.servers' = 'b', "
        "'format' = 'json')",
        "CREATE TABLE out (id INT) WITH ('connector' = 'blackhole')",
        "CREATE TABLE unused (id INT) WITH ('connector' = 'blackhole')",
        "INSERT INTO out SELECT id FROM src"]))
    assert sorted(calls) == [("out", "sink"), ("src", "source"), ("unused", None)]
    catalog = program.catalog
    assert catalog.bound_table("src", "source") is catalog.bound_table("SRC") is catalog.bound_tables()[0]
    assert catalog.bound_table("out", "sink").role == "sink" and catalog.bound_table("unused").role is None
    assert len(calls) == 3
    assert catalog.bound_table("nothing") is None


def test_an_invalid_table_fails_every_time():
    t = table(**{**KAFKA, "scan.startup.mode": "latest"})
    for _ in range(2):
        with pytest.raises(PipelineError) as err:
            registry.bind(t, "source")
        assert err.value.option == "scan.startup.mode"


def test_upsert_kafka_options_hold_only_what_the_table_declares():
    t = table(primary_key=("id",), **{"connector": "upsert-kafka", "topic": "t", "properties.bootstrap.servers": "b",
                                      "key.format": "json", "value.format": "json"})
    assert not [k for k in registry.bind(t, "sink").options if k.startswith("__")]


def test_secret_options_are_the_declared_and_the_secret_looking():
    t = table(**{"connector": "jdbc", "url": "jdbc:postgresql://h/db", "table-name": "t", "password": "pw",
                 "username": "u"})
    assert registry.bind(t).secrets == frozenset({"password"})
    k = table(**{**KAFKA, "properties.sasl.jaas.config": "x password=\"y\";"})
    assert "properties.sasl.jaas.config" in registry.bind(k).secrets


# ---------------------------------------------------------------- hooks

def test_kafka_declares_its_brokers_as_endpoints():
    [(bound, endpoint)] = registry.endpoints([table(**KAFKA), table(**{"connector": "print"})])
    assert bound.connector.identifier == "kafka"
    assert (endpoint.option, endpoint.value, endpoint.kind) == ("properties.bootstrap.servers", "b1:9093,b2", "broker")
    assert endpoint.addresses == (("b1", 9093), ("b2", 9092))


def test_addresses_accept_schemes_semicolons_and_ipv6():
    assert addresses("PLAINTEXT://a:1; [::1]:2,b", 9) == (("a", 1), ("::1", 2), ("b", 9))


def test_connectors_recognise_their_unreachable_errors():
    assert registry.is_unreachable("org.apache.kafka.common.KafkaException: Failed to construct kafka consumer")
    assert registry.is_unreachable("org.postgresql.util.PSQLException: Connection to h:5432 refused")
    assert not registry.is_unreachable("ArithmeticException: divide by zero")


def test_source_identity_is_what_the_offsets_refer_to():
    assert registry.source_identity(table(**KAFKA)) == {"connector": "kafka", "topic": "orders", "format": "json"}
    fs = table(**{"connector": "filesystem", "path": "/in", "format": "csv", "csv.field-delimiter": ";"})
    assert registry.source_identity(fs) == {"connector": "filesystem", "path": "/in", "format": "csv"}
    gen = table(**{"connector": "datagen", "number-of-rows": "5"})
    assert registry.source_identity(gen) == {"connector": "datagen"}


def test_session_conf_asks_for_hive_only_for_a_lake_table(tmp_path):
    plain = table(**{"connector": "filesystem", "path": str(tmp_path), "format": "parquet"})
    lake = table(**{"connector": "filesystem", "path": str(tmp_path), "format": "parquet", "metastore.table": "db.t"})
    assert registry.session_conf([plain, table(**KAFKA)], {}) == {}
    conf = registry.session_conf([plain, lake], {"streamsql.metastore.dir": str(tmp_path)})
    assert conf["spark.sql.catalogImplementation"] == "hive"


def test_table_error_names_the_option_where_it_was_written():
    err = table_error(table(**KAFKA), "no", option="topic", hint="h", exit_code=EXIT_UNREACHABLE)
    assert (err.message, err.option, err.hint, err.exit_code) == ("no", "topic", "h", EXIT_UNREACHABLE)
