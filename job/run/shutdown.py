"""The end of a run: close the state stores, then make sure the process ends.

**State stores.** Spark never closes the state stores of a local executor: each stateful
operator's partitions keep their RocksDB instance open in Spark's ``StateStore`` registry
until the JVM exits. RocksDB's background threads (flushes and compactions, one pool for the
whole JVM) may still be working on those instances when the JVM calls the C library's
``exit()``, whose handlers destroy RocksDB's default environment and join those threads. A
job still running there waits for an instance nobody will close, and the process never
ends: the hang a ``--once`` drain over a million keys met after printing ``ok:``
(``exit()`` → ``rocksdb::ThreadPoolImpl::Impl::JoinThreads``). RocksDB's rule is that every
instance is closed before exit; closing one cancels its compactions and waits for its
flushes. :func:`close_state_stores` does that once the run's queries have all stopped.

**A bound on the exit.** Once the run's result is known the process exits with it within
:data:`EXIT_TIMEOUT_S` seconds, even if a native thread never ends. Who enforces that
depends on who started whom:

* under spark-submit the JVM is the parent: the driver writes the result to the file
  ``spark-submit.sh`` names in ``STREAMSQL_RESULT_FILE`` and tells it so (SIGUSR1); the
  wrapper waits for the JVM that long and then ends it, exiting with the result;
* run as ``streamsql`` / ``python -m job.main`` Python is the parent: :func:`end_own_jvm`
  closes the JVM's stdin (it exits on that) and waits for it the same time, then kills it.

Either way one line on stderr says so; nothing is hidden: the exit code is the run's.
"""
from __future__ import annotations

import os
import signal
import sys
import time

# Seconds a JVM may take to exit once the run's result is known. Spark's own shutdown
# (listeners, the context, the block manager) takes one or two; the rest is slack for a
# loaded machine. STREAMSQL_EXIT_TIMEOUT_S overrides it. spark-submit.sh, which enforces
# it for the driver it starts, reads it from the result file (report_result).
EXIT_TIMEOUT_S = 30.0
RESULT_FILE = "STREAMSQL_RESULT_FILE"
WRAPPER_PID = "STREAMSQL_WRAPPER_PID"
STATE_STORE = "org.apache.spark.sql.execution.streaming.state.StateStore"


def exit_timeout() -> float:
    try:
        return max(0.0, float(os.environ.get("STREAMSQL_EXIT_TIMEOUT_S", EXIT_TIMEOUT_S)))
    except ValueError:
        return EXIT_TIMEOUT_S


def close_state_stores(spark) -> bool:
    """Close every state store this JVM holds open (their RocksDB instances), once no
    streaming query of the session is running. Returns whether it closed them.

    The registry is the JVM's, shared by every session in it: with a query still active
    (a library caller running pipelines side by side) its stores stay open, since closing
    one under a running task would fail that task. A query started afterwards opens its
    stores again from their checkpoints, as after any restart."""
    try:
        if spark is None or spark.sparkContext._jsc is None or spark.streams.active:
            return False
        store = getattr(spark._jvm, STATE_STORE)
        # The maintenance threads first (they snapshot and clean up the same instances),
        # then every provider, each closing its RocksDB instance.
        store.stopMaintenanceTask()
        store.stop()
        return True
    except Exception:  # noqa: BLE001 - the JVM is already going away: nothing left to close
        return False


def report_result(code: int) -> None:
    """Under spark-submit.sh: hand the run's exit code and the exit bound (one line,
    "CODE SECONDS") to the wrapper, which bounds the JVM's exit from now on."""
    path, pid = os.environ.get(RESULT_FILE), os.environ.get(WRAPPER_PID)
    if not path or not pid:
        return
    try:
        with open(path, "w") as f:
            f.write(f"{code} {exit_timeout():g}\n")
        os.kill(int(pid), signal.SIGUSR1)
    except (OSError, ValueError):
        pass  # the wrapper is gone, or not ours: the JVM's own exit code stands


def end_own_jvm(code: int, err=None) -> None:
    """Python started the driver JVM (no spark-submit): let it exit, and end it if it has
    not within the bound, so that the run neither hangs nor leaves a JVM behind."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    if proc is None or proc.poll() is not None:
        return
    context = SparkContext._active_spark_context
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        # The JVM's end closes its accumulator connection; PySpark's server would print
        # that as an error with a traceback ("Exception occurred during processing of
        # request … EOFError"). Expected here, so not an error.
        server.server_shutdown = True
        server.handle_error = lambda *_args: None
    try:
        gateway.shutdown()  # py4j's connections; the JVM exits when its stdin closes
    except Exception:  # noqa: BLE001
        pass
    try:
        proc.stdin.close()
    except Exception:  # noqa: BLE001
        pass
    bound = exit_timeout()
    deadline = time.monotonic() + bound
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is not None:
        return
    try:  # the JVM leads a session of its own (job.run.session): end it and its workers
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()
    print(f"streamsql: the run ended (exit {code}) but the Spark driver JVM (pid {proc.pid}) had not exited "
          f"{bound:g} s later; stopped it", file=err or sys.stderr, flush=True)
