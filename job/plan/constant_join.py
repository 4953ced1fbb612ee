"""Joins with a one-row constant table: ``JOIN (SELECT 1 AS x) AS c`` or
``JOIN (VALUES (1, 'k')) AS c(x, y)``. Flink joins the one row to every row of the other
side; where every left row matches it (see :func:`applies`), that is a projection, planned
here without state (dispatched from :func:`job.plan.joins.plan_join`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from sqlglot import exp

from job.plan import nodes
from job.plan.relation import Field, Rel, output_name


# What a constant row may be made of: literals and what computes with them alone.
_CONSTANT_NODES = (exp.Literal, exp.Null, exp.Boolean, exp.Cast, exp.TryCast, exp.Neg, exp.Paren, exp.Alias,
                   exp.Identifier, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.DPipe, exp.Tuple)


def constant_row(node: exp.Expression) -> Optional[tuple[list, Optional[str]]]:
    """``(SELECT 1 AS x, 'k' AS y) AS c`` or ``(VALUES (1, 'k')) AS c(x, y)``: one row of
    constants, as ([(name, expression)], alias); None for anything else."""
    from job.sql.flink.dialect import TypeRef

    alias = node.args.get("alias")
    alias_name = alias.name if alias is not None and alias.name else None
    inner = node.this if isinstance(node, exp.Subquery) else node
    while isinstance(inner, exp.Subquery) and not inner.args.get("alias"):
        inner = inner.this
    if isinstance(inner, exp.Select):
        if any(v for k, v in inner.args.items() if k != "expressions") \
                or any(isinstance(i, exp.Star) for i in inner.expressions):
            return None
        items = [(output_name(item, i), item.this if isinstance(item, exp.Alias) else item)
                 for i, item in enumerate(inner.expressions)]
        columns = []
    elif isinstance(inner, exp.Values) and len(inner.expressions) == 1:
        row = inner.expressions[0]
        values = row.expressions if isinstance(row, exp.Tuple) else [row]
        own = inner.args.get("alias")
        if own is not None and own is not alias:
            alias_name = alias_name or own.name or None
        columns = [c.name for c in ((alias or own).args.get("columns") or [])] if (alias or own) is not None else []
        items = [(f"EXPR${i}", v) for i, v in enumerate(values)]
    else:
        return None
    if alias is not None and alias.args.get("columns"):
        columns = [c.name for c in alias.args["columns"]]
    if columns:
        if len(columns) != len(items):
            return None
        items = [(name, value) for name, (_, value) in zip(columns, items)]
    for _, value in items:
        if any(not isinstance(n, (*_CONSTANT_NODES, TypeRef)) for n in value.walk()):
            return None
    return items, alias_name


def applies(node: exp.Join) -> bool:
    """A join with a one-row constant side is a projection when every left row matches
    that row: an INNER or CROSS join (its ON, if any, then filters), or a LEFT join
    without a condition (ON TRUE)."""
    if node.args.get("using"):
        return False
    side = (node.args.get("side") or "").lower()
    on = node.args.get("on")
    if side == "":
        return True
    return side == "left" and (on is None or (isinstance(on, exp.Boolean) and on.this))


def plan_constant_join(planner, left: Rel, node: exp.Join, items: list, alias: Optional[str]) -> Rel:
    """Every left row with the constant row's columns added (Flink joins the one row to
    each): stateless."""
    from pyspark.sql import functions as F

    left = planner.settle(left)
    tr = planner.translator(Rel(None, [], True), "the joined constant row")
    added, fields = [], []
    for name, value in items:
        typed = tr.expr(value)
        if typed.type.is_null:
            raise planner.error(value, "Illegal use of 'NULL'", hint="give the NULL a type: CAST(NULL AS INT)")
        col = planner.fresh()
        added.append(F.expr(typed.sql).alias(col))
        fields.append(Field(name, alias, col, typed.type))
    df = left.df.select(*[F.col(f"`{c}`") for c in left.df.columns], *added)
    step = nodes.spark("constant_join", f"join with a constant row: adds {', '.join(name for name, _ in items)} to "
                       "every row", "stateless")
    rel = replace(left, df=df, fields=left.fields + fields, steps=left.steps + [step])
    on = node.args.get("on")
    if on is not None and not (isinstance(on, exp.Boolean) and on.this):
        rel = planner.filter(rel, on, "the JOIN condition")
    return rel
