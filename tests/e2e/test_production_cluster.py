"""The job on a real Spark standalone cluster (scripts/spark-cluster.sh: a master and two
workers on 127.0.0.1), submitted with ./spark-submit.sh: the same result as local mode."""
from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.kafka_io import consume, produce, topic_name, upsert_state
from tests.support.runs import ROOT, job_env, run_inline

CLUSTER_SH = ROOT / "scripts" / "spark-cluster.sh"
WORK = ROOT / ".services" / "spark-cluster" / "work"
pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def spark_cluster():
    """The cluster's master URL: reuse a running one, else start one (and stop it after).
    On 7077 unless that port is taken by something else."""
    status = subprocess.run([str(CLUSTER_SH), "status"], cwd=ROOT, capture_output=True, text=True)
    if status.returncode == 0:
        yield status.stdout.split()[1]
        return
    env = dict(os.environ)
    if not _port_free(7077):
        env.update(SPARK_MASTER_PORT=str(_free_port()), SPARK_MASTER_WEBUI_PORT=str(_free_port()))
    started = subprocess.run([str(CLUSTER_SH), "start"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert started.returncode == 0, started.stderr
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run([str(CLUSTER_SH), "stop"], cwd=ROOT, env=env, capture_output=True, timeout=120)


def user(uid, account, op="c"):
    return uid, {"uid": uid, "accountId": account, "id": 1, "fullName": "x", "op": op}


def test_example_pipeline_on_the_cluster_equals_local_mode(spark, kafka_bootstrap, spark_cluster, tmp_path):
    users, on_cluster, local = topic_name("users"), topic_name("counts"), topic_name("counts")
    produce(spark, kafka_bootstrap, users, [user("100-1", "100"), user("100-2", "100"), user("101-1", "101"),
                                            user("102-1", "102"), user("100-2", "102", "u"), ("101-1", None)])
    pipeline = ROOT / "examples" / "user_count_by_account" / "pipeline.yaml"
    apps_before = set(WORK.glob("worker-*/app-*"))
    variables = {"bootstrap": kafka_bootstrap, "users_topic": users}
    job_args = ["--pipeline", str(pipeline), "--once", "--checkpoint-dir", str(tmp_path / "ck-cluster"),
                *[a for k, v in {**variables, "counts_topic": on_cluster}.items() for a in ("--var", f"{k}={v}")]]
    proc = subprocess.run([str(ROOT / "spark-submit.sh"), "--master", spark_cluster, "--executor-memory", "512m",
                           "--", *job_args], cwd=ROOT, env=job_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "ok: 1 batches, 6 rows in" in proc.stderr

    # the executors ran on the workers
    apps = set(WORK.glob("worker-*/app-*")) - apps_before
    assert {p.parent.name for p in apps} == {"worker-1", "worker-2"}, apps

    r = run_inline(pipeline=str(pipeline), once=True, checkpoint_dir=str(tmp_path / "ck-local"),
                   variables={**variables, "counts_topic": local})
    assert r.code == 0, r.err
    expected = {"100": {"accountId": "100", "userCount": 1}, "102": {"accountId": "102", "userCount": 2}}
    assert upsert_state(consume(spark, kafka_bootstrap, local)) == expected
    assert upsert_state(consume(spark, kafka_bootstrap, on_cluster)) == expected


def test_a_user_defined_function_runs_on_the_cluster_executors(spark, spark_cluster, tmp_path):
    # ADD JAR ships the function's jar (and Flink's function API) to executors in other JVMs.
    from chispa import assert_df_equality

    from tests.support.user_functions import udf_jar

    data, out = tmp_path / "in", tmp_path / "out"
    data.mkdir()
    (data / "part-0").write_text("".join(f'{{"id": {i}, "s": "{"c" * (i % 4)}x"}}\n' for i in range(40)))
    sql = tmp_path / "p.sql"
    sql.write_text(f"""
        CREATE TABLE t (id INT, s STRING) WITH ('connector' = 'filesystem', 'path' = '{data}', 'format' = 'json');
        CREATE TABLE o (id INT, c BIGINT) WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json');
        CREATE FUNCTION count_char AS 'streamsql.testudf.CountChar' USING JAR '{udf_jar()}';
        INSERT INTO o SELECT id, count_char(s, 'c') FROM t;
    """)
    proc = subprocess.run([str(ROOT / "spark-submit.sh"), "--master", spark_cluster, "--executor-memory", "512m",
                           "--", "--file", str(sql), "--once", "--checkpoint-dir", str(tmp_path / "ck")],
                          cwd=ROOT, env=job_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = spark.read.schema("id INT, c BIGINT").json(str(out))
    expected = spark.createDataFrame([(i, i % 4) for i in range(40)], "id INT, c BIGINT")
    assert_df_equality(written, expected, ignore_row_order=True)
