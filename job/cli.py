"""Command-line arguments → RunOptions. No Spark here."""
from __future__ import annotations

import argparse
import difflib
import os
from typing import NoReturn, Sequence

from job.errors import PipelineError
from job.api import DEFAULT_STOP_TIMEOUT_S, RunOptions
from job.run.jvm_output import under_spark_submit

JOB_ARGS = """[STATEMENT ...] [--file F.sql]... [--pipeline P.yaml] [--var KEY=VALUE]...
         [--once] [--dry-run] [--explain] [--explain-format json] [--checkpoint-dir DIR] [--verbose]
         [--metrics-port N] [--metrics-host ADDRESS] [--metrics-file F.jsonl] [--stop-timeout SECONDS]"""
USAGE = f"""./spark-submit.sh [spark-submit options] [--] JOB ARGUMENTS
       .venv/bin/streamsql [--master URL] JOB ARGUMENTS
       spark-submit [spark-submit options] job/main.py JOB ARGUMENTS

JOB ARGUMENTS: {JOB_ARGS}"""
DESCRIPTION = """Run Flink SQL pipelines on Spark Structured Streaming.

spark-submit's own options (--master, --name, --conf, --driver-memory, --packages, ...) go to
spark-submit. ./spark-submit.sh takes them before the job's arguments, or after them, and
passes them on; with `--`, every option before it is spark-submit's. Under plain spark-submit
they go before job/main.py: spark-submit hands everything after it to the job."""
EPILOG = """exit codes:
  0  ok (also after a graceful stop by SIGTERM/SIGINT)
  1  any other failure
  2  invalid pipeline (SQL, template, options, plan) or command line
  3  a source or sink cannot be reached
  4  a bad record under 'on-error' = 'fail' (its position and a preview are shown)"""

# spark-submit's options that the job does not take: given to the job, they were meant
# for spark-submit (the job's --master is its own, for runs without spark-submit).
SPARK_SUBMIT_OPTIONS = frozenset(
    "--name --class --deploy-mode --conf -c --driver-memory --driver-cores --driver-java-options "
    "--driver-class-path --driver-library-path --executor-memory --executor-cores --num-executors "
    "--total-executor-cores --packages --repositories --exclude-packages --jars --py-files --files --archives "
    "--properties-file --queue --proxy-user --principal --keytab --supervise".split())


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are the job's own: one line, exit code 2, and a did-you-mean."""

    def error(self, message: str) -> NoReturn:
        raise PipelineError(f"{message} (command line)", hint="see --help for the job's options")


def unknown_option(arg: str, known: Sequence[str]) -> PipelineError:
    name = arg.split("=", 1)[0]
    if name in SPARK_SUBMIT_OPTIONS:
        return PipelineError(
            f"{name} is an option of spark-submit, not of the job, and spark-submit did not see it: it came after "
            "the job's file (job/main.py)",
            hint=f"put spark-submit's options before the job's file (spark-submit {name} … job/main.py …), or use "
                 "./spark-submit.sh, which passes them on wherever they are")
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return PipelineError(f"unknown option '{name}' on the command line" + (f". Did you mean '{close[0]}'?" if close else ""),
                         hint="see --help for the job's options")


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="streamsql", usage=USAGE, epilog=EPILOG, description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
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
    p.add_argument("--master", help="Spark master of a run without spark-submit (e.g. local[2], spark://host:7077); "
                                    "under spark-submit, spark-submit's own --master")
    p.add_argument("-v", "--verbose", action="store_true", help="show Spark's own INFO logs")
    p.add_argument("--metrics-port", type=int, metavar="N",
                   help="serve Prometheus metrics on http://ADDRESS:N/metrics while the job runs")
    p.add_argument("--metrics-host", default="127.0.0.1", metavar="ADDRESS",
                   help="the address --metrics-port binds (default 127.0.0.1, this host only; 0.0.0.0 for every "
                        "interface)")
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
    p = parser()
    args, unknown = p.parse_known_args(list(argv))
    if unknown:
        raise unknown_option(unknown[0], [o for a in p._actions for o in a.option_strings if o.startswith("--")])
    if args.master is not None and under_spark_submit():
        raise PipelineError(
            f"--master {args.master} came after the job's file, where spark-submit does not see it; this run would "
            "use the master spark-submit was given",
            hint="put --master before the job's file (spark-submit --master URL … job/main.py …), or use "
                 "./spark-submit.sh, which passes it on wherever it is")
    variables = {}
    for item in args.var:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PipelineError(f"--var '{item}' must be KEY=VALUE", hint="e.g. --var run_date=2024-01-31")
        variables[key.strip()] = value
    if args.metrics_port is not None:  # before anything starts, not once the session is up
        from job.run.metrics import require_prometheus_client

        require_prometheus_client()
    statements, files, pipeline = sort_positionals(args.statements, args.files, args.pipeline)
    return RunOptions(statements=statements, files=files, pipeline=pipeline, variables=variables,
                      once=args.once, dry_run=args.dry_run, explain=args.explain,
                      explain_format=args.explain_format, checkpoint_dir=args.checkpoint_dir,
                      verbose=args.verbose, master=args.master, metrics_port=args.metrics_port,
                      metrics_host=args.metrics_host, metrics_file=args.metrics_file, stop_timeout=args.stop_timeout)
