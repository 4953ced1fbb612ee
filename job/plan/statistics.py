"""STDDEV_POP, STDDEV_SAMP, VAR_POP, VAR_SAMP and VARIANCE, as Flink computes them.

Flink has no accumulator of its own for these: the planner rewrites each call into SUM
and COUNT calls and arithmetic over them (Calcite's AggregateReduceFunctionsRule), in
DOUBLE, then casts to the call's result type T (AVG's: the argument's type, DECIMAL(38,
max(6, s)) for DECIMAL(p, s)):

    VAR_POP(x)     = CAST((SUM(d·d) − SUM(d)² / COUNT(d)) / COUNT(d) AS T),  d = CAST(x AS DOUBLE)
    VAR_SAMP(x)    = the same over CASE WHEN COUNT(d) = 1 THEN NULL ELSE COUNT(d) − 1 END
    STDDEV_*(x)    = CAST(POWER(VAR_*(x) before the cast, 0.5) AS T)

So an INT column's variance is an INT, truncated only at the end, and a DECIMAL's is
rounded once (both compared with Flink 2.3 in tests/flink/cases). The rewrite is done
here, on the query's tree, so the engine's SUM and COUNT handle retractions.
"""
from __future__ import annotations

from sqlglot import exp

from job.sql.flink.dialect import TypeRef
from job.sql.flink.rules import avg_type

# name → (sample, square root)
STATISTICS = {"VAR_POP": (False, False), "VAR_SAMP": (True, False), "VARIANCE": (True, False),
              "STDDEV_POP": (False, True), "STDDEV_SAMP": (True, True)}


def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _cast(node: exp.Expression, type_text: str) -> exp.Cast:
    return exp.Cast(this=node, to=TypeRef(this=type_text), _type=TypeRef(this=type_text))


def _statistic_calls(node: exp.Select) -> list[exp.Anonymous]:
    sources = list(node.expressions) + ([node.args["having"]] if node.args.get("having") else [])
    return [call for source in sources for call in source.find_all(exp.Anonymous)
            if call.name.upper() in STATISTICS and not isinstance(call.parent, exp.Window)]


def expand_statistics(planner, rel, node: exp.Select) -> exp.Select:
    """``node`` with every statistic call replaced by Calcite's SUM/COUNT formula (a copy;
    the parsed query is shared and stays as written)."""
    if not _statistic_calls(node):
        return node
    node = node.copy()
    translator = planner.translator(rel, "an aggregate")
    for call in _statistic_calls(node):
        name = call.name.upper()
        if len(call.expressions) != 1:
            raise planner.error(call, f"{name} takes one argument")
        arg = call.expressions[0]
        if isinstance(arg, exp.Distinct):  # SUM(DISTINCT x·x) would merge x and −x
            raise planner.error(call, f"{name}(DISTINCT …) is not supported yet")
        arg_type = translator.expr(arg).type
        if not (arg_type.is_numeric or arg_type.is_null):
            raise planner.error(call, f"{name} needs a numeric argument, not {arg_type}")
        result = avg_type(arg_type).summary(False)
        x = _cast(arg.copy(), "DOUBLE")

        def aggregate(fn: str, value: exp.Expression) -> exp.Expression:
            agg = _call(fn, value)
            if isinstance(call.parent, exp.Filter):  # FILTER (WHERE …) applies to each part
                agg = exp.Filter(this=agg, expression=call.parent.expression.copy())
            return agg

        sample, root = STATISTICS[name]
        sum_x = aggregate("SUM", x.copy())
        count = aggregate("COUNT", x.copy())
        squares = aggregate("SUM", exp.Mul(this=x.copy(), expression=x.copy()))
        diff = exp.Sub(this=squares, expression=exp.Div(this=exp.Mul(this=sum_x, expression=sum_x.copy()),
                                                        expression=count))
        denominator: exp.Expression = count.copy()
        if sample:
            denominator = exp.Case(ifs=[exp.If(this=exp.EQ(this=count.copy(), expression=exp.Literal.number(1)),
                                               true=_cast(exp.Null(), "BIGINT"))],
                                   default=exp.Sub(this=count.copy(), expression=exp.Literal.number(1)))
        value: exp.Expression = exp.Div(this=exp.Paren(this=diff), expression=denominator)
        if root:
            value = _call("POWER", value, exp.Literal.number("0.5"))
        replacement = _cast(value, result)
        (call.parent if isinstance(call.parent, exp.Filter) else call).replace(replacement)
    return node
