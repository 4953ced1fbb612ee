"""The 'avro' format against Flink 2.3: Flink writes Avro files the job reads, the job
writes Avro files Flink reads, and Kafka records the job writes decode back to the same
rows; a record that is no Avro datum of the table goes through 'on-error'.

Flink runs through tests/support/flink_sql.py (PyFlink with Flink's flink-sql-avro jar).
"""
from __future__ import annotations

import datetime
import decimal

import pytest

from job.api import collect
from job.connectors.base import SinkContext
from job.errors import PipelineError
from job.pipeline.load import load_statements
from job.plan.program import declare
from tests.support.flink_sql import canonical, run_flink

COLUMNS = ("id INT NOT NULL, s STRING, b BOOLEAN, ti TINYINT, si SMALLINT, n BIGINT, f FLOAT, d DOUBLE, "
           "dc DECIMAL(10, 2), dt DATE, tm TIME, ts TIMESTAMP(3), bt BYTES, arr ARRAY<INT>, "
           "m MAP<STRING, BIGINT>, r ROW<x INT, y STRING>")
NAMES = ["id", "s", "b", "ti", "si", "n", "f", "d", "dc", "dt", "tm", "ts", "bt", "arr", "m", "r"]
FLINK_ROWS = ("INSERT INTO t VALUES (1, 'a', true, CAST(-3 AS TINYINT), CAST(300 AS SMALLINT), 9000000000, "
              "CAST(1.5 AS FLOAT), -2.25, CAST(12.34 AS DECIMAL(10, 2)), DATE '2024-01-31', TIME '12:34:56', "
              "TIMESTAMP '2024-01-31 12:00:00.123', X'00ff', ARRAY[1, CAST(NULL AS INT)], "
              "MAP['k', CAST(5 AS BIGINT)], ROW(7, 'z'))")


def ddl(path, fmt="avro", extra=""):
    return f"CREATE TABLE t ({COLUMNS}) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = '{fmt}'{extra})"


def job_rows(result) -> set:
    return {tuple(canonical(v) for v in row) for op, row in result.changes if op == "+I"}


@pytest.mark.slow
def test_the_job_reads_the_avro_files_flink_writes(spark, tmp_path):
    path = tmp_path / "flink"
    run_flink([ddl(path), FLINK_ROWS, "INSERT INTO t (id) VALUES (2)"])
    got = job_rows(collect([ddl(path)], "SELECT * FROM t", spark=spark, checkpoint_dir=str(tmp_path / "ck")))
    expected = set(run_flink([ddl(path)], "SELECT * FROM t"))
    assert len(expected) == 2
    assert got == expected


@pytest.mark.slow
def test_flink_reads_the_avro_files_the_job_writes(spark, tmp_path):
    path = tmp_path / "job"
    loaded = load_statements(args=[ddl(path)])
    catalog, _, _ = declare(loaded.statements)
    bound = catalog.bound_table("t", "sink")
    rows = [(1, "a", True, -3, 300, 9000000000, 1.5, -2.25, decimal.Decimal("12.34"), datetime.date(2024, 1, 31),
             "12:34:56", datetime.datetime(2024, 1, 31, 12, 0, 0, 123000), bytearray(b"\x00\xff"), [1, None],
             {"k": 5}, (7, "z"))] + [(2,) + (None,) * 15]
    df = spark.createDataFrame(rows, ", ".join(f"{n} {c.spark_type}" for n, c in zip(NAMES, bound.table.physical_columns)))
    sink = bound.connector.create_sink(SinkContext(spark, bound.table, bound.options, str(tmp_path / "ck")))
    sink.write_append(df, 0)
    got = set(run_flink([ddl(path)], "SELECT * FROM t"))
    assert len(got) == 2
    assert got == {tuple(canonical(v) for v in row) for row in df.collect()}


def test_avro_options_flink_refuses_are_refused_by_name(tmp_path):
    for extra, words in ((", 'avro.encoding' = 'json'", "'avro.encoding'"),
                         (", 'avro.codec' = 'lz4'", "'avro.codec'")):
        with pytest.raises(PipelineError, match=words):
            catalog, _, _ = declare(load_statements(args=[ddl(tmp_path, extra=extra)]).statements)
            catalog.bound_table("t", "source")
    for fmt in ("protobuf",):
        with pytest.raises(PipelineError, match=f"format '{fmt}' .* does not support yet"):
            catalog, _, _ = declare(load_statements(args=[ddl(tmp_path, fmt=fmt)]).statements)
            catalog.bound_table("t", "source")
    ltz = f"CREATE TABLE t (id INT, at TIMESTAMP_LTZ(3)) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}', " \
          "'format' = 'avro')"
    with pytest.raises(PipelineError, match="timestamp_mapping.legacy"):
        catalog, _, _ = declare(load_statements(args=[ltz]).statements)
        catalog.bound_table("t", "source")


def kafka_ddl(name, topic, bootstrap, fmt="avro", columns=COLUMNS, extra=""):
    return (f"CREATE TABLE {name} ({columns}) WITH ('connector' = 'kafka', 'topic' = '{topic}', "
            f"'properties.bootstrap.servers' = '{bootstrap}', 'properties.group.id' = 'g', "
            f"'scan.startup.mode' = 'earliest-offset', 'format' = '{fmt}'{extra})")


@pytest.mark.slow
def test_avro_kafka_records_between_flink_and_the_job(spark, tmp_path):
    """Flink's Kafka records (one Avro datum each, no header) are read by the job, and the
    job's by Flink; a record that is no Avro datum of the table stops the query under
    'on-error' = 'fail' with its offset and why, and is dropped under 'skip'."""
    import uuid

    from tests.support.services import ensure_kafka

    bootstrap = ensure_kafka()
    topic, back = f"avro-{uuid.uuid4().hex[:8]}", f"avro-back-{uuid.uuid4().hex[:8]}"
    bounded = ", 'scan.bounded.mode' = 'latest-offset'"
    run_flink([kafka_ddl("t", topic, bootstrap), FLINK_ROWS,
               kafka_ddl("garbage", topic, bootstrap, fmt="raw", columns="v BYTES"),
               "INSERT INTO garbage VALUES (X'02ffffffff')"])
    # Flink fails on the garbage too: it reads up to it.
    before_garbage = ", 'scan.bounded.mode' = 'specific-offsets', 'scan.bounded.specific-offsets' = 'partition:0,offset:1'"
    expected = set(run_flink([kafka_ddl("t", topic, bootstrap, extra=before_garbage)], "SELECT * FROM t"))
    assert len(expected) == 1

    with pytest.raises(Exception, match=r"(?s)table .t.: the record is no Avro datum.*partition 0 offset 1"):
        collect([kafka_ddl("t", topic, bootstrap)], "SELECT * FROM t", spark=spark, checkpoint_dir=str(tmp_path / "c1"))
    got = job_rows(collect([kafka_ddl("t", topic, bootstrap, extra=", 'on-error' = 'skip'")], "SELECT * FROM t",
                           spark=spark, checkpoint_dir=str(tmp_path / "c2")))
    assert got == expected

    # The job writes what it read; Flink reads it back.
    catalog, _, _ = declare(load_statements(args=[kafka_ddl("t", back, bootstrap)]).statements)
    bound = catalog.bound_table("t", "sink")
    df = spark.createDataFrame(
        [(1, "a", True, -3, 300, 9000000000, 1.5, -2.25, decimal.Decimal("12.34"), datetime.date(2024, 1, 31),
          "12:34:56", datetime.datetime(2024, 1, 31, 12, 0, 0, 123000), bytearray(b"\x00\xff"), [1, None], {"k": 5},
          (7, "z"))], ", ".join(f"{n} {c.spark_type}" for n, c in zip(NAMES, bound.table.physical_columns)))
    bound.connector.create_sink(SinkContext(spark, bound.table, bound.options, str(tmp_path / "ck"))).write_append(df, 0)
    assert set(run_flink([kafka_ddl("t", back, bootstrap, extra=bounded)], "SELECT * FROM t")) == expected
