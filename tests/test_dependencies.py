"""What setup.cfg declares is what the job imports, in the versions it runs with; the
extra jars match the Spark they run in."""
from __future__ import annotations

import ast
import configparser
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

# A distribution's name → the module the job imports it as.
MODULE_OF = {"pyyaml": "yaml", "psycopg": "psycopg", "prometheus-client": "prometheus_client",
             "mysql-replication": "pymysqlreplication"}
# What pyspark[sql] brings and the job imports itself.
VIA_PYSPARK_SQL = {"numpy", "pyarrow", "pandas", "py4j"}


def requirements(key: str = "install_requires", section: str = "options") -> list[Requirement]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return [Requirement(line) for line in cfg[section][key].splitlines() if line.strip()]


def imported_modules() -> set[str]:
    """Top-level modules imported anywhere in job/ (at the top or inside functions)."""
    found = set()
    for path in (ROOT / "job").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def extras() -> dict[str, list[Requirement]]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    section = cfg["options.extras_require"]
    return {name: [Requirement(line) for line in section[name].splitlines() if line.strip()] for name in section}


def test_every_declared_package_is_imported_and_every_imported_one_declared():
    declared = {r.name.lower() for r in requirements()}
    declared |= {r.name.lower() for name, reqs in extras().items() if name != "test" for r in reqs}
    imported = imported_modules()
    assert {MODULE_OF.get(name, name) for name in declared} <= imported, "declared and never imported"
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m not in ("job", "__future__")}
    assert third_party - VIA_PYSPARK_SQL <= {MODULE_OF.get(name, name) for name in declared}, \
        "imported and not declared"
    assert not {"protobuf", "grpcio", "pandas", "pyarrow"} & declared


def test_one_connector_s_or_option_s_packages_are_extras_the_tests_install():
    found = extras()
    assert [r.name for r in found["postgres"]] == ["psycopg"]
    assert [r.name for r in found["mysql"]] == ["mysql-replication", "pymysql"]
    assert [r.name for r in found["metrics"]] == ["prometheus-client"]
    assert [r.name for r in found["iceberg"]] == ["pyiceberg"]
    assert [r.name for r in found["delta"]] == ["deltalake"]
    (itself,) = [r for r in found["test"] if r.name == "streamsql"]
    assert itself.extras == {"postgres", "mysql", "metrics", "iceberg", "delta"}
    assert not {"psycopg", "mysql-replication", "pymysql", "prometheus-client", "pyiceberg", "deltalake"} & {r.name for r in requirements()}


def blocked(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m job.main ARGS`` with ``module`` unimportable, as if its extra were not installed."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(ROOT)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return subprocess.run([sys.executable, "-c", BLOCK_UNDECLARED.replace('("grpc", "google")', repr((module,))),
                           *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_without_the_postgres_extra_a_postgres_cdc_table_is_refused_by_name(tmp_path):
    done = blocked("psycopg", "--dry-run",
                   "CREATE TABLE users (id INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'postgres-cdc', "
                   "'hostname' = '127.0.0.1', 'username' = 'u', 'password' = 'p', 'database-name' = 'd', "
                   "'table-name' = 'users', 'slot.name' = 'streamsql_users')",
                   "CREATE TABLE out1 (id INT) WITH ('connector' = 'blackhole')",
                   "INSERT INTO out1 SELECT id FROM users", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "the postgres-cdc connector (table 'users') needs the Python package psycopg, which is not installed" \
        in errors[0] and "pip install 'streamsql[postgres]'" in errors[0], errors


def test_without_the_metrics_extra_metrics_port_is_refused_before_anything_runs(tmp_path):
    done = blocked("prometheus_client", "--metrics-port", "9", "SELECT 1", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.strip() == (
        "error (exit 2, invalid pipeline): --metrics-port needs the Python package prometheus-client, which is not "
        "installed Hint: pip install 'streamsql[metrics]' where the job runs, or use --metrics-file"), done.stderr


def test_pyspark_brings_the_packages_its_sql_needs():
    (pyspark,) = [r for r in requirements() if r.name == "pyspark"]
    assert "sql" in pyspark.extras
    assert importlib.metadata.version("pyspark") in pyspark.specifier


def test_sqlglot_is_pinned_to_the_range_the_tests_run_on():
    (sqlglot,) = [r for r in requirements() if r.name == "sqlglot"]
    assert any(spec.operator in ("<", "<=", "==", "~=") for spec in sqlglot.specifier), "no upper bound"
    assert importlib.metadata.version("sqlglot") in sqlglot.specifier


def test_the_kafka_connector_s_token_provider_is_of_its_version():
    """Spark's own artifacts in jars/spark/ (the Kafka connector and the token provider
    it depends on) carry one version, the connector's."""
    jars = sorted(p.name for p in (ROOT / "jars" / "spark").glob("spark-*.jar"))
    if not jars:
        pytest.skip("jars/spark/ not fetched (scripts/jars.sh spark)")
    (connector,) = [name for name in jars if name.startswith("spark-sql-kafka-0-10_")]
    version = connector.rsplit("-", 1)[1]
    assert any(name.startswith("spark-token-provider-kafka-0-10_") for name in jars), jars
    assert all(name.endswith(f"-{version}") for name in jars), jars


BLOCK_UNDECLARED = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("grpc", "google"):
            raise ImportError(f"{name} is not installed (blocked by the test)")
sys.meta_path.insert(0, Block())
from job.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_pipeline_runs_without_the_packages_no_longer_declared(tmp_path):
    """protobuf and grpcio (Spark Connect's) are not needed: a pipeline through the engine's
    aggregation runs with them unimportable."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(ROOT)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([sys.executable, "-c", BLOCK_UNDECLARED, "--once",
                           "CREATE TABLE src (k INT, v INT) WITH ('connector' = 'datagen', 'number-of-rows' = '20', "
                           "'fields.k.min' = '1', 'fields.k.max' = '3')",
                           "CREATE TABLE out1 (k INT, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'print')",
                           "INSERT INTO out1 SELECT k, COUNT(*) FROM src GROUP BY k",
                           "--checkpoint-dir", str(tmp_path / "ck")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    counts = [int(line.split(", ")[1].rstrip("]")) for line in done.stdout.splitlines() if line.startswith("+I[")]
    assert sum(counts) == 20 and len(counts) == 3, done.stdout  # three keys, twenty rows
