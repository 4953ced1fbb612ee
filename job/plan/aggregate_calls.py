"""Which calls of a SELECT are aggregates, and what each one asks for: its function,
argument, DISTINCT and FILTER (WHERE …). Both ways of computing an aggregation read
them: the engine's group aggregation (:mod:`job.plan.aggregates`) and Spark's window
aggregation (:mod:`job.plan.native`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from job.sql.flink.functions import AGGREGATE, Function, is_aggregate, lookup, user_aggregate
from job.sql.types import LogicalType


@dataclass
class AggCall:
    node: exp.Expression          # the call as written (with its FILTER, if any)
    function: object              # the library's Function
    arg: Optional[exp.Expression]  # the argument (None: COUNT(*))
    distinct: bool
    condition: Optional[exp.Expression]
    result: LogicalType = None
    separator: Optional[str] = None   # LISTAGG's
    ignore_nulls: bool = False        # ARRAY_AGG(x IGNORE NULLS)
    absent_on_null: bool = False      # JSON_ARRAYAGG / JSON_OBJECTAGG: NULL values left out
    json_key: Optional[exp.Expression] = None  # JSON_OBJECTAGG's key (its value is ``arg``)
    user: object = None               # a user's aggregate function (UserFunction); its arguments: ``args``
    args: tuple = ()
    call: Optional[exp.Anonymous] = None  # the call itself (without its FILTER)


def aggregate_calls(node: exp.Expression):
    """Aggregate calls in an expression, each with its FILTER (WHERE …) clause if it has
    one; calls inside an OVER window are not this query's aggregates."""
    home = node if isinstance(node, exp.Select) else node.find_ancestor(exp.Select)
    for call in node.find_all(exp.Anonymous):
        if not is_aggregate(call) or call.find_ancestor(exp.Window) is not None:
            continue
        if call.find_ancestor(exp.Select) is not home:
            continue  # an aggregate of a subquery, not of this query
        parent = call.parent
        yield parent if isinstance(parent, exp.Filter) and parent.this is call else call


def is_aggregating(node: exp.Select) -> bool:
    if node.args.get("group") is not None or node.args.get("having") is not None:
        return True
    return any(True for item in node.expressions for _ in aggregate_calls(item))


def parse_call(planner, call: exp.Expression) -> AggCall:
    condition = None
    node = call
    if isinstance(call, exp.Filter):
        condition, call = call.expression.this, call.this
    user = user_aggregate(call)
    if user is not None:
        return _user_call(planner, node, call, user, condition)
    function = lookup(call.name)
    if not function.supported:  # by name first: its arguments are no reason to refuse it
        raise planner.error(call, function.refusal)
    args = list(call.expressions)
    if function.engine in JSON_AGGREGATES:
        return _json_call(planner, node, function, call, condition)
    distinct = False
    ignore_nulls = False
    if len(args) == 1 and isinstance(args[0], (exp.IgnoreNulls, exp.RespectNulls)):
        if function.engine != "array_agg":
            raise planner.error(call, f"RESPECT NULLS / IGNORE NULLS is not supported in {call.name}",
                                hint="ARRAY_AGG takes it")
        ignore_nulls, args = isinstance(args[0], exp.IgnoreNulls), [args[0].this]
    if len(args) == 1 and isinstance(args[0], exp.Distinct):
        if len(args[0].expressions) != 1:
            raise planner.error(call, f"{call.name}(DISTINCT …) over several columns is not supported yet")
        args, distinct = [args[0].expressions[0]], True
    if function.engine == "count":
        if len(args) != 1:
            raise planner.error(call, "COUNT takes one argument (or *)")
        arg = None if isinstance(args[0], exp.Star) else args[0]
        if arg is not None and not distinct and isinstance(arg, exp.Literal):
            arg = None  # COUNT(1): every row
    else:
        if len(args) < 1:
            raise planner.error(call, f"{call.name} needs an argument")
        if len(args) > 1 and function.engine != "listagg":
            raise planner.error(call, f"{call.name} takes one argument")
        arg = args[0]
    separator = None
    if function.engine == "listagg":
        separator = ","
        if len(args) == 2:
            if not (isinstance(args[1], exp.Literal) and args[1].is_string):
                raise planner.error(args[1], "the separator of LISTAGG must be a string literal")
            separator = args[1].this
    return AggCall(node, function, arg, distinct, condition, separator=separator, ignore_nulls=ignore_nulls)


JSON_AGGREGATES = ("json_arrayagg", "json_objectagg")


def _json_call(planner, node, function, call, condition) -> AggCall:
    """JSON_ARRAYAGG(value [ON NULL]) / JSON_OBJECTAGG(KEY k VALUE v [ON NULL]): Flink's
    defaults are ABSENT ON NULL for the array, NULL ON NULL for the object."""
    from job.sql.flink.dialect import JsonClause

    clauses = {c.this: c for c in call.expressions if isinstance(c, JsonClause)}
    args = [a for a in call.expressions if not isinstance(a, JsonClause)]
    for name in clauses:
        if name != "ON NULL":
            raise planner.error(call, f"{name} is not supported in {call.name}")
    on_null = clauses.get("ON NULL")
    arrays = function.engine == "json_arrayagg"
    absent = (on_null.expression.name.upper() == "ABSENT") if on_null is not None else arrays
    if condition is not None:
        raise planner.error(node, f"{call.name} with FILTER (WHERE …) is not supported yet",
                            hint="filter the rows in a subquery's WHERE")
    if len(args) != 1 or isinstance(args[0], (exp.Distinct, exp.Order)):
        raise planner.error(call, f"{call.name} takes one " + ("value" if arrays else "KEY … VALUE … pair")
                            + " (DISTINCT and ORDER BY are not supported)")
    key = None
    arg = args[0]
    if not arrays:
        if not isinstance(arg, exp.Tuple) or len(arg.expressions) != 2:
            raise planner.error(call, "JSON_OBJECTAGG takes KEY key VALUE value")
        key, arg = arg.expressions
    return AggCall(node, function, arg, False, None, absent_on_null=absent, json_key=key)


def _user_call(planner, node, call, user, condition) -> AggCall:
    """A call of a user's aggregate function: ``f(x, …)``, ``f(DISTINCT x, …)``, with or
    without FILTER; typed and planned by job.plan.aggregates."""
    args = list(call.expressions)
    distinct = False
    if len(args) == 1 and isinstance(args[0], exp.Distinct):
        args, distinct = list(args[0].expressions), True
    for arg in args:
        if isinstance(arg, (exp.Star, exp.IgnoreNulls, exp.RespectNulls, exp.Order, exp.Distinct)):
            raise planner.error(call, f"{user.name}(…): only values (or DISTINCT values) are passed to a "
                                      "user-defined aggregate function")
    function = Function(user.name.upper(), "user-defined", f"{user.name}(…)", kind=AGGREGATE, engine="user")
    return AggCall(node, function, args[0] if args else None, distinct, condition, user=user, args=tuple(args),
                   call=call)
