"""Test-session wiring: one SparkSession and one Kafka broker for the whole run."""
from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# The virtualenv running the tests is the one whose PySpark the engine is built for and
# spark-submit.sh runs (scripts/build_engine.sh, spark-submit.sh): run with another venv's
# python (CI's Spark 4.2 pass), and everything follows it.
if sys.prefix != sys.base_prefix:
    os.environ.setdefault("STREAMSQL_VENV", sys.prefix)
# Every Spark JVM the tests start compiles with C1 only (why: tests/support/jvm.py).
from tests.support.jvm import spark_c1_only  # noqa: E402

spark_c1_only()


def pytest_configure(config):
    config.addinivalue_line("markers", "kafka: needs the local Kafka broker (started by the fixture)")
    config.addinivalue_line("markers", "slow: end-to-end; runs in CI, skip locally with -m 'not slow'")
    config.addinivalue_line("markers", "postgres: needs the local PostgreSQL server (started by the fixture)")
    config.addinivalue_line("markers", "mariadb: needs the local MariaDB server (started by the fixture)")
    config.addinivalue_line("markers", "airflow: runs a real Apache Airflow (own virtualenv); only with STREAMSQL_AIRFLOW_TEST=1")


@pytest.fixture(scope="session")
def spark():
    from tests.support.spark_session import get_spark

    return get_spark()


@pytest.fixture(scope="session")
def kafka_bootstrap():
    from tests.support.services import ensure_kafka

    return ensure_kafka()


@pytest.fixture(scope="session")
def postgres():
    """The local PostgreSQL (scripts/postgres.sh, 127.0.0.1:15432): url/host/port/user/password."""
    from tests.support.services import ensure_postgres

    return ensure_postgres()


@pytest.fixture(scope="session")
def mariadb():
    """The local MariaDB (scripts/mariadb.sh, 127.0.0.1:13306): host/port/user/password."""
    from tests.support.services import ensure_mariadb

    return ensure_mariadb()
