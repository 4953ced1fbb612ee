"""A run's process ends with the run's exit code within a bound once the result is known,
even when the driver JVM would never finish exiting (issue: a --once drain over a million
keys hung in RocksDB's exit handlers after printing its summary).

The root cause is tested first: after a run no state store (RocksDB instance) is left open
in the JVM. The bound is then tested with a driver JVM made to hang at exit (a Spark plugin
whose shutdown hook never returns), in both ways a run starts: Python starting the JVM
(``python job/main.py``, the ``streamsql`` script) and spark-submit starting Python
(``./spark-submit.sh``)."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.runs import MAIN, ROOT, job_env, run_inline

HANG_SOURCE = ROOT / "tests" / "support" / "hang_at_exit" / "HangAtExit.java"
PLUGIN = "streamsql.tests.HangAtExit"
BOUND_S = 3


def loaded_state_stores(spark) -> int:
    """How many state store providers (each a RocksDB instance) the JVM holds open."""
    jvm = spark._jvm
    cls = jvm.java.lang.Class.forName("org.apache.spark.sql.execution.streaming.state.StateStore$")
    field = cls.getDeclaredField("loadedProviders")
    field.setAccessible(True)
    return field.get(cls.getField("MODULE$").get(None)).size()


def test_a_run_closes_every_state_store_it_opened(spark, tmp_path):
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.json").write_text("".join(f'{{"uid": "u{i}", "acc": {i % 7}}}\n' for i in range(500)))
    r = run_inline(statements=[
        f"CREATE TABLE src (uid STRING, acc INT) WITH ('connector' = 'filesystem', 'path' = '{data}', 'format' = 'json')",
        "CREATE TABLE counts (acc INT, n BIGINT, PRIMARY KEY (acc) NOT ENFORCED) WITH ('connector' = 'blackhole')",
        "INSERT INTO counts SELECT acc, COUNT(*) FROM src GROUP BY acc"], once=True, checkpoint_dir=str(tmp_path / "cp"))
    assert r.code == 0, r.err
    assert "ok: 1 batches, 500 rows in, 7 rows out" in r.err
    assert loaded_state_stores(spark) == 0
    assert not spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.isMaintenanceRunning()


@pytest.fixture(scope="module")
def hang_plugin() -> Path:
    """The plugin's jar, compiled against PySpark's jars (kept per source hash)."""
    import pyspark

    digest = hashlib.sha256(HANG_SOURCE.read_bytes()).hexdigest()[:12]
    jar = ROOT / "build" / "test-hang-at-exit" / digest / "hang-at-exit.jar"
    if not jar.exists():
        classpath = str(Path(pyspark.__file__).parent / "jars" / "*")
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["javac", "-d", f"{tmp}/classes", "-cp", classpath, str(HANG_SOURCE)], check=True)
            subprocess.run(["jar", "cf", f"{tmp}/hang.jar", "-C", f"{tmp}/classes", "."], check=True)
            jar.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(f"{tmp}/hang.jar", jar)
    return jar


def pipeline(tmp_path: Path, rows: str) -> list[str]:
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.json").write_text(rows)
    return [f"CREATE TABLE src (uid STRING, n INT) WITH ('connector' = 'filesystem', 'path' = '{data}', 'format' = 'json')",
            "CREATE TABLE sink (uid STRING, n INT) WITH ('connector' = 'blackhole')",
            "INSERT INTO sink SELECT uid, n FROM src", "--once", "--checkpoint-dir", str(tmp_path / "cp")]


def timed(command: list[str], **env) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, env=job_env(STREAMSQL_EXIT_TIMEOUT_S=str(BOUND_S), **env), text=True,
                          capture_output=True, timeout=600)
    return proc, time.monotonic() - started


@pytest.mark.slow
def test_python_waits_for_its_driver_jvm_and_prints_nothing_else(tmp_path):
    # No hang: the JVM exits by itself within the bound, and its end closing PySpark's
    # accumulator connection prints no traceback (it did: "Exception occurred during
    # processing of request … EOFError").
    proc, _ = timed([str(ROOT / ".venv" / "bin" / "python"), str(MAIN), *pipeline(tmp_path, '{"uid": "a", "n": 1}\n')])
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stderr.splitlines() if not line.startswith("[sql-pipeline-1-sink] ")] == []


@pytest.mark.slow
def test_python_ends_a_driver_jvm_that_does_not_exit(hang_plugin, tmp_path):
    plugin = [f"SET 'spark.driver.extraClassPath' = '{hang_plugin}'", f"SET 'spark.plugins' = '{PLUGIN}'"]
    proc, _ = timed([str(ROOT / ".venv" / "bin" / "python"), str(MAIN), *plugin,
                     *pipeline(tmp_path, '{"uid": "a", "n": 1}\n')])
    assert proc.returncode == 0, proc.stderr
    assert "ok: 1 batches, 1 rows in, 1 rows out" in proc.stderr
    assert f"but the Spark driver JVM" in proc.stderr and f"had not exited {BOUND_S} s later; stopped it" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_spark_submit_sh_ends_a_hanging_jvm_with_the_runs_exit_code(hang_plugin, tmp_path):
    # A bad record under the default 'fail' policy: exit 4, which the wrapper must keep.
    proc, _ = timed([str(ROOT / "spark-submit.sh"), "--conf", f"spark.driver.extraClassPath={hang_plugin}",
                     "--conf", f"spark.plugins={PLUGIN}", "--", *pipeline(tmp_path, '{"uid": "a", "n": 1}\nnot json\n')])
    assert proc.returncode == 4, proc.stderr
    assert "error (exit 4" in proc.stderr
    assert f"streamsql: the run ended (exit 4) but the Spark driver JVM" in proc.stderr
    assert proc.stderr.rstrip().endswith("stopped it"), proc.stderr[-500:]


UNBOUNDED = ["CREATE TABLE t (a INT) WITH ('connector' = 'datagen', 'rows-per-second' = '5')",
             "CREATE TABLE sink (a INT) WITH ('connector' = 'blackhole')", "INSERT INTO sink SELECT a FROM t"]


@pytest.mark.slow
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_spark_submit_sh_passes_a_signal_on_and_exits_0_after_the_graceful_stop(tmp_path, signal_name):
    # As cron's timeout, Airflow or a terminal's Ctrl-C sends it to the wrapper: the run
    # stops at a batch boundary and the wrapper exits with the run's 0 (the JVM's own
    # exit code after SIGTERM is 143). SIGINT once reached the datagen source's Python
    # worker too, which died mid-batch and failed the query (exit 1).
    import signal
    import threading

    proc = subprocess.Popen([str(ROOT / "spark-submit.sh"), *UNBOUNDED, "--checkpoint-dir", str(tmp_path / "cp")],
                            cwd=ROOT, env=job_env(), text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines: list[str] = []
    first_batch = threading.Event()

    def read():
        for line in proc.stderr:
            lines.append(line)
            if "] batch 1 |" in line:
                first_batch.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert first_batch.wait(300), "".join(lines[-20:])
        proc.send_signal(getattr(signal, signal_name))
        assert proc.wait(180) == 0, "".join(lines[-20:])
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(30)
    text = "".join(lines)
    assert "stopping at the next batch boundary" in text
    assert "] stopped: " in lines[-1], lines[-3:]
    assert "Traceback" not in text
