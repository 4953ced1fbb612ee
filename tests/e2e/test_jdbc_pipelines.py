"""The jdbc connector in whole pipelines against the real PostgreSQL: the seed's user count
by account from Kafka into a table (updates and deletes), a stream LEFT JOIN a jdbc
reference table, a jdbc source with --once, bad input through the runner, and a kill -9
in the middle of an append run followed by a restart (no row lost, none duplicated)."""
from __future__ import annotations

import json
import os
import re
import time
import uuid

import psycopg
import pytest

from tests.support.kafka_io import produce, topic_name
from tests.support.runs import ROOT, kill_job_tree, run_cli, run_inline, start_cli
from tests.support.services import connect_postgres
from tests.support.services import drop_jdbc_staging_tables as drop_staging_tables

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
SEED = ROOT / "examples" / "user_count_by_account" / "pipeline.sql"


@pytest.fixture
def db(postgres):
    conn = connect_postgres(postgres)
    made: list[str] = []

    def name(prefix="t"):
        made.append(f"{prefix}_{uuid.uuid4().hex[:8]}")
        return made[-1]

    yield postgres, conn, name
    for n in made:
        conn.execute(f"DROP TABLE IF EXISTS {n}")
    drop_staging_tables(conn)
    conn.close()


def jdbc_with(pg, table, **extra) -> str:
    opts = {"connector": "jdbc", "url": pg["url"], "table-name": table, "username": pg["user"],
            "password": pg["password"], **extra}
    return ", ".join(f"'{k}' = '{v}'" for k, v in opts.items())


def rows(conn, sql):
    return sorted(conn.execute(sql).fetchall(), key=repr)


@pytest.mark.kafka
def test_user_count_by_account_from_kafka_into_postgres(spark, kafka_bootstrap, db, tmp_path):
    pg, conn, name = db
    counts = name("counts")
    users = topic_name("users")
    # The seed pipeline with its sink swapped for a jdbc table created on first start.
    sql = SEED.read_text()
    sink_with = re.search(r"CREATE TABLE user_count_by_account \(.*?\) WITH \((.*?)\);", sql, re.S).group(1)
    sql = sql.replace(sink_with, jdbc_with(pg, counts, **{"sink.create-table": "true"}))
    (tmp_path / "p.sql").write_text(sql)

    def run_once():
        r = run_inline(files=[str(tmp_path / "p.sql")], once=True, checkpoint_dir=str(tmp_path / "ck"),
                       variables={"bootstrap": kafka_bootstrap, "users_topic": users})
        assert r.code == 0, r.err
        return rows(conn, f'SELECT "accountId", "userCount" FROM {counts}')

    def user(uid, account):
        return uid, {"uid": uid, "accountId": account, "id": 1, "fullName": "bob", "op": "c"}

    produce(spark, kafka_bootstrap, users, [user("100-1", "100"), user("100-2", "100"), user("101-1", "101")])
    assert run_once() == [("100", 2), ("101", 1)]
    # an account change moves a user; the last user of account 100 is deleted → row deleted
    produce(spark, kafka_bootstrap, users, [user("100-2", "101"), ("100-1", None)])
    assert run_once() == [("101", 2)]
    # a run with nothing new changes nothing
    assert run_once() == [("101", 2)]


def test_stream_left_join_jdbc_reference_into_upsert_sink(db, tmp_path):
    pg, conn, name = db
    accounts, enriched = name("accounts"), name("enriched")
    conn.execute(f"CREATE TABLE {accounts} (id TEXT PRIMARY KEY, label TEXT)")
    conn.execute(f"INSERT INTO {accounts} VALUES ('a1', 'gold'), ('a2', 'silver')")
    conn.execute(f"CREATE TABLE {enriched} (order_id BIGINT PRIMARY KEY, account TEXT, label TEXT)")
    orders = tmp_path / "orders"
    orders.mkdir()

    def order_file(n, records):
        tmp = tmp_path / f".{n}.json"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in records))
        os.replace(tmp, orders / f"{n}.json")

    order_file(1, [{"order_id": 1, "account": "a1"}, {"order_id": 2, "account": "a2"},
                   {"order_id": 3, "account": "zz"}])
    sql = f"""
    CREATE TABLE orders (order_id BIGINT, account STRING) WITH ('connector' = 'filesystem', 'path' = '{orders}', 'format' = 'json');
    CREATE TABLE accounts (id STRING, label STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ({jdbc_with(pg, accounts)});
    CREATE TABLE enriched (order_id BIGINT, account STRING, label STRING, PRIMARY KEY (order_id) NOT ENFORCED)
      WITH ({jdbc_with(pg, enriched)});
    INSERT INTO enriched SELECT o.order_id, o.account, a.label FROM orders o LEFT JOIN accounts a ON o.account = a.id;
    """
    (tmp_path / "p.sql").write_text(sql)

    def run_once():
        r = run_inline(files=[str(tmp_path / "p.sql")], once=True, checkpoint_dir=str(tmp_path / "ck"))
        assert r.code == 0, r.err
        return rows(conn, f"SELECT order_id, account, label FROM {enriched}")

    assert run_once() == [(1, "a1", "gold"), (2, "a2", "silver"), (3, "zz", None)]
    # the reference table changes and a new order arrives: the next start sees both
    conn.execute(f"UPDATE {accounts} SET label = 'platinum' WHERE id = 'a1'")
    conn.execute(f"INSERT INTO {accounts} VALUES ('zz', 'new')")
    conn.execute(f"DELETE FROM {accounts} WHERE id = 'a2'")
    order_file(2, [{"order_id": 4, "account": "a1"}])
    assert run_once() == [(1, "a1", "platinum"), (2, "a2", None), (3, "zz", "new"), (4, "a1", "platinum")]


def test_jdbc_source_with_once_copies_a_table(db, tmp_path):
    pg, conn, name = db
    src, dst = name("src"), name("dst")
    conn.execute(f"CREATE TABLE {src} (id INT, amount NUMERIC(10, 2), at TIMESTAMP)")
    conn.execute(f"INSERT INTO {src} SELECT g, g / 4.0, TIMESTAMP '2024-01-01' + g * INTERVAL '1 hour' "
                 "FROM generate_series(1, 200) g")
    sql = f"""
    CREATE TABLE src (id INT, amount DECIMAL(10, 2), at TIMESTAMP(3)) WITH ({jdbc_with(pg, src)});
    CREATE TABLE dst (id INT, amount DECIMAL(10, 2), at TIMESTAMP(3), big BOOLEAN)
      WITH ({jdbc_with(pg, dst, **{"sink.create-table": "true"})});
    INSERT INTO dst SELECT id, amount, at, amount > 25 FROM src WHERE id % 2 = 0;
    """
    r = run_inline(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    assert rows(conn, f"SELECT count(*), sum(amount)::text, min(at)::text, count(*) FILTER (WHERE big) FROM {dst}") == [
        (100, "2525.00", "2024-01-01 02:00:00", 0 + len([g for g in range(2, 201, 2) if g / 4 > 25]))]
    # the same --once run again: the table was read once for this checkpoint, nothing is appended twice
    r = run_inline(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    assert conn.execute(f"SELECT count(*) FROM {dst}").fetchone()[0] == 100


def test_bad_input_through_the_runner(db, tmp_path):
    pg, conn, name = db
    target = name("target")
    conn.execute(f"CREATE TABLE {target} (id INT PRIMARY KEY, code VARCHAR(5))")

    def pipeline(**pg_overrides):
        facts = {**pg, **pg_overrides}
        return f"""
        CREATE TABLE gen (id INT, code STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '20',
          'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '20', 'fields.code.length' = '4');
        CREATE TABLE target (id INT, code STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ({jdbc_with(facts, target)});
        INSERT INTO target SELECT id, CASE WHEN id = 17 THEN 'far too long' ELSE code END FROM gen;
        """

    secret = "S3cret-" + uuid.uuid4().hex[:6]
    r = run_inline(statements=[pipeline(password=secret)], once=True, checkpoint_dir=str(tmp_path / "ck1"))
    assert r.code == 3 and "'username'" in r.error_line and "password authentication failed" in r.error_line
    assert secret not in r.err + r.out
    r = run_inline(statements=[pipeline(url="jdbc:postgresql://127.0.0.1:1/postgres")], once=True,
                   checkpoint_dir=str(tmp_path / "ck2"))
    assert r.code == 3 and "'url'" in r.error_line and "cannot be reached" in r.error_line
    # --dry-run contacts nothing, so an unreachable database is no error there
    r = run_inline(statements=[pipeline(url="jdbc:postgresql://127.0.0.1:1/postgres")], dry_run=True,
                   checkpoint_dir=str(tmp_path / "ck3"))
    assert r.code == 0, r.err
    # a value too long for VARCHAR(5): one paragraph, exit 1, and nothing of the batch in the table
    r = run_inline(statements=[pipeline()], once=True, checkpoint_dir=str(tmp_path / "ck4"))
    assert r.code == 1, r.err
    assert "value too long for type character varying(5)" in r.error_line and target in r.error_line
    assert "Traceback" not in r.err and "at org." not in r.err
    assert conn.execute(f"SELECT count(*) FROM {target}").fetchone()[0] == 0


def test_kill_during_an_append_run_then_restart_loses_and_duplicates_nothing(db, tmp_path):
    pg, conn, name = db
    target = name("events")
    total = 2000
    sql = f"""
    CREATE TABLE gen (id BIGINT, payload STRING) WITH ('connector' = 'datagen', 'rows-per-second' = '50',
      'number-of-rows' = '{total}', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1',
      'fields.id.end' = '{total}', 'fields.payload.length' = '8');
    CREATE TABLE events (id BIGINT, payload STRING) WITH ({jdbc_with(pg, target, **{"sink.create-table": "true"})});
    SET 'execution.checkpointing.interval' = '1 second';
    INSERT INTO events SELECT id, payload FROM gen;
    """
    (tmp_path / "p.sql").write_text(sql)
    args = ["-f", str(tmp_path / "p.sql"), "--checkpoint-dir", str(tmp_path / "ck")]
    proc, lines, reader = start_cli(*args)
    try:
        deadline = time.monotonic() + 240
        written = 0
        while time.monotonic() < deadline:
            assert proc.poll() is None, "".join(lines)
            try:
                written = conn.execute(f"SELECT count(*) FROM {target}").fetchone()[0]
            except psycopg.errors.UndefinedTable:
                written = 0
            if written >= 100:
                break
            time.sleep(0.3)
        assert 0 < written < total, "".join(lines)
        print(f"killed with {written} of {total} rows written")
        kill_job_tree(proc)  # the whole job, JVM included, mid-stream
    finally:
        if proc.poll() is None:
            kill_job_tree(proc)
    reader.join(10)
    r = run_cli(*args, "--once")
    assert r.code == 0, r.err
    count, distinct, low, high = conn.execute(f"SELECT count(*), count(DISTINCT id), min(id), max(id) FROM {target}").fetchone()
    assert (count, distinct, low, high) == (total, total, 1, total)
