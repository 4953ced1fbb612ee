"""mysql-cdc against a real MariaDB (scripts/mariadb.sh): the snapshot and the binlog with
the types Flink CDC maps, a GROUP BY over the changelog into an upsert sink, a restarted
query that resumes from its checkpointed binlog position, and bad input refused by name."""
from __future__ import annotations

import datetime
import decimal
import uuid

import pymysql
import pytest
from chispa import assert_df_equality

from job.connectors.base import SourceContext
from job.connectors.registry import validate_options
from job.sql.statements import Column, CreateTable
from tests.support.runs import run_inline
from tests.support.spark_session import run_available_now

pytestmark = pytest.mark.mariadb


class Db:
    """A scratch database per test, dropped afterwards."""

    def __init__(self, facts: dict) -> None:
        self.facts = facts
        self.conn = pymysql.connect(host=facts["host"], port=facts["port"], user=facts["user"],
                                    password=facts["password"], autocommit=True)
        self.db = f"cdc_{uuid.uuid4().hex[:8]}"
        self.sql(f"CREATE DATABASE {self.db}")

    def sql(self, text: str, params=None):
        with self.conn.cursor() as cur:
            cur.execute(text, params)
            return cur.fetchall()

    def options(self, **extra) -> dict:
        return {"connector": "mysql-cdc", "hostname": "127.0.0.1", "port": str(self.facts["port"]),
                "username": self.facts["user"], "password": self.facts["password"], "database-name": self.db,
                "table-name": "t", "server-time-zone": "UTC", **extra}

    def ddl(self, columns: str, **extra) -> str:
        opts = ", ".join(f"'{k}' = '{v}'" for k, v in self.options(**extra).items())
        return f"CREATE TABLE src ({columns}) WITH ({opts})"

    def close(self) -> None:
        self.sql(f"DROP DATABASE IF EXISTS {self.db}")
        self.conn.close()


@pytest.fixture
def db(mariadb):
    d = Db(mariadb)
    yield d
    d.close()


COLUMNS = (Column("id", "int", "INT"), Column("name", "string", "STRING"),
           Column("amount", "decimal(12,2)", "DECIMAL(12, 2)"), Column("at", "timestamp", "TIMESTAMP_LTZ(3)"),
           Column("wall", "timestamp", "TIMESTAMP(3)"), Column("ok", "boolean", "BOOLEAN"),
           Column("day", "date", "DATE"), Column("big", "decimal(20,0)", "DECIMAL(20, 0)"),
           Column("ratio", "double", "DOUBLE"), Column("data", "binary", "BYTES"))
NAMES = [c.name for c in COLUMNS]


def typed_table(db: Db, **extra) -> CreateTable:
    db.sql(f"CREATE TABLE {db.db}.t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(10,2), "
           "at TIMESTAMP(3) NULL, wall DATETIME(3), ok TINYINT(1), day DATE, big BIGINT UNSIGNED, ratio DOUBLE, "
           "data VARBINARY(8), ignored TEXT)")
    return CreateTable(name="src", columns=COLUMNS, options=db.options(**extra), primary_key=("id",))


def open_stream(spark, table: CreateTable, checkpoint):
    connector, options = validate_options(table, "source")
    return connector.create_source(SourceContext(spark, table, options, once=True, checkpoint=str(checkpoint)))


def collect(spark, df, checkpoint):
    """Run the stream to completion (AvailableNow) from ``checkpoint``; its rows, in order."""
    rows = []
    run_available_now(df.writeStream.foreachBatch(lambda batch, _id: rows.extend(batch.collect())), checkpoint)
    rows.sort(key=lambda r: (r["__seq_major"], r["__seq_minor"]))
    return spark.createDataFrame(rows, df.schema) if rows else spark.createDataFrame([], df.schema)


def expected(spark, rows):
    schema = ("id INT, name STRING, amount DECIMAL(12,2), at TIMESTAMP, wall TIMESTAMP, ok BOOLEAN, day DATE, "
              "big DECIMAL(20,0), ratio DOUBLE, data BINARY, __kind STRING")
    return spark.createDataFrame(rows, schema)


def test_snapshot_then_binlog_with_typed_values_and_a_resumed_query(spark, db, tmp_path):
    table = typed_table(db)
    db.sql(f"INSERT INTO {db.db}.t VALUES (1, 'ann', 12.50, '2024-03-01 08:00:00.123', '2024-03-01 10:00:00.5', 1, "
           "'2024-03-01', 18446744073709551615, 0.25, x'0102', 'x'), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
           "NULL, NULL, NULL)")
    ck = tmp_path / "ck"
    stream = open_stream(spark, table, ck)
    assert stream.mode == "upsert"
    cols = NAMES + ["__kind"]
    at = datetime.datetime(2024, 3, 1, 8, 0, 0, 123000)      # the session time zone is UTC
    ann = (1, "ann", decimal.Decimal("12.50"), at, datetime.datetime(2024, 3, 1, 10, 0, 0, 500000), True,
           datetime.date(2024, 3, 1), decimal.Decimal("18446744073709551615"), 0.25, bytearray(b"\x01\x02"))
    got = collect(spark, stream.df, ck)
    assert_df_equality(got.select(*cols), expected(spark, [
        (*ann, "U"), (2, None, None, None, None, None, None, None, None, None, "U")]),
        ignore_row_order=True, ignore_nullable=True)

    # The binlog gives the same values as the snapshot (an unsigned BIGINT's top bit too).
    db.sql(f"INSERT INTO {db.db}.t VALUES (3, 'cy', 0.01, '2024-03-02 00:00:00', '2024-03-02 00:00:00', 0, "
           "'2024-03-02', 18446744073709551615, -1.5, x'ff', 'y')")
    db.sql(f"UPDATE {db.db}.t SET name = 'bo', amount = 99999999.99 WHERE id = 2")
    db.sql(f"UPDATE {db.db}.t SET id = 4 WHERE id = 1")         # a key change: delete 1, upsert 4
    db.sql(f"DELETE FROM {db.db}.t WHERE id = 3")
    stream = open_stream(spark, table, ck)                       # the same query, restarted
    got = collect(spark, stream.df, ck)
    assert [(r["id"], r["__kind"]) for r in got.collect()] == [(3, "U"), (2, "U"), (1, "D"), (4, "U"), (3, "D")]
    assert_df_equality(got.filter("__kind = 'U'").select(*cols), expected(spark, [
        (3, "cy", decimal.Decimal("0.01"), datetime.datetime(2024, 3, 2), datetime.datetime(2024, 3, 2), False,
         datetime.date(2024, 3, 2), decimal.Decimal("18446744073709551615"), -1.5, bytearray(b"\xff"), "U"),
        (2, "bo", decimal.Decimal("99999999.99"), None, None, None, None, None, None, None, "U"),
        (4, *ann[1:], "U")]), ignore_row_order=True, ignore_nullable=True)
    assert got.filter("__error IS NOT NULL").count() == 0

    # Restarted again with nothing new: nothing read twice; then one more change only.
    assert collect(spark, open_stream(spark, table, ck).df, ck).count() == 0
    db.sql(f"INSERT INTO {db.db}.t (id, name) VALUES (5, 'e')")
    got = collect(spark, open_stream(spark, table, ck).df, ck)
    assert [(r["id"], r["name"], r["__kind"]) for r in got.collect()] == [(5, "e", "U")]


@pytest.mark.slow
@pytest.mark.postgres
def test_group_by_over_the_changelog_into_an_upsert_sink_across_restarts(db, postgres, tmp_path):
    """Snapshot + inserts, updates, deletes through a GROUP BY into jdbc (an upsert sink by
    its PRIMARY KEY); the second run resumes from the checkpoint: no loss, no duplicate."""
    from tests.support.services import connect_postgres

    db.sql(f"CREATE TABLE {db.db}.t (id INT PRIMARY KEY, account VARCHAR(10), amount BIGINT)")
    db.sql(f"INSERT INTO {db.db}.t VALUES (1, 'a', 10), (2, 'a', 5), (3, 'b', 7)")
    sink = f"agg_{uuid.uuid4().hex[:8]}"
    pg = connect_postgres(postgres)
    pg.execute(f"CREATE TABLE {sink} (account TEXT PRIMARY KEY, n BIGINT, total BIGINT)")
    statements = [
        db.ddl("id INT, account STRING, amount BIGINT, PRIMARY KEY (id) NOT ENFORCED"),
        f"CREATE TABLE out1 (account STRING, n BIGINT, total BIGINT, PRIMARY KEY (account) NOT ENFORCED) WITH ("
        f"'connector' = 'jdbc', 'url' = '{postgres['url']}', 'table-name' = '{sink}', "
        f"'username' = '{postgres['user']}', 'password' = '{postgres['password']}')",
        "INSERT INTO out1 SELECT account, COUNT(*), SUM(amount) FROM src GROUP BY account"]

    def run_and_read():
        r = run_inline(statements=statements, once=True, checkpoint_dir=str(tmp_path / "ck"))
        assert r.code == 0, r.err
        return sorted(pg.execute(f"SELECT account, n, total FROM {sink}").fetchall())

    try:
        assert run_and_read() == [("a", 2, 15), ("b", 1, 7)]
        db.sql(f"INSERT INTO {db.db}.t VALUES (4, 'b', 1), (5, 'c', 100)")
        db.sql(f"UPDATE {db.db}.t SET amount = 20 WHERE id = 1")
        db.sql(f"UPDATE {db.db}.t SET account = 'c' WHERE id = 3")  # moves between groups
        db.sql(f"DELETE FROM {db.db}.t WHERE id = 2")
        assert run_and_read() == [("a", 1, 20), ("b", 1, 1), ("c", 2, 107)]
        db.sql(f"DELETE FROM {db.db}.t WHERE account = 'b'")
        assert run_and_read() == [("a", 1, 20), ("c", 2, 107)]
    finally:
        pg.execute(f"DROP TABLE IF EXISTS {sink}")
        pg.close()


# ------------------------------------------------------------------ bad input

SINK = "CREATE TABLE out1 (id INT, name STRING) WITH ('connector' = 'print')"
INSERT = "INSERT INTO out1 SELECT id, name FROM src"


def run_bad(db, tmp_path, columns="id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED", dry_run=False, **extra):
    return run_inline(statements=[db.ddl(columns, **extra), SINK, INSERT], once=True, dry_run=dry_run,
                      checkpoint_dir=str(tmp_path / "ck"))


def test_refused_before_anything_runs(db, tmp_path):
    db.sql(f"CREATE TABLE {db.db}.t (id BIGINT PRIMARY KEY, name TEXT)")
    r = run_bad(db, tmp_path, password="Wr0ngSecret")
    assert r.code == 2, r.err
    assert "refused the login of user 'root' for table 'src'" in r.error_line and "(option 'username')" in r.error_line
    assert "Wr0ngSecret" not in r.err + r.out
    r = run_bad(db, tmp_path, port="1")
    assert r.code == 3 and "MySQL at 127.0.0.1:1 cannot be reached for table 'src'" in r.error_line, r.err
    assert run_bad(db, tmp_path, port="1", dry_run=True).code == 0
    r = run_bad(db, tmp_path)
    assert r.code == 2 and (f"column 'id' of table 'src' is INT, which cannot hold the values of MySQL column "
                            f"{db.db}.t.id (BIGINT(20))") in r.error_line and "declare it as BIGINT" in r.error_line, r.err
    r = run_bad(db, tmp_path, **{"table-name": "nope"})
    assert r.code == 2 and "no table of MySQL at 127.0.0.1" in r.error_line, r.err
    r = run_bad(db, tmp_path, **{"scan.startup.mode": "timestamp"})
    assert r.code == 2 and "'scan.startup.mode' = 'timestamp' of table 'src' is a Flink CDC startup mode this job " \
                           "does not support yet" in r.error_line, r.err
    r = run_bad(db, tmp_path, **{"scan.incremental.snapshot.chunk.size": "10"})
    assert r.code == 2 and "option 'scan.incremental.snapshot.chunk.size' of table 'src' is a Flink CDC mysql-cdc " \
                           "option this job does not support yet" in r.error_line, r.err
    r = run_bad(db, tmp_path, **{"scan.startup.modes": "initial"})
    assert r.code == 2 and "unknown option 'scan.startup.modes'" in r.error_line, r.err
