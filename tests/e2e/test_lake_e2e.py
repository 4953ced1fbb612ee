"""The queryable lake end to end, in real processes with Hive's embedded Derby metastore.

A job (``job/main.py --once``) writes a partitioned parquet lake table, a restart with a
new nullable column evolves it, a restart with a changed column type is refused, and a
separate ``spark-sql -e`` process (pyspark's own) queries the table through the
metastore. A continuous job serves the Thrift JDBC server and ``beeline`` queries the
table while the job writes it.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from tests.support.runs import MAIN, ROOT, job_env, kill_job_tree, run_cli

pytestmark = pytest.mark.slow
SPARK_BIN = Path(pyspark.__file__).parent / "bin"


def write_json(directory: Path, name: str, lines: list[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / (name + ".tmp")).write_text("".join(line + "\n" for line in lines))
    os.replace(directory / (name + ".tmp"), directory / name)  # atomic, as the source requires


def pipeline(tmp_path: Path, columns: str, select: str, extra_set: str = "") -> Path:
    """events (json files) → activity (lake table lake.user_activity, by day)."""
    path = tmp_path / "lake_pipeline.sql"  # one name: the pipeline's name picks its checkpoints
    path.write_text(f"""
SET 'streamsql.metastore.dir' = '{tmp_path / "ms"}';
{extra_set}
CREATE TABLE events ({columns}) WITH (
  'connector' = 'filesystem', 'path' = '{tmp_path / "in"}', 'format' = 'json');
CREATE TABLE activity ({columns}) PARTITIONED BY (`day`) WITH (
  'connector' = 'filesystem', 'path' = '{tmp_path / "lake"}', 'format' = 'parquet',
  'metastore.table' = 'lake.user_activity');
INSERT INTO activity SELECT {select} FROM events;
""")
    return path


def lake_files(tmp_path: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp_path / "lake")) for p in (tmp_path / "lake").rglob("*.parquet")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(tmp_path / "lake").parts))


def spark_sql(tmp_path: Path, query: str, ms: Path | None = None) -> list[str]:
    """``spark-sql -e`` against the job's metastore (in ``ms``, default tmp_path/ms); the
    result lines (tab-separated)."""
    ms = ms or tmp_path / "ms"
    proc = subprocess.run(
        [str(SPARK_BIN / "spark-sql"), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName={ms}/metastore_db",
         "--conf", f"spark.sql.warehouse.dir={ms}/spark-warehouse", "-S", "-e", query],
        cwd=tmp_path, env=job_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [line for line in proc.stdout.splitlines() if line.strip()]


def test_once_writes_a_lake_table_that_evolves_and_spark_sql_reads(tmp_path):
    checkpoints = ["--checkpoint-dir", str(tmp_path / "ck")]
    write_json(tmp_path / "in", "a.json", ['{"uid": "u1", "action": "view", "day": "2024-01-01"}',
                                           '{"uid": "u2", "action": "click", "day": "2024-01-02"}'])
    v1 = pipeline(tmp_path, "uid STRING, action STRING, `day` STRING", "uid, action, `day`")
    first = run_cli("-f", str(v1), "--once", *checkpoints)
    assert first.code == 0, first.err
    assert len(lake_files(tmp_path)) == 2   # one file per partition and batch

    # Restart with a new nullable column (source and sink): the table gains it.
    write_json(tmp_path / "in", "b.json", ['{"uid": "u3", "action": "buy", "day": "2024-01-02", "score": 2.5}'])
    v2 = pipeline(tmp_path, "uid STRING, action STRING, score DOUBLE, `day` STRING", "uid, action, score, `day`")
    second = run_cli("-f", str(v2), "--once", *checkpoints)
    assert second.code == 0, second.err
    files = lake_files(tmp_path)
    assert len(files) == 3

    # A type the table cannot hold: refused before anything is written, in one paragraph.
    write_json(tmp_path / "in", "c.json", ['{"uid": "u4", "action": 7, "day": "2024-01-03"}'])
    v3 = pipeline(tmp_path, "uid STRING, action INT, score DOUBLE, `day` STRING", "uid, action, score, `day`")
    bad = run_cli("-f", str(v3), "--once", *checkpoints)
    assert bad.code == 2, bad.err
    line = bad.error_line
    assert "'lake.user_activity'" in line and "column 'action'" in line and "holds string" in line, bad.err
    assert "metastore.table" in line and "Traceback" not in bad.err
    assert lake_files(tmp_path) == files

    got = spark_sql(tmp_path, "SELECT uid, action, coalesce(cast(score AS STRING), 'NULL'), `day` "
                              "FROM lake.user_activity ORDER BY uid; SHOW PARTITIONS lake.user_activity")
    assert got == ["u1\tview\tNULL\t2024-01-01", "u2\tclick\tNULL\t2024-01-02", "u3\tbuy\t2.5\t2024-01-02",
                   "day=2024-01-01", "day=2024-01-02"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def beeline(port: int, query: str) -> list[str]:
    proc = subprocess.run([str(SPARK_BIN / "beeline"), "-u", f"jdbc:hive2://127.0.0.1:{port}",
                           "--silent=true", "--outputformat=csv2", "-e", query],
                          env=job_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Lines start with beeline's prompt when its input is not a terminal.
    return [re.sub(r"^\d+: jdbc:hive2://[^>]*> ", "", line) for line in proc.stdout.splitlines() if line.strip()]


def wait_for(predicate, timeout: float, what: str, proc=None, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the job ended (exit {proc.returncode}) before {what}: "
                                 f"{log.read_text()[-3000:] if log else ''}")
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def committed(tmp_path: Path) -> set[str]:
    return {p.name for p in (tmp_path / "lake" / "_streamsql").glob("*/committed-*")}


def test_thrift_server_queries_the_lake_while_the_job_writes(tmp_path):
    port = free_port()
    write_json(tmp_path / "in", "a.json", ['{"uid": "u1", "action": "view", "day": "2024-01-01"}'])
    sql = pipeline(tmp_path, "uid STRING, action STRING, `day` STRING", "uid, action, `day`",
                   extra_set=f"SET 'streamsql.thriftserver.port' = '{port}';")
    # The same lake, without the Thrift server (it would ask for the same port).
    sql.with_name("other.sql").write_text(sql.read_text().replace(f"SET 'streamsql.thriftserver.port' = '{port}';", ""))
    log = tmp_path / "job.err"
    with open(log, "w") as err_file:  # a file, not a pipe: a long run must never block on it
        proc = subprocess.Popen([sys.executable, str(MAIN), "-f", str(sql), "--checkpoint-dir", str(tmp_path / "ck")],
                                cwd=ROOT, env=job_env(), text=True, stdout=subprocess.DEVNULL, stderr=err_file)
    try:
        wait_for(lambda: "committed-0" in committed(tmp_path), 240, "the first batch", proc, log)
        assert beeline(port, "SELECT uid, `day` FROM lake.user_activity ORDER BY uid") == ["uid,day", "u1,2024-01-01"]
        # A second process cannot open the embedded Derby the job holds: one clear line, exit 3.
        other = run_cli("-f", str(sql.with_name("other.sql")), "--once", "--checkpoint-dir", str(tmp_path / "ck2"))
        assert other.code == 3, other.err
        assert "in use by another process" in other.error_line and "Traceback" not in other.err
        # A batch into an existing partition is visible to the next query (no stale listing).
        write_json(tmp_path / "in", "b.json", ['{"uid": "u2", "action": "buy", "day": "2024-01-01"}',
                                               '{"uid": "u3", "action": "buy", "day": "2024-01-05"}'])
        wait_for(lambda: any(re.fullmatch(r"committed-[1-9]\d*", n) for n in committed(tmp_path)), 120,
                 "the second batch", proc, log)
        assert beeline(port, "SELECT uid, `day` FROM lake.user_activity ORDER BY uid") == \
            ["uid,day", "u1,2024-01-01", "u2,2024-01-01", "u3,2024-01-05"]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    err = log.read_text()
    assert proc.returncode == 0, err[-3000:]
    assert f"Thrift JDBC server at jdbc:hive2://127.0.0.1:{port}" in err


LAKE_YAML = """\
name: orders_to_lake
vars:
  workdir: /tmp/unused
checkpoint_dir: "{{ workdir }}/checkpoints"
spark:
  streamsql.metastore.dir: "{{ workdir }}/metastore"
statements:
  - |
    CREATE TABLE orders (
      orderId STRING,
      uid STRING,
      amount DECIMAL(10, 2),
      orderTime TIMESTAMP(3),
      orderDay AS CAST(CAST(orderTime AS DATE) AS STRING)
    ) WITH (
      'connector' = 'kafka',
      'topic' = '{{ topic }}',
      'properties.bootstrap.servers' = '{{ bootstrap }}',
      'scan.startup.mode' = 'earliest-offset',
      'format' = 'json'
    )
  - |
    CREATE TABLE orders_lake (
      orderId STRING,
      uid STRING,
      amount DECIMAL(10, 2),
      orderTime TIMESTAMP(3),
      orderDay STRING
    ) PARTITIONED BY (orderDay) WITH (
      'connector' = 'filesystem',
      'path' = '{{ workdir }}/lake/orders',
      'format' = 'parquet',
      'metastore.table' = 'lake.orders'
    )
  - INSERT INTO orders_lake SELECT orderId, uid, amount, orderTime, orderDay FROM orders
"""


@pytest.mark.kafka
def test_yaml_kafka_to_lake_once_as_the_multi_hop_example_does(spark, kafka_bootstrap, tmp_path):
    """The lake hop of examples/multi_hop: Kafka JSON → a camelCase-partitioned lake table
    with DECIMAL and TIMESTAMP columns, two --once runs, read back through the metastore."""
    from tests.support.kafka_io import produce, topic_name

    topic = topic_name("orders")
    (tmp_path / "pipeline.yaml").write_text(LAKE_YAML)
    variables = ["--var", f"workdir={tmp_path}", "--var", f"topic={topic}", "--var", f"bootstrap={kafka_bootstrap}"]

    def order(n, day):
        return str(n), {"orderId": f"o{n}", "uid": f"u{n % 2}", "amount": f"{n}.50", "orderTime": f"{day} 10:00:00"}

    produce(spark, kafka_bootstrap, topic, [order(1, "2024-03-01"), order(2, "2024-03-02")])
    first = run_cli("--pipeline", str(tmp_path / "pipeline.yaml"), "--once", *variables)
    assert first.code == 0, first.err
    produce(spark, kafka_bootstrap, topic, [order(3, "2024-03-02")])
    second = run_cli("--pipeline", str(tmp_path / "pipeline.yaml"), "--once", *variables)
    assert second.code == 0, second.err
    assert "batch 1 " in second.err  # continued from its checkpoint

    got = spark_sql(tmp_path, "SELECT orderId, amount, cast(orderTime AS STRING), orderDay FROM lake.orders "
                              "ORDER BY orderId; SHOW PARTITIONS lake.orders", ms=tmp_path / "metastore")
    assert got == ["o1\t1.50\t2024-03-01 10:00:00\t2024-03-01", "o2\t2.50\t2024-03-02 10:00:00\t2024-03-02",
                   "o3\t3.50\t2024-03-02 10:00:00\t2024-03-02", "orderDay=2024-03-01", "orderDay=2024-03-02"]


def test_killed_job_restarted_leaves_every_row_exactly_once(spark, tmp_path):
    """kill -9 in the middle of a run of micro-batches, then a --once restart: the lake holds
    each input row once (replayed batches are finished or skipped, never written twice)."""
    for n in range(12):
        write_json(tmp_path / "in", f"f{n:02d}.json",
                   [f'{{"uid": "u{n}-{i}", "action": "a", "day": "2024-01-0{1 + i % 2}"}}' for i in range(3)])
    sql = pipeline(tmp_path, "uid STRING, action STRING, `day` STRING", "uid, action, `day`")
    sql.write_text(sql.read_text().replace("'format' = 'json')", "'format' = 'json', 'source.max-files-per-trigger' = '1')"))
    log = tmp_path / "job.err"
    with open(log, "w") as err_file:
        proc = subprocess.Popen([sys.executable, str(MAIN), "-f", str(sql), "--checkpoint-dir", str(tmp_path / "ck")],
                                cwd=ROOT, env=job_env(), stdout=subprocess.DEVNULL, stderr=err_file)
    try:
        wait_for(lambda: any(re.fullmatch(r"committed-([2-9]|1\d)", n) for n in committed(tmp_path)), 300,
                 "three batches", proc, log)
    finally:
        kill_job_tree(proc)
    written_before = len(lake_files(tmp_path))
    assert 3 <= written_before < 24, "the kill should land in the middle of the run"

    again = run_cli("-f", str(sql), "--once", "--checkpoint-dir", str(tmp_path / "ck"))
    assert again.code == 0, again.err
    got = spark.read.parquet(str(tmp_path / "lake"))
    assert got.count() == 36
    assert got.select("uid").distinct().count() == 36
