"""The Flink side of the differential tests. Runs in Flink's own virtualenv
(scripts/flink.sh install), one JVM and one Flink MiniCluster for every case:

    .services/flink-venv/bin/python tests/flink/oracle.py < cases.json > results.json

Input: {"cases": [{"name", "statements": [DDL, SET …], "query": "SELECT …"}]}. Each case
runs in a fresh streaming TableEnvironment (parallelism 1: arrival order decides ties as
in one file); its query's changelog is collected with the row kinds and applied to an
empty multiset. Output, per case: {"name", "columns": [[name, type]], "rows": [...],
"changes": n} or {"name", "error": "…"} when Flink rejects the case.

Rows are read from Flink's Java iterator and converted here, field by field: PyFlink's
own collect() cannot carry a NULL inside an ARRAY or MAP ("Ran out of input"), nor a
TIMESTAMP_LTZ or an INTERVAL value (a pickling error), all of which are answers we
need to compare.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
import time
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import canonical  # noqa: E402

KINDS = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}


# Flink's planner now and then fails a case with this NullPointerException: Calcite's
# metadata handler is kept per thread, and py4j may serve a call on a thread the planner
# did not set it for. It says nothing about the query; the case runs again.
FLAKE = "metadataHandlerProvider"


def run_case(case: dict, cluster_port: int, attempts: int = 3) -> dict:
    for _ in range(attempts):
        result = run_case_once(case, cluster_port)
        if FLAKE not in result.get("error", ""):
            break
    return result


def shared_cluster() -> int:
    """The REST port of a Flink MiniCluster started in this JVM for every case.

    A TableEnvironment left to its default ('local' execution) starts a MiniCluster of
    its own for each job, and stops it after: two thirds of a small case's time. The
    cases are submitted to this one instead, as to any remote cluster; each still runs
    alone, in its own TableEnvironment."""
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    options = jvm.java.util.HashMap()
    options.put("rest.bind-address", "127.0.0.1")
    options.put("rest.address", "127.0.0.1")
    options.put("rest.port", "0")  # any free port: 8081 may be taken
    minicluster = jvm.org.apache.flink.runtime.minicluster
    # Slots to spare: a case that failed to stop must not keep the next from starting.
    settings = (minicluster.MiniClusterConfiguration.Builder()
                .setConfiguration(jvm.org.apache.flink.configuration.Configuration.fromMap(options))
                .setNumTaskManagers(1).setNumSlotsPerTaskManager(4).build())
    cluster = minicluster.MiniCluster(settings)
    cluster.start()
    return cluster.getRestAddress().get().getPort()


def run_case_once(case: dict, cluster_port: int) -> dict:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("execution.target", "remote")  # the shared MiniCluster (shared_cluster)
    config.set("rest.address", "127.0.0.1")
    config.set("rest.port", str(cluster_port))
    config.set("parallelism.default", "1")
    config.set("table.local-time-zone", case.get("time_zone", "UTC"))
    try:
        for statement in case["statements"]:
            setting = re.match(r"\s*SET\s+'([^']+)'\s*=\s*'([^']*)'\s*;?\s*$", statement, re.IGNORECASE)
            if setting:  # the SQL client's SET; the Table API takes it as configuration
                config.set(setting.group(1), setting.group(2))
            else:
                env.execute_sql(statement)
        result = env.execute_sql(case["query"])
        schema = result.get_resolved_schema()
        columns = [[c.get_name(), c._j_column.getDataType().toString()] for c in schema.get_columns()]
        # py4j hands a Java float over as its shortest decimal text (1.1f -> 1.1), Spark
        # as the double it widens to (1.100000023841858): FLOAT columns are widened here.
        floats = [t.startswith("FLOAT") for _, t in columns]
        changes = []
        rows = result._j_table_result.collect()
        try:
            while rows.hasNext():
                r = rows.next()
                values = [java_value(r.getField(i)) for i in range(r.getArity())]
                values = [as_float32(v) if f and isinstance(v, float) else v for v, f in zip(values, floats)]
                changes.append((r.getKind().shortString(), canonical.row(values)))
        finally:
            rows.close()
        result = {"name": case["name"], "columns": columns, "rows": canonical.final_rows(changes),
                  "changes": len(changes)}
        if case.get("ordered"):
            result["sequence"] = canonical.sequence(changes)
        return result
    except Exception as exc:  # noqa: BLE001 - Flink's own rejection, reported as the case's result
        text = str(exc)
        lines = [l.strip() for l in text.splitlines() if "Exception:" in l or "SQL validation failed" in l]
        causes = [l.strip() for l in text.splitlines() if l.strip().startswith("Caused by:")]
        first = lines[0] if lines else text.splitlines()[0] if text else repr(exc)
        # A failure at run time says little on its first line: its root cause says what.
        root = f" (root cause: {causes[-1][len('Caused by: '):]})" if causes and causes[-1] not in first else ""
        return {"name": case["name"], "error": (first[:300] + root[:400])}


def as_float32(v: float) -> float:
    import struct

    return struct.unpack("f", struct.pack("f", v))[0]


def java_value(v):
    """A Java value of a Flink row as the Python value canonical.value expects."""
    if v is None or isinstance(v, (bool, int, float, str, Decimal)):
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    cls = v.getClass().getName()
    try:
        return _java_object(v, cls)
    except (ValueError, OverflowError):  # e.g. a year Python's datetime cannot hold
        return ("other", v.toString())


def _java_object(v, cls: str):
    if cls == "java.math.BigDecimal":
        return Decimal(v.toString())
    if cls == "java.time.LocalDateTime":
        return dt.datetime(v.getYear(), v.getMonthValue(), v.getDayOfMonth(), v.getHour(), v.getMinute(),
                           v.getSecond(), v.getNano() // 1000)
    if cls == "java.time.Instant":  # TIMESTAMP_LTZ: the instant as UTC wall-clock time
        return dt.datetime(1970, 1, 1) + dt.timedelta(seconds=v.getEpochSecond(), microseconds=v.getNano() // 1000)
    if cls == "java.time.LocalDate":
        return dt.date(v.getYear(), v.getMonthValue(), v.getDayOfMonth())
    if cls == "java.time.LocalTime":
        return dt.time(v.getHour(), v.getMinute(), v.getSecond(), v.getNano() // 1000)
    if cls == "java.time.Duration":
        return dt.timedelta(seconds=v.getSeconds(), microseconds=v.getNano() // 1000)
    if cls == "java.time.Period":
        return ("months", v.toTotalMonths())
    if cls == "org.apache.flink.types.Row":
        return tuple(java_value(v.getField(i)) for i in range(v.getArity()))
    from py4j.java_collections import JavaArray, JavaList, JavaMap

    if isinstance(v, JavaMap):
        return {java_value(k): java_value(x) for k, x in v.items()}
    if isinstance(v, (JavaArray, JavaList)):
        return [java_value(x) for x in v]
    return ("other", v.toString())


def main() -> int:
    # Flink's JVM (started by PyFlink, inheriting our descriptors) prints to stdout at
    # times (generated code it failed to compile): the results go to the original stdout,
    # everything else to stderr.
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    spec = json.load(sys.stdin)
    cluster_port = shared_cluster()
    for case in spec["cases"]:
        started = time.monotonic()
        # One JSON line per case, written as soon as the case ends: the tests compare each
        # case while Flink runs the next ones.
        results.write(json.dumps(run_case(case, cluster_port), default=str) + "\n")
        results.flush()
        # One line per case on stderr: where a slow or stuck run is, when one is.
        print(f"oracle: {case['name']} {time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)
    results.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
