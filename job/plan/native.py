"""Aggregate functions computed by Spark's own streaming aggregation (window
aggregations over append-only inputs), with Flink's result types and NULL rules.

Spark's streaming aggregation has no DISTINCT aggregates: ``COUNT(DISTINCT x)`` is the
size of the set of x, ``SUM(DISTINCT x)`` its sum.
"""
from __future__ import annotations

from sqlglot import exp

from job.plan.aggregate_calls import aggregate_calls, parse_call
from job.plan.relation import Field, Rel, flink_key
from job.sql.flink.translate import Typed, wrap_integer


def aggregate_columns(planner, rel: Rel, node: exp.Select):
    """Spark aggregate columns for every aggregate call of the select list and HAVING:
    (columns, their fields, {call text → Typed})."""
    from pyspark.sql import functions as F

    tr = planner.translator(rel, "an aggregate")
    columns, fields, replacements, seen = [], [], {}, set()
    sources = list(node.expressions) + ([node.args["having"]] if node.args.get("having") else [])
    for source in sources:
        for call_node in aggregate_calls(source):
            key = flink_key(call_node)
            if key in seen:
                continue
            seen.add(key)
            call = parse_call(planner, call_node)
            if call.user is not None:
                raise planner.error(call_node, f"the user-defined aggregate function {call.user.name} in a window "
                                               "aggregation is not supported yet",
                                    hint="it runs in a GROUP BY of columns (not of a window)")
            arg = tr.expr(call.arg) if call.arg is not None else None
            result = call.function.result([arg.type] if arg is not None else [])
            value = arg.sql if arg is not None else "1"
            if call.condition is not None:
                cond = tr.condition(call.condition, "FILTER (WHERE …)")
                value = f"CASE WHEN {cond.sql} THEN {value} END"
            sql = _aggregate_sql(planner, call, value, arg, result)
            col = planner.fresh("_a")
            columns.append(F.expr(sql).alias(col))
            field = Field(f"__agg{len(fields)}", None, col, result)
            fields.append(field)
            replacements[key] = Typed(f"`{col}`", result)
    return columns, fields, replacements


def _aggregate_sql(planner, call, value: str, arg, result) -> str:
    name = call.function.engine
    if name == "count":
        return f"size(collect_set({value}))" if call.distinct else f"count({value})"
    if name in ("min", "max"):
        return f"{name}({value})"
    if name == "sum":
        if call.distinct:
            total = f"CASE WHEN size(collect_set({value})) = 0 THEN NULL ELSE {_set_sum(value, arg.type.spark)} END"
        else:
            total = f"sum({value})"
        if result.name in ("INT", "SMALLINT", "TINYINT"):
            return wrap_integer(total, result)
        return f"CAST({total} AS {result.spark})"
    if name == "avg":
        if call.distinct:
            mean = (f"CASE WHEN size(collect_set({value})) = 0 THEN NULL "
                    f"ELSE {_set_sum(value, 'DOUBLE')} / size(collect_set({value})) END")
        else:
            mean = f"avg({value})"
        return f"CAST({mean} AS {result.spark})"
    if name == "listagg":
        separator = "','"
        if len(call.node.expressions if not isinstance(call.node, exp.Filter) else call.node.this.expressions) > 1:
            raw = (call.node.this if isinstance(call.node, exp.Filter) else call.node).expressions[1]
            if not (isinstance(raw, exp.Literal) and raw.is_string):
                raise planner.error(raw, "the separator of LISTAGG must be a string literal")
            separator = exp.Literal.string(raw.this).sql(dialect="spark")
        values = f"collect_list({value})"
        return f"CASE WHEN size({values}) = 0 THEN NULL ELSE array_join({values}, {separator}) END"
    raise planner.error(call.node, f"the aggregate function {call.function.name} is not supported yet in a window "
                                   "aggregation")


def _set_sum(value: str, spark_type: str) -> str:
    """The sum of the distinct values (Spark's streaming aggregation has no SUM(DISTINCT))."""
    return f"aggregate(collect_set({value}), CAST(0 AS {spark_type}), (acc, v) -> acc + v)"
