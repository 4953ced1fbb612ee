"""Stopping a run: on SIGTERM/SIGINT (or a library caller's event), every query stops
between two micro-batches; a second signal stops at once.

Under spark-submit the signal reaches the driver JVM first, so a JVM shutdown hook asks
for the same graceful stop and holds the JVM until the run has ended.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Optional

from job.run.secrets import drain_filters


class StopSignal:
    """First SIGTERM/SIGINT: stop at a batch boundary; second: stop at once.

    ``external``: an event a library caller sets to ask for the same graceful stop.
    """

    def __init__(self, err=None, external: Optional[threading.Event] = None) -> None:
        self._requested = False
        self._signals = 0
        self.err = err
        self.external = external
        self._previous: dict = {}

    @property
    def requested(self) -> bool:
        if not self._requested and self.external is not None and self.external.is_set():
            self.request("stop requested")
        return self._requested

    def request(self, why: str = "stop requested", *, in_handler: bool = False) -> None:
        if not self._requested:
            self._requested = True
            self._say(f"streamsql: {why}, stopping at the next batch boundary (send it again to stop at once)",
                      in_handler)

    def _say(self, text: str, in_handler: bool = False):
        """Print ``text``; from a signal handler, on a thread of its own.

        A handler runs on the main thread between two bytecodes, possibly in the middle of
        a py4j call waiting for the JVM's answer; printing through the JVM (``err`` is
        spark-submit's stderr) from there re-entered that call's socket: py4j logged
        "reentrant call" with two tracebacks on the user's terminal. PySpark gives every
        Python thread its own connection to the JVM."""
        def say():
            try:
                print(text, file=self.err or sys.stderr, flush=True)
            except Exception:  # noqa: BLE001 - the JVM is going away: say it here instead
                print(text, file=sys.stderr, flush=True)
        if not in_handler:
            return say()
        thread = threading.Thread(target=say, name="streamsql-stop-message", daemon=True)
        thread.start()
        return thread

    def install(self) -> None:
        def handler(signum, _frame):
            name = signal.Signals(signum).name
            self._signals += 1
            if self._signals > 1:
                try:
                    self._say(f"streamsql: received {name} again, stopping at once", in_handler=True).join(2)
                    drain_filters()
                finally:
                    os._exit(128 + signum)
            self.request(f"received {name}", in_handler=True)
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._previous[sig] = signal.signal(sig, handler)
            except ValueError:  # not the main thread (e.g. inside a test runner thread)
                pass

    def install_jvm_hook(self, spark, timeout: float) -> None:
        """Under spark-submit the signal goes to the driver JVM, our parent, whose shutdown
        hooks would stop the SparkContext under the running queries. A Hadoop shutdown
        hook of higher priority than Spark's asks this run to stop at a batch boundary and
        holds the JVM's shutdown until it has (or ``timeout`` passed)."""
        try:
            from pyspark.java_gateway import ensure_callback_server_started

            gateway = spark.sparkContext._gateway
            ensure_callback_server_started(gateway)
            jvm = spark._jvm
            self._hook = _JvmShutdownHook(self, timeout)
            # Hadoop finds a hook to remove by the Java reference it was given, and py4j
            # makes a new Java proxy each time a Python object crosses: removing the
            # Python hook itself never matched, so the JVM still ran it at exit, after
            # Python had gone ("ShutdownHook '$Proxy58' failed … Cannot obtain a new
            # communication channel" ending every --verbose run). A Java Thread around
            # it is one reference, given to both calls (Hadoop calls its run(), which
            # runs ours on Hadoop's own thread).
            self._jvm_hook = jvm.java.lang.Thread(self._hook, "streamsql graceful stop")
            self._hook_manager = jvm.org.apache.hadoop.util.ShutdownHookManager.get()
            self._hook_manager.addShutdownHook(self._jvm_hook, JVM_HOOK_PRIORITY, int(timeout) + 30,
                                               jvm.java.util.concurrent.TimeUnit.SECONDS)
        except Exception:  # noqa: BLE001 - without it a signal just ends the run abruptly
            self._hook = None

    def finished(self) -> None:
        """The run is over: release a JVM shutdown that waits for it, drop the hook."""
        hook = getattr(self, "_hook", None)
        if hook is not None:
            hook.done.set()
            try:
                self._hook_manager.removeShutdownHook(self._jvm_hook)
            except Exception:  # noqa: BLE001 - shutdown in progress
                pass
            self._hook = None

    def uninstall(self) -> None:
        for sig, previous in self._previous.items():
            try:
                signal.signal(sig, previous)
            except (ValueError, TypeError):
                pass
        self._previous.clear()


# Above Spark's own hook (FileSystem's 10 + 30), which stops the SparkContext.
JVM_HOOK_PRIORITY = 100


class _JvmShutdownHook:
    """A java.lang.Runnable (through py4j) that the JVM runs when it is shutting down."""

    def __init__(self, stop: StopSignal, timeout: float) -> None:
        self.stop = stop
        self.timeout = timeout
        self.done = threading.Event()

    def run(self) -> None:
        if not self.done.is_set():
            self.stop.request("the driver JVM is shutting down (a signal to spark-submit)")
            self.done.wait(self.timeout + 20)

    class Java:
        implements = ["java.lang.Runnable"]


def in_flight_batch(query) -> tuple[int, bool]:
    """(id of the micro-batch running or about to run, whether a trigger is active)."""
    try:
        busy = bool(query.status.get("isTriggerActive"))
    except Exception:  # noqa: BLE001 - the query ended meanwhile
        return -1, False
    try:  # the micro-batch Spark is running (or about to run): its execution context
        current = int(query._jsq.streamingQuery().getLatestExecutionContext().batchId())
    except Exception:  # noqa: BLE001 - not the classic JVM query: the last progress tells
        last = (query.lastProgress or {}).get("batchId")
        current = (last + 1) if last is not None else 0
    return current, busy


def stop_at_batch_boundary(queries, timeout: float, sink_keys: dict, immediate=()) -> set:
    """Stop each query between two micro-batches; the real-time queries named in
    ``immediate`` at once.

    A real-time query's batch is its checkpoint interval (30 s by default), and what it
    has written is already delivered: stopped, its state and offsets stay at the last
    checkpoint, and a restart reads the rest of the interval again, writing its changes
    again as the same upserts (at least once, idempotent per key, as Flink's upsert-kafka
    sink after a failure). Waiting for the interval's end would outlast a supervisor's stop
    timeout.

    ``StreamingQuery.stop()`` interrupts a running batch (Spark then redoes it after a
    restart, so the checkpoint stays consistent either way); to let the batch in flight
    finish — its sink writes complete and its offsets committed — each query is stopped
    only when its trigger is idle or the batch that was running has been committed.
    Batches start back to back while data is waiting, so the one after it may already
    have begun: the stop gate (``job.plan.sink_watch.STOP_GATE``) keeps it from writing to a
    ``foreachBatch`` sink, and ``stop()`` cancels the rest of it. After ``timeout``
    seconds a query is stopped regardless. Returns the names of the queries it stopped
    while they were still running.
    """
    from job.plan.sink_watch import STOP_GATE

    deadline = time.monotonic() + timeout
    targets = {}
    for q in queries:
        current, busy = in_flight_batch(q)
        targets[q.name] = current if busy else current - 1
        STOP_GATE.close(sink_keys.get(q.name), targets[q.name])
    pending = [q for q in queries if q.isActive]
    stopped = set()
    while pending:
        for q in list(pending):
            done = not q.isActive
            if not done and q.name not in immediate:
                last = (q.lastProgress or {}).get("batchId", -1)
                _current, busy = in_flight_batch(q)
                done = not busy or last >= targets[q.name]
            if done or q.name in immediate or time.monotonic() >= deadline:
                if q.isActive:
                    stopped.add(q.name)
                q.stop()
                pending.remove(q)
        if pending:
            time.sleep(0.005)
    return stopped


def is_interruption(exc) -> bool:
    """True for the ways a query ends when we stop it: the stop gate, an interrupt."""
    from job.plan.sink_watch import STOP_MARKER

    text = str(getattr(exc, "desc", exc))
    return any(s in text for s in (STOP_MARKER, "InterruptedException", "InterruptedIOException", "ClosedByInterruptException",
                                   "cancelled because SparkContext was shut down", "Job aborted due to stage failure: Task"
                                   " killed"))
