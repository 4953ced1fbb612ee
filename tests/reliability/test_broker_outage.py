"""The Kafka broker goes away for 30 s in the middle of a stream (job/run/availability.py).

A broker of its own (``scripts/kafka.sh --name outage --port 19192``), so the shared test
broker on 19092 is never stopped. The job reads a Kafka topic into Parquet files (Spark's
exactly-once file sink) and into another topic on the same broker (at-least-once).

* ``wait`` (the default): the job keeps running through the outage and, once the broker
  is back, reads what was produced after it; every record reaches the files exactly once
  and the topic at least once.
* ``fail``: the job exits with code 3 once the broker has been gone longer than the
  timeout; started again after the outage it resumes from its checkpoints: again every
  record exactly once.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.kafka_io import consume, produce, topic_name
from tests.support.runs import ROOT, job_env
from tests.support.services import ensure_kafka, stop_kafka

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
OUTAGE_S = 30


@pytest.fixture(scope="module")
def outage_broker():
    # Stopped afterwards: the port is the benchmarks' broker's too (scripts/kafka.sh --name bench).
    yield ensure_kafka(port=19192, name="outage")
    stop_kafka("outage")


def pipeline(bootstrap, src, copy, lake, policy_sql=""):
    return policy_sql + f"""
CREATE TABLE events (id BIGINT, payload STRING) WITH ('connector' = 'kafka', 'topic' = '{src}', 'format' = 'json',
  'properties.bootstrap.servers' = '{bootstrap}', 'scan.startup.mode' = 'earliest-offset');
CREATE TABLE lake (id BIGINT, payload STRING) WITH ('connector' = 'filesystem', 'path' = '{lake}', 'format' = 'parquet');
CREATE TABLE copy (id BIGINT, payload STRING) WITH ('connector' = 'kafka', 'topic' = '{copy}', 'format' = 'json',
  'properties.bootstrap.servers' = '{bootstrap}');
INSERT INTO lake SELECT id, payload FROM events;
INSERT INTO copy SELECT id, payload FROM events;
"""


def records(ids):
    return [(None, {"id": i, "payload": f"p{i}"}) for i in ids]


def lake_ids(spark, lake: Path) -> list[int]:
    if not (lake / "_spark_metadata").is_dir():
        return []
    return sorted(r.id for r in spark.read.schema("id bigint, payload string").parquet(str(lake)).select("id").collect())


def start(sql_file: Path, ck: Path, log: Path, once: bool = False) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "job.main", "--file", str(sql_file), "--checkpoint-dir", str(ck)]
    with open(log, "ab") as out:
        return subprocess.Popen(cmd + (["--once"] if once else []), cwd=ROOT, env=job_env(), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(predicate, proc, log: Path, timeout: float = 300, what: str = ""):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc is None or proc.poll() is None, f"the job ended ({proc.returncode}) waiting for {what}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{log.read_text()[-3000:]}"
        time.sleep(1)


def outage(seconds: float = OUTAGE_S) -> float:
    """Stop the broker for ``seconds``; returns when it answers again."""
    stop_kafka("outage")
    time.sleep(seconds)
    t = time.monotonic()
    ensure_kafka(port=19192, name="outage")
    return time.monotonic() - t


def stop_job(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)   # the job only: it stops its JVM itself
        try:
            proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_wait_keeps_running_through_a_30_s_outage_and_loses_nothing(spark, outage_broker, tmp_path):
    src, copy, lake, log = topic_name("out-src"), topic_name("out-copy"), tmp_path / "lake", tmp_path / "job.log"
    sql = tmp_path / "p.sql"
    sql.write_text(pipeline(outage_broker, src, copy, lake))
    produce(spark, outage_broker, src, records(range(0, 5)))
    proc = start(sql, tmp_path / "ck", log)
    try:
        wait_for(lambda: len(lake_ids(spark, lake)) == 5, proc, log, what="the first records")
        outage()
        assert proc.poll() is None, f"the job ended during the outage:\n{log.read_text()[-3000:]}"
        produce(spark, outage_broker, src, records(range(5, 10)))
        wait_for(lambda: len(lake_ids(spark, lake)) >= 10, proc, log, what="the records after the outage")
        wait_for(lambda: {json.loads(v)["id"] for _k, v in consume(spark, outage_broker, copy)} >= set(range(10)),
                 proc, log, what="the copy topic")
    finally:
        stop_job(proc)
    assert proc.returncode == 0, log.read_text()[-3000:]
    assert lake_ids(spark, lake) == list(range(10))                     # exactly once
    text = log.read_text()
    assert "cannot be reached" in text and "reachable again" in text


def test_fail_exits_3_and_a_restart_resumes_without_loss(spark, outage_broker, tmp_path):
    src, copy, lake, log = topic_name("out-src"), topic_name("out-copy"), tmp_path / "lake", tmp_path / "job.log"
    sql = tmp_path / "p.sql"
    sql.write_text(pipeline(outage_broker, src, copy, lake,
                            "SET 'streamsql.source.unavailable' = 'fail';\n"
                            "SET 'streamsql.source.unavailable.timeout' = '8 s';\n"))
    produce(spark, outage_broker, src, records(range(0, 5)))
    proc = start(sql, tmp_path / "ck", log)
    try:
        wait_for(lambda: len(lake_ids(spark, lake)) == 5, proc, log, what="the first records")
        stop_kafka("outage")
        t0 = time.monotonic()
        proc.wait(timeout=OUTAGE_S + 60)
        exited_after = time.monotonic() - t0
    finally:
        stop_job(proc)
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - t0)))
        ensure_kafka(port=19192, name="outage")
    errors = [l for l in log.read_text().splitlines() if l.startswith("error")]
    assert proc.returncode == 3, log.read_text()[-3000:]
    assert errors and "unreachable" in errors[-1] and "resumes from its checkpoints" in errors[-1]
    assert exited_after < OUTAGE_S + 30

    produce(spark, outage_broker, src, records(range(5, 10)))
    again = start(sql, tmp_path / "ck", log, once=True)
    assert again.wait(timeout=600) == 0, log.read_text()[-3000:]
    assert lake_ids(spark, lake) == list(range(10))
    assert {json.loads(v)["id"] for _k, v in consume(spark, outage_broker, copy)} == set(range(10))


def test_an_unknown_policy_is_a_validation_error(tmp_path):
    from tests.support.runs import run_cli

    r = run_cli("--dry-run", "SET 'streamsql.source.unavailable' = 'retry'",
                "CREATE TABLE t (id INT) WITH ('connector' = 'datagen', 'number-of-rows' = '1')",
                "CREATE TABLE b (id INT) WITH ('connector' = 'blackhole')", "INSERT INTO b SELECT id FROM t")
    assert r.code == 2 and "streamsql.source.unavailable" in r.error_line and "'wait'" in r.error_line, r.err
