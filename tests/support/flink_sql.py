"""Run Flink SQL on real Flink 2.3 (the PyFlink venv of scripts/flink.sh) for tests that
need Flink to write or read a format's bytes (Avro files, Kafka records).

``run_flink(statements, query=None)`` runs the statements (an INSERT waits for its job
to end) in batch mode, then the query, and returns its rows as canonical strings. With
``streaming=True`` they run in streaming mode (an aggregation writes its updates), and
each row of the query starts with its row kind (+I, -U, +U, -D). The
script runs in Flink's own interpreter (``python flink_sql.py`` reads a JSON request on
stdin and prints a JSON answer), with Flink's connector and format jars.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def canonical(value) -> str:
    """One text for a value as either engine's Python client returns it."""
    import datetime
    import decimal

    if value is None:
        return "NULL"
    if isinstance(value, (bytes, bytearray)):
        return "x'" + bytes(value).hex() + "'"
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{canonical(k)}={canonical(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(canonical(v) for v in value) + "]"
    if hasattr(value, "_values"):  # a PyFlink Row
        return "(" + ", ".join(canonical(v) for v in value._values) + ")"
    if hasattr(value, "asDict"):  # a Spark Row
        return "(" + ", ".join(canonical(v) for v in value) + ")"
    return str(value)


def flink_python() -> str:
    out = subprocess.run([str(ROOT / "scripts" / "flink.sh"), "python"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("Flink is not installed: run scripts/flink.sh install")
    return out.stdout.strip()


def run_flink(statements, query=None, *, timeout: float = 300, streaming: bool = False) -> list[tuple]:
    subprocess.run([str(ROOT / "scripts" / "flink.sh"), "install"], check=True, capture_output=True)
    jars = subprocess.run([str(ROOT / "scripts" / "flink.sh"), "jars"], capture_output=True, text=True).stdout.split()
    request = json.dumps({"statements": list(statements), "query": query, "jars": jars, "streaming": streaming})
    from tests.support.jvm import flink_env

    python = flink_python()
    proc = subprocess.run([python, __file__], input=request, capture_output=True, text=True, timeout=timeout,
                          env=flink_env(python))
    if proc.returncode != 0:
        causes = [l for l in proc.stderr.splitlines() if "Caused by" in l or "Exception" in l]
        raise RuntimeError("Flink failed: " + ("\n".join(causes[-3:]) or proc.stderr[-2000:]))
    return [tuple(r) for r in json.loads(proc.stdout.strip().splitlines()[-1])]


def _main() -> None:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    request = json.loads(sys.stdin.read())
    streaming = bool(request.get("streaming"))
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode() if streaming
                                  else EnvironmentSettings.in_batch_mode())
    config = env.get_config()
    config.set("pipeline.jars", ";".join("file://" + j for j in request["jars"]))
    config.set("parallelism.default", "1")
    config.set("table.local-time-zone", "UTC")
    for statement in request["statements"]:
        result = env.execute_sql(statement)
        if statement.lstrip().upper().startswith("INSERT"):
            result.wait()
    rows = []
    if request.get("query"):
        # Java's rows, not PyFlink's: PyFlink's Python rows fail on an ARRAY with a NULL element.
        sys.path.insert(0, str(ROOT))
        from tests.flink.oracle import java_value

        results = env.execute_sql(request["query"])._j_table_result.collect()
        try:
            while results.hasNext():
                r = results.next()
                kind = [str(r.getKind().shortString())] if streaming else []
                rows.append(kind + [canonical(java_value(r.getField(i))) for i in range(r.getArity())])
        finally:
            results.close()
    print(json.dumps(rows))


if __name__ == "__main__":
    _main()
