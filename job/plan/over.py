"""OVER aggregations: ``agg(…) OVER (PARTITION BY … ORDER BY time ROWS|RANGE BETWEEN …
PRECEDING AND CURRENT ROW)``, as Flink runs them in streaming mode.

Flink's rules, which the planner checks before anything runs: the input is append-only;
the window is ordered by one time attribute (event time or processing time), ascending;
the frame ends at CURRENT ROW; every OVER call of one SELECT uses the same window (a
named ``WINDOW w AS (…)`` clause counts as that window). Each input row comes out once,
with the results of its frame appended: on event time once the watermark passes the
row (late rows are dropped), on processing time as it arrives. The output is
append-only and keeps the input's columns, time attributes included.

The aggregates are the engine's retractable ones (COUNT, SUM, AVG, MIN, MAX, FIRST_VALUE,
LAST_VALUE, LISTAGG, DISTINCT), plus ``LAG(x[, n[, default]])``. The operator is the
engine's ``over`` (engine/…/OverOp.java).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from job.changelog.specs import AggregateCall, Over
from job.plan import engine, nodes
from job.plan.event_time import time_attributes_kept, waits, without_event_time
from job.plan.relation import Field, Rel, flink_key
from job.sql.flink.casts import interval_millis
from job.sql.flink.translate import Typed

SUPPORTED = {"count", "sum", "avg", "min", "max", "listagg", "first_value", "last_value"}
RANKING = ("ROW_NUMBER", "RANK", "DENSE_RANK")


@dataclass(frozen=True)
class Frame:
    partition: tuple          # Flink SQL texts of the PARTITION BY expressions
    order: str                # Flink SQL text of the ORDER BY column
    rows: bool                # ROWS (else RANGE)
    preceding: Optional[int]  # rows, or ms for RANGE; None: UNBOUNDED


def over_calls(node: exp.Select) -> list[exp.Window]:
    """The OVER calls of a SELECT's own select list (not of its subqueries)."""
    out = []
    for item in node.expressions:
        for window in item.find_all(exp.Window):
            if window.find_ancestor(exp.Select) is node:
                out.append(window)
    return out


def plan_over(planner, rel: Rel, node: exp.Select) -> Rel:
    from pyspark.sql import functions as F

    calls = over_calls(node)
    named = {w.this.name.lower(): w for w in node.args.get("windows") or []}
    specs = [(call, _definition(planner, call, named)) for call in calls]
    rel = planner.settle(rel)
    if not rel.append_only:
        raise planner.error(calls[0], "OVER aggregations need an append-only input, but this one has updates and "
                                      "deletes (Flink: StreamPhysicalOverAggregate doesn't support consuming update "
                                      "and delete changes)")
    tr = planner.translator(rel, "the OVER window")
    frames = {_frame(planner, rel, definition) for _, definition in specs}
    if len(frames) > 1:
        raise planner.error(calls[1], "all OVER aggregates of one SELECT must use the same window (Flink: Over Agg: "
                                      "Unsupported use of OVER windows. All aggregates must be computed on the same "
                                      "window)", hint="compute the other window in a subquery")
    frame = frames.pop()
    definition = specs[0][1]
    order_node = definition.args["order"].expressions[0].this
    time_field, _ = tr.scope.resolve_column(order_node)

    keys = [tr.expr(p) for p in definition.args.get("partition_by") or []]
    staged = [F.expr(k.sql).alias(f"__k{i}") for i, k in enumerate(keys)]
    staged += [F.col(f"`{c}`") for c in rel.cols()]
    aggs, results = [], []
    seen: dict[str, int] = {}
    for call, _ in specs:
        key = flink_key(call.this)
        if key in seen:
            continue
        seen[key] = len(aggs)
        spec, result, columns = _call(planner, rel, call, len(aggs), named)
        staged += columns
        aggs.append(spec)
        results.append(result)
    if time_field.time == "rowtime":
        staged.append(F.expr(f"unix_millis(`{time_field.col}`)").alias("__t"))
        waits(planner, 0)  # the end of the input must pass the last row's time
    df = planner.signed(rel).select(*staged)
    spec = Over(keys=tuple(f"__k{i}" for i in range(len(keys))), row=tuple(rel.cols()), rows=frame.rows,
                preceding=-1 if frame.preceding is None else frame.preceding, calls=tuple(aggs),
                time="__t" if time_field.time == "rowtime" else None)
    out = time_attributes_kept(engine.call(planner, spec, without_event_time(df)), df, rel.fields)

    fields, selected = list(rel.fields), [F.col(f"`{c}`") for c in rel.cols()]
    result_cols = [planner.fresh("_o") for _ in results]
    for index, (result, col) in enumerate(zip(results, result_cols)):
        fields.append(Field(f"__over{index}", None, col, result))
        selected.append(F.col(f"r{index}").alias(col))
    replacements = {flink_key(call): Typed(f"`{result_cols[seen[flink_key(call.this)]]}`",
                                           results[seen[flink_key(call.this)]]) for call, _ in specs}
    preceding = ("UNBOUNDED" if frame.preceding is None else
                 f"{frame.preceding}" if frame.rows else f"{frame.preceding} ms")
    frame_text = f"frame: {'ROWS' if frame.rows else 'RANGE'} BETWEEN {preceding} PRECEDING AND CURRENT ROW"
    over_rel = Rel(out.select(*selected), fields, True, rel.unique_key,
                   rel.steps + [nodes.engine(
                       "over", "over",
                       f"over aggregation {', '.join(planner.current.flink_sql(c) for c in dict.fromkeys(calls))}"
                       f" ({frame_text})", f"engine: over, on {time_field.time.replace('time', ' time')}; "
                       + ("a row is emitted once the watermark passes its time, late rows dropped"
                          if time_field.time == "rowtime" else "each row is emitted as it arrives"),
                       keys=frame.partition, spec=planner.spec_for("over"))],
                 computed=rel.computed)
    projected = planner.project(over_rel, node.expressions, replacements)
    if node.args.get("distinct"):
        projected = planner.distinct(projected)
    return projected


def _definition(planner, call: exp.Window, named: dict) -> exp.Window:
    """The window an OVER call uses: its own (…) or a named WINDOW clause's."""
    own = any(call.args.get(k) for k in ("partition_by", "order", "spec"))
    alias = call.args.get("alias")
    if alias is not None and not own:
        found = named.get(alias.name.lower())
        if found is None:
            raise planner.error(call, f"window '{alias.name}' is not defined: declare it with WINDOW {alias.name} AS "
                                      "(…)")
        return found
    if alias is not None:
        raise planner.error(call, "an OVER clause that refines a named window is not supported yet",
                            hint="repeat the window's definition in the OVER clause")
    return call


def _frame(planner, rel: Rel, definition: exp.Window) -> Frame:
    tr = planner.translator(rel, "the OVER window")
    order = definition.args.get("order")
    where = definition
    if order is None or not order.expressions:
        raise planner.error(where, "an OVER window in streaming needs ORDER BY a time attribute (Flink: OVER windows' "
                                   "ordering in stream mode must be defined on a time attribute)")
    if len(order.expressions) > 1:
        raise planner.error(order.expressions[1], "an OVER window is ordered by one time attribute only")
    ordered = order.expressions[0]
    if ordered.args.get("desc"):
        raise planner.error(ordered, "an OVER window is ordered ascending by its time attribute (Flink: The window "
                                     "can only be ordered in ASCENDING mode)")
    if not isinstance(ordered.this, exp.Column):
        raise planner.error(ordered, "OVER windows' ordering in stream mode must be defined on a time attribute")
    time_field, _ = tr.scope.resolve_column(ordered.this)
    if time_field.time not in ("rowtime", "proctime"):
        raise planner.error(ordered, f"'{time_field.name}' is not a time attribute: OVER windows' ordering in stream "
                                     "mode must be defined on a time attribute (declare WATERMARK FOR it, or use "
                                     "PROCTIME())")
    spec = definition.args.get("spec")
    rows, preceding = False, None
    if spec is not None:
        rows = (spec.args.get("kind") or "").upper() == "ROWS"
        end = spec.args.get("end")
        end_text = end if isinstance(end, str) else (end.name if end is not None else "")
        if str(end_text).upper() != "CURRENT ROW":
            raise planner.error(spec, "an OVER window's frame must end at CURRENT ROW (Flink has no FOLLOWING frames "
                                      "in streaming)")
        start = spec.args.get("start")
        side = str(spec.args.get("start_side") or "").upper()
        start_text = start if isinstance(start, str) else None
        if start_text is not None and start_text.upper() == "CURRENT ROW":
            preceding = 0
        elif start_text is not None and start_text.upper() == "UNBOUNDED":
            preceding = None
        elif side != "PRECEDING":
            raise planner.error(spec, "an OVER window's frame starts at a PRECEDING bound")
        elif rows:
            if not (isinstance(start, exp.Literal) and not start.is_string and start.this.isdigit()):
                raise planner.error(start, "a ROWS frame starts a whole number of rows back: ROWS BETWEEN n "
                                           "PRECEDING AND CURRENT ROW")
            preceding = int(start.this)
        else:
            if not isinstance(start, exp.Interval):
                raise planner.error(start, "a RANGE frame over a time attribute starts an INTERVAL back: RANGE "
                                           "BETWEEN INTERVAL '1' MINUTE PRECEDING AND CURRENT ROW")
            preceding = interval_millis(tr, start)
    if time_field.time == "proctime" and not rows and preceding is not None:
        raise planner.error(spec, "RANGE frames of an interval on processing time are not supported (which rows "
                                  "share a millisecond depends on timing)", hint="use ROWS BETWEEN n PRECEDING")
    partition = tuple(flink_key(p) for p in definition.args.get("partition_by") or [])
    return Frame(partition, flink_key(ordered.this), rows, preceding)


def _call(planner, rel: Rel, call: exp.Window, index: int, named: dict):
    """One OVER call → (the engine's call spec, its Flink result type, staged columns)."""
    from pyspark.sql import functions as F

    from job.plan import aggregates

    function = call.this
    if not isinstance(function, (exp.Anonymous, exp.Filter)):
        raise planner.error(call, f"'{planner.current.flink_sql(function)}' is not an aggregate function")
    name = (function.this if isinstance(function, exp.Filter) else function).name.upper()
    tr = planner.translator(rel, "an OVER aggregate")
    result_col = f"r{index}"
    if name in RANKING:
        raise planner.error(call, f"{name} is supported in Flink's Top-N and deduplication only (a subquery whose "
                                  "rank the outer query filters)",
                            hint="SELECT … FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY k ORDER BY c) AS rn FROM t) "
                                 "WHERE rn <= N")
    if name == "LEAD":
        raise planner.error(call, "LEAD is not supported in streaming (Flink: LEAD Function is not supported in "
                                  "stream mode)")
    if name == "LAG":
        return _lag(planner, rel, call, function, index, named)
    parsed = aggregates.parse_call(planner, function)
    if parsed.user is not None:
        raise planner.error(call, f"the user-defined aggregate function {parsed.user.name} in an OVER aggregation "
                                  "is not supported yet")
    engine_name = parsed.function.engine
    if not parsed.function.supported or engine_name not in SUPPORTED:
        raise planner.error(call, f"{parsed.function.name} is not supported in OVER aggregations yet")
    arg = tr.expr(parsed.arg) if parsed.arg is not None else None
    result = parsed.function.result([arg.type] if arg is not None else [])
    function, argument = engine_name, None
    columns = []
    arg_sql = arg.sql if arg is not None else None
    if parsed.condition is not None:
        cond = tr.condition(parsed.condition, "FILTER (WHERE …)")
        arg_sql = f"CASE WHEN {cond.sql} THEN {arg_sql if arg_sql is not None else '1'} END"
    if arg_sql is None:
        function = "count_star"
    else:
        if engine_name in ("sum", "avg") and arg is not None and not (arg.type.is_numeric or arg.type.is_null):
            raise planner.error(call, f"{parsed.function.name} needs a numeric argument, not {arg.type}")
        spark_type = arg.type.spark if arg is not None and not arg.type.is_null else "int"
        argument = f"__a{index}"
        columns.append(F.expr(f"CAST({arg_sql} AS {spark_type})").alias(argument))
    spec = AggregateCall(function=function, column=result_col, result_type=engine.spark_type_json(result),
                         argument=argument, distinct=parsed.distinct, separator=parsed.separator)
    return spec, result, columns


def _lag(planner, rel: Rel, call: exp.Window, function, index: int, named: dict):
    from pyspark.sql import functions as F

    from job.sql.flink import rules

    args = list(function.expressions)
    if not 1 <= len(args) <= 3:
        raise planner.error(function, "LAG takes (value [, offset [, default]])")
    if call.args.get("spec") is not None or (call.args.get("alias") is not None
                                             and _definition(planner, call, named).args.get("spec") is not None):
        raise planner.error(call, "LAG takes no ROWS/RANGE frame (Flink: ROW/RANGE not allowed with RANK, DENSE_RANK "
                                  "or ROW_NUMBER functions)", hint="LAG(x) OVER (PARTITION BY … ORDER BY time)")
    tr = planner.translator(rel, "LAG")
    value = tr.expr(args[0])
    offset = 1
    if len(args) >= 2:
        if not (isinstance(args[1], exp.Literal) and not args[1].is_string and args[1].this.isdigit()):
            raise planner.error(args[1], "the offset of LAG must be a whole number literal")
        offset = int(args[1].this)
    result = value.type.nullable_as(True)
    columns = [F.expr(f"CAST({value.sql} AS {result.spark})").alias(f"__a{index}")]
    default_col = None
    if len(args) == 3:
        default = tr.expr(args[2])
        common = rules.least_restrictive([value.type, default.type])
        if common is None:
            raise planner.error(args[2], f"the default of LAG ({default.type}) does not match its value's type "
                                         f"({value.type})")
        if common.nullable_as(True) != result:
            result = common.nullable_as(True)
            columns = [F.expr(f"CAST({value.sql} AS {result.spark})").alias(f"__a{index}")]
        default_col = f"__d{index}"
        columns.append(F.expr(f"CAST({default.sql} AS {result.spark})").alias(default_col))
    spec = AggregateCall(function="lag", column=f"r{index}", result_type=engine.spark_type_json(result),
                         argument=f"__a{index}", lag_offset=offset, lag_default=default_col)
    return spec, result, columns
