"""Real external services for tests: a local Kafka broker (scripts/kafka.sh) and the extra
Spark jars (scripts/jars.sh).

    from tests.support.services import ensure_kafka, spark_jars
    bootstrap = ensure_kafka()            # "127.0.0.1:19092", started once, reused after
    SparkSession.builder.config("spark.jars", ",".join(spark_jars()))...

Both scripts are idempotent and lock against concurrent callers, so any number of test
processes may call these. The broker keeps running after the tests (restarting it costs a few
seconds per run); stop it with stop_kafka() or `scripts/kafka.sh stop --name test`.
Tests default to port 19092 / name "test" so they never touch a developer's broker on 9092.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JARS_SH = ROOT / "scripts" / "jars.sh"
KAFKA_SH = ROOT / "scripts" / "kafka.sh"
SPARK_JARS_DIR = ROOT / "jars" / "spark"
LOG4J_CONF = ROOT / "conf" / "log4j2.properties"


def _run(cmd: list[str], timeout: float) -> str:
    proc = subprocess.run(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        timeout=timeout, env={**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")},
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed with exit code {proc.returncode}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
        )
    return proc.stdout


def ensure_jars(which: str = "all") -> None:
    """Fetch jars/spark and/or jars/kafka with Maven unless already there (seconds when cached)."""
    _run([str(JARS_SH), which, "--quiet"], timeout=900)


def spark_jars() -> list[str]:
    """Absolute paths of the jars Spark needs on top of pyspark's own (Kafka connector,
    JDBC, the changelog engine), as the job's own sessions get them."""
    ensure_jars("spark")
    subprocess.run([str(ROOT / "scripts" / "build_engine.sh")], check=True)
    from job.run.session import project_jars

    jars = project_jars()
    if not any("jars/spark/" in j for j in jars):
        raise RuntimeError(f"no jars in {SPARK_JARS_DIR}; run scripts/jars.sh spark --force")
    return jars


def ensure_kafka(port: int = 19092, name: str = "test", timeout: float = 120) -> str:
    """Start (or reuse) the local broker NAME on 127.0.0.1:PORT; returns its bootstrap servers.

    Returns only once the broker answers admin requests. A broker NAME already running on
    another port is an error (use another name).
    """
    ensure_jars("kafka")
    out = _run(
        [str(KAFKA_SH), "start", "--port", str(port), "--name", name, "--timeout", str(int(timeout))],
        timeout=timeout + 30,
    )
    lines = out.strip().splitlines()
    return lines[-1] if lines else f"127.0.0.1:{port}"


def stop_kafka(name: str = "test") -> None:
    """Stop broker NAME (no-op if not running). Its data stays in .services/kafka-NAME/."""
    _run([str(KAFKA_SH), "stop", "--name", name], timeout=60)


def kafka_running(name: str = "test") -> bool:
    return subprocess.run(
        [str(KAFKA_SH), "status", "--name", name], cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ).returncode == 0


POSTGRES_SH = ROOT / "scripts" / "postgres.sh"


def ensure_postgres(port: int = 15432, name: str = "test", timeout: float = 120) -> dict:
    """Start (or reuse) the local PostgreSQL NAME on 127.0.0.1:PORT (scripts/postgres.sh).

    Returns connection facts: ``url`` (JDBC, database ``postgres``), ``host``, ``port``,
    ``user``, ``password``. Installs the Debian packages on first use when run as root.
    """
    out = _run(
        [str(POSTGRES_SH), "start", "--port", str(port), "--name", name, "--timeout", str(int(timeout))],
        timeout=timeout + 600,  # first use may apt-get install
    )
    lines = out.strip().splitlines()
    return {
        "url": lines[-1] if lines else f"jdbc:postgresql://127.0.0.1:{port}/postgres",
        "host": "127.0.0.1",
        "port": port,
        "user": "postgres",
        "password": os.environ.get("STREAMSQL_PG_PASSWORD", "postgres"),
    }


def connect_postgres(facts: dict):
    """A psycopg connection, in autocommit, to the database ``postgres`` of the server
    :func:`ensure_postgres` describes."""
    import psycopg

    return psycopg.connect(host=facts["host"], port=facts["port"], user=facts["user"], password=facts["password"],
                           dbname="postgres", autocommit=True)


def stop_postgres(name: str = "test") -> None:
    _run([str(POSTGRES_SH), "stop", "--name", name], timeout=60)


MARIADB_SH = ROOT / "scripts" / "mariadb.sh"


def ensure_mariadb(port: int = 13306, name: str = "test", timeout: float = 120) -> dict:
    """Start (or reuse) the local MariaDB NAME on 127.0.0.1:PORT (scripts/mariadb.sh).

    Returns connection facts: ``host``, ``port``, ``user``, ``password``. Installs the
    Debian packages on first use when run as root.
    """
    _run([str(MARIADB_SH), "start", "--port", str(port), "--name", name, "--timeout", str(int(timeout))],
         timeout=timeout + 600)  # first use may apt-get install
    return {"host": "127.0.0.1", "port": port, "user": "root",
            "password": os.environ.get("STREAMSQL_MYSQL_PASSWORD", "mariadb")}


def drop_jdbc_staging_tables(conn) -> None:
    """Each jdbc sink leaves an (empty) staging table per checkpoint; tests make many.
    ``conn``: a psycopg connection in autocommit mode."""
    for (t,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                             "AND tablename LIKE 'streamsql\\_stage\\_%'").fetchall():
        conn.execute(f"DROP TABLE IF EXISTS {t}")
