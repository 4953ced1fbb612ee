"""The datagen connector: sequences, random values within bounds, bounded runs with
--once, deterministic (replayable) rows, and its option checks."""
from __future__ import annotations

import datetime
import re
import time

import pytest
from chispa import assert_df_equality

from job.connectors import datagen
from job.connectors.datagen import generate
from job.connectors.base import APPEND, SourceContext
from job.connectors.registry import validate_options
from job.errors import PipelineError
from job.sql.statements import Column, CreateTable
from tests.support.spark_session import run_available_now


def table(columns, **options):
    return CreateTable(name="gen", columns=tuple(columns), options={"connector": "datagen", **options})


def source(spark, t, once=True):
    connector, options = validate_options(t, "source")
    return connector.create_source(SourceContext(spark, t, options, once=once))


ID = Column("id", "bigint", "BIGINT")


def test_sequence_produces_exactly_start_to_end_and_ends(spark, tmp_path):
    t = table([ID, Column("twice", "bigint", "BIGINT", kind="computed", expression="id * 2")],
              **{"fields.id.kind": "sequence", "fields.id.start": "5", "fields.id.end": "104"})
    stream = source(spark, t)
    assert stream.mode == APPEND and stream.bounded
    got = run_available_now(stream.df, tmp_path / "ck")
    expected = spark.range(5, 105).selectExpr("id", "id * 2 AS twice")
    assert_df_equality(got.select("id", "twice"), expected, ignore_row_order=True, ignore_nullable=True)


def test_number_of_rows_bounds_the_source(spark, tmp_path):
    t = table([Column("n", "int", "INT")], **{"number-of-rows": "37"})
    got = run_available_now(source(spark, t).df, tmp_path / "ck")
    assert got.count() == 37
    assert sorted(int(r["__position"].split()[-1]) for r in got.collect()) == list(range(37))


def test_sequence_and_number_of_rows_whichever_ends_first(spark, tmp_path):
    t = table([ID], **{"number-of-rows": "1000", "fields.id.kind": "sequence", "fields.id.start": "1",
                       "fields.id.end": "10"})
    got = run_available_now(source(spark, t).df, tmp_path / "ck")
    assert sorted(r["id"] for r in got.collect()) == list(range(1, 11))


def test_string_sequence(spark, tmp_path):
    t = table([Column("s", "string", "STRING")],
              **{"fields.s.kind": "sequence", "fields.s.start": "1", "fields.s.end": "3"})
    got = run_available_now(source(spark, t).df, tmp_path / "ck")
    assert sorted(r["s"] for r in got.collect()) == ["1", "2", "3"]


def test_random_values_stay_within_their_bounds(spark, tmp_path):
    cols = [Column("i", "int", "INT"), Column("t", "tinyint", "TINYINT"), Column("d", "double", "DOUBLE"),
            Column("m", "decimal(6,2)", "DECIMAL(6, 2)"), Column("s", "string", "STRING"),
            Column("short", "string", "VARCHAR(5)"), Column("b", "boolean", "BOOLEAN"),
            Column("ts", "timestamp", "TIMESTAMP(3)"), Column("day", "date", "DATE"),
            Column("maybe", "int", "INT")]
    t = table(cols, **{"number-of-rows": "500", "fields.i.min": "-3", "fields.i.max": "3",
                       "fields.d.min": "0.5", "fields.d.max": "1.5", "fields.m.min": "-1.5", "fields.m.max": "2",
                       "fields.short.length": "5", "fields.ts.max-past": "10 min", "fields.day.max-past": "3 d",
                       "fields.maybe.null-rate": "0.5"})
    before = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    # The session time zone is UTC; the driver's local zone (used by collect) may not be.
    stream = source(spark, t).df.selectExpr("*", "CAST(ts AS STRING) AS ts_text")
    rows = run_available_now(stream, tmp_path / "ck").collect()
    after = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    assert len(rows) == 500
    assert {r["i"] for r in rows} == set(range(-3, 4))
    assert all(-128 <= r["t"] <= 127 for r in rows) and len({r["t"] for r in rows}) > 100
    assert all(0.5 <= r["d"] <= 1.5 for r in rows)
    assert all(-1.5 <= r["m"] <= 2 for r in rows) and any(r["m"] < 0 for r in rows)
    assert all(r["m"].as_tuple().exponent == -2 for r in rows)
    assert all(re.fullmatch("[0-9a-f]{100}", r["s"]) for r in rows)
    assert all(re.fullmatch("[0-9a-f]{5}", r["short"]) for r in rows)
    assert {r["b"] for r in rows} == {True, False}
    ts = [datetime.datetime.fromisoformat(r["ts_text"]) for r in rows]
    assert all(before - datetime.timedelta(minutes=10, seconds=1) <= x <= after for x in ts)
    assert all(before.date() - datetime.timedelta(days=3) <= r["day"] <= after.date() for r in rows)
    nulls = sum(r["maybe"] is None for r in rows)
    assert 175 < nulls < 325
    assert all(r["i"] is not None for r in rows)


def test_rows_are_the_same_in_every_run(spark, tmp_path):
    cols = [ID, Column("s", "string", "STRING"), Column("x", "double", "DOUBLE"), Column("n", "int", "INT")]
    t = table(cols, **{"number-of-rows": "200", "fields.s.length": "8", "fields.n.null-rate": "0.3"})
    first = run_available_now(source(spark, t).df, tmp_path / "ck1").select("id", "s", "x", "n")
    second = run_available_now(source(spark, t).df, tmp_path / "ck2").select("id", "s", "x", "n")
    assert_df_equality(first, second, ignore_row_order=True)


def test_generation_depends_only_on_the_row_index():
    """A micro-batch replayed after a restart, or split differently, yields the same rows."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import BooleanType, DecimalType, LongType, StringType, StructField, StructType

    cols = [ID, Column("s", "string", "STRING"), Column("m", "decimal(20,3)", "DECIMAL(20, 3)"),
            Column("b", "boolean", "BOOLEAN")]
    t = table(cols, **{"number-of-rows": "100", "fields.b.null-rate": "0.2"})
    _, options = validate_options(t, "source")
    spec = datagen.field_specs(t, options)
    schema = StructType([StructField("id", LongType()), StructField("s", StringType()),
                         StructField("m", DecimalType(20, 3)), StructField("b", BooleanType()),
                         StructField("__row", LongType())])
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    whole = generate.generate_batch(spec, arrow_schema, 0, 100, 0)
    parts = [generate.generate_batch(spec, arrow_schema, a, b, 0) for a, b in ((0, 7), (7, 64), (64, 100))]
    assert pa.Table.from_batches(parts).equals(pa.Table.from_batches([whole]))
    assert whole.column(1).null_count == 0 and 0 < whole.column(3).null_count < 50


def test_unbounded_datagen_with_once_is_refused(spark):
    t = table([ID])
    with pytest.raises(PipelineError) as err:
        source(spark, t, once=True)
    assert "datagen without 'number-of-rows' never ends; set it or run without --once" in err.value.message


def test_unbounded_datagen_streams_at_its_rate(spark, tmp_path):
    t = table([ID, Column("s", "string", "STRING")], **{"rows-per-second": "50", "fields.s.length": "3"})
    stream = source(spark, t, once=False)
    assert not stream.bounded
    query = (stream.df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="200 milliseconds").start())
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            rows = sum(p["numInputRows"] for p in query.recentProgress)
            if rows >= 50:
                break
            time.sleep(0.2)
        elapsed_rows = sum(p["numInputRows"] for p in query.recentProgress)
    finally:
        query.stop()
    assert elapsed_rows >= 50


# --------------------------------------------------------------------------- check

@pytest.mark.parametrize("columns, options, message", [
    ([ID, Column("tags", "array<string>", "ARRAY<STRING>")], {},
     "cannot generate column 'tags' of type ARRAY<STRING>"),
    ([ID, Column("k", "string", "STRING", kind="metadata")], {}, "cannot be a METADATA column"),
    ([ID], {"fields.idd.kind": "random"}, "names column 'idd', which is not a physical column of table 'gen'. "
                                          "Did you mean 'id'?"),
    ([ID], {"fields.id.kind": "sequence", "fields.id.start": "1"}, "needs 'fields.id.end'"),
    ([ID], {"fields.id.kind": "sequence", "fields.id.start": "5", "fields.id.end": "1"}, "is smaller than"),
    ([ID], {"fields.id.min": "9", "fields.id.max": "1"}, "is larger than"),
    ([ID], {"fields.id.min": "abc"}, "option 'fields.id.min' must be a whole number, got 'abc'"),
    ([Column("t", "tinyint", "TINYINT")], {"fields.t.max": "300"}, "out of range for TINYINT"),
    ([ID], {"fields.id.length": "3"}, "option 'fields.id.length' does not apply to random column 'id'"),
    ([ID], {"fields.id.kind": "sequence", "fields.id.start": "1", "fields.id.end": "2", "fields.id.min": "0"},
     "does not apply to sequence column 'id'"),
    ([Column("b", "boolean", "BOOLEAN")], {"fields.b.kind": "sequence"}, "cannot be a sequence"),
    ([ID], {"fields.id.null-rate": "1.5"}, "must be between 0 and 1"),
    ([ID], {"rows-per-second": "0"}, "'rows-per-second' must be positive"),
])
def test_check_errors(columns, options, message):
    with pytest.raises(PipelineError) as err:
        validate_options(table(columns, **options), "source")
    assert message in err.value.message


def test_datagen_cannot_be_a_sink():
    with pytest.raises(PipelineError, match="can only be a source"):
        validate_options(table([ID]), "sink")
