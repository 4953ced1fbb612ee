"""The delta connector as a source, against Delta tables that delta-rs and the job's own
delta sink write in a temporary directory: a bounded read (latest, 'versionAsOf'), a
stream that reads the table then only new commits across runs on one checkpoint, a MERGE
commit refused without 'ignoreChanges', the change data feed as a changelog, declared
columns checked against the table, options refused by name, and job → Delta → job."""
from __future__ import annotations

import pyarrow as pa
import pytest
from chispa import assert_df_equality

from job.connectors.base import CHANGELOG, SourceContext
from job.connectors.registry import validate_options
from job.errors import PipelineError
from tests.connectors.test_delta import table_sql
from tests.support.spark_session import read_source

SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string())])


def write(path, rows, mode="append", **kwargs):
    from deltalake import write_deltalake

    write_deltalake(str(path), pa.Table.from_pylist([{"id": i, "v": v} for i, v in rows], SCHEMA), mode=mode,
                    **kwargs)


def merge(path, rows):
    """An upsert of ``rows`` by id (a MERGE commit: rewrites the files holding the ids)."""
    from deltalake import DeltaTable

    (DeltaTable(str(path)).merge(pa.Table.from_pylist([{"id": i, "v": v} for i, v in rows], SCHEMA),
                                 "t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())


def refused(t, role="source"):
    with pytest.raises(PipelineError) as e:
        connector, options = validate_options(t, role)
        connector.create_source(SourceContext(None, t, options, once=True))
    return e.value


def test_timestamps_in_delta_flink_formats_are_utc():
    from job.connectors.delta.read import timestamp_ms

    assert timestamp_ms("1970-01-02") == 86_400_000
    assert timestamp_ms("1970-01-01 00:00:01") == timestamp_ms("1970-01-01T00:00:01Z") == 1000
    assert timestamp_ms("1970-01-01 00:00:01.5") == 1500
    with pytest.raises(ValueError):
        timestamp_ms("01/02/1970")


def test_read_options_refused_by_name(tmp_path):
    def error(**options):
        return refused(table_sql("t", "id INT", tmp_path, **options))

    e = error(startingVersion="1")  # 'mode' is 'batch' by default, as in Flink
    assert e.option == "startingVersion" and "inapplicable option" in e.message
    e = error(mode="streaming", versionAsOf="1")
    assert e.option == "versionAsOf" and "'batch' only" in e.message
    e = error(mode="streaming", startingVersion="1", startingTimestamp="2024-01-01")
    assert e.option == "startingTimestamp" and "mutually exclusive" in e.message
    assert error(mode="streaming", startingVersion="first").option == "startingVersion"
    assert error(timestampAsOf="yesterday").option == "timestampAsOf"
    assert error(mode="continuous").option == "mode"
    assert error(readChangeFeed="true").option == "readChangeFeed"  # streaming only
    assert "unknown option 'startingVersions'" in error(startingVersions="1").message
    _, ok = validate_options(table_sql("t", "id INT", tmp_path, mode="STREAMING", ignoreChanges="true"), "source")
    assert ok["updateCheckIntervalMillis"] == 5000 and ok["ignoreChanges"] is True


def test_declared_columns_are_checked_against_the_table(spark, tmp_path):
    path = tmp_path / "t"
    write(path, [(1, "a")])
    e = refused(table_sql("t", "id INT, w STRING", path))
    assert e.option == "table-path" and "it has no column 'w'" in e.message
    e = refused(table_sql("t", "id SMALLINT, v STRING", path))
    assert "its column 'id' is Delta integer, which the declared SMALLINT cannot hold" in e.message
    assert "holds no Delta table" in refused(table_sql("t", "id INT", tmp_path / "none")).message
    e = refused(table_sql("t", "id INT", path, mode="streaming", readChangeFeed="true"))
    assert e.option == "readChangeFeed" and "delta.enableChangeDataFeed" in e.message
    assert refused(table_sql("t", "id INT", path, versionAsOf="7")).option == "versionAsOf"
    e = refused(table_sql("t", "id INT", path, timestampAsOf="2000-01-01"))
    assert e.option == "timestampAsOf" and "before the table's first commit" in e.message
    e = refused(table_sql("t", "id INT", path, mode="streaming", startingTimestamp="2999-01-01 00:00:00"))
    assert e.option == "startingTimestamp" and "after the table's latest commit" in e.message
    # a wider declared type holds the data, read in declared order
    _, got = read_source(spark, table_sql("t", "v STRING, id BIGINT", path), tmp_path / "ck", ("v", "id"))
    assert got == [("a", 1)]


def test_bounded_read_at_the_latest_and_an_older_version(spark, tmp_path):
    path = tmp_path / "t"
    write(path, [(1, "a"), (2, "b")])           # version 0
    write(path, [(3, "c")])                     # 1
    merge(path, [(2, "B"), (4, "d")])           # 2
    stream, got = read_source(spark, table_sql("t", "id INT, v STRING", path), tmp_path / "ck1")
    assert stream.bounded and stream.mode == "append"
    expected = spark.createDataFrame([(1, "a"), (2, "B"), (3, "c"), (4, "d")], "id int, v string")
    assert_df_equality(spark.createDataFrame(got, "id int, v string"), expected, ignore_row_order=True)
    _, got = read_source(spark, table_sql("t", "id INT, v STRING", path, versionAsOf="1"), tmp_path / "ck2")
    assert got == [(1, "a"), (2, "b"), (3, "c")]


def test_stream_reads_the_table_then_only_new_commits_across_runs(spark, tmp_path):
    """Run 1 reads the table as it is; run 2, on the same checkpoint, only the commits since
    (no file twice); a MERGE commit then stops the stream with Delta's message unless
    'ignoreChanges', which reads the rewritten file's rows again, and a DELETE of a whole
    file unless 'ignoreDeletes'."""
    path = tmp_path / "t"
    write(path, [(1, "a"), (2, "b")])
    write(path, [(3, "c")])
    streaming = table_sql("t", "id INT, v STRING", path, mode="streaming")
    stream, got = read_source(spark, streaming, tmp_path / "ck")
    assert not stream.bounded and got == [(1, "a"), (2, "b"), (3, "c")]
    write(path, [(4, "d")])
    write(path, [(5, "e")])
    _, got = read_source(spark, streaming, tmp_path / "ck")
    assert got == [(4, "d"), (5, "e")]
    _, got = read_source(spark, streaming, tmp_path / "ck")
    assert got == []

    merge(path, [(5, "E")])  # version 4: rewrites the file that holds id 5
    with pytest.raises(Exception) as e:
        read_source(spark, streaming, tmp_path / "ck")
    assert "Detected a data update in the source table at version 4" in str(e.value)
    assert "'ignoreChanges'" in str(e.value)
    ignoring = table_sql("t", "id INT, v STRING", path, mode="streaming", ignoreChanges="true")
    _, got = read_source(spark, ignoring, tmp_path / "ck")
    assert got == [(5, "E")]
    from deltalake import DeltaTable

    DeltaTable(str(path)).delete("id = 4")  # version 5: removes the file that holds id 4, adds none
    with pytest.raises(Exception) as e:
        read_source(spark, streaming, tmp_path / "ck")
    assert "Detected deleted data from streaming source at version 5" in str(e.value)
    _, got = read_source(spark, table_sql("t", "id INT, v STRING", path, mode="streaming", ignoreDeletes="true"),
                         tmp_path / "ck")
    assert got == []
    # 'startingVersion': only the changes from that version on, without the table before it
    from_2 = table_sql("t", "id INT, v STRING", path, mode="streaming", startingVersion="2", ignoreChanges="true")
    _, got = read_source(spark, from_2, tmp_path / "ck2")
    assert got == [(4, "d"), (5, "E"), (5, "e")]  # the rewritten file's rows again, as in Delta


def test_change_data_feed_as_a_changelog(spark, tmp_path):
    """A table with the change data feed: the first run reads its rows as +I, the next the
    MERGE's update (-U/+U) and insert and a DELETE's -D, each in its version's order."""
    from deltalake import DeltaTable

    path = tmp_path / "t"
    write(path, [(1, "a"), (2, "b")], configuration={"delta.enableChangeDataFeed": "true"})
    t = table_sql("t", "id INT, v STRING", path, pk="id", mode="streaming", readChangeFeed="true")
    stream, got = read_source(spark, t, tmp_path / "ck", ("__kind", "id", "v"))
    assert stream.mode == CHANGELOG and got == [("+I", 1, "a"), ("+I", 2, "b")]
    merge(path, [(2, "B"), (3, "c")])
    DeltaTable(str(path)).delete("id = 1")
    _, got = read_source(spark, t, tmp_path / "ck", ("__kind", "id", "v", "__seq_major", "__seq_minor"))
    versions = sorted({r[3] for r in got})
    assert len(versions) == 2  # the MERGE's version, then the DELETE's
    merge_rows = sorted((r for r in got if r[3] == versions[0]), key=lambda r: r[4])
    assert merge_rows[0][:3] == ("-U", 2, "b")  # a version's retractions come before its additions
    assert sorted(r[:3] for r in merge_rows[1:]) == [("+I", 3, "c"), ("+U", 2, "B")]
    assert [r[:3] for r in got if r[3] == versions[1]] == [("-D", 1, "a")]


@pytest.mark.slow
def test_job_to_delta_to_job(spark, tmp_path):
    """One pipeline upserts counts into a Delta table (with its change feed); another reads
    that table's changes as a changelog and keeps a per-bucket total in a second Delta table.
    Run twice from one checkpoint each, the second table holds the totals of the first
    table's current rows."""
    from deltalake import DeltaTable

    from tests.connectors.test_delta import read_table
    from tests.support.runs import run_inline

    src, counts, totals = tmp_path / "src", tmp_path / "counts", tmp_path / "totals"
    src.mkdir()
    # the first table, created with its change feed enabled, as another writer would
    DeltaTable.create(str(counts), schema=pa.schema([("k", pa.string()), ("n", pa.int64())]),
                      configuration={"delta.enableChangeDataFeed": "true"})
    first = f"""
    CREATE TABLE events (k STRING) WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'json');
    CREATE TABLE counts (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED)
      WITH ('connector' = 'delta', 'table-path' = '{counts}');
    INSERT INTO counts SELECT k, COUNT(*) AS n FROM events GROUP BY k;
    """
    second = f"""
    CREATE TABLE counts (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED)
      WITH ('connector' = 'delta', 'table-path' = '{counts}', 'mode' = 'streaming', 'readChangeFeed' = 'true');
    CREATE TABLE totals (bucket STRING, total BIGINT, PRIMARY KEY (bucket) NOT ENFORCED)
      WITH ('connector' = 'delta', 'table-path' = '{totals}');
    INSERT INTO totals SELECT SUBSTRING(k, 1, 1) AS bucket, SUM(n) AS total FROM counts GROUP BY SUBSTRING(k, 1, 1);
    """
    schema = "bucket string, total bigint"
    for batch, expected in ((["a1", "a1", "b1"], [("a", 2), ("b", 1)]),
                            (["a2", "b1", "b2"], [("a", 3), ("b", 3)])):
        (src / f"{len(list(src.iterdir()))}.json").write_text("".join(f'{{"k": "{k}"}}\n' for k in batch))
        for sql, ck in ((first, "ck1"), (second, "ck2")):
            r = run_inline(statements=[sql], once=True, checkpoint_dir=str(tmp_path / ck))
            assert r.code == 0, r.err
        assert_df_equality(read_table(spark, totals, schema), spark.createDataFrame(expected, schema),
                           ignore_row_order=True, ignore_nullable=True)
