"""A run: load → parse → plan → start the queries, watch them, stop them.

``job.api.run(RunOptions(...))`` returns an exit code and never calls ``sys.exit``, so
tests and an Airflow PythonOperator can call it directly; ``job.main`` is a thin wrapper.

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

import json
import os
import sys
import threading
import traceback
from dataclasses import dataclass, field
from typing import Optional, Sequence

from job.errors import EXIT_OK, EXIT_OTHER, PipelineError
from job.run.failures import report_failure, unexpected_message
from job.run.jvm_output import JVM_NOISE, jvm_running, jvm_stderr, quiet_jvm_logs, session_conf, under_spark_submit
from job.run.secrets import Masker, collect_secrets, filtered_fds, masked_output, wrap
from job.run.stop import StopSignal, is_interruption, stop_at_batch_boundary

DEFAULT_CHECKPOINT_DIR = ".checkpoints"
DEFAULT_STOP_TIMEOUT_S = 120.0


@dataclass
class RunOptions:
    statements: Sequence[str] = ()
    files: Sequence[str] = ()
    pipeline: Optional[str] = None
    variables: dict = field(default_factory=dict)
    once: bool = False
    dry_run: bool = False
    explain: bool = False
    explain_format: str = "text"       # how --dry-run/--explain print the plan: 'text' or 'json'
    checkpoint_dir: Optional[str] = None
    verbose: bool = False
    master: Optional[str] = None
    metrics_port: Optional[int] = None
    metrics_host: str = "127.0.0.1"  # the address --metrics-port binds: this host only unless told
    metrics_file: Optional[str] = None
    stop_timeout: float = DEFAULT_STOP_TIMEOUT_S
    # Library callers: set this event to stop the run gracefully, as SIGTERM does.
    stop_event: Optional[threading.Event] = None


def run(options: RunOptions, out=None, err=None, program=None) -> int:
    """Run a pipeline (``program``: one already compiled from ``options``); returns the
    documented exit code."""
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
            return _run(options, out, err, masker, program)
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


def _run(options: RunOptions, out, err, masker: Masker, program=None) -> int:
    if program is None:
        from job.pipeline.load import load_statements
        from job.plan.program import build_program

        loaded = load_statements(args=options.statements, files=options.files, pipeline=options.pipeline,
                                 variables=options.variables)
        masker.add(loaded.secrets)  # before the program is checked: its errors quote statements
        program = build_program(loaded)
    masker.add(program.secrets)
    masker.add(collect_secrets(program))
    for printed in program.catalog.printed:  # SHOW / DESCRIBE, as Flink's SQL client prints them
        print(printed, file=out)
    out.flush()
    if not program.inserts:
        return EXIT_OK
    from job.run.availability import settings as availability_settings

    availability_settings(program.conf)  # a bad 'streamsql.source.unavailable' fails before Spark starts
    checkpoint_dir = options.checkpoint_dir or program.checkpoint_dir or os.path.join(DEFAULT_CHECKPOINT_DIR, program.name)

    from job.run.sources import check_endpoints

    if not options.dry_run:
        check_endpoints(program)

    from job.plan.queries import plan_queries
    from job.run.session import build_session, catalog_conf

    conf = {**program.conf, **catalog_conf(program, options.dry_run)}
    def session(master=None):
        spark = build_session(program.name, session_conf(conf, options.verbose), verbose=options.verbose,
                              master=master or options.master, force_master=master is not None)
        quiet_jvm_logs(spark, options.verbose)
        return spark

    explained: list = []

    def plan(spark, blocked=""):
        plans = plan_queries(spark, program, checkpoint_dir=checkpoint_dir, offline=options.dry_run,
                             once=options.once, real_time_blocked=blocked)
        # EXPLAIN INSERT …: its plan is printed, as --explain prints it, and it does not run.
        explained[:] = [p for p in plans if p.insert_index in program.explained]
        return [p for p in plans if p.insert_index not in program.explained]

    from pyspark.sql import SparkSession

    own_session = SparkSession.getActiveSession() is None
    spark = session()
    plans = plan(spark)
    if not options.dry_run:
        from job.run.real_time import fit

        # The task slots real-time queries hold: more threads in local mode (a new
        # session), micro-batch on a cluster too small for them.
        spark, plans = fit(spark, plans, err, rebuild=session, replan=plan, own_session=own_session)
    from job.run.compat import check_checkpoints

    if explained:
        _print_plans(program, explained, checkpoint_dir, options, out)
        if not plans:
            return EXIT_OK
    # A checkpoint written by an incompatible version of a query: refuse before running.
    check_checkpoints(program, plans, write=not options.dry_run)
    from job.run.real_time import check_continuation

    check_continuation(plans)  # a real-time checkpoint continued in micro-batch mode
    if options.dry_run or options.explain:
        _print_plans(program, plans, checkpoint_dir, options, out)
        if options.dry_run:
            return EXIT_OK
    from job.connectors.registry import start_services

    start_services(spark, program.conf, err)  # e.g. the lake's Thrift JDBC server
    return execute(spark, program, plans, options, err)


def _print_plans(program, plans, checkpoint_dir, options: RunOptions, out) -> None:
    from job.plan.explain import explain_json, explain_lines

    if options.explain_format == "json":
        print(json.dumps(explain_json(program, plans, checkpoint_dir), indent=1, ensure_ascii=False), file=out)
    else:
        for line in explain_lines(program, plans, checkpoint_dir):
            print(line, file=out)
    out.flush()


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
    reporter = ProgressReporter.attach(spark, err, queries=set(names), sink_keys=sink_keys, exporters=exporters,
                                       real_time={p.name for p in plans if p.mode() == "real-time"})
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
    from job.run.real_time import could_run_in_real_time, startup_line

    for plan in plans:  # which mode runs each INSERT that could run in real time, and why
        if plan.real_time_setting == "auto" and could_run_in_real_time(plan):
            print(startup_line(plan, program), file=err, flush=True)
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
        from job.plan.sink_watch import STOP_GATE

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
        from job.run.shutdown import close_state_stores

        # Every query has stopped: close their RocksDB instances before anything exits.
        close_state_stores(spark)
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
            stopped_by_us = stop_at_batch_boundary(queries, stop_timeout, sink_keys or {},
                                                   immediate=restarter.real_time if restarter is not None else ())
            # A query we stopped while it ran ends with whatever its source threw when
            # interrupted (a Python data source: "no cause message"); its batch was committed
            # or will be redone, so that is a clean stop. Only earlier failures count.
            failed = next((q for q in queries if q.exception() is not None and q.name not in stopped_by_us
                           and not is_interruption(q.exception())), None)
            if failed is not None:
                raise query_failure(failed)
            return
        wait_for_any_end(queries, poll)


def wait_for_any_end(queries, timeout: float) -> None:
    """Up to ``timeout`` seconds, returning as soon as the first active query ends (a
    --once run exits the moment its last query does, not at the next poll)."""
    active = next((q for q in queries if q.isActive), None)
    if active is None:
        return
    try:
        active.awaitTermination(timeout)
    except Exception:  # noqa: BLE001 - a failed query: the caller looks at its exception
        pass


def open_exporters(options: RunOptions) -> list:
    from job.run.metrics import MetricsFile, PrometheusExporter

    exporters = []
    if options.metrics_file:
        exporters.append(MetricsFile(options.metrics_file))
    if options.metrics_port is not None:
        try:
            exporters.append(PrometheusExporter(options.metrics_port, options.metrics_host))
        except OSError as exc:
            for e in exporters:
                e.close()
            raise PipelineError(f"cannot serve metrics on {options.metrics_host}:{options.metrics_port}: "
                                f"{exc.strerror or exc}",
                                hint="choose a free port with --metrics-port, or an address of this host with "
                                     "--metrics-host", exit_code=EXIT_OTHER) from None
    return exporters
