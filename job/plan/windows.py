"""Event-time windows: the window table functions (TUMBLE, HOP, CUMULATE, SESSION) and
Flink's legacy group windows (``GROUP BY TUMBLE(ts, …)``).

A window TVF is a relation of its input's rows with their windows: TUMBLE, HOP and
CUMULATE add the window columns to each row (one row per window it belongs to), so the
TVF can be selected, filtered, ranked (job.plan.window_rank) and joined
(job.plan.window_join) like any relation; SESSION windows depend on the rows around a
row, so their rows come from the engine's sessionRows operator once a session is
complete. The window of each row is also kept as a struct column marked as the event
time, which Spark's aggregation groups by.

A window aggregation over an append-only input runs on Spark's own windowed streaming
aggregation: each window is emitted once, when the watermark passes its end (Flink's
window aggregate is append-only too); GROUPING SETS / ROLLUP / CUBE too
(job.plan.window_grouping). At the end of a bounded input (``--once``) the run advances
event time past every window, so every window closes, as Flink's bounded sources do (see
:mod:`job.plan.end_of_input`). A window aggregation of a changelog is refused: a
changelog source has no watermark in Spark here, and its windows would never close.

Window columns follow Flink: ``window_start``, ``window_end`` (TIMESTAMP(3)) and
``window_time`` (``window_end`` − 1 ms, a time attribute).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from job.plan import grouping_sets, nodes
from job.plan.event_time import waits
from job.plan.relation import Field, Rel, flink_key
from job.plan.window_zone import instant_struct, local_columns, local_time, shown_columns, window_zone
from job.sql.flink.casts import interval_millis
from job.sql.flink.dialect import Descriptor, TableArg, WindowTVF
from job.sql.flink.translate import Typed
from job.sql.types import timestamp

WINDOW_COLUMNS = ("window_start", "window_end", "window_time")
_TVF_ARGS = {
    "TUMBLE": ("DATA", "TIMECOL", "SIZE", "OFFSET"),
    "HOP": ("DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"),
    "CUMULATE": ("DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"),
    "SESSION": ("DATA", "TIMECOL", "GAP"),
}
_LEGACY = {"TUMBLE": ("SIZE",), "HOP": ("SLIDE", "SIZE"), "SESSION": ("GAP",)}
_LEGACY_PARTS = {"_START": "window_start", "_END": "window_end", "_ROWTIME": "window_time", "_PROCTIME": None}


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
    if time_field.time != "rowtime":
        if time_field.time == "proctime":
            raise planner.error(time_node, "windows on processing time (PROCTIME()) are not supported yet")
        raise planner.error(time_node, f"'{time_field.name}' is not a time attribute: declare WATERMARK FOR "
                                       f"{time_field.name} AS … on its table")
    window = Window(node.this, time_node, node=node, zone=window_zone(planner, time_field))
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
                            "rowtime" if name == "window_time" else None))
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


def groups_by_window_columns(rel: Rel, group: exp.Group) -> bool:
    return getattr(rel, "window", None) is not None


# --------------------------------------------------------------------------- legacy

def group_window(planner, group: exp.Group) -> Optional[exp.Anonymous]:
    """The legacy group window call in a GROUP BY (``TUMBLE(ts, INTERVAL …)``), if any."""
    found = [g for g in group.expressions if isinstance(g, exp.Anonymous) and g.name.upper() in _LEGACY]
    if len(found) > 1:
        raise planner.error(found[1], "a GROUP BY can have only one window")
    return found[0] if found else None


def plan_group_window(planner, rel: Rel, node: exp.Select, call: exp.Anonymous) -> Rel:
    kind = call.name.upper()
    params = _LEGACY[kind]
    if len(call.expressions) != 1 + len(params):
        raise planner.error(call, f"{kind}(time_attr, {', '.join(p.lower() for p in params)}) takes "
                                  f"{1 + len(params)} arguments")
    time_node = call.expressions[0]
    if not isinstance(time_node, exp.Column):
        raise planner.error(time_node, f"the first argument of {kind} must be a time attribute column")
    time_field, _ = planner.translator(rel, kind).scope.resolve_column(time_node)
    if time_field.time != "rowtime":
        raise planner.error(time_node, f"'{time_field.name}' is not an event-time attribute: declare WATERMARK FOR "
                                       f"{time_field.name} AS … on its table"
                            + (" (windows on PROCTIME() are not supported yet)" if time_field.time == "proctime" else ""))
    tr = planner.translator(rel, kind)
    window = Window(kind, time_node, node=call, zone=window_zone(planner, time_field))
    values = [interval_millis(tr, p) for p in call.expressions[1:]]
    if kind == "TUMBLE":
        window.size_ms = values[0]
    elif kind == "HOP":
        window.slide_ms, window.size_ms = values
    else:
        window.gap_ms = values[0]
    keys = [g for g in node.args["group"].expressions if g is not call]
    if kind == "SESSION":
        window.partition = tuple(k for k in keys if isinstance(k, exp.Column))
    # TUMBLE_START(ts, …) and friends in the select list read the window's columns.
    window_fields = {name: Field(name, None, planner.fresh(), window_column_type(name, time_field),
                                 "rowtime" if name == "window_time" else None) for name in WINDOW_COLUMNS}
    replacements = {}
    for item in list(node.expressions) + ([node.args["having"]] if node.args.get("having") else []):
        for f in item.find_all(exp.Anonymous):
            name = f.name.upper()
            if name.startswith(kind + "_") and name[len(kind):] in _LEGACY_PARTS:
                part = _LEGACY_PARTS[name[len(kind):]]
                if part is None:
                    raise planner.error(f, f"{name} is not supported (processing-time windows are not supported yet)")
                source = window_fields[part]
                replacements[flink_key(f)] = Typed(f"`{source.col}`", source.type)
    return window_aggregate(planner, rel, node, window, keys, window_fields, replacements)


def plan_window_aggregate(planner, rel: Rel, node: exp.Select) -> Rel:
    """GROUP BY window_start, window_end [, keys] over a window TVF."""
    window: Window = rel.window
    group = node.args["group"].expressions
    names = {}
    keys = []
    for g in group:
        if isinstance(g, exp.Column):
            found, _ = planner.translator(rel, "GROUP BY").scope.resolve_column(g)
            if found.name.lower() in WINDOW_COLUMNS and found in rel.window_fields.values():
                names[found.name.lower()] = g
                continue
        keys.append(g)
    if "window_start" not in names or "window_end" not in names:
        raise planner.error(node.args["group"], "a window aggregation groups by window_start and window_end",
                            hint="GROUP BY window_start, window_end[, other keys]")
    plain = [k for k in keys if not isinstance(k, (exp.GroupingSets, exp.Rollup, exp.Cube))]
    if len(plain) < len(keys):
        from job.plan.window_grouping import expand_grouping_sets

        expanded, keys, key_names, hidden, groupings = expand_grouping_sets(planner, rel, node, window, keys)
        return window_aggregate(planner, expanded, node, window, keys, rel.window_fields, {}, key_names=key_names,
                                hidden=hidden, groupings=groupings)
    return window_aggregate(planner, rel, node, window, keys, rel.window_fields, {})


def window_aggregate(planner, rel: Rel, node: exp.Select, window: Window, keys: list, window_fields: dict,
                     replacements: dict, key_names: Optional[dict] = None, hidden: frozenset = frozenset(),
                     groupings=None) -> Rel:
    """Spark's windowed aggregation with watermark: append-only, one row per window.
    ``replacements`` (TUMBLE_START(…) → its window column) apply after the aggregation.
    ``groupings``: the grouping sets ``keys`` were expanded for (their number is the key
    named in ``hidden``); GROUPING() and friends read it."""
    from pyspark.sql import functions as F

    from job.plan import native

    if not rel.append_only:
        raise planner.error(node, "a window aggregation needs an append-only input, but this query's input has "
                                  "updates and deletes")
    waits(planner, max(window.size_ms, window.gap_ms))
    tr = planner.translator(rel, "GROUP BY")
    time_field, _ = tr.scope.resolve_column(window.time)
    key_values = [tr.expr(k) for k in keys]
    group_cols, key_cols = [], []
    for k, v in zip(keys, key_values):
        col = planner.fresh()
        group_cols.append(F.expr(v.sql).alias(col))
        key_cols.append(col)
    if window.zone and window.struct_col is None and window.kind in ("TUMBLE", "HOP"):
        # A legacy group window aligned to the zone: the rows with their windows first.
        rel = dataclasses.replace(rel, df=assign_windows(planner, rel, window, time_field, window_fields))
    # Over a zone's windows, the window columns (computed per row) are grouped by as well:
    # the struct Spark groups by holds instants, the columns the zone's wall clock.
    shown = [F.col(f"`{f.col}`") for f in window_fields.values()] if window.zone and window.struct_col else []
    if window.kind == "SESSION" and not group_cols:
        # Spark has no streaming session windows without a key: every row gets the same
        # one (a rowtime is never NULL in a window), computed so that it is not folded away.
        group_cols.append(F.col(f"`{time_field.col}`").isNotNull().alias(planner.fresh()))
    wcol = planner.fresh("_w")
    time_col = F.col(time_field.col)
    if window.struct_col is not None:
        spark_window = F.col(window.struct_col)
    elif window.kind == "TUMBLE":
        spark_window = F.window(time_col, spark_duration(window.size_ms), startTime=spark_duration(window.offset_ms))
    elif window.kind == "HOP":
        spark_window = F.window(time_col, spark_duration(window.size_ms), spark_duration(window.slide_ms),
                                startTime=spark_duration(window.offset_ms))
    elif window.kind == "SESSION":
        spark_window = F.session_window(time_col, spark_duration(window.gap_ms))
    else:
        raise planner.error(window.node, f"{window.kind} windows are not supported yet")
    aggs, agg_fields, agg_replacements = native.aggregate_columns(planner, rel, node)
    grouped = rel.df.groupBy(spark_window.alias(wcol), *shown, *group_cols)
    df = grouped.agg(*aggs) if aggs else grouped.agg(F.count(F.lit(1)).alias("__n"))
    # Spark's windowed aggregation reads its state through a read-only store, and a
    # state-writing operator later in the same stage (any engine operator, Spark's
    # dropDuplicates…) looks for an open store anywhere below it in the stage and takes
    # that one: "Can only upgrade readStore to writeStore with the same stateStoreId".
    # A shuffle of the (small) aggregated rows ends the stage, so every operator that
    # reads the windows opens a store of its own.
    df = df.repartition(F.col(wcol), *[F.col(c) for c in key_cols])
    out_fields, selected = [], []
    replaced = dict(replacements)
    zone_columns = shown_columns(F.col(wcol), window.zone) if window.zone and not shown else {}
    for name, source in window_fields.items():
        if shown:
            value = F.col(f"`{source.col}`")
        elif zone_columns:
            value = zone_columns[name]
        elif name == "window_start":
            value = F.col(f"{wcol}.start")
        elif name == "window_end":
            value = F.col(f"{wcol}.end")
        else:
            value = F.col(f"{wcol}.end") - F.expr("INTERVAL 1 MILLISECOND")
        selected.append(value.alias(source.col))
        out_fields.append(source)
        replaced[flink_key(exp.column(name))] = Typed(f"`{source.col}`", source.type)
    for k, v, col in zip(keys, key_values, key_cols):
        if key_names and isinstance(k, exp.Column) and k.name in key_names:
            # A grouping-set key: named and replaced as the user wrote it.
            original, value = key_names[k.name]
            name = original.name if isinstance(original, exp.Column) else f"EXPR${len(out_fields)}"
            out_fields.append(Field(name, None, col, value.type.nullable_as(True)))
            replaced[flink_key(original)] = Typed(f"`{col}`", value.type.nullable_as(True))
        elif isinstance(k, exp.Column) and k.name in hidden:
            out_fields.append(Field("__gid", None, col, v.type))
            replaced.update(grouping_sets.grouping_replacements(planner, node, groupings, f"`{col}`",
                                                                always=WINDOW_COLUMNS))
        elif isinstance(k, exp.Column):
            found, _ = tr.scope.resolve_column(k)
            out_fields.append(Field(found.name, found.qualifier, col, v.type))
            replaced[flink_key(k)] = Typed(f"`{col}`", v.type)
        else:
            out_fields.append(Field(f"EXPR${len(out_fields)}", None, col, v.type))
            replaced[flink_key(k)] = Typed(f"`{col}`", v.type)
        selected.append(F.col(col))
    if groupings is None:  # GROUPING(…) of plain keys: 0
        replaced.update(grouping_sets.grouping_replacements(planner, node, grouping_sets.plain(keys), None,
                                                            always=WINDOW_COLUMNS))
    for field in agg_fields:
        selected.append(F.col(field.col))
        out_fields.append(field)
    replaced.update(agg_replacements)
    agg_rel = Rel(df.select(*selected), out_fields, True,
                  steps=rel.steps + [nodes.spark("window_aggregate", f"{window.kind.lower()} window aggregation on "
                                                 f"{planner.current.flink_sql(window.time)}",
                                                 "Spark's windowed aggregation; a window is emitted once the watermark "
                                                 "passes its end", stateful=True)])
    if node.args.get("having"):
        agg_rel = planner.filter(agg_rel, node.args["having"].this, "HAVING", replaced)
    return planner.project(agg_rel, node.expressions, replaced)
