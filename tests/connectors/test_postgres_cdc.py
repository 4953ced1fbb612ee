"""postgres-cdc against the real PostgreSQL (scripts/postgres.sh): the snapshot and the
stream with every type the connector maps, offsets that are acknowledged to the slot
only on commit, replays, and each bad input as one clear paragraph."""
from __future__ import annotations

import datetime
import decimal
import json
import uuid

import psycopg
import pytest
from chispa import assert_df_equality

from job.connectors.postgres_cdc import replication as pg
from job.connectors.base import SourceContext
from job.connectors.postgres_cdc import preflight
from job.connectors.registry import validate_options
from job.sql.statements import Column, CreateTable
from tests.support.runs import run_inline
from tests.support.spark_session import run_available_now

pytestmark = pytest.mark.postgres


class Db:
    """A scratch table and slot name per test; the slot is dropped afterwards."""

    def __init__(self, facts: dict) -> None:
        self.facts = facts
        self.conn = psycopg.connect(host=facts["host"], port=facts["port"], user=facts["user"],
                                    password=facts["password"], dbname="postgres", autocommit=True)
        suffix = uuid.uuid4().hex[:8]
        self.table, self.slot = f"cdc_{suffix}", f"slot_{suffix}"

    def sql(self, text: str, params=()):
        cur = self.conn.execute(text, params)
        return cur.fetchall() if cur.description else None

    def confirmed(self) -> int:
        return int(self.sql("SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::bigint FROM pg_replication_slots "
                            "WHERE slot_name = %s", (self.slot,))[0][0])

    def options(self, **extra) -> dict:
        return {"connector": "postgres-cdc", "hostname": "127.0.0.1", "port": str(self.facts["port"]),
                "username": self.facts["user"], "password": self.facts["password"], "database-name": "postgres",
                "table-name": self.table, "slot.name": self.slot, **extra}

    def ddl(self, columns: str, **extra) -> str:
        opts = ", ".join(f"'{k}' = '{v}'" for k, v in self.options(**extra).items())
        return f"CREATE TABLE src ({columns}) WITH ({opts})"

    def close(self) -> None:
        self.sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                 (self.slot,))
        self.sql(f"DROP TABLE IF EXISTS {self.table}")
        self.conn.close()


@pytest.fixture
def db(postgres):
    d = Db(postgres)
    yield d
    d.close()


COLUMNS = (Column("id", "int", "INT"), Column("name", "string", "STRING"),
           Column("amount", "decimal(12,2)", "DECIMAL(12, 2)"), Column("at", "timestamp", "TIMESTAMP_LTZ(3)"),
           Column("data", "binary", "BYTES"), Column("ok", "boolean", "BOOLEAN"), Column("day", "date", "DATE"))


def typed_table(db: Db, **extra) -> CreateTable:
    db.sql(f"CREATE TABLE {db.table} (id int PRIMARY KEY, name text, amount numeric(10,2), at timestamptz, "
           "data bytea, ok boolean, day date, ignored text)")
    return CreateTable(name="src", columns=COLUMNS, options=db.options(**extra), primary_key=("id",))


def open_stream(spark, table: CreateTable, checkpoint):
    connector, options = validate_options(table, "source")
    return connector.create_source(SourceContext(spark, table, options, once=True, checkpoint=str(checkpoint)))


def collect(spark, df, checkpoint):
    """Run the stream to completion (AvailableNow) from ``checkpoint``; its rows, in order.
    (foreachBatch, unlike the memory sink, resumes from a checkpoint.)"""
    rows = []
    run_available_now(df.writeStream.foreachBatch(lambda batch, _id: rows.extend(batch.collect())), checkpoint)
    rows.sort(key=lambda r: (r["__seq_major"], r["__seq_minor"]))
    return spark.createDataFrame(rows, df.schema) if rows else spark.createDataFrame([], df.schema)


def expected(spark, rows):
    schema = ("id INT, name STRING, amount DECIMAL(12,2), at TIMESTAMP, data BINARY, ok BOOLEAN, day DATE, "
              "__kind STRING")
    return spark.createDataFrame(rows, schema)


def test_snapshot_then_inserts_updates_deletes_with_typed_values(spark, db, tmp_path):
    table = typed_table(db)
    db.sql(f"INSERT INTO {db.table} VALUES (1, 'ann', 12.50, '2024-03-01 10:00:00.123+02', '\\x0102', true, "
           "'2024-03-01', 'x'), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
    ck = tmp_path / "ck"
    stream = open_stream(spark, table, ck)
    assert stream.mode == "upsert"
    cols = [c.name for c in COLUMNS] + ["__kind"]
    got = collect(spark, stream.df, ck).select(*cols)
    at = datetime.datetime(2024, 3, 1, 8, 0, 0, 123000)  # the session time zone is UTC
    assert_df_equality(got, expected(spark, [
        (1, "ann", decimal.Decimal("12.50"), at, bytearray(b"\x01\x02"), True, datetime.date(2024, 3, 1), "U"),
        (2, None, None, None, None, None, None, "U")]), ignore_row_order=True, ignore_nullable=True)

    db.sql(f"INSERT INTO {db.table} VALUES (3, 'cy', 0.01, '2024-03-02 00:00:00+00', '\\xff', false, '2024-03-02')")
    db.sql(f"UPDATE {db.table} SET name = 'bo', amount = 99999999.99 WHERE id = 2")
    db.sql(f"UPDATE {db.table} SET id = 4 WHERE id = 1")       # a key change: delete 1, upsert 4
    db.sql(f"DELETE FROM {db.table} WHERE id = 3")
    stream = open_stream(spark, table, ck)                      # the same query, restarted
    got = collect(spark, stream.df, ck)
    changes = got.select(*cols)
    assert [(r["id"], r["__kind"]) for r in changes.collect()] == [(3, "U"), (2, "U"), (1, "D"), (4, "U"), (3, "D")]
    assert_df_equality(changes.filter("__kind = 'U'"), expected(spark, [
        (3, "cy", decimal.Decimal("0.01"), datetime.datetime(2024, 3, 2), bytearray(b"\xff"), False,
         datetime.date(2024, 3, 2), "U"),
        (2, "bo", decimal.Decimal("99999999.99"), None, None, None, None, "U"),
        (4, "ann", decimal.Decimal("12.50"), at, bytearray(b"\x01\x02"), True, datetime.date(2024, 3, 1), "U")]),
        ignore_row_order=True, ignore_nullable=True)
    assert got.filter("__error IS NOT NULL").count() == 0


def test_offsets_are_acknowledged_only_on_commit_and_batches_replay(spark, db, tmp_path):
    table = typed_table(db, **{"scan.max-changes-per-trigger": "2"})
    db.sql(f"INSERT INTO {db.table} (id, name) VALUES (1, 'a')")
    connector, options = validate_options(table, "source")
    spec = preflight(SourceContext(spark, table, options, checkpoint=str(tmp_path / "ck")))
    from job.connectors.postgres_cdc import connection_info
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    reader = pg.CLASSES["CdcStreamReader"](spec, connection_info(options))
    created = db.confirmed()
    start = reader.initialOffset()
    assert start == {"lsn": created, "snapshot": False}
    snap_end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert snap_end == {"lsn": created, "snapshot": True}
    [part] = reader.partitions(start, snap_end)
    assert [r[5] for r in reader.read(part)] == ["1"]

    for i in range(2, 6):  # four transactions, one change each
        db.sql(f"INSERT INTO {db.table} (id, name) VALUES ({i}, 'x')")
    end = reader.latestOffset(snap_end, reader.getDefaultReadLimit())       # at most 2 changes
    [part] = reader.partitions(snap_end, end)
    first = [r[5] for r in reader.read(part)]
    assert first == ["2", "3"]
    assert [r[5] for r in reader.read(part)] == first                      # a replayed batch reads the same
    assert db.confirmed() == created                                        # nothing acknowledged yet
    reader.commit(end)
    assert db.confirmed() == end["lsn"]
    rest = reader.latestOffset(end, ReadAllAvailable())
    assert [r[5] for r in reader.read(reader.partitions(end, rest)[0])] == ["4", "5"]

    reader.prepareForTriggerAvailableNow()                                  # --once: what is there now
    db.sql(f"INSERT INTO {db.table} (id, name) VALUES (6, 'late')")
    assert reader.latestOffset(rest, ReadAllAvailable()) == rest
    reader.commit(end)                                                      # an old commit never moves it back
    assert db.confirmed() == end["lsn"]


def test_restarted_query_resumes_without_loss_or_duplicates(spark, db, tmp_path):
    table = typed_table(db)
    ck = tmp_path / "ck"
    db.sql(f"INSERT INTO {db.table} (id, name) VALUES (1, 'a')")
    seen = []
    for step in range(3):
        got = collect(spark, open_stream(spark, table, ck).df, ck)
        seen += [(r["id"], r["name"]) for r in got.collect()]
        db.sql(f"INSERT INTO {db.table} (id, name) VALUES ({step + 2}, 'b')")
    assert seen == [(1, "a"), (2, "b"), (3, "b")]
    # The slot never leads the checkpoint: it is acknowledged up to a committed batch only.
    last = max(int(f.name) for f in (ck / "commits").iterdir() if f.name.isdigit())
    committed = json.loads((ck / "offsets" / str(last)).read_text().splitlines()[-1])["lsn"]
    assert db.confirmed() <= committed


# ------------------------------------------------------------------ bad input

SINK = "CREATE TABLE out1 (id INT, name STRING) WITH ('connector' = 'print')"
INSERT = "INSERT INTO out1 SELECT id, name FROM src"


def run_bad(db, tmp_path, columns="id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED", dry_run=False, **extra):
    return run_inline(statements=[db.ddl(columns, **extra), SINK, INSERT], once=True, dry_run=dry_run,
                      checkpoint_dir=str(tmp_path / "ck"))


def test_unreachable_server_exit_3_naming_hostname(db, tmp_path):
    r = run_bad(db, tmp_path, port="1")
    assert r.code == 3, r.err
    assert "PostgreSQL at 127.0.0.1:1 cannot be reached for table 'src'" in r.error_line
    assert "'hostname'" in r.error_line and "'port'" in r.error_line


def test_dry_run_contacts_nothing(db, tmp_path):
    r = run_bad(db, tmp_path, port="1", dry_run=True)
    assert r.code == 0, r.err


def test_wrong_password_names_username_never_the_password(db, tmp_path):
    db.sql(f"CREATE TABLE {db.table} (id int PRIMARY KEY, name text)")
    r = run_bad(db, tmp_path, password="Wr0ngSecret")
    assert r.code == 2, r.err
    assert "refused the login of user 'postgres' for table 'src'" in r.error_line
    assert "(option 'username')" in r.error_line
    assert "Wr0ngSecret" not in r.err + r.out


def test_missing_table_names_table_name(db, tmp_path):
    db.sql(f"CREATE TABLE {db.table}s (id int PRIMARY KEY, name text)")
    try:
        r = run_bad(db, tmp_path)
    finally:
        db.sql(f"DROP TABLE {db.table}s")
    assert r.code == 2, r.err
    assert f"PostgreSQL table public.{db.table} does not exist" in r.error_line
    assert f"Did you mean '{db.table}s'?" in r.error_line and "(option 'table-name')" in r.error_line


def test_existing_slot_names_slot_name_and_touches_nothing(db, tmp_path):
    db.sql(f"CREATE TABLE {db.table} (id int PRIMARY KEY, name text)")
    db.sql("SELECT pg_create_logical_replication_slot(%s, 'wal2json')", (db.slot,))
    before = db.confirmed()
    r = run_bad(db, tmp_path)
    assert r.code == 2, r.err
    assert f"replication slot '{db.slot}' already exists, and this query did not create it" in r.error_line
    assert "(option 'slot.name')" in r.error_line and "pg_drop_replication_slot" in r.error_line
    assert db.confirmed() == before


def test_a_type_the_table_cannot_hold(db, tmp_path):
    db.sql(f"CREATE TABLE {db.table} (id bigint PRIMARY KEY, name text)")
    r = run_bad(db, tmp_path)
    assert r.code == 2, r.err
    assert (f"column 'id' of table 'src' is INT, which cannot hold the values of PostgreSQL column "
            f"public.{db.table}.id (bigint)") in r.error_line
    assert "declare it as BIGINT" in r.error_line
    # nothing was created on the server
    assert db.sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", (db.slot,)) == [(0,)]


def test_primary_key_must_be_the_tables(db, tmp_path):
    db.sql(f"CREATE TABLE {db.table} (id int PRIMARY KEY, name text)")
    r = run_bad(db, tmp_path, columns="id INT, name STRING, PRIMARY KEY (name) NOT ENFORCED")
    assert r.code == 2, r.err
    assert f"is not the primary key (id) of PostgreSQL table public.{db.table}" in r.error_line


def test_a_value_that_does_not_fit_fails_the_batch_before_the_sink(db, tmp_path):
    db.sql(f"CREATE TABLE {db.table} (id int PRIMARY KEY, name text, n numeric)")
    db.sql(f"INSERT INTO {db.table} VALUES (1, 'ok', 1), (2, 'big', 1e30)")
    r = run_inline(statements=[db.ddl("id INT, name STRING, n DECIMAL(10, 2), PRIMARY KEY (id) NOT ENFORCED"),
                               SINK, INSERT], once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 4, r.err
    assert "table 'src': column 'n': PostgreSQL value '1000000000000000000000000000000' does not fit " \
           "DECIMAL(10, 2)" in r.error_line
    assert f"public.{db.table} snapshot row" in r.error_line
    assert "+I" not in r.out                                   # no half-written batch
