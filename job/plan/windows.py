"""Event-time windows: the window table functions (TUMBLE, HOP, CUMULATE, SESSION) and
Flink's legacy group windows (``GROUP BY TUMBLE(ts, …)``).

A window TVF is a relation of its input's rows with their windows: TUMBLE, HOP and
CUMULATE add the window columns to each row (one row per window it belongs to), so the
TVF can be selected, filtered, ranked (job.plan.window_rank) and joined
(job.plan.window_join) like any relation; SESSION windows depend on the rows around a
row, so their rows come from the engine's sessionRows operator once a session is
complete. The window of each row is also kept as a struct column marked as the event
time, which Spark's aggregation groups by.

Their aggregation, and the legacy group windows', is job.plan.window_aggregate.

Window columns follow Flink: ``window_start``, ``window_end`` (TIMESTAMP(3)) and
``window_time`` (``window_end`` − 1 ms, a time attribute).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from job.plan import nodes, processing_time
from job.plan.event_time import waits
from job.plan.relation import Field, Rel
from job.plan.window_zone import instant_struct, local_columns, local_time, shown_columns, window_zone
from job.sql.flink.casts import interval_millis
from job.sql.flink.dialect import Descriptor, TableArg, WindowTVF
from job.sql.types import timestamp

WINDOW_COLUMNS = ("window_start", "window_end", "window_time")
_TVF_ARGS = {
    "TUMBLE": ("DATA", "TIMECOL", "SIZE", "OFFSET"),
    "HOP": ("DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"),
    "CUMULATE": ("DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"),
    "SESSION": ("DATA", "TIMECOL", "GAP"),
}


@dataclass
class Window:
    kind: str                     # TUMBLE | HOP | CUMULATE | SESSION
    time: exp.Expression          # the time attribute column
    size_ms: int = 0
    slide_ms: int = 0             # HOP slide, CUMULATE step
    offset_ms: int = 0
    gap_ms: int = 0
    partition: tuple = ()         # SESSION … PARTITION BY
    node: Optional[exp.Expression] = None
    # The column holding each row's window (start, end) in the TVF's relation, marked as
    # its event time for Spark's aggregation; None: the aggregation computes the windows
    # (SESSION, legacy group windows).
    struct_col: Optional[str] = None
    # The session's zone when the time attribute is a TIMESTAMP_LTZ: windows align to its
    # wall clock (job.plan.window_zone); None: to UTC.
    zone: Optional[str] = None
    processing_time: bool = False  # on a PROCTIME() attribute (job.plan.processing_time)


def spark_duration(ms: int) -> str:
    return f"{ms} milliseconds"


# --------------------------------------------------------------------------- TVF

def tvf_arguments(planner, node: WindowTVF) -> dict:
    names = _TVF_ARGS.get(node.this)
    if names is None:
        raise planner.error(node, f"window table function {node.this} is not supported",
                            hint="Flink's window functions are TUMBLE, HOP, CUMULATE and SESSION")
    args: dict = {}
    positional = [a for a in node.expressions if not isinstance(a, exp.Kwarg)]
    for name, value in zip(names, positional):
        args[name] = value
    for a in node.expressions:
        if isinstance(a, exp.Kwarg):
            key = a.this.name.upper()
            if key not in names:
                raise planner.error(a, f"{node.this} has no parameter {key} (it takes {', '.join(names)})")
            args[key] = a.expression
    required = [n for n in names if n != "OFFSET"]
    missing = [n for n in required if n not in args]
    if missing:
        raise planner.error(node, f"{node.this} needs {', '.join(missing)}")
    return args


def plan_window_tvf(planner, node: WindowTVF) -> Rel:
    """``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))`` as a relation: t's columns plus
    window_start, window_end and window_time, one row per row and window it belongs to
    (HOP and CUMULATE windows overlap), the window remembered for a GROUP BY that
    follows. SESSION windows depend on the rows around, so only the aggregation that
    follows computes them."""
    args = tvf_arguments(planner, node)
    data = args["DATA"]
    if not isinstance(data, TableArg):
        raise planner.error(node, f"the first argument of {node.this} is TABLE <name>")
    rel = planner.settle(planner.relation(data.this))
    descriptor = args["TIMECOL"]
    if not isinstance(descriptor, Descriptor) or len(descriptor.expressions) != 1:
        raise planner.error(node, "the time column of a window function is given as DESCRIPTOR(column)")
    time_node = descriptor.expressions[0]
    time_field, _ = planner.translator(rel, "DESCRIPTOR").scope.resolve_column(time_node)
    if time_field.time not in ("rowtime", "proctime"):
        raise planner.error(time_node, f"'{time_field.name}' is not a time attribute: declare WATERMARK FOR "
                                       f"{time_field.name} AS … on its table")
    if time_field.time == "proctime":
        if node.this == "SESSION":
            raise planner.error(time_node, "SESSION windows on processing time (PROCTIME()) are not supported yet")
        if not _aggregated_by_window(node):
            raise planner.error(node, "the rows of a window table function on processing time (PROCTIME()) are "
                                      "supported only in a window aggregation (GROUP BY window_start, window_end) "
                                      "yet")
        rel = processing_time.watermarked(planner, rel, time_field)
    window = Window(node.this, time_node, node=node, zone=window_zone(planner, time_field),
                    processing_time=time_field.time == "proctime")
    if node.this in ("TUMBLE", "HOP", "CUMULATE"):
        window.size_ms = interval_millis(planner.translator(rel, node.this), args["SIZE"])
    if node.this == "HOP":
        window.slide_ms = interval_millis(planner.translator(rel, node.this), args["SLIDE"])
    if node.this == "CUMULATE":
        window.slide_ms = interval_millis(planner.translator(rel, node.this), args["STEP"])
    if node.this == "SESSION":
        window.gap_ms = interval_millis(planner.translator(rel, node.this), args["GAP"])
        window.partition = tuple(data.args.get("partition_by") or ())
    if "OFFSET" in args:
        window.offset_ms = interval_millis(planner.translator(rel, node.this), args["OFFSET"])
    fields = list(rel.fields)
    alias = node.alias or None
    for name in WINDOW_COLUMNS:
        fields.append(Field(name, alias, planner.fresh(), window_column_type(name, time_field),
                            time_field.time if name == "window_time" else None))
    fields = [f.requalified(alias) if alias else f for f in fields]
    window_fields = {f.name: f for f in fields[-3:]}
    if node.this == "SESSION" and _aggregated_by_window(node):
        # Spark's session-window aggregation computes the sessions itself, after the
        # query's WHERE (Flink, too, assigns sessions to the rows its filters keep).
        return Rel(rel.df, fields, rel.append_only, steps=rel.steps, window=window, window_fields=window_fields)
    if node.this == "SESSION":
        if not rel.append_only:
            raise planner.error(node, "SESSION windows over an input with updates and deletes are not supported yet")
        # Sessions of all the input's rows: a WHERE of this query filters the rows after
        # (as in Flink; only a window aggregation assigns sessions to filtered rows).
        df = session_windows(planner, rel, window, time_field, window_fields)
        steps = rel.steps + [nodes.engine("session_windows", "sessionRows", f"session windows on {time_field.name}",
                                          "engine: sessionRows; a session's rows wait until the watermark passes its "
                                          "end, then come out with window_start, window_end, window_time",
                                          spec=planner.spec_for("sessionRows"))]
    else:
        df = assign_windows(planner, rel, window, time_field, window_fields)
        steps = rel.steps + [nodes.spark("windows", f"{node.this.lower()} windows on {time_field.name}: window_start, "
                                         "window_end, window_time added to each row", "stateless")]
    return Rel(df, fields, rel.append_only, rel.unique_key if node.this in ("TUMBLE", "SESSION") else None, steps,
               window=window, window_fields=window_fields)


def window_column_type(name: str, time_field: Field):
    """window_start and window_end are TIMESTAMP(3); window_time is a time attribute of
    the same kind as the window's (TIMESTAMP_LTZ(3) over a TIMESTAMP_LTZ), as in Flink."""
    ltz = name == "window_time" and time_field.type.name == "TIMESTAMP_LTZ"
    return timestamp(3, ltz=ltz, nullable=False)


def _aggregated_by_window(node: WindowTVF) -> bool:
    """Is the TVF the FROM of a SELECT that groups by its window?"""
    from job.plan.aggregate_calls import is_aggregating

    select = node.find_ancestor(exp.Select)
    if select is None or not is_aggregating(select) or select.args.get("group") is None:
        return False
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None or from_.this is not node or select.args.get("joins"):
        return False
    names = {g.name.lower() for g in select.args["group"].expressions if isinstance(g, exp.Column)}
    return {"window_start", "window_end"} <= names


def session_windows(planner, rel: Rel, window: Window, time_field: Field, window_fields: dict):
    """Each row with its session window (the engine's sessionRows), emitted once the
    session is complete; the window as a struct marked as the event time, as for the
    other windows, so Spark's aggregation can group by it."""
    from pyspark.sql import functions as F

    from job.changelog.columns import SESSION_END, SESSION_START
    from job.changelog.specs import SessionRows
    from job.plan import engine
    from job.plan.event_time import without_event_time

    metadata = rel.df.schema[time_field.col].metadata
    tr = planner.translator(rel, "PARTITION BY")
    keys = [tr.expr(p) for p in window.partition]
    staged = rel.df.select(*[F.expr(k.sql).alias(f"__k{i}") for i, k in enumerate(keys)],
                           *[F.col(f"`{c}`") for c in rel.cols()],
                           F.expr(f"unix_millis(`{time_field.col}`)").alias("__t"))
    spec = SessionRows(keys=tuple(f"__k{i}" for i in range(len(keys))), row=tuple(rel.cols()), time="__t",
                       gap_ms=window.gap_ms)
    out = engine.call(planner, spec, without_event_time(staged))
    waits(planner, window.gap_ms)
    window.struct_col = planner.fresh("_w")
    struct = F.struct(F.timestamp_millis(F.col(SESSION_START)).alias("start"),
                      F.timestamp_millis(F.col(SESSION_END)).alias("end"))
    df = out.select(*[F.col(f"`{c}`") for c in rel.cols()], struct.alias(window.struct_col, metadata=metadata or None))
    w = F.col(window.struct_col)
    columns = shown_columns(w, window.zone) if window.zone else \
        {"window_start": w["start"], "window_end": w["end"], "window_time": w["end"] - F.expr("INTERVAL 1 MILLISECOND")}
    return df.select("*", *[columns[name].alias(f.col) for name, f in window_fields.items()])


def assign_windows(planner, rel: Rel, window: Window, time_field: Field, window_fields: dict):
    """Each row with its windows: a struct column (start, end) — one row per window —
    and the three window columns read from it. The struct keeps the time column's
    watermark mark, so Spark's aggregation can group by it and close it."""
    from pyspark.sql import functions as F

    window.struct_col = planner.fresh("_w")
    if not window.processing_time:
        waits(planner, window.size_ms)  # whatever reads the windows may wait for their end
    time_sql = f"`{time_field.col}`"
    if window.zone:  # the windows of the zone's wall clock (job.plan.window_zone)
        time_sql = local_time(time_sql, window.zone)
    time_col = F.expr(time_sql)
    metadata = rel.df.schema[time_field.col].metadata
    if window.kind == "TUMBLE":
        struct = F.window(time_col, spark_duration(window.size_ms), startTime=spark_duration(window.offset_ms))
    elif window.kind == "HOP":
        struct = F.window(time_col, spark_duration(window.size_ms), spark_duration(window.slide_ms),
                          startTime=spark_duration(window.offset_ms))
    else:  # CUMULATE: the windows from the period's start to each step end at or after the row
        t = f"unix_millis({time_sql})"
        start = f"({t} - pmod({t} - {window.offset_ms}, {window.size_ms}))"
        first = f"({start} + (floor(pmod({t} - {window.offset_ms}, {window.size_ms}) / {window.slide_ms}) + 1) * " \
                f"{window.slide_ms})"
        ends = f"sequence(CAST({first} AS BIGINT), CAST({start} + {window.size_ms} AS BIGINT), {window.slide_ms})"
        struct = F.explode(F.expr(f"transform({ends}, e -> named_struct('start', timestamp_millis({start}), "
                                  f"'end', timestamp_millis(e)))"))
    # A separate projection marks the struct: a generator's (explode's) alias keeps no
    # metadata of its own.
    staged = rel.df.select("*", struct.alias("__window"))
    local = F.col("__window")
    instants = instant_struct(local, window.zone) if window.zone else local
    df = staged.select(*[F.col(f"`{c}`") for c in rel.df.columns], local,
                       instants.alias(window.struct_col, metadata=metadata or None))
    w = F.col(window.struct_col)
    columns = local_columns(local["start"], local["end"], window.zone) if window.zone else \
        {"window_start": w["start"], "window_end": w["end"], "window_time": w["end"] - F.expr("INTERVAL 1 MILLISECOND")}
    return df.select("*", *[columns[name].alias(f.col) for name, f in window_fields.items()]).drop("__window")
