"""The print sink: Flink's row format on standard output or standard error."""
from __future__ import annotations

import datetime
import decimal

import pytest

from job.connectors.base import SinkContext
from job.connectors.print import format_value
from job.connectors.registry import validate_options
from job.errors import PipelineError
from job.sql.statements import Column, CreateTable
from tests.support.spark_session import run_available_now


COLUMNS = (Column("id", "int", "INT"), Column("name", "string", "STRING"), Column("ts", "timestamp", "TIMESTAMP(3)"),
           Column("ok", "boolean", "BOOLEAN"), Column("amount", "decimal(10,2)", "DECIMAL(10, 2)"),
           Column("x", "double", "DOUBLE"))
SCHEMA = "id int, name string, ts timestamp, ok boolean, amount decimal(10,2), x double"


def printer(spark, tmp_path, columns=COLUMNS, **options):
    t = CreateTable(name="out", columns=tuple(columns), options={"connector": "print", **options})
    connector, typed = validate_options(t, "sink")
    return connector.create_sink(SinkContext(spark, t, typed, str(tmp_path / "ck")))


def rows(spark):
    ts = spark.sql("SELECT TIMESTAMP'2024-01-01 10:00:00' AS a, TIMESTAMP'2024-01-01 10:00:30.5' AS b").first()
    return spark.createDataFrame([
        (1, "Alice", ts["a"], True, decimal.Decimal("12.50"), 1.0),
        (2, None, ts["b"], False, None, 1e10),
    ], SCHEMA)


def test_append_rows_print_like_flink(spark, tmp_path, capsys):
    printer(spark, tmp_path).write_append(rows(spark), 0)
    assert capsys.readouterr().out.splitlines() == [
        "+I[1, Alice, 2024-01-01T10:00, true, 12.50, 1.0]",
        "+I[2, null, 2024-01-01T10:00:30.500, false, null, 1.0E10]",
    ]


def test_identifier_and_standard_error(spark, tmp_path, capsys):
    printer(spark, tmp_path, **{"print-identifier": "orders", "standard-error": "true"}).write_append(rows(spark), 0)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[0] == "orders> +I[1, Alice, 2024-01-01T10:00, true, 12.50, 1.0]"


def test_changes_print_every_kind_in_batch_order(spark, tmp_path, capsys):
    columns = (Column("id", "int", "INT"), Column("cnt", "bigint", "BIGINT"))
    batch = spark.createDataFrame([(1, 1, "+I"), (1, 1, "-U"), (1, 2, "+U"), (2, 5, "+I"), (2, 5, "-D")],
                                  "id int, cnt bigint, __op string")
    printer(spark, tmp_path, columns).write_changes(batch, 3)
    assert capsys.readouterr().out.splitlines() == ["+I[1, 1]", "-U[1, 1]", "+U[1, 2]", "+I[2, 5]", "-D[2, 5]"]


def test_streaming_append_query_prints_through_foreach_batch(spark, tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text('{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n')
    columns = (Column("id", "int", "INT"), Column("name", "string", "STRING"))
    stream = spark.readStream.schema("id int, name string").json(str(tmp_path / "in"))
    writer = printer(spark, tmp_path, columns, **{"print-identifier": "t"}).write_stream(stream)
    run_available_now(writer, tmp_path / "ck")
    assert sorted(capsys.readouterr().out.splitlines()) == ["t> +I[1, a]", "t> +I[2, b]"]


def test_nested_values():
    from pyspark.sql import Row

    assert format_value([1, None, "a"]) == "[1, null, a]"
    assert format_value({"k": 1}) == "{k=1}"
    assert format_value(Row(a=1, b="x")) == "+I[1, x]"
    assert format_value(b"\x01\xff") == "[1, -1]"
    assert format_value(datetime.datetime(2024, 1, 1, 10, 0)) == "2024-01-01T10:00"
    assert format_value(datetime.datetime(2024, 1, 1, 10, 0, 5, 250000)) == "2024-01-01T10:00:05.250"
    assert format_value(datetime.date(2024, 1, 1)) == "2024-01-01"


def test_print_is_a_sink_only():
    t = CreateTable(name="out", columns=COLUMNS, options={"connector": "print"})
    with pytest.raises(PipelineError, match="can only be a sink"):
        validate_options(t, "source")
