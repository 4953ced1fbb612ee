"""The Flink side of the differential tests. Runs in Flink's own virtualenv
(scripts/flink.sh install), one JVM for every case:

    .services/flink-venv/bin/python tests/flink/oracle.py < cases.json > results.json

Input: {"cases": [{"name", "statements": [DDL, SET …], "query": "SELECT …"}]}. Each case
runs in a fresh streaming TableEnvironment (parallelism 1: arrival order decides ties as
in one file); its query's changelog is collected with the row kinds and applied to an
empty multiset. Output, per case: {"name", "columns": [[name, type]], "rows": [...],
"changes": n} or {"name", "error": "…"} when Flink rejects the case.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import canonical  # noqa: E402

KINDS = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}


def run_case(case: dict) -> dict:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", "1")
    config.set("table.local-time-zone", case.get("time_zone", "UTC"))
    try:
        for statement in case["statements"]:
            env.execute_sql(statement)
        result = env.execute_sql(case["query"])
        schema = result.get_resolved_schema()
        columns = [[c.get_name(), str(c.get_data_type())] for c in schema.get_columns()]
        changes = []
        with result.collect() as rows:
            for r in rows:
                changes.append((KINDS[r.get_row_kind().name], canonical.row(r._values)))
        return {"name": case["name"], "columns": columns, "rows": canonical.final_rows(changes),
                "changes": len(changes)}
    except Exception as exc:  # noqa: BLE001 - Flink's own rejection, reported as the case's result
        text = str(exc)
        lines = [l.strip() for l in text.splitlines() if "Exception:" in l or "SQL validation failed" in l]
        return {"name": case["name"], "error": (lines[0] if lines else text.splitlines()[0] if text else repr(exc))[:500]}


def main() -> int:
    spec = json.load(sys.stdin)
    out = [run_case(case) for case in spec["cases"]]
    json.dump(out, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
