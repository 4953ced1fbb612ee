"""The queryable lake: a filesystem parquet sink registered as a metastore table.

These run in the shared test session, whose catalog is Spark's in-memory one: the same
DDL and partition calls as against Hive. Hive itself (Derby, spark-sql, the Thrift
server) is exercised by the subprocess tests in tests/e2e/test_lake_e2e.py.
"""
from __future__ import annotations

import json
import os
import uuid

import pytest
from chispa import assert_df_equality

from job.connectors.filesystem import lake as lake_sink_module
from job.connectors.filesystem import metastore
from job.connectors.base import SinkContext
from job.connectors.registry import validate_options
from job.errors import PipelineError
from job.sql.statements import Column, CreateTable
from tests.support.spark_session import run_available_now

ID = Column("id", "int", "INT")
NAME = Column("name", "string", "STRING")
DAY = Column("day", "string", "STRING")


def lake_table(path, name, columns=(ID, NAME, DAY), partitioned_by=("day",), **extra):
    options = {"connector": "filesystem", "path": str(path), "format": "parquet", "metastore.table": name, **extra}
    return CreateTable(name="lake_out", columns=tuple(columns), partitioned_by=tuple(partitioned_by), options=options)


def unique_db(spark=None, tmp_path=None) -> str:
    """A fresh database; created under tmp_path (not in ./spark-warehouse) when given."""
    db = "lake_" + uuid.uuid4().hex[:8]
    if spark is not None:
        spark.sql(f"CREATE DATABASE {db} LOCATION '{tmp_path / 'warehouse'}'")
    return db


def lake_sink(spark, table, checkpoint):
    connector, options = validate_options(table, "sink")
    return connector.create_sink(SinkContext(spark, table, options, str(checkpoint)))


def with_query_id(checkpoint) -> str:
    """What Spark writes when a query first starts: write_append reads the id there."""
    os.makedirs(checkpoint, exist_ok=True)
    with open(os.path.join(checkpoint, "metadata"), "w") as f:
        f.write(json.dumps({"id": str(uuid.uuid4())}) + "\n")
    return str(checkpoint)


def rows(spark, data, schema="id int, name string, day string"):
    return spark.createDataFrame(data, schema)


def table_rows(spark, name):
    spark.catalog.refreshTable(name)
    return spark.table(name)


# --------------------------------------------------------------------------- validation

def test_metastore_table_needs_parquet(tmp_path):
    t = lake_table(tmp_path, "lake.t", format="json")
    with pytest.raises(PipelineError) as info:
        validate_options(t, "sink")
    assert info.value.option == "metastore.table"
    assert "'format' = 'parquet'" in str(info.value)


@pytest.mark.parametrize("name", ["a.b.c", "lake.", "1x", "lake.my-table", ""])
def test_metastore_table_must_be_a_table_name(tmp_path, name):
    with pytest.raises(PipelineError) as info:
        validate_options(lake_table(tmp_path, name), "sink")
    assert info.value.option == "metastore.table"


def test_table_name_defaults_to_database_default(tmp_path):
    assert metastore.table_name(lake_table(tmp_path, "Events"), {"metastore.table": "Events"}) == ("default", "events")


def test_session_conf_embedded_derby_under_metastore_dir(tmp_path):
    conf = metastore.session_conf({metastore.DIR_KEY: str(tmp_path)})
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"] == \
        f"jdbc:derby:;databaseName={tmp_path}/metastore_db;create=true"
    assert conf["spark.sql.warehouse.dir"] == f"{tmp_path}/spark-warehouse"


def test_session_conf_default_dir_is_the_working_directory():
    conf = metastore.session_conf({})
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"] == \
        f"jdbc:derby:;databaseName={os.getcwd()}/metastore_db;create=true"


def test_session_conf_keeps_a_real_metastore_and_serves_thrift():
    conf = metastore.session_conf({"hive.metastore.uris": "thrift://ms:9083", metastore.THRIFT_PORT_KEY: "10001"})
    assert conf["spark.hadoop.hive.metastore.uris"] == "thrift://ms:9083"
    assert "spark.hadoop.javax.jdo.option.ConnectionURL" not in conf
    assert "spark.sql.warehouse.dir" not in conf
    assert conf["spark.hadoop.hive.server2.thrift.port"] == "10001"
    assert conf["spark.hadoop.hive.server2.thrift.bind.host"] == "127.0.0.1"


def test_bad_thrift_port_names_the_setting():
    with pytest.raises(PipelineError) as info:
        metastore.session_conf({metastore.THRIFT_PORT_KEY: "ten"})
    assert info.value.option == metastore.THRIFT_PORT_KEY


def test_thrift_server_port_in_use_is_a_clear_error():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(PipelineError) as info:
            metastore.start_thrift_server(None, {metastore.THRIFT_PORT_KEY: str(port)})
    assert f"127.0.0.1:{port}" in str(info.value)
    assert info.value.option == metastore.THRIFT_PORT_KEY


def test_only_pipelines_with_a_lake_table_get_hive():
    plain = CreateTable("t", (ID,), options={"connector": "filesystem", "format": "json"})
    lake = lake_table("/tmp/x", "lake.t")
    assert not metastore.uses_metastore([plain], {})
    assert metastore.uses_metastore([plain, lake], {})
    assert metastore.uses_metastore([plain], {metastore.THRIFT_PORT_KEY: "10000"})


# --------------------------------------------------------------------------- writing

def test_streaming_write_registers_table_and_partitions(spark, tmp_path):
    db = unique_db(spark, tmp_path)
    src = tmp_path / "in"
    rows(spark, [(1, "a", "2024-01-01"), (2, "b", "2024-01-02"), (3, "c", None), (4, "d", "x:y/z")]) \
        .write.parquet(str(src))
    t = lake_table(tmp_path / "lake", f"{db}.events")
    sink = lake_sink(spark, t, tmp_path / "ck")
    df = spark.readStream.schema("id int, name string, day string").parquet(str(src))
    run_available_now(sink.write_stream(df), tmp_path / "ck")

    got = table_rows(spark, f"{db}.events")
    expected = rows(spark, [(1, "a", "2024-01-01"), (2, "b", "2024-01-02"), (3, "c", None), (4, "d", "x:y/z")])
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    partitions = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {db}.events").collect())
    assert partitions == ["day=2024-01-01", "day=2024-01-02", "day=__HIVE_DEFAULT_PARTITION__", "day=x%3Ay%2Fz"]
    # The directory itself reads the same (the staging area starts with '_').
    assert spark.read.parquet(str(tmp_path / "lake")).count() == 4
    assert not any(p.startswith("b0-") for p in os.listdir(tmp_path / "lake"))
    staging = os.listdir(tmp_path / "lake" / "_streamsql")
    left = [n for n in os.listdir(tmp_path / "lake" / "_streamsql" / staging[0]) if not n.startswith(".")]
    assert len(staging) == 1 and left == ["committed-0"]


def test_replayed_batch_is_written_once(spark, tmp_path):
    db = unique_db(spark, tmp_path)
    t = lake_table(tmp_path / "lake", f"{db}.t")
    sink = lake_sink(spark, t, with_query_id(tmp_path / "ck"))
    batch = rows(spark, [(1, "a", "d1"), (2, "b", "d2")])
    sink.write_append(batch, 0)
    sink.write_append(batch, 0)   # Spark replays a batch whose commit it did not record
    assert table_rows(spark, f"{db}.t").count() == 2
    sink.write_append(rows(spark, [(3, "c", "d1")]), 1)
    assert sorted(r.id for r in table_rows(spark, f"{db}.t").collect()) == [1, 2, 3]


def test_crash_while_moving_files_rolls_forward_on_replay(spark, tmp_path, monkeypatch):
    db = unique_db(spark, tmp_path)
    t = lake_table(tmp_path / "lake", f"{db}.t")
    sink = lake_sink(spark, t, with_query_id(tmp_path / "ck"))
    calls = {"n": 0}
    real_child = lake_sink_module._child

    def crashing_child(parent, rel):
        calls["n"] += 1
        if calls["n"] == 3:  # the first file moved, the second not
            raise RuntimeError("simulated crash")
        return real_child(parent, rel)

    monkeypatch.setattr(lake_sink_module, "_child", crashing_child)
    with pytest.raises(RuntimeError):
        sink.write_append(rows(spark, [(1, "a", "d1"), (2, "b", "d2")]), 0)
    monkeypatch.setattr(lake_sink_module, "_child", real_child)
    # The replay computes the batch again (here: differently); the staged first attempt wins.
    restarted = lake_sink(spark, t, tmp_path / "ck")
    restarted.write_append(rows(spark, [(9, "z", "d9")]), 0)
    got = table_rows(spark, f"{db}.t")
    assert_df_equality(got, rows(spark, [(1, "a", "d1"), (2, "b", "d2")]), ignore_row_order=True,
                       ignore_nullable=True)


def test_crash_before_registering_partitions_rolls_forward(spark, tmp_path, monkeypatch):
    db = unique_db(spark, tmp_path)
    t = lake_table(tmp_path / "lake", f"{db}.t")
    sink = lake_sink(spark, t, with_query_id(tmp_path / "ck"))
    monkeypatch.setattr(lake_sink_module.LakeSink, "_register", lambda self, spark, parts: (_ for _ in ()).throw(
        RuntimeError("simulated crash")))
    with pytest.raises(RuntimeError):
        sink.write_append(rows(spark, [(1, "a", "d1")]), 0)
    assert table_rows(spark, f"{db}.t").count() == 0   # files moved, partition not yet visible
    monkeypatch.undo()
    lake_sink(spark, t, tmp_path / "ck").write_append(rows(spark, [(1, "a", "d1")]), 0)
    assert [tuple(r) for r in table_rows(spark, f"{db}.t").collect()] == [(1, "a", "d1")]


def test_incomplete_staging_is_rewritten(spark, tmp_path):
    db = unique_db(spark, tmp_path)
    t = lake_table(tmp_path / "lake", f"{db}.t")
    sink = lake_sink(spark, t, with_query_id(tmp_path / "ck"))
    staged = tmp_path / "lake" / "_streamsql" / sink.query_id(spark) / "batch-0" / "day=d1"
    staged.mkdir(parents=True)
    (staged / "part-00000-half-written.parquet").write_bytes(b"PAR1 truncated")  # no _SUCCESS
    sink.write_append(rows(spark, [(1, "a", "d1")]), 0)
    assert [tuple(r) for r in table_rows(spark, f"{db}.t").collect()] == [(1, "a", "d1")]


def test_unpartitioned_table(spark, tmp_path):
    db = unique_db(spark, tmp_path)
    t = lake_table(tmp_path / "lake", f"{db}.t", columns=(ID, NAME), partitioned_by=())
    sink = lake_sink(spark, t, with_query_id(tmp_path / "ck"))
    sink.write_append(spark.createDataFrame([(1, "a")], "id int, name string"), 0)
    sink.write_append(spark.createDataFrame([(2, "b")], "id int, name string"), 1)
    assert sorted(r.id for r in table_rows(spark, f"{db}.t").collect()) == [1, 2]


# --------------------------------------------------------------------------- schema

def test_new_nullable_column_is_added_and_old_rows_read_null(spark, tmp_path):
    db = unique_db(spark, tmp_path)
    old = lake_table(tmp_path / "lake", f"{db}.t")
    lake_sink(spark, old, with_query_id(tmp_path / "ck")).write_append(rows(spark, [(1, "a", "d1")]), 0)
    score = Column("score", "double", "DOUBLE")
    new = lake_table(tmp_path / "lake", f"{db}.t", columns=(ID, NAME, score, DAY))
    sink = lake_sink(spark, new, tmp_path / "ck")
    assert sink.added_columns == ["score"]
    sink.write_append(spark.createDataFrame([(2, "b", 0.5, "d1")], "id int, name string, score double, day string"), 1)
    got = table_rows(spark, f"{db}.t")
    assert got.columns == ["id", "name", "score", "day"]
    expected = spark.createDataFrame([(1, "a", None, "d1"), (2, "b", 0.5, "d1")],
                                     "id int, name string, score double, day string")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


def test_type_change_is_one_error_naming_table_and_column(spark, tmp_path):
    db = unique_db(spark, tmp_path)
    lake_sink(spark, lake_table(tmp_path / "lake", f"{db}.t"), with_query_id(tmp_path / "ck")) \
        .write_append(rows(spark, [(1, "a", "d1")]), 0)
    changed = lake_table(tmp_path / "lake", f"{db}.t", columns=(ID, Column("name", "int", "INT"), DAY))
    with pytest.raises(PipelineError) as info:
        lake_sink(spark, changed, tmp_path / "ck")
    text = str(info.value)
    assert f"'{db}.t'" in text and "column 'name'" in text and "holds string" in text
    assert info.value.option == "metastore.table"
    assert "\n" not in text
    # Nothing was written or altered.
    assert [f.dataType.simpleString() for f in spark.table(f"{db}.t").schema] == ["int", "string", "string"]


@pytest.mark.parametrize("change, message, option", [
    (dict(partitioned_by=("name",)), "partitioning cannot change", "metastore.table"),
    (dict(columns=(ID, NAME, Column("extra", "int", "INT NOT NULL", nullable=False), DAY)), "declared NOT NULL",
     "metastore.table"),
    (dict(path_suffix="elsewhere"), "not at 'path'", "path"),
])
def test_other_conflicts_with_the_existing_table(spark, tmp_path, change, message, option):
    db = unique_db(spark, tmp_path)
    metastore.ensure_table(spark, lake_table(tmp_path / "lake", f"{db}.t"), {
        "metastore.table": f"{db}.t", "path": str(tmp_path / "lake")})
    path = tmp_path / change.pop("path_suffix", "lake")
    with pytest.raises(PipelineError) as info:
        lake_sink(spark, lake_table(path, f"{db}.t", **change), tmp_path / "ck")
    assert message in str(info.value)
    assert info.value.option == option


def test_missing_database_without_create_database(spark, tmp_path):
    t = lake_table(tmp_path / "lake", f"{unique_db()}.t", **{"metastore.create-database": "false"})
    with pytest.raises(PipelineError) as info:
        lake_sink(spark, t, tmp_path / "ck")
    assert info.value.option == "metastore.create-database"


def test_dry_run_plans_a_lake_table_without_touching_the_metastore(spark, tmp_path):
    from tests.support.runs import run_inline

    db = "lake_" + uuid.uuid4().hex[:8]
    r = run_inline(statements=[
        f"SET 'streamsql.metastore.dir' = '{tmp_path / 'ms'}'",
        f"CREATE TABLE src (id INT, name STRING, `day` STRING) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path / 'in'}', 'format' = 'json')",
        f"CREATE TABLE out (id INT, name STRING, `day` STRING) PARTITIONED BY (`day`) WITH ("
        f"'connector' = 'filesystem', 'path' = '{tmp_path / 'lake'}', 'format' = 'parquet', "
        f"'metastore.table' = '{db}.t')",
        "INSERT INTO out SELECT * FROM src"], dry_run=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    assert "metastore.table" in r.out
    assert not spark.catalog.databaseExists(db)
    assert not (tmp_path / "ms").exists() and not (tmp_path / "lake").exists()


def test_a_filesystem_source_reads_the_lake_directory(spark, tmp_path):
    """A later hop can stream the lake's files: the staging area is invisible to it."""
    from job.connectors.base import SourceContext

    db = unique_db(spark, tmp_path)
    t = lake_table(tmp_path / "lake", f"{db}.t")
    sink = lake_sink(spark, t, with_query_id(tmp_path / "ck"))
    sink.write_append(rows(spark, [(1, "a", "d1"), (2, "b", "d2")]), 0)
    sink.write_append(rows(spark, [(3, "c", "d1")]), 1)
    source_table = CreateTable(name="lake_in", columns=(ID, NAME, DAY), partitioned_by=("day",), options={
        "connector": "filesystem", "path": str(tmp_path / "lake"), "format": "parquet"})
    connector, options = validate_options(source_table, "source")
    stream = connector.create_source(SourceContext(spark, source_table, options, once=True))
    got = run_available_now(stream.df, tmp_path / "ck-read").select("id", "name", "day")
    assert_df_equality(got, rows(spark, [(1, "a", "d1"), (2, "b", "d2"), (3, "c", "d1")]), ignore_row_order=True,
                       ignore_nullable=True)
