"""Flink's side of the benchmarks: a SQL file run on Flink 2.3 (PyFlink's local mini-cluster),
in Flink's own virtualenv (scripts/flink.sh install):

    .services/flink-venv/bin/python benchmarks/flink_runner.py --sql pipeline.sql [--parallelism 2]
        [--jar connector.jar]... [--conf key=value]... [--collect rows.json]

Streaming mode (never batch). Every statement but the INSERTs runs first; the INSERTs run
together as one job (a statement set) until their sources end (bounded files, or Kafka
topics with 'scan.bounded.mode'), or forever on unbounded sources (the harness stops it).

With --collect, the file's one INSERT is not run into its sink: its query's changelog is
collected (row kinds +I/-U/+U/-D) and applied to an empty multiset, and the rows it leaves
are written to the file as JSON, in tests/flink/canonical.py's form (so they compare with
the job's). A statement Flink rejects gives {"error": "…"} there and exit code 2.

Prints "phase <name> <unix time>" lines (start, planned, finished) to stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "flink"))

from benchmarks.engines import insert_parts, split_statements  # noqa: E402

KINDS = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}


def phase(name: str) -> None:
    print(f"phase {name} {time.time():.3f}", flush=True)


def flink_error(exc: Exception) -> str:
    text = str(exc)
    lines = [l.strip() for l in text.splitlines() if "Exception:" in l or "SQL validation failed" in l]
    return (lines[0] if lines else text.splitlines()[0] if text else repr(exc))[:800]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sql", required=True)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--jar", action="append", default=[])
    p.add_argument("--conf", action="append", default=[])
    p.add_argument("--collect")
    p.add_argument("--upsert-key", help="with --collect: the result's key columns (a,b), for a query whose "
                   "changelog Flink emits as upserts (+U without -U)")
    a = p.parse_args()
    phase("start")

    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", str(a.parallelism))
    config.set("table.local-time-zone", "UTC")
    config.set("execution.runtime-mode", "streaming")
    if a.jar:
        config.set("pipeline.jars", ";".join("file://" + os.path.abspath(j) for j in a.jar))
    for kv in a.conf:
        key, _, value = kv.partition("=")
        config.set(key.strip(), value.strip())

    with open(a.sql) as f:
        statements = split_statements(f.read())
    inserts = [s for s in statements if insert_parts(s)]
    try:
        for statement in statements:
            if not insert_parts(statement):
                env.execute_sql(statement)
        if a.collect:
            import canonical

            if len(inserts) != 1:
                raise ValueError(f"--collect needs exactly one INSERT, the file has {len(inserts)}")
            result = env.execute_sql(insert_parts(inserts[0])[1])
            phase("planned")
            columns = [[c.get_name(), str(c.get_data_type())] for c in result.get_resolved_schema().get_columns()]
            changes = []
            with result.collect() as rows:
                for r in rows:
                    changes.append((KINDS[r.get_row_kind().name], canonical.row(r._values)))
            phase("finished")
            with open(a.collect, "w") as f:
                names = [c[0] for c in columns]
                key = [names.index(k.strip()) for k in a.upsert_key.split(",")] if a.upsert_key else None
                json.dump({"columns": columns, "rows": canonical.final_rows(changes, key), "changes": len(changes)}, f,
                          default=str)
            return 0
        statement_set = env.create_statement_set()
        for statement in inserts:
            statement_set.add_insert_sql(statement)
        job = statement_set.execute()
        phase("planned")
        job.wait()
        phase("finished")
        return 0
    except Exception as exc:  # noqa: BLE001 - Flink's rejection or failure, reported as the run's result
        message = flink_error(exc)
        print(f"flink error: {message}", file=sys.stderr, flush=True)
        if a.collect:
            with open(a.collect, "w") as f:
                json.dump({"error": message}, f)
        return 2


if __name__ == "__main__":
    sys.exit(main())
