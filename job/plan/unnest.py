"""``CROSS JOIN UNNEST(array) AS t (x)`` and ``LEFT JOIN UNNEST(…) ON TRUE``: each row
with every element of its array (a MAP gives key and value columns, an array of ROWs
one column per field). ``WITH ORDINALITY AS t (x, n)`` adds the element's 1-based position
as a last INT NOT NULL column, as Flink numbers it (NULL on the LEFT JOIN's row for a
NULL or empty array)."""
from __future__ import annotations

from sqlglot import exp

from job.plan import nodes
from job.plan.relation import SIGN, Field, Rel
from job.sql.types import logical_type


def join_side(planner, node: exp.Join, what: str, conditions: bool = False):
    """How a row-expanding right side (UNNEST, LATERAL TABLE) is joined: (outer, condition).
    ``outer``: a LEFT JOIN, which needs ON TRUE; otherwise a cross or inner join, whose ON
    condition (``conditions``: allowed, as a filter of the joined rows) is returned, None for
    none or TRUE. RIGHT and FULL joins are refused."""
    side = (node.args.get("side") or "").lower()
    outer = side == "left"
    on = node.args.get("on")
    true = on is None or (isinstance(on, exp.Boolean) and on.this)
    if outer and (on is None or not true):
        raise planner.error(on if on is not None else node, f"LEFT JOIN {what} needs ON TRUE" +
                            (" (a LEFT JOIN on another condition is not supported yet)" if on is not None else ""))
    if not outer and side:
        raise planner.error(node, f"{side.upper()} JOIN {what} is not supported")
    if not true and not conditions:
        raise planner.error(on, f"CROSS JOIN {what} takes no ON condition; filter in WHERE")
    return outer, None if true else on


def correlated_source(planner, left: Rel):
    """``left`` settled, and the DataFrame a row-expanding side is joined to: its rows with
    their sign (a changelog's rows keep theirs; each expands into rows of that sign)."""
    left = planner.settle(left)
    source = left.df
    if SIGN not in source.columns and not left.append_only:
        source = planner.signed(left)
    return left, source


def plan_unnest(planner, left: Rel, node: exp.Join) -> Rel:
    from pyspark.sql import functions as F

    unnest = node.this
    outer, _ = join_side(planner, node, "UNNEST(…)")
    if len(unnest.expressions) != 1:
        raise planner.error(unnest, "UNNEST of several arrays is not supported yet")
    ordinality = unnest.args.get("offset") or None  # the ordinal column's name, True unnamed, absent without
    if ordinality is not None and not isinstance(ordinality, exp.Identifier):
        raise planner.error(unnest, "UNNEST … WITH ORDINALITY needs a name for the ordinal column here",
                            hint="name every column: WITH ORDINALITY AS t (x, n)")
    left, source = correlated_source(planner, left)
    value = planner.expr(left, unnest.expressions[0], "UNNEST")
    alias = unnest.args.get("alias")
    qualifier = alias.name if alias is not None and alias.name else None
    names = [c.name for c in (alias.args.get("columns") or [])] if alias is not None else []
    explode = F.explode_outer if outer else F.explode
    position = planner.fresh() if ordinality is not None else None
    if position is not None:  # Spark's posexplode numbers from 0, Flink's ordinality from 1
        def explode(value, _pos=F.posexplode_outer if outer else F.posexplode):
            return _pos(value)
    x = value.type
    if x.name in ("ARRAY", "MULTISET"):
        element = x.children[0]
        if x.name == "MULTISET":
            raise planner.error(unnest, "UNNEST of a MULTISET is not supported yet")
        col = planner.fresh()
        df = source.select("*", explode(F.expr(value.sql)).alias(*([position] if position else []), col))
        if element.name == "ROW":
            wanted = names or list(element.field_names)
            if len(wanted) != len(element.children):
                raise planner.error(unnest, f"UNNEST of {x} gives {len(element.children)} columns")
            cols = [planner.fresh() for _ in element.children]
            df = df.select(*[c for c in source.columns], *([position] if position else []),
                           *[F.col(col)[n].alias(c) for n, c in
                                                          zip(element.field_names, cols)])
            fields = [Field(n, qualifier, c, t_.nullable_as(True)) for n, c, t_ in zip(wanted, cols, element.children)]
        else:
            wanted = names or ["EXPR$0"]
            if len(wanted) != 1:
                raise planner.error(unnest, f"UNNEST of {x} gives one column")
            fields = [Field(wanted[0], qualifier, col, element.nullable_as(True))]
    elif x.name == "MAP":
        key, val = planner.fresh(), planner.fresh()
        df = source.select("*", explode(F.expr(value.sql)).alias(*([position] if position else []), key, val))
        wanted = names or ["EXPR$0", "EXPR$1"]
        if len(wanted) != 2:
            raise planner.error(unnest, "UNNEST of a MAP gives two columns (key, value)")
        fields = [Field(wanted[0], qualifier, key, x.children[0]), Field(wanted[1], qualifier, val, x.children[1].nullable_as(True))]
    else:
        raise planner.error(unnest.expressions[0], f"UNNEST needs an ARRAY or MAP, not {x}")
    if position is not None:
        df = df.withColumn(position, (F.col(position) + F.lit(1)).cast("int"))
        fields.append(Field(ordinality.name, qualifier, position, logical_type("INT NOT NULL").nullable_as(outer)))
    return Rel(df, left.fields + fields, left.append_only, None,
               left.steps + [nodes.spark("unnest", f"{'left join' if outer else 'cross join'} unnest "
                                         f"{planner.current.flink_sql(unnest.expressions[0])}"
                                         f"{' with ordinality' if position else ''}",
                                         "stateless: Spark's explode, one row per element")],
               computed=left.computed)
