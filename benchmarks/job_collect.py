"""The job's side of a result comparison: a SQL file's one INSERT, its query run with
job.api.collect (to the end of the input, every window closed, as --once) and its final
rows written as JSON in tests/flink/canonical.py's form (as benchmarks/flink_runner.py does
for Flink).

    .venv/bin/python benchmarks/job_collect.py --sql pipeline.sql --out rows.json

A query the job refuses gives {"refused": "<the job's message>"} and exit code 2; any other
failure {"failed": "…"} and exit code 1.
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

# the job itself from STREAMSQL_JOB_ROOT (a snapshot of a commit: benchmarks/engines.job_root)
if os.environ.get("STREAMSQL_JOB_ROOT"):
    sys.path.insert(0, os.environ["STREAMSQL_JOB_ROOT"])


def root_cause(text: str) -> str:
    """The line of a Spark failure that says what went wrong: its last "…Exception: …" /
    "…Error: …" line that is not one of the wrappers (stream failed, foreachBatch, Py4J)."""
    wrappers = ("STREAM_FAILED", "FOREACH_BATCH", "Python Proxy", "Traceback", "py4j", "File \"")
    for line in reversed(text.splitlines()):
        line = line.strip()
        if ("Exception: " in line or "Error: " in line) and not any(w in line for w in wrappers):
            return line[:500]
    return ""


def shorten(text: str, head: int = 600, tail: int = 2000) -> str:
    """A long failure's start and its end (where Spark's root cause is), lines of the Python
    traceback between them left out."""
    if len(text) <= head + tail:
        return text
    return text[:head] + "\n[…]\n" + text[-tail:]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sql", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=1800)
    a = p.parse_args()
    with open(a.sql) as f:
        statements = split_statements(f.read())
    inserts = [s for s in statements if insert_parts(s)]
    others = [s for s in statements if not insert_parts(s)]
    started = time.time()
    try:
        import canonical
        from job.api import collect
        from job.errors import PipelineError

        if len(inserts) != 1:
            raise ValueError(f"needs exactly one INSERT, the file has {len(inserts)}")
        try:
            result = collect(others, insert_parts(inserts[0])[1], timeout=a.timeout)
        except PipelineError as exc:
            import traceback

            text = exc.render() if hasattr(exc, "render") else str(exc)
            cause = root_cause(text) if "STREAM_FAILED" in text else ""
            message = (cause + "\n\n" if cause else "") + shorten(text)
            # refused while planning, or failed while running (raised where the query is awaited)
            running = any(frame.name == "_await" for frame in traceback.extract_tb(exc.__traceback__))
            with open(a.out, "w") as f:
                json.dump({"failed" if running else "refused": message}, f)
            return 1 if running else 2
        changes = [(kind, canonical.row(values)) for kind, values in result.changes]
        with open(a.out, "w") as f:
            json.dump({"columns": [[n, str(t)] for n, t in result.columns], "rows": canonical.final_rows(changes),
                       "changes": len(changes), "seconds": round(time.time() - started, 2)}, f, default=str)
        return 0
    except Exception as exc:  # noqa: BLE001 - reported as the run's result
        with open(a.out, "w") as f:
            cause = root_cause(str(exc))
            json.dump({"failed": (cause + "\n\n" if cause else "") + f"{type(exc).__name__}: {shorten(str(exc))}"}, f)
        return 1


if __name__ == "__main__":
    sys.exit(main())
