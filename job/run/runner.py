"""The library entry point: load → parse → plan → connectors → run.

``run(RunOptions(...))`` returns an exit code and never calls ``sys.exit``, so tests and
an Airflow PythonOperator can call it directly; ``job.main`` is a thin wrapper.
"""
from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Optional, Sequence

from job.errors import EXIT_INVALID, EXIT_OK, EXIT_OTHER, PipelineError

DEFAULT_CHECKPOINT_DIR = ".checkpoints"


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


class StopSignal:
    """First SIGTERM/SIGINT: stop at a batch boundary; second: stop at once."""

    def __init__(self) -> None:
        self.requested = False

    def install(self) -> None:
        def handler(signum, _frame):
            if self.requested:
                os._exit(130)
            self.requested = True
            print(f"streamsql: received {signal.Signals(signum).name}, stopping at the next batch boundary "
                  "(send it again to stop at once)", file=sys.stderr, flush=True)
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                signal.signal(sig, handler)
            except ValueError:  # not the main thread (e.g. inside a test runner thread)
                pass


def run(options: RunOptions, out=None, err=None) -> int:
    """Run a pipeline; returns the documented exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        return _run(options, out, err)
    except PipelineError as exc:
        print(f"error: {exc.render()}", file=err, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        return EXIT_OTHER


def _run(options: RunOptions, out, err) -> int:
    from job.pipeline.load import load_statements
    from job.run.program import build_program

    loaded = load_statements(args=options.statements, files=options.files, pipeline=options.pipeline,
                             variables=options.variables)
    program = build_program(loaded)
    checkpoint_dir = options.checkpoint_dir or program.checkpoint_dir or os.path.join(DEFAULT_CHECKPOINT_DIR, program.name)

    from job.run.queries import await_all, explain_lines, plan_queries, start_queries, waves
    from job.run.session import build_session

    spark = build_session(program.name, program.conf, verbose=options.verbose, master=options.master)
    plans = plan_queries(spark, program, once=options.once, checkpoint_dir=checkpoint_dir, offline=options.dry_run)
    if options.dry_run or options.explain:
        for line in explain_lines(program, plans, checkpoint_dir):
            print(line, file=out)
        out.flush()
        if options.dry_run:
            return EXIT_OK
    stop = StopSignal()
    stop.install()
    from job.run.progress import ProgressReporter

    reporter = ProgressReporter.attach(spark, err)
    try:
        for wave in (waves(plans, program) if options.once else [plans]):
            queries = start_queries(wave, program, once=options.once)
            try:
                await_all(spark, queries, stop_requested=lambda: stop.requested)
            finally:
                for q in queries:
                    if q.isActive:
                        q.stop()
            if stop.requested:
                break
    finally:
        reporter.summary()
    return EXIT_OK
