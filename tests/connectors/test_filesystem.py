"""The filesystem connector: streaming reads of json/csv/parquet/debezium-json files,
partitioned directories, and exactly-once append writes through Spark's file sink."""
from __future__ import annotations

import json
import os
import time

import pytest
from chispa import assert_df_equality

from job.connectors.base import APPEND, CHANGELOG, SinkContext, SourceContext
from job.connectors.registry import validate_options
from job.errors import EXIT_UNREACHABLE, PipelineError
from job.sql.statements import Column, CreateTable
from tests.support.spark_session import run_available_now

CONTROL = ["__error", "__raw", "__position"]


def table(path, fmt="json", columns=None, *, primary_key=(), partitioned_by=(), **extra):
    cols = columns or (Column("id", "int", "INT"), Column("name", "string", "STRING"))
    return CreateTable(name="files", columns=tuple(cols), primary_key=tuple(primary_key),
                       partitioned_by=tuple(partitioned_by),
                       options={"connector": "filesystem", "path": str(path), "format": fmt, **extra})


def source(spark, t, once=True):
    connector, options = validate_options(t, "source")
    return connector.create_source(SourceContext(spark, t, options, once=once))


def sink(spark, t, checkpoint):
    connector, options = validate_options(t, "sink")
    return connector.create_sink(SinkContext(spark, t, options, str(checkpoint)))


def write(path, name, lines, mtime=None):
    os.makedirs(path, exist_ok=True)
    target = os.path.join(path, name)
    with open(target + ".tmp", "w") as f:
        f.write("".join(line + "\n" for line in lines))
    os.replace(target + ".tmp", target)  # atomic, as the source requires
    if mtime is not None:
        os.utime(target, (mtime, mtime))
    return target


# --------------------------------------------------------------------------- source

def test_json_source_reads_every_line_as_an_append_stream(spark, tmp_path):
    write(tmp_path / "in", "a.json", ['{"id": 1, "name": "a"}', '', '{"id": 2, "name": null}'])
    write(tmp_path / "in", "b.json", ['{"id": 3, "name": "c", "extra": true}'])
    stream = source(spark, table(tmp_path / "in"))
    assert stream.mode == APPEND
    assert stream.df.columns == ["id", "name"] + CONTROL
    got = run_available_now(stream.df, tmp_path / "ck")
    expected = spark.createDataFrame([(1, "a"), (2, None), (3, "c")], "id int, name string")
    assert_df_equality(got.select("id", "name"), expected, ignore_row_order=True, ignore_nullable=True)
    assert got.where("__error IS NOT NULL").count() == 0
    positions = {r["__position"] for r in got.collect()}
    assert all(p.startswith("file file:") and p.endswith("(block 0)") for p in positions)


def test_bad_json_line_has_an_error_and_keeps_the_raw_line(spark, tmp_path):
    write(tmp_path / "in", "a.json", ['{"id": 1, "name": "a"}', '{"id": "one"', '{"id": 2, "name": "b"}'])
    got = run_available_now(source(spark, table(tmp_path / "in")).df, tmp_path / "ck")
    bad = got.where("__error IS NOT NULL").collect()
    assert len(bad) == 1
    assert bad[0]["__raw"] == '{"id": "one"'
    assert "malformed JSON" in bad[0]["__error"]
    assert sorted(r["id"] for r in got.where("__error IS NULL").collect()) == [1, 2]


def test_csv_source(spark, tmp_path):
    write(tmp_path / "in", "a.csv", ["1,x", '2,"a,b"', "3,"])
    cols = (Column("id", "int", "INT"), Column("name", "string", "STRING"), )
    got = run_available_now(source(spark, table(tmp_path / "in", "csv", cols)).df, tmp_path / "ck")
    expected = spark.createDataFrame([(1, "x"), (2, "a,b"), (3, None)], "id int, name string")
    assert_df_equality(got.select("id", "name"), expected, ignore_row_order=True, ignore_nullable=True)
    assert got.where("__error IS NOT NULL").count() == 0


def test_parquet_source_with_partitions(spark, tmp_path):
    data = spark.createDataFrame([(1, "a", "2024-01-01"), (2, "b", "2024-01-02"), (3, "c", "2024-01-02")],
                                 "id int, name string, dt string")
    data.write.partitionBy("dt").parquet(str(tmp_path / "in"))
    cols = (Column("id", "int", "INT"), Column("name", "string", "STRING"), Column("dt", "date", "DATE"))
    stream = source(spark, table(tmp_path / "in", "parquet", cols, partitioned_by=["dt"]))
    assert stream.mode == APPEND
    got = run_available_now(stream.df, tmp_path / "ck")
    expected = spark.createDataFrame([(1, "a", "2024-01-01"), (2, "b", "2024-01-02"), (3, "c", "2024-01-02")],
                                     "id int, name string, dt string").selectExpr("id", "name", "CAST(dt AS DATE) AS dt")
    assert_df_equality(got.select("id", "name", "dt"), expected, ignore_row_order=True, ignore_nullable=True)


def test_partitioned_json_directory_takes_partition_values_from_directory_names(spark, tmp_path):
    base = tmp_path / "in"
    write(base / "dt=2024-01-01" / "region=eu", "a.json", ['{"id": 1}', '{"id": 2}'])
    write(base / "dt=2024-01-02" / "region=us%3Aeast", "b.json", ['{"id": 3}'])
    write(base / "dt=2024-01-02" / "region=__DEFAULT_PARTITION__", "c.json", ['{"id": 4}'])
    write(base / "dt=2024-01-03" / "region=100%", "d.json", ['{"id": 5}'])
    cols = (Column("id", "int", "INT"), Column("dt", "date", "DATE"), Column("region", "string", "STRING"))
    got = run_available_now(source(spark, table(base, "json", cols, partitioned_by=["dt", "region"])).df,
                            tmp_path / "ck")
    expected = spark.createDataFrame(
        [(1, "2024-01-01", "eu"), (2, "2024-01-01", "eu"), (3, "2024-01-02", "us:east"), (4, "2024-01-02", None),
         (5, "2024-01-03", "100%")],
        "id int, dt string, region string").selectExpr("id", "CAST(dt AS DATE) AS dt", "region")
    assert_df_equality(got.select("id", "dt", "region"), expected, ignore_row_order=True, ignore_nullable=True)


def test_metadata_columns(spark, tmp_path):
    path = write(tmp_path / "in", "a.json", ['{"id": 1}'])
    cols = (Column("id", "int", "INT"),
            Column("file_name", "string", "STRING", kind="metadata", metadata_key="file.name", virtual=True),
            Column("size", "bigint", "BIGINT", kind="metadata", metadata_key="file.size", virtual=True),
            Column("file.path", "string", "STRING", kind="metadata", virtual=True))
    row = run_available_now(source(spark, table(tmp_path / "in", "json", cols)).df, tmp_path / "ck").collect()[0]
    assert row["file_name"] == "a.json"
    assert row["size"] == os.path.getsize(path)
    assert row["file.path"].endswith("/in/a.json")


def test_max_files_per_trigger_splits_micro_batches(spark, tmp_path):
    for i in range(3):
        write(tmp_path / "in", f"{i}.json", [json.dumps({"id": i, "name": str(i)})])
    stream = source(spark, table(tmp_path / "in", **{"source.max-files-per-trigger": "1"}))
    query = run_available_now(stream.df.writeStream.format("noop"), tmp_path / "ck")
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert [p["numInputRows"] for p in batches] == [1, 1, 1]


def test_missing_directory_is_a_clear_error(spark, tmp_path):
    with pytest.raises(PipelineError) as err:
        source(spark, table(tmp_path / "nope"))
    assert err.value.option == "path"
    assert err.value.exit_code == EXIT_UNREACHABLE
    assert "does not exist" in err.value.message


def test_dry_run_does_not_touch_the_directory(spark, tmp_path):
    t = table(tmp_path / "nope", partitioned_by=["name"])
    connector, options = validate_options(t, "source")
    stream = connector.create_source(SourceContext(spark, t, options, once=True, offline=True))
    assert stream.df.isStreaming and stream.df.columns == ["id", "name"] + CONTROL
    assert not (tmp_path / "nope").exists()


# --------------------------------------------------------------------------- debezium-json

def _event(op, before=None, after=None):
    out = {"op": op}
    if before is not None:
        out["before"] = before
    if after is not None:
        out["after"] = after
    return json.dumps(out)


def _cdc_files(base):
    now = time.time()
    # The older file is written second: order follows modification time, then path.
    write(base, "b.json", [
        _event("c", after={"id": 1, "name": "a"}),
        _event("u", before={"id": 1, "name": "a"}, after={"id": 1, "name": "b"}),
        _event("c", after={"id": 2, "name": "x"}),
        _event("u", before={"id": 1, "name": "b"}, after={"id": 1, "name": "c"}),
    ], mtime=now - 100)
    write(base, "a.json", [
        _event("d", before={"id": 1, "name": "c"}),
        _event("r", after={"id": 3, "name": "z"}),
    ], mtime=now - 50)


def _ordered(df):
    return [(r["__kind"], r["id"], r["name"]) for r in df.orderBy("__seq_major", "__seq_minor").collect()]


def test_debezium_unkeyed_is_a_changelog_in_file_order(spark, tmp_path):
    _cdc_files(tmp_path / "cdc")
    stream = source(spark, table(tmp_path / "cdc", "debezium-json"))
    assert stream.mode == CHANGELOG
    assert stream.df.columns == ["id", "name", "__kind", "__seq_major", "__seq_minor"] + CONTROL
    got = run_available_now(stream.df, tmp_path / "ck")
    assert _ordered(got) == [
        ("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "b"), ("+I", 2, "x"), ("-U", 1, "b"), ("+U", 1, "c"),
        ("-D", 1, "c"), ("+I", 3, "z"),
    ]
    assert got.where("__error IS NOT NULL").count() == 0


def test_debezium_keyed_is_a_changelog_as_in_flink(spark, tmp_path):
    """A PRIMARY KEY does not change what a Debezium table is: Flink reads its events as
    changes (+I/-U/+U/-D) and normalizes by key only with
    'table.exec.source.cdc-events-duplicate' (done by the planner)."""
    _cdc_files(tmp_path / "cdc")
    stream = source(spark, table(tmp_path / "cdc", "debezium-json", primary_key=["id"]))
    assert stream.mode == CHANGELOG
    got = run_available_now(stream.df, tmp_path / "ck")
    assert _ordered(got) == [
        ("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "b"), ("+I", 2, "x"), ("-U", 1, "b"), ("+U", 1, "c"),
        ("-D", 1, "c"), ("+I", 3, "z"),
    ]
    # One record index per line within the file's split; -U/+U of one event share it
    # (minor = index * 4 + position in the event).
    minors = [r["__seq_minor"] for r in got.orderBy("__seq_major", "__seq_minor").collect()]
    assert minors == [0, 4, 5, 8, 12, 13, 0, 4]


def test_debezium_update_without_before_image_is_a_bad_record_as_in_flink(spark, tmp_path):
    write(tmp_path / "cdc", "a.json", [_event("c", after={"id": 1, "name": "a"}),
                                       _event("u", after={"id": 1, "name": "b"}),
                                       _event("d")])
    got = run_available_now(source(spark, table(tmp_path / "cdc", "debezium-json")).df, tmp_path / "ck")
    errors = sorted(r["__error"] for r in got.where("__error IS NOT NULL").collect())
    assert len(errors) == 2 and "REPLICA IDENTITY" in errors[1] and "delete without 'before'" in errors[0], errors
    assert [(r["__kind"], r["name"]) for r in got.where("__error IS NULL").collect()] == [("+I", "a")]


def test_debezium_record_numbering_continues_across_arrow_batches(spark, tmp_path):
    lines = []
    for i in range(10):
        lines.append(_event("u", before={"id": 7, "name": str(i)}, after={"id": 7, "name": str(i + 1)}))
    write(tmp_path / "cdc", "a.json", lines)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "3")
    try:
        got = run_available_now(source(spark, table(tmp_path / "cdc", "debezium-json")).df, tmp_path / "ck")
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    rows = got.orderBy("__seq_minor").collect()
    assert [r["__seq_minor"] for r in rows] == [m for i in range(10) for m in (4 * i, 4 * i + 1)]
    assert [(r["__kind"], r["name"]) for r in rows] == [
        kv for i in range(10) for kv in (("-U", str(i)), ("+U", str(i + 1)))]


def test_debezium_windows_line_ends_are_records_without_the_carriage_return(spark, tmp_path):
    events = [_event("c", after={"id": 1, "name": "a"}), "", "   ", "not json",
              "  " + _event("u", before={"id": 1, "name": "a"}, after={"id": 1, "name": "b\r"})]
    write(tmp_path / "cdc", "a.json", [e + "\r" for e in events])  # write() adds the "\n"
    got = run_available_now(source(spark, table(tmp_path / "cdc", "debezium-json", primary_key=["id"])).df,
                            tmp_path / "ck")
    rows = got.orderBy("__seq_minor").collect()
    # Blank lines (empty or spaces) are no records but keep their numbers; a record may
    # start with spaces; a "\r" inside a value stays.
    assert [(r["__seq_minor"], r["__kind"], r["name"]) for r in rows] == [
        (0, "+I", "a"), (12, None, None), (16, "-U", "a"), (17, "+U", "b\r")]
    assert [r["__raw"] for r in rows if r["__error"]] == ["not json"]


def test_debezium_bad_event_is_flagged(spark, tmp_path):
    write(tmp_path / "cdc", "a.json", [_event("c", after={"id": 1, "name": "a"}), "not json", _event("x")])
    got = run_available_now(source(spark, table(tmp_path / "cdc", "debezium-json")).df, tmp_path / "ck")
    errors = sorted(r["__error"] for r in got.where("__error IS NOT NULL").collect())
    assert len(errors) == 2
    assert "unknown Debezium op 'x'" in errors
    assert got.where("__error IS NULL").count() == 1


# --------------------------------------------------------------------------- sink

def _rows_stream(spark, tmp_path, rows_json):
    """A streaming DataFrame of (id, name, dt) rows from a json directory (Spark's own reader)."""
    write(tmp_path / "rows", "a.json", rows_json)
    return spark.readStream.schema("id int, name string, dt string").json(str(tmp_path / "rows"))


ROWS = ['{"id": 1, "name": "a", "dt": "2024-01-01"}', '{"id": 2, "name": null, "dt": "2024-01-01"}',
        '{"id": 3, "name": "c", "dt": "2024-01-02"}']
SINK_COLUMNS = (Column("id", "int", "INT"), Column("name", "string", "STRING"), Column("dt", "string", "STRING"))


def test_parquet_sink_writes_partitioned_files_exactly_once(spark, tmp_path):
    t = table(tmp_path / "out", "parquet", SINK_COLUMNS, partitioned_by=["dt"])
    writer = sink(spark, t, tmp_path / "ck").write_stream(_rows_stream(spark, tmp_path, ROWS))
    run_available_now(writer, tmp_path / "ck")
    assert sorted(p for p in os.listdir(tmp_path / "out") if not p.startswith(".")) == [
        "_spark_metadata", "dt=2024-01-01", "dt=2024-01-02"]
    got = spark.read.parquet(str(tmp_path / "out"))
    expected = spark.createDataFrame([(1, "a", "2024-01-01"), (2, None, "2024-01-01"), (3, "c", "2024-01-02")],
                                     "id int, name string, dt string")
    assert_df_equality(got.selectExpr("id", "name", "CAST(dt AS STRING) AS dt"), expected,
                       ignore_row_order=True, ignore_nullable=True)
    # A rerun from the same checkpoint writes nothing more.
    writer = sink(spark, t, tmp_path / "ck").write_stream(_rows_stream(spark, tmp_path, ROWS))
    run_available_now(writer, tmp_path / "ck")
    assert spark.read.parquet(str(tmp_path / "out")).count() == 3


def test_json_sink_keeps_null_fields_and_reads_back_through_the_source(spark, tmp_path):
    t = table(tmp_path / "out", "json", SINK_COLUMNS, partitioned_by=["dt"])
    writer = sink(spark, t, tmp_path / "ck").write_stream(_rows_stream(spark, tmp_path, ROWS))
    run_available_now(writer, tmp_path / "ck")
    lines = []
    for root, _dirs, files in os.walk(tmp_path / "out" / "dt=2024-01-01"):
        for f in files:
            if f.endswith(".json"):
                lines += open(os.path.join(root, f)).read().split()
    assert sorted(lines) == ['{"id":1,"name":"a"}', '{"id":2,"name":null}']
    got = run_available_now(source(spark, t).df, tmp_path / "ck2")
    expected = spark.createDataFrame([(1, "a", "2024-01-01"), (2, None, "2024-01-01"), (3, "c", "2024-01-02")],
                                     "id int, name string, dt string")
    assert_df_equality(got.select("id", "name", "dt"), expected, ignore_row_order=True, ignore_nullable=True)


def test_csv_sink_and_batch_append(spark, tmp_path):
    cols = SINK_COLUMNS[:2] + (Column("ts", "timestamp", "TIMESTAMP(3)"),)
    t = table(tmp_path / "out", "csv", cols)
    batch = spark.sql("SELECT 1 AS id, 'a,b' AS name, TIMESTAMP'2024-01-01 10:00:00.5' AS ts "
                      "UNION ALL SELECT 2, NULL, NULL")
    sink(spark, t, tmp_path / "ck").write_append(batch, 0)
    lines = sorted(r["value"] for r in spark.read.text(str(tmp_path / "out")).collect())
    assert lines == ['1,"a,b",2024-01-01 10:00:00.500000', "2,,"]  # microseconds, Spark's precision
    # ... and the csv source reads them back.
    got = run_available_now(source(spark, t).df, tmp_path / "ck2")
    assert_df_equality(got.select("id", "name", "ts"), batch, ignore_row_order=True, ignore_nullable=True)


def test_raw_sink_writes_one_line_per_row(spark, tmp_path):
    t = table(tmp_path / "out", "raw", (Column("line", "string", "STRING"),))
    write(tmp_path / "rows", "a.json", ['{"line": "hello"}', '{"line": "world"}'])
    stream = spark.readStream.schema("line string").json(str(tmp_path / "rows"))
    run_available_now(sink(spark, t, tmp_path / "ck").write_stream(stream), tmp_path / "ck")
    got = spark.read.text(str(tmp_path / "out"))
    assert sorted(r["value"] for r in got.collect()) == ["hello", "world"]


# --------------------------------------------------------------------------- check

def test_sink_rejects_debezium_json(tmp_path):
    with pytest.raises(PipelineError) as err:
        validate_options(table(tmp_path, "debezium-json"), "sink")
    assert err.value.option == "format"
    assert "cannot write format 'debezium-json'" in err.value.message
    validate_options(table(tmp_path, "debezium-json"), "source")  # reading is fine


@pytest.mark.parametrize("columns, partitioned_by, fmt, message", [
    (SINK_COLUMNS, ["nope"], "json", "PARTITIONED BY column 'nope' is not a physical column"),
    ((Column("id", "int", "INT"),), ["id"], "json", "every column of table 'files' is a PARTITIONED BY column"),
    (SINK_COLUMNS, [], "raw", "format 'raw' holds exactly one column"),
    ((Column("id", "int", "INT"), Column("tags", "array<string>", "ARRAY<STRING>")), [], "csv",
     "column 'tags' of table 'files' has type ARRAY<STRING>, which format 'csv' cannot hold"),
    ((Column("id", "int", "INT"), Column("m", "string", "STRING", kind="metadata", metadata_key="offset")), [],
     "json", "unknown filesystem metadata key 'offset'"),
])
def test_check_rejects_bad_tables(tmp_path, columns, partitioned_by, fmt, message):
    with pytest.raises(PipelineError) as err:
        validate_options(table(tmp_path, fmt, columns, partitioned_by=partitioned_by), "source")
    assert message in err.value.message


def test_max_files_per_trigger_must_be_positive(tmp_path):
    with pytest.raises(PipelineError) as err:
        validate_options(table(tmp_path, **{"source.max-files-per-trigger": "0"}), "source")
    assert err.value.option == "source.max-files-per-trigger"


def test_sink_rejects_writable_metadata(tmp_path):
    cols = (Column("id", "int", "INT"), Column("p", "string", "STRING", kind="metadata", metadata_key="file.path"))
    validate_options(table(tmp_path, "json", cols), "source")
    with pytest.raises(PipelineError, match="cannot be written"):
        validate_options(table(tmp_path, "json", cols), "sink")


@pytest.mark.parametrize("directory, expected", [
    ("/data/in/users", ["/a=1/p.json", "/a=2/p.json", "/b.json"]),
    ("file:///data/in/users/", ["/a=1/p.json", "/a=2/p.json", "/b.json"]),
    ("in/users", ["/a=1/p.json", "/a=2/p.json", "/b.json"]),          # relative to where the job runs
    ("/data/*/users", None),                                          # a glob: paths kept whole
    ("/elsewhere", None),                                             # not in the paths: kept whole
])
def test_debezium_order_uses_the_path_below_the_table_directory(spark, directory, expected):
    from job.connectors.filesystem.source import _path_below

    paths = ["file:/data/in/users/a=1/p.json", "file:/data/in/users/a=2/p.json", "file:/data/in/users/b.json"]
    df = spark.createDataFrame([(p,) for p in paths], "__file string")
    got = [r[0] for r in df.select(_path_below(df["__file"], directory)).collect()]
    assert got == (expected or paths)
    assert got == sorted(got)  # the cut keeps the paths' order


def test_a_large_file_is_read_in_one_split_per_core(spark, tmp_path):
    """conf/spark-defaults.conf's maxPartitionBytes (1 GiB; spark-submit.sh and library
    sessions read it): a 300 MB file is split evenly over the two cores, where Spark's
    128 MB gives three splits, the last running alone. The file is sparse: only its size
    is planned, nothing is read."""
    from job.run.session import read_defaults

    (tmp_path / "in").mkdir()
    with open(tmp_path / "in" / "big.json", "wb") as f:
        f.truncate(300 * 2 ** 20)
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    try:
        splits = {}
        for value in (read_defaults()["spark.sql.files.maxPartitionBytes"], "128m"):
            spark.conf.set("spark.sql.files.maxPartitionBytes", value)
            splits[value] = spark.read.text(str(tmp_path / "in")).rdd.getNumPartitions()
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    assert splits == {"1g": spark.sparkContext.defaultParallelism, "128m": 3}
