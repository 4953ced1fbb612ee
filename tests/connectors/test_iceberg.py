"""The iceberg connector against real Iceberg tables (a Hadoop catalog in a temporary
warehouse, read back through pyiceberg): option checks, upserts and deletes by PRIMARY
KEY, a replayed micro-batch committed once, and the table layout other engines read."""
from __future__ import annotations

import os

import pytest
from chispa import assert_df_equality

from job.connectors.base import SinkContext
from job.connectors.iceberg import catalog_table_options
from job.connectors.registry import validate_options
from job.errors import Origin, PipelineError
from job.sql.parse import parse_statement
from job.sql.statements import StatementText
from tests.support.spark_session import read_source


def ddl(text: str):
    return parse_statement(StatementText(text, Origin("test.sql")))


def table_sql(name, columns, warehouse, *, pk=None, **options):
    opts = {"connector": "iceberg", "catalog-name": "lake", "catalog-type": "hadoop", "warehouse": str(warehouse),
            **options}
    key = f", PRIMARY KEY ({pk}) NOT ENFORCED" if pk else ""
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in opts.items())
    return ddl(f"CREATE TABLE {name} ({columns}{key}) WITH ({with_})")


def make_sink(spark, t, checkpoint):
    connector, options = validate_options(t, "sink")
    return connector.create_sink(SinkContext(spark, t, options, str(checkpoint)))


def read_table(spark, warehouse, ident, schema):
    """The table's rows as a DataFrame, read by pyiceberg from the warehouse's metadata."""
    from job.connectors.iceberg.catalog import HadoopCatalog

    arrow = HadoopCatalog("check", warehouse=str(warehouse)).load_table(ident).scan().to_arrow()
    return spark.createDataFrame(arrow.to_pylist(), schema)


# --------------------------------------------------------------------------- options

def test_option_checks(tmp_path):
    def error(**options):
        with pytest.raises(PipelineError) as e:
            validate_options(table_sql("t", "id INT, v STRING", tmp_path, **options), "sink")
        return e.value

    default = ddl("CREATE TABLE t (id INT) WITH ('connector' = 'iceberg', 'catalog-name' = 'c')")
    with pytest.raises(PipelineError) as e:
        validate_options(default, "sink")
    assert "'catalog-type' = 'hive' (Flink's default)" in e.value.message and e.value.option == "catalog-type"
    assert "'rest'" in error(**{"catalog-type": "rest"}).message
    assert error(**{"catalog-impl": "org.example.Cat"}).option == "catalog-impl"
    with pytest.raises(PipelineError) as e:
        validate_options(table_sql("t", "id INT", "s3a://bucket/wh"), "sink")
    assert "object stores" in e.value.hint and e.value.option == "warehouse"
    assert error(**{"write.upsert.enabled": "true"}).option == "write.upsert.enabled"  # no PRIMARY KEY
    assert error(**{"write-format": "orc"}).option == "write-format"
    assert "unknown option 'catalog-tabel'" in error(**{"catalog-tabel": "x"}).message
    partitioned = ddl(f"CREATE TABLE t (id INT, d STRING) PARTITIONED BY (d) WITH ('connector' = 'iceberg', "
                      f"'catalog-name' = 'c', 'catalog-type' = 'hadoop', 'warehouse' = '{tmp_path}')")
    with pytest.raises(PipelineError) as e:
        validate_options(partitioned, "sink")
    assert "PARTITIONED BY is not supported" in e.value.message
    _, ok = validate_options(table_sql("t", "id INT, v STRING", tmp_path, pk="id",
                                       **{"write.upsert.enabled": "true"}), "sink")
    assert ok["catalog-database"] == "default_database" and ok["format-version"] == 2


def test_catalog_table_options_build_the_connector_options(tmp_path):
    options = catalog_table_options("c", {"type": "iceberg", "catalog-type": "hadoop", "warehouse": str(tmp_path)},
                                    "db", "t")
    assert options == {"connector": "iceberg", "catalog-name": "c", "catalog-type": "hadoop",
                       "warehouse": str(tmp_path), "catalog-database": "db", "catalog-table": "t"}
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    validate_options(ddl(f"CREATE TABLE t (id INT) WITH ({with_})"), "sink")


# --------------------------------------------------------------------------- upsert sink

def test_upserts_and_deletes_by_primary_key_and_a_replay_is_committed_once(spark, tmp_path):
    wh = tmp_path / "wh"
    t = table_sql("counts", "accountId STRING, userCount BIGINT, day DATE", wh, pk="accountId",
                  **{"catalog-database": "db", "write.upsert.enabled": "true"})
    sink = make_sink(spark, t, tmp_path / "ck")
    schema = "accountId string, userCount bigint, day date, __op string"
    b0 = spark.createDataFrame([("100", 1, None, "+U"), ("101", 2, None, "+U"), ("102", 3, None, "+U")], schema)
    b1 = spark.createDataFrame([("100", 5, None, "+U"), ("101", 2, None, "-D"), ("103", 7, None, "+I")], schema)
    sink.write_changes(b0, 0)
    sink.write_changes(b1, 1)
    make_sink(spark, t, tmp_path / "ck").write_changes(b1, 1)  # replayed after a restart: skipped
    expected = spark.createDataFrame([("100", 5, None), ("102", 3, None), ("103", 7, None)],
                                     "accountId string, userCount bigint, day date")
    got = read_table(spark, wh, ("db", "counts"), "accountId string, userCount bigint, day date")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    # The table is Iceberg's Hadoop layout, each batch one metadata version, the key an
    # identifier field.
    meta = wh / "db" / "counts" / "metadata"
    assert (meta / "version-hint.text").read_text() == "3"
    assert sorted(p for p in os.listdir(meta) if p.endswith(".metadata.json")) == [
        "v1.metadata.json", "v2.metadata.json", "v3.metadata.json"]
    from job.connectors.iceberg.catalog import HadoopCatalog
    table = HadoopCatalog("check", warehouse=str(wh)).load_table(("db", "counts"))
    assert table.schema().identifier_field_names() == {"accountId"}
    assert table.properties["write.upsert.enabled"] == "true"
    # the job reads what it wrote: a bounded scan of the table as it is
    _, got = read_source(spark, t, tmp_path / "read", columns=("accountId", "userCount"))
    assert got == [("100", 5), ("102", 3), ("103", 7)]
    # a fresh checkpoint is a new query: its batch 0 is written
    make_sink(spark, t, tmp_path / "ck2").write_changes(
        spark.createDataFrame([("100", 9, None, "+U")], schema), 0)
    got = read_table(spark, wh, ("db", "counts"), "accountId string, userCount bigint, day date")
    assert sorted(r["userCount"] for r in got.collect()) == [3, 7, 9]


def test_append_table_and_declared_schema_mismatch(spark, tmp_path):
    wh = tmp_path / "wh"
    t = table_sql("events", "id INT, name STRING", wh)
    sink = make_sink(spark, t, tmp_path / "ck")
    batch = spark.createDataFrame([(1, "a"), (1, "a"), (2, None)], "id int, name string")
    sink.write_append(batch, 0)
    sink.write_append(batch, 0)
    got = read_table(spark, wh, ("default_database", "events"), "id int, name string")
    assert_df_equality(got, batch, ignore_row_order=True, ignore_nullable=True)
    other = table_sql("events", "id BIGINT, name STRING", wh)
    with pytest.raises(PipelineError) as e:
        make_sink(spark, other, tmp_path / "ck3")
    assert "its column 'id' is int" in e.value.message and e.value.option == "catalog-table"


# --------------------------------------------------------------------------- a whole pipeline

@pytest.mark.slow
def test_updating_pipeline_into_iceberg_across_restarts(spark, tmp_path):
    """A count by account over a changelog of users (moves and deletions: updates and
    deletes of the count, an account whose count drops to zero deleted), in two runs on
    one checkpoint; the table holds the final counts."""
    import json

    from tests.support.runs import run_inline

    src, wh = tmp_path / "users", tmp_path / "wh"
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
      WITH ('connector' = 'iceberg', 'catalog-name' = 'lake', 'catalog-type' = 'hadoop', 'warehouse' = '{wh}',
            'catalog-database' = 'db', 'format-version' = '2', 'write.upsert.enabled' = 'true');
    INSERT INTO counts SELECT accountId, COUNT(*) AS n FROM users GROUP BY accountId;
    """
    r = run_inline(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    schema = "accountId string, n bigint"
    assert_df_equality(read_table(spark, wh, ("db", "counts"), schema),
                       spark.createDataFrame([("a", 2), ("c", 1)], schema), ignore_row_order=True, ignore_nullable=True)
    (src / "2.json").write_text("\n".join([
        change("d", (3, "c"), None), change("u", (1, "a"), (1, "b")), change("c", None, (4, "b"))]) + "\n")
    r = run_inline(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    assert_df_equality(read_table(spark, wh, ("db", "counts"), schema),
                       spark.createDataFrame([("a", 1), ("b", 2)], schema), ignore_row_order=True, ignore_nullable=True)


@pytest.mark.slow
def test_batch_replayed_after_its_iceberg_commit_is_not_appended_twice(spark, tmp_path):
    """A crash after Iceberg committed a micro-batch but before Spark recorded it (kill -9
    between the two): Spark replays the batch on restart, and the append table keeps one
    copy of its rows."""
    import json

    from tests.support.runs import run_inline

    src, wh, ck = tmp_path / "events", tmp_path / "wh", tmp_path / "ck"
    src.mkdir()
    (src / "1.json").write_text("\n".join(json.dumps({"id": i, "v": f"x{i}"}) for i in range(5)) + "\n")
    sql = f"""
    CREATE TABLE events (id INT, v STRING) WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'json');
    CREATE TABLE copy (id INT, v STRING) WITH ('connector' = 'iceberg', 'catalog-name' = 'lake',
      'catalog-type' = 'hadoop', 'warehouse' = '{wh}');
    INSERT INTO copy SELECT * FROM events;
    """
    assert run_inline(statements=[sql], once=True, checkpoint_dir=str(ck)).code == 0
    (query,) = [d for d in ck.rglob("commits") if d.is_dir()]
    last = max((p for p in query.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    last.unlink()  # Spark never recorded the batch: it runs again on restart
    (query / f".{last.name}.crc").unlink(missing_ok=True)
    r = run_inline(statements=[sql], once=True, checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    got = read_table(spark, wh, ("default_database", "copy"), "id int, v string")
    expected = spark.createDataFrame([(i, f"x{i}") for i in range(5)], "id int, v string")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


# --------------------------------------------------------------------------- source

def test_read_option_checks(tmp_path):
    def error(**options):
        with pytest.raises(PipelineError) as e:
            validate_options(table_sql("t", "id INT", tmp_path, **options), "source")
        return e.value

    assert error(streaming="true", **{"snapshot-id": "1"}).message.endswith(
        "Cannot set snapshot-id option for streaming reader")
    e = error(streaming="true", **{"start-snapshot-id": "1"})
    assert "Invalid starting snapshot id for INCREMENTAL_FROM_LATEST_SNAPSHOT strategy: not null" in e.message
    assert "strategy: null" in error(streaming="true", **{"starting-strategy": "incremental_from_snapshot_id"}).message
    assert error(**{"starting-strategy": "FROM_THE_START"}).option == "starting-strategy"
    assert error(branch="audit").option == "branch" and error(**{"watermark-column": "ts"}).option == "watermark-column"
    assert error(**{"snapshot-id": "1", "as-of-timestamp": "2"}).option == "as-of-timestamp"
    _, ok = validate_options(table_sql("t", "id INT", tmp_path, branch="main", **{"split-size": "1"}), "source")
    assert ok["streaming"] is False and ok["monitor-interval"] == 60_000


def test_reads_a_pyiceberg_table_bounded_and_as_a_stream_of_appends(spark, tmp_path):
    """A table pyiceberg writes (two appends, a delete): a bounded read sees the current
    rows and 'snapshot-id' an older snapshot's; a streaming read from the earliest snapshot
    sees the appended rows only, resumes from its checkpoint at the next append, and reads
    no file twice."""
    import pyarrow as pa

    from job.connectors.iceberg.catalog import HadoopCatalog

    wh = tmp_path / "wh"
    catalog = HadoopCatalog("lake", warehouse=str(wh))
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int32()), ("v", pa.string())])
    catalog.create_table(("db", "t"), schema)

    def append(*rows):
        catalog.load_table(("db", "t")).append(pa.Table.from_pylist([{"id": i, "v": v} for i, v in rows], schema))

    append((1, "a"), (2, "b"))
    append((3, "c"))
    catalog.load_table(("db", "t")).delete("id = 1")
    first = catalog.load_table(("db", "t")).metadata.snapshots[0].snapshot_id
    columns = "id INT, v STRING"
    base = {"catalog-database": "db", "catalog-table": "t"}

    stream, got = read_source(spark, table_sql("src", columns, wh, **base), tmp_path / "ck1")
    assert stream.bounded and got == [(2, "b"), (3, "c")]
    _, got = read_source(spark, table_sql("src", columns, wh, **base, **{"snapshot-id": str(first)}), tmp_path / "ck2")
    assert got == [(1, "a"), (2, "b")]

    streaming = table_sql("src", columns, wh, **base, streaming="true",
                          **{"starting-strategy": "INCREMENTAL_FROM_EARLIEST_SNAPSHOT"})
    stream, got = read_source(spark, streaming, tmp_path / "ck3")
    assert not stream.bounded and got == [(1, "a"), (2, "b"), (3, "c")]  # the delete is not a change
    append((4, "d"))
    _, got = read_source(spark, streaming, tmp_path / "ck3")
    assert got == [(4, "d")]
    # TABLE_SCAN_THEN_INCREMENTAL: the table as it is, then the appends after it.
    scan_then = table_sql("src", columns, wh, **base, streaming="true",
                          **{"starting-strategy": "TABLE_SCAN_THEN_INCREMENTAL"})
    _, got = read_source(spark, scan_then, tmp_path / "ck4")
    assert got == [(2, "b"), (3, "c"), (4, "d")]
    # the default, INCREMENTAL_FROM_LATEST_SNAPSHOT: the latest snapshot's appends on
    _, got = read_source(spark, table_sql("src", columns, wh, **base, streaming="true"), tmp_path / "ck5")
    assert got == [(4, "d")]


# --------------------------------------------------------------------------- the catalog form

def iceberg_catalog(wh, extra=""):
    return f"CREATE CATALOG lake WITH ('type' = 'iceberg', 'catalog-type' = 'hadoop', 'warehouse' = '{wh}'{extra})"


def declared(statements):
    from job.pipeline.load import load_statements
    from job.plan.program import declare

    return declare(load_statements(args=[";\n".join(statements)]).statements)[0]


def test_tables_of_an_iceberg_catalog_are_iceberg_tables(tmp_path):
    """CREATE CATALOG … ('type' = 'iceberg'), USE CATALOG, CREATE DATABASE and CREATE TABLE
    in it, as Flink users write them: each table is the iceberg connector's table of that
    catalog, database and name; what Flink refuses or what would delete is refused."""
    wh = tmp_path / "wh"
    (wh / "existing_db").mkdir(parents=True)
    catalog = declared([iceberg_catalog(wh), "USE CATALOG lake", "CREATE DATABASE db",
                        "CREATE TABLE db.t (id INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('format-version' = '1')",
                        "CREATE TABLE lake.existing_db.u (id INT)", "CREATE TABLE u2 (id INT)"])
    assert dict(catalog.table("t").options) == {
        "connector": "iceberg", "catalog-name": "lake", "catalog-type": "hadoop", "warehouse": str(wh),
        "catalog-database": "db", "catalog-table": "t", "format-version": "1"}
    assert catalog.table("u").options["catalog-database"] == "existing_db"  # a database the warehouse holds
    assert catalog.table("u2").options["catalog-database"] == "default"     # the catalog's default database
    validate_options(catalog.table("t"), "sink")
    hinted = declared([iceberg_catalog(wh), "CREATE TABLE lake.`default`.t (id INT)",
                       "CREATE TABLE s (id INT) WITH ('connector' = 'blackhole')",
                       "INSERT INTO s SELECT id FROM lake.`default`.t /*+ OPTIONS('streaming' = 'true') */"])
    (read,) = [t for k, t in hinted.tables.items() if k in hinted.hinted]
    assert read.options["streaming"] == "true" and read.options["catalog-table"] == "t"

    def error(statements):
        with pytest.raises(PipelineError) as e:
            declared([iceberg_catalog(wh), *statements])
        return e.value

    assert "Cannot create the table with 'connector'='iceberg' table property in an iceberg catalog" in error(
        ["CREATE TABLE lake.`default`.t (id INT) WITH ('connector' = 'iceberg')"]).message
    assert "SHOW TABLES in Iceberg catalog lake is not supported" in error(["USE CATALOG lake", "SHOW TABLES"]).message
    assert "DROP TABLE lake.db.t in Iceberg catalog lake is not supported" in error(
        ["CREATE DATABASE lake.db", "DROP TABLE lake.db.t"]).message
    # A table the warehouse holds already: Flink's error; IF NOT EXISTS keeps the
    # warehouse's table (its columns, not the declared ones).
    import pyarrow as pa

    from job.connectors.iceberg.catalog import HadoopCatalog

    warehouse = HadoopCatalog("lake", warehouse=str(wh))
    warehouse.create_namespace("db")
    warehouse.create_table(("db", "v"), pa.schema([("n", pa.int64()), ("ts", pa.timestamp("us"))]))
    assert "Table (or view) db.v already exists in Catalog lake." in error(
        ["CREATE TABLE lake.db.v (id INT)"]).message
    kept = declared([iceberg_catalog(wh), "CREATE TABLE IF NOT EXISTS lake.db.v (id INT) WITH ('format-version' = '1')"])
    assert [(c.name, c.flink_type) for c in kept.table("v").columns] == [("n", "BIGINT"), ("ts", "TIMESTAMP(6)")]
    assert "format-version" not in kept.table("v").options
    # Flink's default catalog type, hive, is refused when a table is used.
    hive = declared(["CREATE CATALOG h WITH ('type' = 'iceberg', 'uri' = 'thrift://x:9083')",
                     "CREATE TABLE h.`default`.t (id INT)"])
    with pytest.raises(PipelineError) as e:
        validate_options(hive.table("t"), "source")
    assert "'catalog-type' = 'hive' (Flink's default)" in e.value.message


@pytest.mark.slow
def test_a_pipeline_in_an_iceberg_catalog_copies_a_table(spark, tmp_path):
    """A whole pipeline in the catalog form: an Iceberg table pyiceberg wrote, read by a
    bounded scan (the pipeline runs to completion) into another table of the catalog."""
    import pyarrow as pa

    from job.connectors.iceberg.catalog import HadoopCatalog
    from tests.support.runs import run_inline

    wh = tmp_path / "wh"
    catalog = HadoopCatalog("lake", warehouse=str(wh))
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    catalog.create_table(("db", "users"), schema).append(
        pa.Table.from_pylist([{"id": i, "name": f"u{i}"} for i in range(5)], schema))
    sql = ";\n".join([iceberg_catalog(wh), "USE CATALOG lake",
                      "CREATE TABLE IF NOT EXISTS db.users (id BIGINT NOT NULL, name STRING)",
                      "CREATE TABLE IF NOT EXISTS lake.db.odd (id BIGINT, name STRING)",
                      "INSERT INTO lake.db.odd SELECT id, UPPER(name) FROM users WHERE id % 2 = 1"]) + ";"
    r = run_inline(statements=[sql], checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    got = read_table(spark, wh, ("db", "odd"), "id bigint, name string")
    assert sorted(map(tuple, got.collect())) == [(1, "U1"), (3, "U3")]
