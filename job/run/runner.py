"""The library entry point: load → parse → plan → connectors → run.

``run(RunOptions(...))`` returns an exit code and never calls ``sys.exit``, so tests and
an Airflow PythonOperator can call it directly; ``job.main`` is a thin wrapper.

Exit codes (docs/operations.md, "Exit codes"), each with one line on stderr saying which:

    0  ok (also after a graceful stop by SIGTERM/SIGINT)
    1  any other failure
    2  invalid pipeline: parse, template, validation, planning
    3  a source or sink cannot be reached
    4  a bad record under the 'fail' policy (the line shows its position and a preview)

Everything the run prints goes through a masker (:mod:`job.run.secrets`): secret values
never appear on stdout or stderr.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Optional, Sequence

from job.errors import (EXIT_BAD_RECORD, EXIT_INVALID, EXIT_OK, EXIT_OTHER, EXIT_UNREACHABLE, PipelineError)
from job.run.secrets import Masker, collect_secrets, drain_filters, filtered_fds, masked_output, wrap

DEFAULT_CHECKPOINT_DIR = ".checkpoints"
DEFAULT_STOP_TIMEOUT_S = 120.0
EXIT_LABELS = {
    EXIT_OK: "ok",
    EXIT_OTHER: "failed",
    EXIT_INVALID: "invalid pipeline",
    EXIT_UNREACHABLE: "source or sink unreachable",
    EXIT_BAD_RECORD: "bad record",
}
# Loggers whose ERROR lines repeat, with a JVM stack trace, a failure the runner reports
# itself in one line (a query that stopped, the task and stage that failed with it).
NOISY_LOGGERS = (
    "org.apache.spark.sql.execution.streaming",
    "org.apache.spark.sql.execution.datasources",
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.scheduler.TaskSchedulerImpl",
    "org.apache.spark.sql.kafka010",
    "org.apache.kafka",
    "org.apache.spark.api.python",
    "org.apache.spark.util.Utils",
)

# Lines the JVM and PySpark's own workers print on every run that say nothing to a user.
JVM_NOISE = (
    "WARNING: Using incubator modules: jdk.incubator.vector",
    "Streaming TransformWithStateInPandas Python worker",
    "Streaming TransformWithStateInPython Python worker",
)


@dataclass
class RunOptions:
    statements: Sequence[str] = ()
    files: Sequence[str] = ()
    pipeline: Optional[str] = None
    variables: dict = field(default_factory=dict)
    once: bool = False
    dry_run: bool = False
    explain: bool = False
    checkpoint_dir: Optional[str] = None
    verbose: bool = False
    master: Optional[str] = None
    metrics_port: Optional[int] = None
    metrics_file: Optional[str] = None
    stop_timeout: float = DEFAULT_STOP_TIMEOUT_S
    # Library callers: set this event to stop the run gracefully, as SIGTERM does.
    stop_event: Optional[threading.Event] = None


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

    def request(self, why: str = "stop requested") -> None:
        if not self._requested:
            self._requested = True
            print(f"streamsql: {why}, stopping at the next batch boundary (send it again to stop at once)",
                  file=self.err or sys.stderr, flush=True)

    def install(self) -> None:
        def handler(signum, _frame):
            name = signal.Signals(signum).name
            self._signals += 1
            if self._signals > 1:
                try:
                    print(f"streamsql: received {name} again, stopping at once", file=self.err or sys.stderr, flush=True)
                    drain_filters()
                finally:
                    os._exit(128 + signum)
            self.request(f"received {name}")
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
            self._hook_manager = jvm.org.apache.hadoop.util.ShutdownHookManager.get()
            self._hook_manager.addShutdownHook(self._hook, JVM_HOOK_PRIORITY, int(timeout) + 30,
                                               jvm.java.util.concurrent.TimeUnit.SECONDS)
        except Exception:  # noqa: BLE001 - without it a signal just ends the run abruptly
            self._hook = None

    def finished(self) -> None:
        """The run is over: release a JVM shutdown that waits for it, drop the hook."""
        hook = getattr(self, "_hook", None)
        if hook is not None:
            hook.done.set()
            try:
                self._hook_manager.removeShutdownHook(hook)
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

    # Hadoop keeps hooks in a hash set: py4j forwards these to Python too.
    def hashCode(self) -> int:
        return id(self) & 0x7FFFFFFF

    def equals(self, other) -> bool:
        return other is self

    def toString(self) -> str:
        return "streamsql graceful stop"

    class Java:
        implements = ["java.lang.Runnable"]


def run(options: RunOptions, out=None, err=None) -> int:
    """Run a pipeline; returns the documented exit code."""
    masker = Masker()
    if err is None and under_spark_submit():
        err = jvm_stderr()  # spark-submit merges the Python driver's stderr into stdout
    # Called as the command line (the process's own stdout/stderr, no JVM yet): filter
    # the file descriptors too, so that the JVM we launch is masked and kept quiet.
    own_fds = out is None and err is None and not jvm_running()
    drop = () if options.verbose else JVM_NOISE
    with filtered_fds(masker, drop, enabled=own_fds), masked_output(masker):
        out = wrap(out, masker) if out is not None else sys.stdout
        err = wrap(err, masker) if err is not None else sys.stderr
        try:
            return _run(options, out, err, masker)
        except PipelineError as exc:
            # Mask before render() cuts the statement preview: a cut secret is no longer
            # recognisable as one.
            for attr in ("message", "statement", "hint"):
                if getattr(exc, attr, None):
                    setattr(exc, attr, masker.mask(getattr(exc, attr)))
            return report_failure(exc.exit_code, exc.render(), err)
        except KeyboardInterrupt:
            return report_failure(EXIT_OTHER, "interrupted", err)
        except Exception as exc:  # noqa: BLE001 - every failure ends in one line and a code
            if options.verbose:
                traceback.print_exc(file=err)
            return report_failure(EXIT_OTHER, unexpected_message(exc, masker), err)
        finally:
            try:
                out.flush()
                err.flush()
            except Exception:  # noqa: BLE001
                pass


def report_failure(code: int, message: str, err) -> int:
    text = " ".join(message.split())  # one line, whatever the message held
    print(f"error (exit {code}, {EXIT_LABELS.get(code, 'failed')}): {text}", file=err, flush=True)
    return code


def unexpected_message(exc: BaseException, masker: Optional[Masker] = None) -> str:
    """One line for an exception nobody turned into a PipelineError: its type and first
    line, and for a Java exception the chain of causes (the root cause says most).
    Secrets are masked before anything is cut short."""
    from job.run.analyze import first_line

    mask = masker.mask if masker is not None else (lambda t: t)
    causes = [shorten(mask(c)) for c in java_causes(exc)]
    if len(causes) > 4:
        causes = causes[:2] + ["…"] + causes[-2:]
    if causes:
        return "; caused by: ".join(causes)
    try:
        text = mask(str(exc))
    except Exception:  # noqa: BLE001 - a py4j error whose JVM is gone cannot even describe itself
        text = "the Spark driver JVM is gone"
    return f"{type(exc).__name__}: {shorten(first_line(text))}" if text else type(exc).__name__


def shorten(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def java_causes(exc: BaseException, limit: int = 12) -> list[str]:
    """'Type: message' for a py4j Java exception and its causes (at most ``limit``)."""
    throwable = getattr(exc, "java_exception", None)
    out: list[str] = []
    try:
        while throwable is not None and len(out) < limit:
            message = throwable.getMessage()
            text = f"{throwable.getClass().getSimpleName()}: {message}" if message else throwable.getClass().getSimpleName()
            text = " ".join(str(text).split())
            if not out or text not in out[-1]:
                out.append(text)
            cause = throwable.getCause()
            throwable = None if cause is None or cause.equals(throwable) else cause
    except Exception:  # noqa: BLE001 - the JVM is gone; the Python text will do
        return out
    return out


def _run(options: RunOptions, out, err, masker: Masker) -> int:
    from job.pipeline.load import load_statements
    from job.run.program import build_program

    loaded = load_statements(args=options.statements, files=options.files, pipeline=options.pipeline,
                             variables=options.variables)
    masker.add(loaded.secrets)
    program = build_program(loaded)
    masker.add(collect_secrets(program))
    from job.run.availability import settings as availability_settings

    availability_settings(program.conf)  # a bad 'streamsql.source.unavailable' fails before Spark starts
    checkpoint_dir = options.checkpoint_dir or program.checkpoint_dir or os.path.join(DEFAULT_CHECKPOINT_DIR, program.name)

    from job.run.sources import check_endpoints

    if not options.dry_run:
        check_endpoints(program)

    from job.run.queries import explain_lines, plan_queries
    from job.run.session import build_session, catalog_conf

    conf = {**program.conf, **catalog_conf(program, options.dry_run)}
    spark = build_session(program.name, session_conf(conf, options.verbose), verbose=options.verbose,
                          master=options.master)
    quiet_jvm_logs(spark, options.verbose)
    plans = plan_queries(spark, program, once=options.once, checkpoint_dir=checkpoint_dir, offline=options.dry_run)
    from job.run.compat import check_checkpoints

    # A checkpoint written by an incompatible version of a query: refuse before running.
    check_checkpoints(program, plans, write=not options.dry_run)
    if options.dry_run or options.explain:
        for line in explain_lines(program, plans, checkpoint_dir):
            print(line, file=out)
        out.flush()
        if options.dry_run:
            return EXIT_OK
    from job.connectors.registry import start_services

    start_services(spark, program.conf, err)  # e.g. the lake's Thrift JDBC server
    return execute(spark, program, plans, options, err)


def execute(spark, program, plans, options: RunOptions, err) -> int:
    """Start the planned queries (wave by wave with --once), report, stop on a signal."""
    from job.run.progress import ProgressReporter
    from job.run.queries import start_queries, waves

    exporters = open_exporters(options)
    names, sink_keys = [], {}
    for plan in plans:
        names.append(plan.name)
        sink_keys[plan.name] = plan.checkpoint
        for dl_name, _writer, checkpoint in plan.dead_letters:
            names.append(f"{plan.name}-{dl_name}")
            sink_keys[f"{plan.name}-{dl_name}"] = checkpoint
    reporter = ProgressReporter.attach(spark, err, queries=set(names), sink_keys=sink_keys, exporters=exporters)
    from job.run.availability import Watchdog

    watchdog = Watchdog.start(program, err)  # 'streamsql.source.unavailable': wait for a broker, or exit 3
    from job.run.restarts import Restarter

    restarter = Restarter(plans, err)  # a query that failed transiently starts again from its checkpoint
    stop = StopSignal(err, options.stop_event)
    stop.install()
    if under_spark_submit():
        stop.install_jvm_hook(spark, options.stop_timeout)
    status = "failed"
    started: list = []
    started_names: list = []
    # As in Flink, a pipeline whose every source ends (bounded tables: a jdbc scan,
    # 'scan.bounded.mode' = 'latest-offset', a datagen with 'number-of-rows') runs to
    # completion; --once makes any pipeline do so.
    once = options.once or (bool(plans) and all(plan.bounded for plan in plans))
    try:
        for wave in (waves(plans, program) if once else [plans]):
            if stop.requested:
                break
            queries = start_queries(wave, program, once=once)
            started += queries
            started_names += [q.name for q in queries]
            supervise(queries, stop, options.stop_timeout, sink_keys, watchdog=watchdog, restarter=restarter)
            if once and not stop.requested:
                from job.run.end_of_input import close_windows

                # The end of a bounded input: event time moves past every open window.
                closing = close_windows(wave, queries)
                if closing:
                    started += closing
                    supervise(closing, stop, options.stop_timeout, sink_keys, watchdog=watchdog, restarter=restarter)
        status = "stopped" if stop.requested else "ok"
    finally:
        from job.run.metrics import STOP_GATE

        STOP_GATE.open(sink_keys.values())
        watchdog.stop()
        for q in started + restarter.started:
            try:
                if q.isActive:
                    q.stop()
            except Exception:  # noqa: BLE001 - the SparkContext is already gone
                pass
        reporter.drain(started_names, timeout=10.0)
        reporter.summary(status)
        reporter.detach()
        stop.uninstall()
        stop.finished()
    return EXIT_OK


def supervise(queries, stop: StopSignal, stop_timeout: float, sink_keys: Optional[dict] = None,
              poll: float = 0.2, watchdog=None, restarter=None) -> None:
    """Wait until every query ends; the first failure stops the rest and is raised; a stop
    request stops them all at a batch boundary; a broker down for longer than the
    watchdog allows raises (exit 3; the caller stops the queries)."""
    from job.run.queries import query_failure

    while True:
        if watchdog is not None:
            watchdog.check()
        failed = next((q for q in queries if not q.isActive and q.exception() is not None), None)
        if failed is not None and not stop.requested and restarter is not None:
            replacement = restarter.restart(failed)
            if replacement is not None:
                queries[queries.index(failed)] = replacement
                continue
        if failed is not None and not (stop.requested and is_interruption(failed.exception())):
            for q in queries:
                if q.isActive:
                    q.stop()
            raise query_failure(failed)
        if all(not q.isActive for q in queries):
            return
        if stop.requested:
            stopped_by_us = stop_at_batch_boundary(queries, stop_timeout, sink_keys or {})
            # A query we stopped while it ran ends with whatever its source threw when
            # interrupted (a Python data source: "no cause message"); its batch was committed
            # or will be redone, so that is a clean stop. Only earlier failures count.
            failed = next((q for q in queries if q.exception() is not None and q.name not in stopped_by_us
                           and not is_interruption(q.exception())), None)
            if failed is not None:
                raise query_failure(failed)
            return
        time.sleep(poll)


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


def stop_at_batch_boundary(queries, timeout: float, sink_keys: dict) -> set:
    """Stop each query between two micro-batches.

    ``StreamingQuery.stop()`` interrupts a running batch (Spark then redoes it after a
    restart, so the checkpoint stays consistent either way); to let the batch in flight
    finish — its sink writes complete and its offsets committed — each query is stopped
    only when its trigger is idle or the batch that was running has been committed.
    Batches start back to back while data is waiting, so the one after it may already
    have begun: the stop gate (``job.run.metrics.STOP_GATE``) keeps it from writing to a
    ``foreachBatch`` sink, and ``stop()`` cancels the rest of it. After ``timeout``
    seconds a query is stopped regardless. Returns the names of the queries it stopped
    while they were still running.
    """
    from job.run.metrics import STOP_GATE

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
            if not done:
                last = (q.lastProgress or {}).get("batchId", -1)
                _current, busy = in_flight_batch(q)
                done = not busy or last >= targets[q.name]
            if done or time.monotonic() >= deadline:
                if q.isActive:
                    stopped.add(q.name)
                q.stop()
                pending.remove(q)
        if pending:
            time.sleep(0.005)
    return stopped


def is_interruption(exc) -> bool:
    """True for the ways a query ends when we stop it: the stop gate, an interrupt."""
    from job.run.metrics import STOP_MARKER

    text = str(getattr(exc, "desc", exc))
    return any(s in text for s in (STOP_MARKER, "InterruptedException", "InterruptedIOException", "ClosedByInterruptException",
                                   "cancelled because SparkContext was shut down", "Job aborted due to stage failure: Task"
                                   " killed"))


def open_exporters(options: RunOptions) -> list:
    from job.run.metrics import MetricsFile, PrometheusExporter

    exporters = []
    if options.metrics_file:
        exporters.append(MetricsFile(options.metrics_file))
    if options.metrics_port is not None:
        try:
            exporters.append(PrometheusExporter(options.metrics_port))
        except OSError as exc:
            for e in exporters:
                e.close()
            raise PipelineError(f"cannot serve metrics on 127.0.0.1:{options.metrics_port}: {exc.strerror or exc}",
                                hint="choose a free port with --metrics-port", exit_code=EXIT_OTHER) from None
    return exporters


# ------------------------------------------------------------------------- logging

def session_conf(conf: dict, verbose: bool) -> dict:
    """The pipeline's conf, plus conf/log4j2.properties for a driver JVM this process is
    about to launch (spark-submit.sh passes it itself): Spark's INFO lines stay off unless
    --verbose."""
    from job.run.session import ROOT

    log4j = ROOT / "conf" / "log4j2.properties"
    if verbose or not log4j.exists() or jvm_running():
        return dict(conf)
    if any(k in conf for k in ("spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions")):
        return dict(conf)
    return {**conf, "spark.driver.defaultJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}"}


def under_spark_submit() -> bool:
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


class JvmTextStream:
    """A text stream onto a ``java.io.PrintStream`` of the driver JVM."""

    def __init__(self, print_stream) -> None:
        self._ps = print_stream

    def write(self, text: str) -> int:
        self._ps.print(text)
        return len(text)

    def flush(self) -> None:
        self._ps.flush()


def jvm_stderr():
    """The JVM's ``System.err`` (spark-submit's own stderr), or None.

    spark-submit starts the Python driver with its stderr redirected into its stdout, so a
    message on Python's stderr would reach the caller on stdout; the JVM's stderr is the
    real one."""
    try:
        from pyspark import SparkContext

        SparkContext._ensure_initialized()
        return JvmTextStream(SparkContext._jvm.System.err)
    except Exception:  # noqa: BLE001 - fall back to Python's stderr
        return None


def jvm_running() -> bool:
    """True under spark-submit (the JVM started this process) or with a session already up."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        return True
    try:
        from pyspark import SparkContext

        return SparkContext._active_spark_context is not None
    except ImportError:
        return False


def quiet_jvm_logs(spark, verbose: bool) -> None:
    """Without --verbose, silence the loggers that repeat a failure we report ourselves
    (with stack traces that may quote option values)."""
    if verbose:
        return
    try:
        jvm = spark._jvm
        level = jvm.org.apache.logging.log4j.Level.OFF
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        for name in NOISY_LOGGERS:
            configurator.setLevel(name, level)
    except Exception:  # noqa: BLE001 - another logging backend: keep its settings
        pass
