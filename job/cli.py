"""Command-line arguments → RunOptions. No Spark here."""
from __future__ import annotations

import argparse
import os
from typing import Sequence

from job.errors import PipelineError
from job.api import DEFAULT_STOP_TIMEOUT_S, RunOptions

USAGE = """spark-submit job/main.py [STATEMENT ...] [--file F.sql]... [--pipeline P.yaml] [--var k=v]...
                            [--once] [--dry-run] [--explain] [--explain-format json] [--checkpoint-dir DIR] [--verbose]
                            [--metrics-port N] [--metrics-file F.jsonl] [--stop-timeout SECONDS]"""
EPILOG = """exit codes:
  0  ok (also after a graceful stop by SIGTERM/SIGINT)
  1  any other failure
  2  invalid pipeline (SQL, template, options, plan)
  3  a source or sink cannot be reached
  4  a bad record under 'on-error' = 'fail' (its position and a preview are shown)"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="streamsql", usage=USAGE, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Run Flink-style streaming SQL pipelines on Spark Structured Streaming.")
    p.add_argument("statements", nargs="*", help="SQL statements; each argument may hold several, separated by ';'")
    p.add_argument("-f", "--file", action="append", default=[], dest="files", help="a .sql file (repeatable)")
    p.add_argument("-p", "--pipeline", help="a YAML pipeline file")
    p.add_argument("--var", action="append", default=[], metavar="KEY=VALUE", help="a template variable (repeatable)")
    p.add_argument("--once", action="store_true", help="process what is available now, then exit (cron, Airflow)")
    p.add_argument("--dry-run", action="store_true", help="validate and print the plan; read no data")
    p.add_argument("--explain", action="store_true", help="print the plan, then run")
    p.add_argument("--explain-format", choices=("text", "json"), default="text",
                   help="how --dry-run and --explain print the plan (json: every step's fields and the plan's tree)")
    p.add_argument("--checkpoint-dir", help="where queries keep their checkpoints (default .checkpoints/<pipeline>)")
    p.add_argument("--master", help="Spark master when not run by spark-submit (e.g. local[2], spark://host:7077)")
    p.add_argument("-v", "--verbose", action="store_true", help="show Spark's own INFO logs")
    p.add_argument("--metrics-port", type=int, metavar="N",
                   help="serve Prometheus metrics on http://127.0.0.1:N/metrics while the job runs")
    p.add_argument("--metrics-file", metavar="F",
                   help="append one JSON line per micro-batch (and a summary per query at the end) to F")
    p.add_argument("--stop-timeout", type=float, default=DEFAULT_STOP_TIMEOUT_S, metavar="SECONDS",
                   help="on SIGTERM/SIGINT, how long to wait for the running micro-batch before stopping anyway "
                        f"(default {DEFAULT_STOP_TIMEOUT_S:g}); a second signal stops at once")
    return p


PATH_SUFFIXES = {".sql": "sql", ".yaml": "yaml", ".yml": "yaml"}


def sort_positionals(statements: list[str], files: list[str], pipeline):
    """``main.py pipeline.yaml`` and ``main.py a.sql b.sql`` mean files, as users type them:
    a positional argument that is one word ending in .sql/.yaml/.yml is a path, not SQL."""
    sql_text = []
    files = list(files)
    for arg in statements:
        word = arg.strip()
        kind = PATH_SUFFIXES.get(os.path.splitext(word)[1].lower())
        if kind is None or any(ch.isspace() for ch in word):
            sql_text.append(arg)
        elif kind == "sql":
            files.append(word)
        elif pipeline is not None:
            raise PipelineError(f"two YAML pipelines given ('{pipeline}' and '{word}')",
                                hint="run one pipeline per job; put shared statements in .sql files")
        else:
            pipeline = word
    return sql_text, files, pipeline


def parse_args(argv: Sequence[str]) -> RunOptions:
    args = parser().parse_args(list(argv))
    variables = {}
    for item in args.var:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PipelineError(f"--var '{item}' must be KEY=VALUE", hint="e.g. --var run_date=2024-01-31")
        variables[key.strip()] = value
    statements, files, pipeline = sort_positionals(args.statements, args.files, args.pipeline)
    return RunOptions(statements=statements, files=files, pipeline=pipeline, variables=variables,
                      once=args.once, dry_run=args.dry_run, explain=args.explain,
                      explain_format=args.explain_format, checkpoint_dir=args.checkpoint_dir,
                      verbose=args.verbose, master=args.master, metrics_port=args.metrics_port,
                      metrics_file=args.metrics_file, stop_timeout=args.stop_timeout)
