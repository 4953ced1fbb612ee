"""Window aggregations: GROUP BY window_start, window_end over a window table function,
and Flink's legacy group windows (``GROUP BY TUMBLE(ts, INTERVAL …)`` with TUMBLE_START
and friends in the select list).

A window aggregation over an append-only input runs on Spark's own windowed streaming
aggregation: each window is emitted once, when the watermark passes its end (Flink's
window aggregate is append-only too); GROUPING SETS / ROLLUP / CUBE too
(job.plan.window_grouping). At the end of a bounded input (``--once``) the run advances
event time past every window, so every window closes, as Flink's bounded sources do (see
:mod:`job.plan.end_of_input`). A window aggregation of a changelog is refused: a
changelog source has no watermark in Spark here, and its windows would never close.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from sqlglot import exp

from job.plan import grouping_sets, nodes, processing_time
from job.plan.event_time import waits
from job.plan.relation import Field, Rel, flink_key
from job.plan.window_zone import shown_columns, window_zone
from job.plan.windows import WINDOW_COLUMNS, Window, assign_windows, spark_duration, window_column_type
from job.sql.flink.casts import interval_millis
from job.sql.flink.translate import Typed

# The legacy group window functions: their arguments after the time attribute, and the
# window column each of their _START/_END/… functions reads.
LEGACY = {"TUMBLE": ("SIZE",), "HOP": ("SLIDE", "SIZE"), "SESSION": ("GAP",)}
LEGACY_PARTS = {"_START": "window_start", "_END": "window_end", "_ROWTIME": "window_time", "_PROCTIME": None}


def groups_by_window_columns(rel: Rel, group: exp.Group) -> bool:
    return getattr(rel, "window", None) is not None


# --------------------------------------------------------------------------- legacy

def group_window(planner, group: exp.Group) -> Optional[exp.Anonymous]:
    """The legacy group window call in a GROUP BY (``TUMBLE(ts, INTERVAL …)``), if any."""
    found = [g for g in group.expressions if isinstance(g, exp.Anonymous) and g.name.upper() in LEGACY]
    if len(found) > 1:
        raise planner.error(found[1], "a GROUP BY can have only one window")
    return found[0] if found else None


def plan_group_window(planner, rel: Rel, node: exp.Select, call: exp.Anonymous) -> Rel:
    kind = call.name.upper()
    params = LEGACY[kind]
    if len(call.expressions) != 1 + len(params):
        raise planner.error(call, f"{kind}(time_attr, {', '.join(p.lower() for p in params)}) takes "
                                  f"{1 + len(params)} arguments")
    time_node = call.expressions[0]
    if not isinstance(time_node, exp.Column):
        raise planner.error(time_node, f"the first argument of {kind} must be a time attribute column")
    time_field, _ = planner.translator(rel, kind).scope.resolve_column(time_node)
    if time_field.time == "proctime" and kind != "SESSION":
        rel = processing_time.watermarked(planner, rel, time_field)
    elif time_field.time != "rowtime":
        raise planner.error(time_node, f"'{time_field.name}' is not an event-time attribute: declare WATERMARK FOR "
                                       f"{time_field.name} AS … on its table"
                            + (" (SESSION windows on PROCTIME() are not supported yet)" if time_field.time == "proctime"
                               else ""))
    tr = planner.translator(rel, kind)
    window = Window(kind, time_node, node=call, zone=window_zone(planner, time_field),
                    processing_time=time_field.time == "proctime")
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
                                 time_field.time if name == "window_time" else None) for name in WINDOW_COLUMNS}
    # TUMBLE_ROWTIME on an event-time window, TUMBLE_PROCTIME on a processing-time one (as in
    # Flink, the other is refused): the window's time attribute.
    parts = dict(LEGACY_PARTS, **({"_ROWTIME": None, "_PROCTIME": "window_time"} if window.processing_time else {}))
    replacements = {}
    for item in list(node.expressions) + ([node.args["having"]] if node.args.get("having") else []):
        for f in item.find_all(exp.Anonymous):
            name = f.name.upper()
            if name.startswith(kind + "_") and name[len(kind):] in parts:
                part = parts[name[len(kind):]]
                if part is None:
                    other = "an event-time" if window.processing_time else "a processing-time"
                    raise planner.error(f, f"{name} is for {other} window; this one is on "
                                           f"{'processing' if window.processing_time else 'event'} time")
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
    if not window.processing_time:
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
    time_mark = None
    if not window.processing_time and time_field.col in rel.df.columns:
        metadata = rel.df.schema[time_field.col].metadata
        time_mark = metadata if "spark.watermarkDelayMs" in metadata else None
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
        if name == "window_time" and time_mark is not None:
            # A time attribute, as in Flink: a window aggregation (or interval join…) over
            # window_time closes on Spark's watermark, which this mark carries on. A
            # window is emitted once the watermark has passed its end, so its window_time
            # is never behind the watermark the next operator checks.
            value = value.alias(source.col, metadata=time_mark)
        else:
            value = value.alias(source.col)
        selected.append(value)
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
                                                 "Spark's windowed aggregation; a window is emitted once the " +
                                                 ("processing time (the micro-batch's)" if window.processing_time
                                                  else "watermark") + " passes its end", stateful=True)])
    if node.args.get("having"):
        agg_rel = planner.filter(agg_rel, node.args["having"].this, "HAVING", replaced)
    return planner.project(agg_rel, node.expressions, replaced)
