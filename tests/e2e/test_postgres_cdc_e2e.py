"""postgres-cdc end to end, against the real PostgreSQL and Kafka.

* the seed aggregation (users per account) fed from a PostgreSQL `users` table;
* the multi-hop example (examples/multi_hop): PostgreSQL → postgres-cdc → upsert-kafka →
  LEFT JOIN orders → jdbc table in PostgreSQL, and the orders → the Parquet lake; the job
  is killed (SIGKILL) in the middle of changes and restarted, and every insert, update and
  delete of the source table must reach the target table, none lost, none left over.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from decimal import Decimal

import psycopg
import pytest
from chispa import assert_df_equality

from job.api import RunOptions, run
from tests.support.kafka_io import consume, produce, topic_name, upsert_state
from tests.support.runs import MAIN, ROOT, job_env, kill_job_tree
from tests.support.services import connect_postgres

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.kafka]
PIPELINE = ROOT / "examples" / "multi_hop" / "pipeline.yaml"


@pytest.fixture
def pg(postgres):
    conn = connect_postgres(postgres)
    names = {"suffix": uuid.uuid4().hex[:8]}
    yield conn, names
    for slot in names.get("slots", ()):
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                     (slot,))
    for table in names.get("tables", ()):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.close()


def test_user_count_by_account_from_postgres(spark, kafka_bootstrap, postgres, pg, tmp_path):
    conn, names = pg
    table, slot, counts = f"users_{names['suffix']}", f"users_{names['suffix']}", topic_name("counts")
    names.update(tables=[table], slots=[slot])
    conn.execute(f'CREATE TABLE {table} (uid text PRIMARY KEY, "accountId" text, id int, "fullName" text)')
    conn.execute(f"INSERT INTO {table} VALUES ('100-1', '100', 1, 'bob'), ('100-2', '100', 2, 'ann'), "
                 "('101-1', '101', 1, 'cy')")
    statements = [
        f"""CREATE TABLE users (uid STRING, accountId STRING, id INT, fullName STRING,
              PRIMARY KEY (uid) NOT ENFORCED) WITH (
              'connector' = 'postgres-cdc', 'hostname' = '127.0.0.1', 'port' = '{postgres['port']}',
              'username' = '{postgres['user']}', 'password' = '{postgres['password']}',
              'database-name' = 'postgres', 'table-name' = '{table}', 'slot.name' = '{slot}')""",
        f"""CREATE TABLE user_count_by_account (accountId STRING, userCount BIGINT,
              PRIMARY KEY (accountId) NOT ENFORCED) WITH (
              'connector' = 'upsert-kafka', 'topic' = '{counts}', 'key.format' = 'raw',
              'value.format' = 'json', 'properties.bootstrap.servers' = '{kafka_bootstrap}')""",
        "INSERT INTO user_count_by_account SELECT accountId, COUNT(1) AS userCount FROM users GROUP BY accountId",
    ]

    def run_once_and_compare():
        assert run(RunOptions(statements=statements, once=True, checkpoint_dir=str(tmp_path / "ck"))) == 0
        got = upsert_state(consume(spark, kafka_bootstrap, counts))
        actual = spark.createDataFrame([(k, v["userCount"]) for k, v in got.items()], "accountId STRING, n BIGINT")
        truth = spark.createDataFrame(conn.execute(f'SELECT "accountId", count(*) FROM {table} GROUP BY 1').fetchall(),
                                      "accountId STRING, n BIGINT")
        assert_df_equality(actual, truth, ignore_row_order=True, ignore_nullable=True)
        return {r["accountId"]: r["n"] for r in actual.collect()}

    assert run_once_and_compare() == {"100": 2, "101": 1}               # the snapshot
    conn.execute(f"UPDATE {table} SET \"accountId\" = '101' WHERE uid = '100-2'")   # moves to 101
    conn.execute(f"UPDATE {table} SET \"fullName\" = 'bobby' WHERE uid = '100-1'")  # changes nothing counted
    conn.execute(f"DELETE FROM {table} WHERE uid = '100-1'")                          # account 100 empties
    conn.execute(f"INSERT INTO {table} VALUES ('102-1', '102', 1, 'di')")
    assert run_once_and_compare() == {"101": 2, "102": 1}


# ------------------------------------------------------------------ multi-hop

def start_job(variables: dict, env: dict) -> subprocess.Popen:
    args = [sys.executable, str(MAIN), "--pipeline", str(PIPELINE)]
    for k, v in variables.items():
        args += ["--var", f"{k}={v}"]
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def wait_for(conn, table: str, expected: list, proc: subprocess.Popen, timeout: float = 420) -> None:
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read()
            errors = [line for line in out.splitlines() if line.startswith(("error", "Exception", "["))]
            raise AssertionError(f"job exited with {proc.returncode}: " + "\n".join(errors[-20:]))
        try:
            got = conn.execute(f'SELECT uid, "accountId", "fullName", "orderCount", "orderTotal" FROM {table} '
                               "ORDER BY uid").fetchall()
        except psycopg.errors.UndefinedTable:
            got = None
        if got == expected:
            return
        time.sleep(2)
    raise AssertionError(f"target table never reached {expected}; last seen {got}")


def order(oid: str, uid: str, amount: str, day: str) -> tuple:
    return oid, {"orderId": oid, "uid": uid, "amount": amount, "orderTime": f"{day} 12:00:00"}


def test_multi_hop_postgres_kafka_postgres_and_lake_survives_a_kill(spark, kafka_bootstrap, postgres, pg, tmp_path):
    conn, names = pg
    s = names["suffix"]
    users, stats, slot = f"mh_users_{s}", f"mh_stats_{s}", f"mh_{s}"
    names.update(tables=[users, stats], slots=[slot])
    variables = {"pg_port": postgres["port"], "bootstrap": kafka_bootstrap, "users_table": users,
                 "stats_table": stats, "slot": slot, "users_topic": topic_name("mh-users"),
                 "orders_topic": topic_name("mh-orders"), "workdir": tmp_path}
    env = job_env(PGPASSWORD=postgres["password"])
    setup = (ROOT / "examples" / "multi_hop" / "setup.sql").read_text().replace("users", users)
    conn.execute(setup)
    produce(spark, kafka_bootstrap, variables["orders_topic"], [
        order("o1", "u1", "10.00", "2024-05-01"), order("o2", "u1", "5.50", "2024-05-02"),
        order("o3", "u3", "7.25", "2024-05-02")])

    proc = start_job(variables, env)
    try:
        wait_for(conn, stats, [("u1", "100", "Ada", 2, Decimal("15.50")), ("u2", "100", "Bob", None, None),
                               ("u3", "101", "Cy", 1, Decimal("7.25"))], proc)
        # Changes while the job runs, then SIGKILL (no graceful stop) with a batch likely in flight.
        conn.execute(f"INSERT INTO {users} VALUES ('u4', '102', 'Di')")
        conn.execute(f'UPDATE {users} SET "accountId" = \'101\', "fullName" = \'Bobby\' WHERE uid = \'u2\'')
        time.sleep(3)
        kill_job_tree(proc)
        # More changes while it is down.
        conn.execute(f"DELETE FROM {users} WHERE uid = 'u3'")
        conn.execute(f"UPDATE {users} SET uid = 'u5' WHERE uid = 'u1'")     # a key change: u1 goes, u5 comes
        produce(spark, kafka_bootstrap, variables["orders_topic"], [order("o4", "u2", "1.00", "2024-05-03")])

        proc = start_job(variables, env)
        wait_for(conn, stats, [("u2", "101", "Bobby", 1, Decimal("1.00")), ("u4", "102", "Di", None, None),
                               ("u5", "100", "Ada", None, None)], proc)
        # The slot is acknowledged only up to a batch the checkpoint has committed.
        ck = tmp_path / "checkpoints" / "multi_hop-1-users"
        last = max(int(f.name) for f in (ck / "commits").iterdir() if f.name.isdigit())
        committed = json.loads((ck / "offsets" / str(last)).read_text().splitlines()[-1])["lsn"]
        confirmed = conn.execute("SELECT (confirmed_flush_lsn - '0/0'::pg_lsn)::bigint FROM pg_replication_slots "
                                 "WHERE slot_name = %s", (slot,)).fetchone()[0]
        assert confirmed <= committed
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(90)
            except subprocess.TimeoutExpired:
                kill_job_tree(proc)
    assert proc.returncode == 0, proc.stdout.read()[-4000:]

    # The lake holds every order exactly once, partitioned by day.
    lake = spark.read.parquet(str(tmp_path / "lake" / "orders"))
    assert sorted((r["orderId"], str(r["orderDay"])) for r in lake.collect()) == [
        ("o1", "2024-05-01"), ("o2", "2024-05-02"), ("o3", "2024-05-02"), ("o4", "2024-05-03")]
    # A deleted user left nothing behind in the upsert topic's state either.
    topic = upsert_state(consume(spark, kafka_bootstrap, variables["users_topic"]))
    assert sorted(topic) == ["u2", "u4", "u5"]
