"""Stopping and restarting the changelog engine from its checkpoint, in new processes.

The same-key 3-way LEFT JOIN (users ⋈ colors ⋈ cheeses, five stateful operators) runs as
``python -m job.main --file … --checkpoint-dir …`` subprocesses over random Debezium
changelogs (one file per micro-batch):

* half the files, a --once run, the other half, a second --once run: the sink holds what
  a single run over everything gives, and what batch Spark SQL computes;
* a continuous run killed with SIGKILL as soon as its first output reached Kafka (no
  chance to finish the batch or close anything), the remaining files, then a --once
  restart: the sink again holds exactly the reference.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from job.api import RunOptions, run
from tests.changelog.engine_support import (QUERIES, Clock, Scenario, assert_sink_matches, fresh_topics, pipeline_sql,
                                            sink_frame)
from tests.support.kafka_io import consume, upsert_state
from tests.support.runs import kill_job_tree

ROOT = Path(__file__).resolve().parents[2]
QUERY = QUERIES["join3"]
TABLES_READ = sorted(QUERY.tables)
pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def write_pipeline(tmp_path: Path) -> Path:
    """The pipeline as a .sql file whose paths and topic come from --var."""
    directories = {t: "{{ %s_path }}" % t for t in TABLES_READ}
    sql = pipeline_sql(directories, [QUERY], {QUERY.name: "{{ out_topic }}"}, "{{ bootstrap }}")
    path = tmp_path / "join3.sql"
    path.write_text(sql)
    return path


def job_command(pipeline: Path, scenario: Scenario, topic: str, bootstrap: str, checkpoint: Path, once: bool) -> list:
    cmd = [sys.executable, "-m", "job.main", "--file", str(pipeline), "--checkpoint-dir", str(checkpoint),
           "--var", f"bootstrap={bootstrap}", "--var", f"out_topic={topic}"]
    cmd += [a for t in TABLES_READ for a in ("--var", f"{t}_path={scenario.directory(t)}")]
    if os.environ.get("ENGINE_TEST_VERBOSE"):  # Spark's INFO logs in job.log, to debug a failure
        cmd.append("--verbose")
    return cmd + (["--once"] if once else [])


def job_env() -> dict:
    return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONUNBUFFERED": "1"}


def run_once_in_new_process(cmd: list, log: Path) -> None:
    with open(log, "ab") as out:
        proc = subprocess.run(cmd, cwd=ROOT, env=job_env(), stdout=out, stderr=subprocess.STDOUT, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited with {proc.returncode}; see {log}:\n{tail(log)}"


def tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def sink_state(spark, bootstrap: str, topic: str) -> dict:
    return upsert_state(consume(spark, bootstrap, topic))


def test_half_then_rest_in_two_processes_equals_one_run(spark, kafka_bootstrap, tmp_path):
    scenario = Scenario.generate(tmp_path, 404, TABLES_READ, files=(4, 6))
    clock = Clock()
    pipeline = write_pipeline(tmp_path)
    topic = fresh_topics([QUERY])[QUERY.name]
    checkpoint, log = tmp_path / "checkpoints", tmp_path / "job.log"

    scenario.write(clock, upto=0.5)
    run_once_in_new_process(job_command(pipeline, scenario, topic, kafka_bootstrap, checkpoint, once=True), log)
    assert_sink_matches(spark, kafka_bootstrap, topic, scenario.prefix(0.5), QUERY, "after the first half")

    scenario.write(clock, start_fraction=0.5)
    run_once_in_new_process(job_command(pipeline, scenario, topic, kafka_bootstrap, checkpoint, once=True), log)
    assert_sink_matches(spark, kafka_bootstrap, topic, scenario, QUERY, "after a restart with the second half")

    # One run over every file, from scratch: the same table.
    single = fresh_topics([QUERY])[QUERY.name]
    sql = pipeline_sql(scenario.directories, [QUERY], {QUERY.name: single}, kafka_bootstrap)
    assert run(RunOptions(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "single-checkpoints"))) == 0
    assert sink_state(spark, kafka_bootstrap, topic) == sink_state(spark, kafka_bootstrap, single)
    assert sink_frame(spark, kafka_bootstrap, single, QUERY).count() == len(scenario.final("users"))


def test_sigkill_after_first_output_then_restart(spark, kafka_bootstrap, tmp_path):
    scenario = Scenario.generate(tmp_path, 505, TABLES_READ, files=(5, 6))
    clock = Clock()
    pipeline = write_pipeline(tmp_path)
    topic = fresh_topics([QUERY])[QUERY.name]
    checkpoint, log = tmp_path / "checkpoints", tmp_path / "job.log"

    scenario.write(clock, upto=0.6)
    cmd = job_command(pipeline, scenario, topic, kafka_bootstrap, checkpoint, once=False)
    with open(log, "ab") as out:
        # A session of its own: the kill takes the JVM and the Python workers down with it.
        proc = subprocess.Popen(cmd, cwd=ROOT, env=job_env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not consume(spark, kafka_bootstrap, topic):
            assert proc.poll() is None, f"the job ended before writing anything ({proc.returncode}):\n{tail(log)}"
            assert time.monotonic() < deadline, f"no output within 600 s:\n{tail(log)}"
            time.sleep(1)
        kill_job_tree(proc)
    finally:
        if proc.poll() is None:
            kill_job_tree(proc)
    committed = [p.name for p in checkpoint.glob("*/commits/*") if p.name.isdigit()]

    scenario.write(clock, start_fraction=0.6)
    run_once_in_new_process(job_command(pipeline, scenario, topic, kafka_bootstrap, checkpoint, once=True), log)
    assert_sink_matches(spark, kafka_bootstrap, topic, scenario, QUERY,
                        f"after SIGKILL with {len(committed)} committed batches and a --once restart")
