"""GROUP BY and aggregate functions over a changelog (Flink's group aggregation).

An aggregation's output updates: each change of a group retracts the group's old row and
inserts the new one, which is what Flink's GroupAggregate emits. Aggregate calls are
recognised through the function library (:func:`job.sql.flink.functions.is_aggregate`),
their result types follow Flink (``AVG`` of an INT is an INT, ``SUM`` of DECIMAL(p, s) is
DECIMAL(38, s), ``COUNT`` is BIGINT NOT NULL), and their arguments are translated like any
expression. Windowed aggregation (window TVFs, legacy group windows) is planned by
:mod:`job.plan.window_aggregate`.
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from job.changelog.specs import AggregateCall
from job.plan import engine, grouping_sets, nodes
from job.plan.aggregate_calls import JSON_AGGREGATES, AggCall, aggregate_calls, parse_call
from job.plan.json_aggregates import json_argument
from job.plan.relation import NET, SIGN, Field, Rel, flink_key
from job.sql.flink.translate import Typed
from job.sql.types import LogicalType, logical_type

# The aggregate functions the engine's aggregate operator computes (under retractions too).
ENGINE_AGGREGATES = {"count", "sum", "avg", "min", "max", "listagg", "first_value", "last_value", "array_agg",
                     "json_arrayagg", "json_objectagg"}
ORDER_DEPENDENT = {"listagg", "first_value", "last_value", "array_agg", "array_agg_ignore_nulls", "json_arrayagg"}


def plan_aggregate(planner, rel: Rel, node: exp.Select) -> Rel:
    from job.plan import window_aggregate as windows

    group = node.args.get("group")
    if group is not None:
        window = windows.group_window(planner, group)
        if window is not None:
            return windows.plan_group_window(planner, rel, node, window)
        if (rel.rowtime is not None or rel.proctime is not None) and windows.groups_by_window_columns(rel, group):
            return windows.plan_window_aggregate(planner, rel, node)
    return group_aggregate(planner, rel, node)


def group_aggregate(planner, rel: Rel, node: exp.Select) -> Rel:
    from pyspark.sql import functions as F

    from job.plan.statistics import expand_statistics

    rel = planner.settle(rel)
    node = expand_statistics(planner, rel, node)
    group = node.args.get("group")
    group_exprs = list(group.expressions) if group is not None else []
    groupings = grouping_sets.analyze(group_exprs) if grouping_sets.uses_grouping_sets(group_exprs) \
        else grouping_sets.plain(group_exprs)
    group_exprs = list(groupings.exprs)
    tr = planner.translator(rel, "GROUP BY")
    group_values = [tr.expr(g) for g in group_exprs]
    if groupings.expands:  # a key some grouping leaves out is NULL there
        group_values = [v if groupings.in_every(i) else Typed(v.sql, v.type.nullable_as(True))
                        for i, v in enumerate(group_values)]

    calls: list[AggCall] = []
    seen: set[str] = set()
    sources = list(node.expressions) + ([node.args["having"]] if node.args.get("having") else [])
    for source in sources:
        for call in aggregate_calls(source):
            key = flink_key(call)
            if key not in seen:
                seen.add(key)
                calls.append(parse_call(planner, call))

    gcols = [f"g{i}" for i in range(len(group_values))]
    staged_cols = [F.expr(v.sql).alias(c) for v, c in zip(group_values, gcols)]
    specs = []
    atr = planner.translator(rel, "an aggregate")
    in_order = bool(rel.arrival_order or engine.POSITION_MAJOR in rel.df.columns)
    for i, call in enumerate(calls):
        engine_name = call.function.engine
        if call.user is not None:
            call.result, spec, column = user_aggregate_call(planner, atr, rel, call, i)
            staged_cols.append(column)
            specs.append(spec)
            continue
        if engine_name not in ENGINE_AGGREGATES:
            raise planner.error(call.node, f"the aggregate function {call.function.name} is not supported yet")
        if engine_name in ORDER_DEPENDENT and not (rel.arrival_order or engine.POSITION_MAJOR in rel.df.columns):
            # Their result depends on the order in which rows and changes arrive. A
            # table's rows come in the source's order, and an upsert table normalized for
            # this query carries each change's position (the engine applies the changes in
            # that order, as Flink does); through a join, an aggregation or a union the
            # order is lost: refused, not a different answer.
            raise planner.error(call.node, f"{call.function.name} over the result of a join, an aggregation, a "
                                           "union or a window is not supported yet",
                                hint="it is supported over a table's rows (filtered and projected), append-only "
                                     "or a changelog")
        if engine_name in JSON_AGGREGATES:
            argument = f"a{i}"
            function, sql, spark_type = json_argument(planner, atr, call)
            staged_cols.append(F.expr(f"CAST({sql} AS {spark_type})").alias(argument))
            call.result = call.function.result([])
            specs.append(AggregateCall(function=function, column=f"r{i}",
                                       result_type=engine.spark_type_json(call.result), argument=argument))
            continue
        arg = atr.expr(call.arg) if call.arg is not None else None
        call.result = call.function.result([arg.type] if arg is not None else [])
        arg_sql = arg.sql if arg is not None else None
        if call.condition is not None:
            cond = atr.condition(call.condition, "FILTER (WHERE …)")
            arg_sql = f"CASE WHEN {cond.sql} THEN {arg_sql if arg_sql is not None else '1'} END"
        function, argument = engine_name, None
        if arg_sql is None:
            function = "count_star"
        else:
            if engine_name in ("sum", "avg") and not (arg is None or arg.type.is_numeric or arg.type.is_null):
                raise planner.error(call.node, f"{call.function.name} needs a numeric argument, not {arg.type}")
            if arg is not None and not arg.type.is_null and _unordered(arg.type) and (
                    engine_name in ("min", "max") or engine_name in ORDER_DEPENDENT):
                raise planner.error(call.node, f"{call.function.name} of a {arg.type.summary(False)} value is not "
                                               "supported yet")
            argument = f"a{i}"
            spark_type = arg.type.spark if arg is not None and not arg.type.is_null else "int"
            staged_cols.append(F.expr(f"CAST({arg_sql} AS {spark_type})").alias(argument))
        if call.ignore_nulls:
            function = "array_agg_ignore_nulls"
        specs.append(AggregateCall(function=function, column=f"r{i}",
                                   result_type=engine.spark_type_json(call.result), argument=argument,
                                   distinct=call.distinct, separator=call.separator))
    # A user's function may depend on the order of the changes too: where the input keeps
    # its order its changes are applied in that order, as Flink applies them.
    ordered = any(spec.function in ORDER_DEPENDENT for spec in specs) or (
        in_order and any(spec.function == "user" for spec in specs))
    positions = [F.col(engine.POSITION_MAJOR), F.col(engine.POSITION_MINOR)] \
        if ordered and engine.POSITION_MAJOR in rel.df.columns else []
    staged = planner.signed(rel).select(*staged_cols, F.col(SIGN), *positions)
    key_cols = gcols
    if groupings.expands:  # each row once per grouping, its number a key
        key_cols = ["g_set", *gcols]
        staged = grouping_sets.expand(staged, groupings, gcols, [v.type.spark for v in group_values], "g_set")
    expansion = [nodes.spark("grouping_sets", f"grouping sets: each row once per set of "
                                              f"{len(groupings.variants)}", "stateless")] if groupings.expands else []
    result = engine.group_aggregate(planner, staged, key_cols, specs, append_only=rel.append_only, ordered=ordered)

    fields, selected, replacements = [], [], {}
    for g, value, gcol in zip(group_exprs, group_values, gcols):
        col = planner.fresh()
        if isinstance(g, exp.Column):
            resolved, _ = planner.translator(rel, "GROUP BY").scope.resolve_column(g)
            fields.append(Field(g.name, resolved.qualifier, col, value.type, resolved.time))
        else:
            fields.append(Field(f"EXPR${len(fields)}", None, col, value.type))
        selected.append(F.col(gcol).alias(col))
        replacements[flink_key(g)] = Typed(f"`{col}`", value.type)
    if groupings.expands:
        col = planner.fresh("_g")
        fields.append(Field("__grouping", None, col, logical_type("INT NOT NULL")))
        selected.append(F.col("g_set").alias(col))
    replacements.update(grouping_sets.grouping_replacements(
        planner, node, groupings, f"`{fields[-1].col}`" if groupings.expands else None))
    for i, call in enumerate(calls):
        col = planner.fresh("_a")
        fields.append(Field(f"__agg{i}", None, col, call.result))
        selected.append(F.col(f"r{i}").alias(col))
        replacements[flink_key(call.node)] = Typed(f"`{col}`", call.result)
    group_cols = frozenset(f.col for f in fields[: len(key_cols)])
    agg_rel = Rel(result.select(*selected, F.col(SIGN), F.col(NET)), fields,
                  append_only=False, unique_key=group_cols, net_key=group_cols if key_cols else None,
                  steps=rel.steps + expansion + [nodes.engine(
                      "aggregate", "aggregate",
                      f"aggregate by ({', '.join(planner.current.flink_sql(g) for g in group_exprs) or 'nothing: one global row'}) "
                      f"computing {', '.join(planner.current.flink_sql(c.node) for c in calls) or 'distinct rows'}",
                      "engine: aggregate; stateful; retracts the old result row on every change",
                      keys=[planner.current.flink_sql(g) for g in group_exprs], spec=planner.spec_for("aggregate"))])
    if node.args.get("having"):
        agg_rel = planner.filter(agg_rel, node.args["having"].this, "HAVING", replacements)
    out = planner.project(agg_rel, node.expressions, replacements)
    if node.args.get("distinct"):
        out = group_by_all(planner, out)
    return out


def depends_on_order(node: exp.Select) -> bool:
    """Does the SELECT aggregate with a function of the changes' order (not over a window)?
    A user's aggregate function may be one."""
    from job.sql.flink.functions import lookup, user_aggregate

    for item in [*node.expressions, *([node.args["having"]] if node.args.get("having") else [])]:
        for call in item.find_all(exp.Anonymous):
            if isinstance(call.parent, exp.Window):
                continue
            fn = lookup(call.name)
            if (fn is not None and fn.engine in ORDER_DEPENDENT) or user_aggregate(call) is not None:
                return True
    return False


def user_aggregate_call(planner, atr, rel: Rel, call: AggCall, i: int):
    """A call of a user's Flink aggregate function: (its result type, its AggregateCall, the
    staged column of its argument). The arguments are checked and cast as a scalar
    function's (the accumulate method they fit) and passed as one struct, NULL for a row
    the FILTER leaves out; over an updating input the class must have the retract method
    of the same parameters, else the query is refused as Flink refuses it."""
    from pyspark.sql import functions as F

    from job.sql.flink.functions import Call
    from job.sql.flink.functions.user import call_aggregate_function

    user = call.user
    checked = Call(atr, call.call, call.function)
    checked.raw = list(call.args)
    chosen, passed = call_aggregate_function(checked, user)
    if not rel.append_only and chosen.retract is None:
        # Flink names the classes by their canonical names (Outer.Inner).
        params = chosen.method[chosen.method.index("(") + 1: chosen.method.rindex(")")].replace(",", ", ") \
            .replace("$", ".")
        raise planner.error(call.call, f"Could not find an implementation method 'retract' in class "
                                       f"'{user.class_name}' for function '{user.name}' that matches the following "
                                       f"signature: void retract({params})",
                            hint="its input is updating (a changelog, an aggregation, …): Flink retracts rows from "
                                 "the accumulator, which needs a retract method")
    fields = ", ".join(f"'a{j}', CAST({sql} AS {param.spark})" for j, (sql, param) in
                       enumerate(zip(passed, chosen.params)))
    value = f"named_struct({fields})"
    if call.condition is not None:
        cond = atr.condition(call.condition, "FILTER (WHERE …)")
        value = f"CASE WHEN {cond.sql} THEN {value} END"
    argument = f"a{i}"
    spec = AggregateCall(function="user", column=f"r{i}", result_type=engine.spark_type_json(chosen.result),
                         argument=argument, distinct=call.distinct, class_name=user.class_name,
                         accumulate=chosen.method, retract=None if rel.append_only else chosen.retract)
    return chosen.result, spec, F.expr(value).alias(argument)


def group_by_all(planner, rel: Rel) -> Rel:
    """SELECT DISTINCT / UNION: group by every column, no aggregates."""
    node = exp.Select(expressions=[exp.column(f.col) for f in rel.fields])
    node.set("group", exp.Group(expressions=[exp.column(f.col) for f in rel.fields]))
    named = Rel(rel.df, [Field(f.col, None, f.col, f.type) for f in rel.fields], rel.append_only, rel.unique_key,
                rel.steps, computed=rel.computed)
    out = group_aggregate(planner, named, node)
    out.fields = [Field(f.name, None, o.col, o.type) for f, o in zip(rel.fields, out.fields)]
    out.steps = out.steps[:-1] + [replace(out.steps[-1], kind="distinct", keys=tuple(f.name for f in rel.fields),
                                          text=f"distinct rows of ({', '.join(f.name for f in rel.fields)})")]
    return out


def _unordered(x: LogicalType) -> bool:
    """Types the engine's value-keeping aggregates do not order or keep (collections)."""
    return x.name in ("ARRAY", "MAP", "MULTISET", "ROW")
