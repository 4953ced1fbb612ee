"""The delta connector against real Delta tables in a temporary directory, read back
through delta-rs: appends, upserts and deletes by PRIMARY KEY, a replayed micro-batch
committed once (Delta's txn action), and options refused by name."""
from __future__ import annotations

import pytest
from chispa import assert_df_equality

pytest.importorskip("deltalake")

from job.connectors.base import SinkContext, SinkError  # noqa: E402
from job.connectors.registry import validate_options  # noqa: E402
from job.errors import Origin, PipelineError  # noqa: E402
from job.sql.parse import parse_statement  # noqa: E402
from job.sql.statements import StatementText  # noqa: E402


def table_sql(name, columns, path, *, pk=None, **options):
    opts = {"connector": "delta", "table-path": str(path), **options}
    key = f", PRIMARY KEY ({pk}) NOT ENFORCED" if pk else ""
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in opts.items())
    return parse_statement(StatementText(f"CREATE TABLE {name} ({columns}{key}) WITH ({with_})", Origin("t.sql")))


def make_sink(spark, t, checkpoint):
    connector, options = validate_options(t, "sink")
    return connector.create_sink(SinkContext(spark, t, options, str(checkpoint)))


def read_table(spark, path, schema):
    from deltalake import DeltaTable
    return spark.createDataFrame(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), schema)


def test_options_refused_by_name(tmp_path):
    with pytest.raises(PipelineError) as e:
        validate_options(table_sql("t", "id INT", tmp_path, **{"table-pth": "x"}), "sink")
    assert "unknown option 'table-pth'" in e.value.message
    with pytest.raises(PipelineError) as e:
        validate_options(table_sql("t", "id INT", "s3://bucket/t"), "sink")
    assert e.value.option == "table-path" and "local directory" in e.value.message


def test_append_and_a_replayed_batch_is_committed_once(spark, tmp_path):
    t = table_sql("events", "id INT, name STRING, ts TIMESTAMP(3)", tmp_path / "events")
    batch = spark.sql("SELECT * FROM VALUES (1, 'a', TIMESTAMP'2024-01-01 00:00:00'), (1, 'a', NULL), "
                      "(2, NULL, NULL) AS v(id, name, ts)")
    make_sink(spark, t, tmp_path / "ck").write_append(batch, 0)
    make_sink(spark, t, tmp_path / "ck").write_append(batch, 0)  # replayed after a restart: skipped
    got = read_table(spark, tmp_path / "events", "id int, name string, ts timestamp")
    assert_df_equality(got, batch, ignore_row_order=True, ignore_nullable=True)


def test_upserts_and_deletes_by_primary_key(spark, tmp_path):
    path = tmp_path / "counts"
    t = table_sql("counts", "accountId STRING, userCount BIGINT", path, pk="accountId")
    sink = make_sink(spark, t, tmp_path / "ck")
    schema = "accountId string, userCount bigint, __op string"
    b0 = spark.createDataFrame([("100", 1, "+U"), ("101", 2, "+U"), ("102", 3, "+U")], schema)
    b1 = spark.createDataFrame([("100", 5, "+U"), ("101", 2, "-D"), ("103", 7, "+I"), ("104", 1, "-D")], schema)
    sink.write_changes(b0, 0)
    sink.write_changes(b1, 1)
    make_sink(spark, t, tmp_path / "ck").write_changes(b0, 0)  # replays of committed batches: skipped
    expected = spark.createDataFrame([("100", 5), ("102", 3), ("103", 7)], "accountId string, userCount bigint")
    assert_df_equality(read_table(spark, path, "accountId string, userCount bigint"), expected,
                       ignore_row_order=True, ignore_nullable=True)


def test_unwritable_path_is_one_clear_error(spark, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(SinkError) as e:
        make_sink(spark, table_sql("t", "id INT", blocker / "t"), tmp_path / "ck")
    assert e.value.option == "table-path" and "could not be opened or created" in e.value.message
