"""The delta connector against real Delta tables in a temporary directory, read back
through delta-rs: appends, upserts and deletes by PRIMARY KEY, a replayed micro-batch
committed once (Delta's txn action), and options refused by name."""
from __future__ import annotations

import pytest
from chispa import assert_df_equality

from job.connectors.base import SinkContext, SinkError
from job.connectors.registry import validate_options
from job.errors import Origin, PipelineError
from job.sql.parse import parse_statement
from job.sql.statements import StatementText


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


@pytest.mark.slow
def test_updating_pipeline_into_delta_across_a_replay(spark, tmp_path):
    """A count by account over a changelog of users (updates and deletes of the count, an
    account whose count drops to zero deleted), in two runs on one checkpoint, the first
    run's last batch replayed on restart (as after a kill -9 between Delta's commit and
    Spark's); the table holds the final counts."""
    import json

    from tests.support.runs import run_inline

    src, path, ck = tmp_path / "users", tmp_path / "counts", tmp_path / "ck"
    src.mkdir()

    def change(op, before, after):
        row = lambda v: None if v is None else {"id": v[0], "accountId": v[1]}  # noqa: E731
        return json.dumps({"before": row(before), "after": row(after), "op": op})

    (src / "1.json").write_text("\n".join([
        change("c", None, (1, "a")), change("c", None, (2, "a")), change("c", None, (3, "b")),
        change("u", (3, "b"), (3, "c"))]) + "\n")
    sql = f"""
    CREATE TABLE users (id INT, accountId STRING, PRIMARY KEY (id) NOT ENFORCED)
      WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'debezium-json');
    CREATE TABLE counts (accountId STRING, n BIGINT, PRIMARY KEY (accountId) NOT ENFORCED)
      WITH ('connector' = 'delta', 'table-path' = '{path}');
    INSERT INTO counts SELECT accountId, COUNT(*) AS n FROM users GROUP BY accountId;
    """
    r = run_inline(statements=[sql], once=True, checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    schema = "accountId string, n bigint"
    assert_df_equality(read_table(spark, path, schema), spark.createDataFrame([("a", 2), ("c", 1)], schema),
                       ignore_row_order=True, ignore_nullable=True)
    (query,) = [d for d in ck.rglob("commits") if d.is_dir()]
    last = max((p for p in query.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    last.unlink()  # Spark never recorded the batch: it runs again on restart
    (query / f".{last.name}.crc").unlink(missing_ok=True)
    from deltalake import DeltaTable
    version = DeltaTable(str(path)).version()
    (src / "2.json").write_text("\n".join([
        change("d", (3, "c"), None), change("u", (1, "a"), (1, "b")), change("c", None, (4, "b"))]) + "\n")
    r = run_inline(statements=[sql], once=True, checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    assert_df_equality(read_table(spark, path, schema), spark.createDataFrame([("a", 1), ("b", 2)], schema),
                       ignore_row_order=True, ignore_nullable=True)
    assert DeltaTable(str(path)).version() == version + 1  # the replay committed nothing; the new batch once
