"""Real-time mode (Spark 4.3): which INSERTs run in it, and how it is configured.

An INSERT runs in real-time mode (long-running tasks that take each record as it comes,
checkpointing every interval) with ``SET 'streamsql.real-time-mode' = 'auto'``, when the
Spark is 4.3 or later and its typed plan qualifies: it is not ``--once``, every source is an unbounded Kafka or
upsert-kafka table, the sink is Kafka or upsert-kafka written as a stream (no
``foreachBatch``, so no Python on the row path), and every step is one whose operators
Spark 4.3's real-time allowlist accepts and the engine runs record by record. Everything
else stays micro-batch, and :func:`choose` says why.
"""
from __future__ import annotations

from job.errors import PipelineError

MODE_KEY = "streamsql.real-time-mode"
INTERVAL_KEY = "streamsql.real-time-mode.checkpoint-interval"
DEFAULT_INTERVAL_MS = 30_000
MIN_INTERVAL_MS = 5_000          # Spark's spark.sql.streaming.realTimeMode.minBatchDuration

# Off until a checkpoint a real-time run left mid-interval can be continued by --once or
# micro-batch mode exactly: real-time mode writes each change as it comes, and a batch that
# nets the same input differently (a row inserted and deleted again writes nothing) leaves
# the sink showing a change no committed batch made (docs/tuning.md, "Real-time mode").
DEFAULT = "off"

KAFKA = ("kafka", "upsert-kafka")
# Steps that run record by record in real-time mode: Spark's stateless operators
# (Project, Filter, Union, Generate) and the engine's transformWithState operators whose
# state changes do not wait on event time. The net-per-batch sink step is a per-batch
# reduction; event-time operators (windows, interval and temporal joins, watermarks) fire
# their timers at batch ends, which is not yet checked against Flink's semantics.
RECORD_BY_RECORD = frozenset({"scan", "filter", "union", "unnest", "normalize", "aggregate", "distinct", "join",
                              "deduplicate", "rank", "materialize", "sort", "sink"})
WHY = {
    "net_changes": "the sink nets each micro-batch's changes per key (a per-batch reduction)",
    "lookup_join": "a lookup join queries its table per micro-batch",
}


def real_time_setting(conf) -> str:
    """'auto' or 'off' (the default, see DEFAULT): SET 'streamsql.real-time-mode'."""
    value = str(conf.get(MODE_KEY, DEFAULT)).strip().lower()
    if value in ("off", "micro-batch", "false"):
        return "off"
    if value in ("auto", "true"):
        return "auto"
    raise PipelineError(f"SET '{MODE_KEY}' = '{value}' is not a mode", option=MODE_KEY,
                        hint="'auto' (real-time mode where a query qualifies) or 'off' (micro-batch)")


def checkpoint_interval_ms(conf) -> int:
    """The real-time trigger's duration, a checkpoint interval (not a latency): default 30 s, at least 5 s."""
    from job.options import parse_duration_ms

    value = conf.get(INTERVAL_KEY)
    if not value:
        return DEFAULT_INTERVAL_MS
    ms = parse_duration_ms(str(value))
    if ms is None or ms < MIN_INTERVAL_MS:
        raise PipelineError(f"SET '{INTERVAL_KEY}' = '{value}' is not a duration of at least 5 s", option=INTERVAL_KEY,
                            hint="write it as Flink does: '30 s', '1 min' (Spark's real-time mode needs 5 s or more)")
    return ms


def spark_without_it(spark) -> str:
    """Why this Spark has no real-time mode (before 4.3), or ""."""
    try:
        major, minor = (int(x) for x in str(spark.version).split(".")[:2])
    except (ValueError, AttributeError):
        return ""
    if (major, minor) < (4, 3):
        return f"Spark {spark.version} has no real-time mode (Spark 4.3 and later have it)"
    return ""


def connector_of(node):
    return str(getattr(getattr(node.spec, "connector", None), "identifier", "") or "")


def choose(plan) -> tuple[str, str]:
    """(mode, why) for a planned query (job.plan.queries.QueryPlan)."""
    if plan.real_time_setting != "auto":
        return "micro-batch", f"real-time mode is off; SET '{MODE_KEY}' = 'auto' to turn it on"
    if plan.once:
        return "micro-batch", "--once reads what is available now and stops"
    if plan.bounded:
        return "micro-batch", "a source ends (bounded)"
    if plan.dead_letters:
        return "micro-batch", "bad records go to a dead-letter table (a second query)"
    for node in plan.nodes:
        if node.kind == "scan" and connector_of(node) not in KAFKA:
            return "micro-batch", f"source {getattr(node.spec, 'name', '?')} is '{connector_of(node)}', not Kafka"
        if node.kind == "sink":
            if connector_of(node) not in KAFKA:
                return "micro-batch", f"sink '{connector_of(node)}' is not Kafka"
            if node.mode not in ("append", "upsert"):
                return "micro-batch", "a changelog sink is written per micro-batch (foreachBatch)"
        if node.kind not in RECORD_BY_RECORD:
            return "micro-batch", WHY.get(node.kind, f"step '{node.kind}' does not run record by record yet")
        if node.kind != "sink" and node.kind != "scan" and node.engine is None and node.stateful:
            return "micro-batch", f"step '{node.kind}' runs on Spark's stateful operators"
    if plan.real_time_blocked:
        return "micro-batch", plan.real_time_blocked
    return "real-time", "unbounded Kafka in and out, every step record by record"
