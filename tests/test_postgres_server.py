"""The PostgreSQL that scripts/postgres.sh starts is ready for the jdbc and postgres-cdc
connectors: password auth on loopback, logical replication with wal2json."""
import os
import subprocess

import pytest

from tests.support.services import ROOT

pytestmark = pytest.mark.postgres


def psql(postgres, *sql: str) -> str:
    args = [str(ROOT / "scripts" / "postgres.sh"), "psql", "--name", "test", "--", "-At"]
    for s in sql:
        args += ["-c", s]
    return subprocess.run(args, check=True, capture_output=True, text=True,
                          env={**os.environ, "STREAMSQL_PG_PASSWORD": postgres["password"]}).stdout


def test_logical_decoding_with_wal2json(postgres):
    out = psql(
        postgres,
        "DROP TABLE IF EXISTS server_check",
        "CREATE TABLE server_check (id int PRIMARY KEY, v text)",
        "SELECT 1 FROM pg_create_logical_replication_slot('server_check', 'wal2json')",
        "INSERT INTO server_check VALUES (1, 'a')",
        "SELECT data FROM pg_logical_slot_get_changes('server_check', NULL, NULL, 'format-version', '2')",
        "SELECT pg_drop_replication_slot('server_check')",
        "DROP TABLE server_check",
    )
    assert '"action":"I"' in out and '"table":"server_check"' in out


def test_password_is_required_over_tcp(postgres):
    proc = subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(postgres["port"]), "-U", "postgres", "-c", "select 1"],
        capture_output=True, text=True, env={**os.environ, "PGPASSWORD": "wrong"},
    )
    assert proc.returncode != 0 and "password authentication failed" in proc.stderr
