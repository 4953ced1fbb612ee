"""The blackhole sink: runs the query in full and keeps nothing."""
from __future__ import annotations

import pytest

from job.connectors.base import APPEND, CHANGELOG, UPSERT, SinkContext, SourceContext
from job.connectors.registry import connectors, validate_options
from job.errors import PipelineError
from job.sql.statements import Column, CreateTable
from tests.support.spark_session import run_available_now

COLUMNS = (Column("id", "bigint", "BIGINT"),)


def blackhole(spark, tmp_path, **options):
    t = CreateTable(name="void", columns=COLUMNS, options={"connector": "blackhole", **options})
    connector, typed = validate_options(t, "sink")
    return connector.create_sink(SinkContext(spark, t, typed, str(tmp_path / "ck")))


def test_declaration():
    c = connectors()["blackhole"]
    assert c.can_sink and not c.can_source
    assert set(c.sink_modes) == {APPEND, UPSERT, CHANGELOG}
    assert c.accepts_retractions


def test_streaming_query_runs_to_completion(spark, tmp_path):
    gen = CreateTable(name="gen", columns=COLUMNS, options={"connector": "datagen", "number-of-rows": "250"})
    connector, options = validate_options(gen, "source")
    stream = connector.create_source(SourceContext(spark, gen, options, once=True))
    query = run_available_now(blackhole(spark, tmp_path).write_stream(stream.df), tmp_path / "ck")
    assert sum(p["numInputRows"] for p in query.recentProgress) == 250


def test_batch_writes_consume_their_input(spark, tmp_path):
    sink = blackhole(spark, tmp_path)
    batch = spark.range(10)
    sink.write_append(batch, 0)
    sink.write_changes(batch.selectExpr("id", "'+I' AS __op"), 1)
    # A failing row proves the rows are really computed, not skipped.
    bad = spark.range(3).selectExpr("assert_true(id < 2) AS id")
    with pytest.raises(Exception, match="id < 2"):
        sink.write_append(bad, 2)


def test_options():
    t = CreateTable(name="void", columns=COLUMNS, options={"connector": "blackhole", "path": "/tmp/x"})
    with pytest.raises(PipelineError) as err:
        validate_options(t, "sink")
    assert "unknown option 'path' for connector 'blackhole'" in err.value.message
    t = CreateTable(name="void", columns=COLUMNS, options={"connector": "blackhole"})
    with pytest.raises(PipelineError, match="can only be a sink"):
        validate_options(t, "source")
