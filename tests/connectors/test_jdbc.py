"""The jdbc connector against a real PostgreSQL (scripts/postgres.sh): append and upsert
sinks with replays, create-table, every bad-input error, and the bounded source."""
from __future__ import annotations

import uuid

import psycopg
import pytest
from chispa import assert_df_equality

from job.connectors.base import APPEND, UPSERT, SinkContext, SourceContext
from job.connectors.registry import validate_options
from job.errors import EXIT_INVALID, EXIT_OTHER, EXIT_UNREACHABLE, Origin, PipelineError
from job.sql.parse import parse_statement
from job.sql.statements import StatementText
from tests.support.spark_session import run_available_now
from tests.support.services import drop_jdbc_staging_tables as drop_staging_tables

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg(postgres):
    """(connection facts, a psycopg connection in autocommit, a fresh table name)."""
    conn = psycopg.connect(host=postgres["host"], port=postgres["port"], user=postgres["user"],
                           password=postgres["password"], dbname="postgres", autocommit=True)
    name = "t_" + uuid.uuid4().hex[:10]
    yield postgres, conn, name
    conn.execute(f'DROP TABLE IF EXISTS {name}')
    drop_staging_tables(conn)
    conn.close()


def ddl(text: str):
    return parse_statement(StatementText(text, Origin("test.sql")))


def table_sql(name, columns, pg, *, pk=None, **options):
    opts = {"connector": "jdbc", "url": pg["url"], "table-name": name, "username": pg["user"],
            "password": pg["password"], **options}
    key = f", PRIMARY KEY ({pk}) NOT ENFORCED" if pk else ""
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in opts.items())
    return ddl(f"CREATE TABLE {name} ({columns}{key}) WITH ({with_})")


def make_sink(spark, t, checkpoint, offline=False):
    connector, options = validate_options(t, "sink")
    return connector.create_sink(SinkContext(spark, t, options, str(checkpoint), offline=offline))


def rows(conn, sql):
    return sorted(conn.execute(sql).fetchall(), key=repr)


# --------------------------------------------------------------------------- append sink

def test_append_sink_writes_each_batch_once_even_when_replayed(spark, pg, tmp_path):
    facts, conn, name = pg
    conn.execute(f"CREATE TABLE {name} (id INT, name TEXT, amount NUMERIC(10,2))")
    t = table_sql(name, "id INT, name STRING, amount DECIMAL(10, 2)", facts)
    sink = make_sink(spark, t, tmp_path / "ck")
    batch = spark.createDataFrame([(1, "a", 1.5), (2, "b", None), (2, "b", None)], "id int, name string, amount double") \
        .selectExpr("id", "name", "CAST(amount AS DECIMAL(10,2)) AS amount")
    sink.write_append(batch, 0)
    sink.write_append(batch, 0)  # Spark replays the last batch after a restart
    sink.write_append(spark.createDataFrame([(3, "c")], "id int, name string")
                      .selectExpr("id", "name", "CAST(NULL AS DECIMAL(10,2)) AS amount"), 1)
    got = rows(conn, f"SELECT id, name, amount::float FROM {name}")
    # the duplicate row inside a batch is a real second row; the replayed batch is not
    assert got == sorted([(1, "a", 1.5), (2, "b", None), (2, "b", None), (3, "c", None)], key=repr)
    # a new sink on the same checkpoint (a restarted job) still skips batch 1
    make_sink(spark, t, tmp_path / "ck").write_append(
        spark.createDataFrame([(3, "c")], "id int, name string").selectExpr("id", "name", "CAST(NULL AS DECIMAL(10,2)) amount"), 1)
    assert conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0] == 4
    stage = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'streamsql_stage_%'")]
    assert stage and all(conn.execute(f"SELECT count(*) FROM {s}").fetchone()[0] == 0 for s in stage)


# --------------------------------------------------------------------------- upsert sink

def test_upsert_sink_updates_and_deletes_by_primary_key(spark, pg, tmp_path):
    facts, conn, name = pg
    conn.execute(f'CREATE TABLE {name} ("accountId" TEXT PRIMARY KEY, "userCount" BIGINT)')
    t = table_sql(name, "accountId STRING, userCount BIGINT", facts, pk="accountId")
    sink = make_sink(spark, t, tmp_path / "ck")
    schema = "accountId string, userCount bigint, __op string"
    sink.write_changes(spark.createDataFrame([("100", 1, "+U"), ("101", 2, "+U")], schema), 0)
    sink.write_changes(spark.createDataFrame([("100", 5, "+U"), ("101", 2, "-D"), ("102", 7, "+I")], schema), 1)
    sink.write_changes(spark.createDataFrame([("100", 5, "+U"), ("101", 2, "-D"), ("102", 7, "+I")], schema), 1)
    assert rows(conn, f'SELECT "accountId", "userCount" FROM {name}') == [("100", 5), ("102", 7)]
    # an append-only query into a keyed table: inserts are upserts, the last row per key wins
    sink.write_append(spark.createDataFrame([("100", 6), ("103", 1)], "accountId string, userCount bigint"), 2)
    assert rows(conn, f'SELECT "accountId", "userCount" FROM {name}') == [("100", 6), ("102", 7), ("103", 1)]


def test_create_table_from_the_declared_schema(spark, pg, tmp_path):
    facts, conn, name = pg
    t = table_sql(name, "id BIGINT, code VARCHAR(5), price DECIMAL(8, 3), at TIMESTAMP(3), ok BOOLEAN, "
                        "d DATE, raw BYTES, f DOUBLE", facts, pk="id", **{"sink.create-table": "true"})
    sink = make_sink(spark, t, tmp_path / "ck")
    cols = rows(conn, "SELECT column_name, data_type, character_maximum_length, numeric_precision, numeric_scale, "
                      f"is_nullable FROM information_schema.columns WHERE table_name = '{name}'")
    assert cols == sorted([
        ("at", "timestamp without time zone", None, None, None, "YES"),
        ("code", "character varying", 5, None, None, "YES"),
        ("d", "date", None, None, None, "YES"),
        ("f", "double precision", None, 53, None, "YES"),
        ("id", "bigint", None, 64, 0, "NO"),
        ("ok", "boolean", None, None, None, "YES"),
        ("price", "numeric", None, 8, 3, "YES"),
        ("raw", "bytea", None, None, None, "YES"),
    ], key=repr)
    batch = spark.sql("SELECT 1L AS id, 'ab' AS code, CAST(1.5 AS DECIMAL(8,3)) AS price, "
                      "TIMESTAMP'2024-01-02 03:04:05.678' AS at, true AS ok, DATE'2024-01-02' AS d, "
                      "X'0102' AS raw, 2.5D AS f, '+U' AS __op")
    sink.write_changes(batch, 0)
    got = conn.execute(f"SELECT id, code, price::text, at::text, ok, d::text, raw, f FROM {name}").fetchall()
    assert got == [(1, "ab", "1.500", "2024-01-02 03:04:05.678", True, "2024-01-02", b"\x01\x02", 2.5)]
    # the second start finds the table and leaves it alone
    make_sink(spark, t, tmp_path / "ck")
    assert conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0] == 1


# --------------------------------------------------------------------------- bad input

def raises(fn) -> PipelineError:
    with pytest.raises(PipelineError) as info:
        fn()
    return info.value


def test_unreachable_database_names_url(spark, pg, tmp_path):
    facts, _conn, name = pg
    t = table_sql(name, "id INT", {**facts, "url": "jdbc:postgresql://127.0.0.1:1/postgres"})
    err = raises(lambda: make_sink(spark, t, tmp_path / "ck"))
    assert err.exit_code == EXIT_UNREACHABLE and err.option == "url"
    assert name in err.message and "refused" in err.message


def test_wrong_password_names_username_and_never_shows_the_password(spark, pg, tmp_path):
    facts, _conn, name = pg
    secret = "wr0ng-Passw0rd"
    t = table_sql(name, "id INT", {**facts, "password": secret,
                                   "url": facts["url"] + "?password=" + secret})
    err = raises(lambda: make_sink(spark, t, tmp_path / "ck"))
    assert err.exit_code == EXIT_UNREACHABLE and err.option == "username"
    assert "password authentication failed" in err.message
    assert secret not in err.render()


def test_missing_table_names_table_name(spark, pg, tmp_path):
    facts, _conn, name = pg
    err = raises(lambda: make_sink(spark, table_sql(name, "id INT", facts), tmp_path / "ck"))
    assert err.exit_code == EXIT_INVALID and err.option == "table-name"
    assert f"table '{name}' does not exist" in err.message and "sink.create-table" in err.hint


def test_column_type_that_cannot_hold_the_declared_one(spark, pg, tmp_path):
    facts, conn, name = pg
    conn.execute(f"CREATE TABLE {name} (id INT, amount SMALLINT)")
    err = raises(lambda: make_sink(spark, table_sql(name, "id INT, amount BIGINT", facts), tmp_path / "ck"))
    assert err.exit_code == EXIT_INVALID and err.option == "table-name"
    assert "column 'amount'" in err.message and "int2" in err.message and "BIGINT" in err.message
    err = raises(lambda: make_sink(spark, table_sql(name, "id INT, missing STRING", facts), tmp_path / "ck"))
    assert "no column 'missing'" in err.message


def test_upsert_table_without_a_key_in_the_database(spark, pg, tmp_path):
    facts, conn, name = pg
    conn.execute(f"CREATE TABLE {name} (id INT, v TEXT)")
    err = raises(lambda: make_sink(spark, table_sql(name, "id INT, v STRING", facts, pk="id"), tmp_path / "ck"))
    assert "no primary key or unique index on (id)" in err.message


def test_a_value_too_long_rolls_back_the_whole_batch(spark, pg, tmp_path):
    facts, conn, name = pg
    conn.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, code VARCHAR(5))")
    conn.execute(f"INSERT INTO {name} VALUES (1, 'old'), (2, 'keep')")
    sink = make_sink(spark, table_sql(name, "id INT, code STRING", facts, pk="id"), tmp_path / "ck")
    batch = spark.createDataFrame([(1, "new", "+U"), (2, None, "-D"), (3, "much too long", "+U")],
                                  "id int, code string, __op string")
    err = raises(lambda: sink.write_changes(batch, 7))
    assert err.exit_code == EXIT_OTHER and "micro-batch 7" in err.message and name in err.message
    assert "value too long for type character varying(5)" in err.message
    assert "\n" not in err.render() and "at org." not in err.render()
    assert rows(conn, f"SELECT id, code FROM {name}") == [(1, "old"), (2, "keep")]  # nothing of batch 7
    sink.write_changes(batch.where("id < 3"), 8)  # the sink still works afterwards
    assert rows(conn, f"SELECT id, code FROM {name}") == [(1, "new")]


def test_dry_run_contacts_nothing(spark, pg, tmp_path):
    facts, _conn, name = pg
    t = table_sql(name, "id INT", {**facts, "url": "jdbc:postgresql://127.0.0.1:1/postgres"})
    make_sink(spark, t, tmp_path / "ck", offline=True)  # no error: the server is never asked


def test_option_checks():
    base = "CREATE TABLE t (id INT, tags ARRAY<STRING>) WITH ('connector' = 'jdbc', 'table-name' = 't', "
    err = raises(lambda: validate_options(ddl(base + "'url' = 'jdbc:postgresql://h/db')"), "sink"))
    assert "column 'tags'" in err.message and "ARRAY<STRING>" in err.message
    err = raises(lambda: validate_options(ddl(
        "CREATE TABLE t (id INT) WITH ('connector' = 'jdbc', 'table-name' = 't', 'url' = 'jdbc:oracle:thin:@h:1521/x')"),
        "sink"))
    assert err.option == "url"
    err = raises(lambda: validate_options(ddl(
        "CREATE TABLE t (id INT) WITH ('connector' = 'jdbc', 'table-name' = 't', 'url' = 'jdbc:postgresql://h/db', "
        "'scan.partition.column' = 'id')"), "source"))
    assert err.option == "scan.partition.num"


# --------------------------------------------------------------------------- source

def source(spark, t, checkpoint):
    connector, options = validate_options(t, "source")
    return connector.create_source(SourceContext(spark, t, options, once=True, checkpoint=str(checkpoint)))


def collect_twice_safe(spark, df, checkpoint, out):
    """Run ``df`` to completion into a Parquet sink (restartable, unlike the memory sink);
    returns what this run added."""
    import os

    before = set(os.listdir(out)) if os.path.exists(out) else set()
    run_available_now(df.writeStream.format("parquet").option("path", str(out)), checkpoint)
    new = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".parquet") and f not in before]
    return spark.read.schema(df.schema).parquet(*new) if new else spark.createDataFrame([], df.schema)


def test_source_reads_the_table_once_per_checkpoint(spark, pg, tmp_path):
    facts, conn, name = pg
    conn.execute(f'CREATE TABLE {name} (id INT, "Name" TEXT, score DOUBLE PRECISION)')
    conn.execute(f"INSERT INTO {name} SELECT g, 'n' || g, g * 1.5 FROM generate_series(1, 50) g")
    t = table_sql(name, "id INT, name STRING, score DOUBLE", facts, **{
        "scan.partition.column": "id", "scan.partition.num": "3", "scan.partition.lower-bound": "1",
        "scan.partition.upper-bound": "50", "scan.fetch-size": "7"})
    stream = source(spark, t, tmp_path / "ck")
    assert stream.mode == APPEND and stream.bounded
    got = collect_twice_safe(spark, stream.df.select("id", "name", "score"), tmp_path / "ck" / "q", tmp_path / "out")
    expected = spark.createDataFrame([(i, f"n{i}", i * 1.5) for i in range(1, 51)], "id int, name string, score double")
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    # a restart of the same query does not read the table again (no duplicates)
    conn.execute(f"INSERT INTO {name} VALUES (51, 'late', 0)")
    again = collect_twice_safe(spark, source(spark, t, tmp_path / "ck").df.select("id", "name", "score"),
                               tmp_path / "ck" / "q", tmp_path / "out")
    assert again.count() == 0


def test_keyed_source_streams_changes_on_restart(spark, pg, tmp_path):
    facts, conn, name = pg
    conn.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v TEXT)")
    conn.execute(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    t = table_sql(name, "id INT, v STRING", facts, pk="id")
    stream = source(spark, t, tmp_path / "ck")
    assert stream.mode == UPSERT
    first = collect_twice_safe(spark, stream.df.select("id", "v", "__kind"), tmp_path / "ck" / "q", tmp_path / "out")
    assert sorted(map(tuple, first.collect())) == [(1, "a", "U"), (2, "b", "U"), (3, "c", "U")]
    conn.execute(f"UPDATE {name} SET v = 'B' WHERE id = 2")
    conn.execute(f"DELETE FROM {name} WHERE id = 3")
    conn.execute(f"INSERT INTO {name} VALUES (4, 'd')")
    second = collect_twice_safe(spark, source(spark, t, tmp_path / "ck").df.select("id", "v", "__kind"),
                                tmp_path / "ck" / "q", tmp_path / "out")
    assert sorted(map(tuple, second.collect())) == [(2, "B", "U"), (3, "c", "D"), (4, "d", "U")]


def test_source_errors(spark, pg, tmp_path):
    facts, conn, name = pg
    err = raises(lambda: source(spark, table_sql(name, "id INT", facts), tmp_path / "ck"))
    assert err.option == "table-name" and "does not exist" in err.message
    conn.execute(f"CREATE TABLE {name} (id INT)")
    err = raises(lambda: source(spark, table_sql(name, "id INT, other STRING", facts), tmp_path / "ck"))
    assert "no column 'other'" in err.message
    err = raises(lambda: source(spark, table_sql(name, "id INT", {**facts, "password": "nope"}), tmp_path / "ck"))
    assert err.exit_code == EXIT_UNREACHABLE and err.option == "username"


def test_schema_qualified_and_unqualified_names(spark, pg, tmp_path):
    facts, conn, name = pg
    schema = "s_" + name
    conn.execute(f"CREATE SCHEMA {schema}")
    try:
        # the same name in another schema, with other columns, must not be mistaken for it
        conn.execute(f"CREATE TABLE {schema}.{name} (other INT)")
        conn.execute(f"CREATE TABLE {name} (id INT, v TEXT)")
        make_sink(spark, table_sql(name, "id INT, v STRING", facts), tmp_path / "ck1").write_append(
            spark.createDataFrame([(1, "public")], "id int, v string"), 0)
        assert rows(conn, f"SELECT id, v FROM {name}") == [(1, "public")]
        # a qualified name: the table, its staging table and the commit log live in that schema
        t = table_sql(f"{schema}.{name}", "other INT", facts)
        make_sink(spark, t, tmp_path / "ck2").write_append(spark.createDataFrame([(7,)], "other int"), 0)
        assert rows(conn, f"SELECT other FROM {schema}.{name}") == [(7,)]
        tables = {r[0] for r in conn.execute(f"SELECT tablename FROM pg_tables WHERE schemaname = '{schema}'")}
        assert "streamsql_sink_commits" in tables and any(t.startswith("streamsql_stage_") for t in tables)
    finally:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
