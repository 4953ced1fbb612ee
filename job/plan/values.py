"""VALUES lists, and SELECT without FROM, as bounded append-only relations.

The rows are typed as Flink types them (each column the least restrictive type of its
values), computed once by Spark SQL and served as a bounded stream
(:mod:`job.plan.values_source`), so a restarted query does not read them again.
"""
from __future__ import annotations

from sqlglot import exp

from job.plan import nodes
from job.plan.relation import Field, Rel


def plan_values(planner, node: exp.Values) -> Rel:
    """A VALUES list: a bounded, append-only relation."""
    rows = node.expressions
    if not rows:
        raise planner.error(node, "VALUES needs at least one row")
    empty = Rel(None, [], True)
    tr = planner.translator(empty, "VALUES")
    typed_rows = []
    for row in rows:
        items = row.expressions if isinstance(row, exp.Tuple) else [row]
        typed_rows.append([tr.expr(i) for i in items])
    width = len(typed_rows[0])
    if any(len(r) != width for r in typed_rows):
        raise planner.error(node, "VALUES rows have different numbers of columns")
    from job.sql.flink import rules

    types = [rules.least_restrictive([r[i].type for r in typed_rows]) for i in range(width)]
    if any(t_ is None for t_ in types):
        raise planner.error(node, "the columns of VALUES have no common type")
    cols = [planner.fresh() for _ in range(width)]
    selects = []
    for r in typed_rows:
        parts = [tr.cast(v, t_).sql if v.type != t_ else v.sql for v, t_ in zip(r, types)]
        selects.append(", ".join(f"CAST({p} AS {t_.spark}) AS `{c}`" for p, t_, c in zip(parts, types, cols)))
    alias = node.args.get("alias")
    names = [c.name for c in alias.args.get("columns") or []] if alias is not None else []
    if names and len(names) != width:
        raise planner.error(node, f"VALUES has {width} columns but its alias names {len(names)}")
    names = names or [f"EXPR${i}" for i in range(width)]
    df = planner.spark.sql(" UNION ALL ".join(f"SELECT {s}" for s in selects))
    from job.plan.scan import bounded_stream

    stream = bounded_stream(planner, df)
    fields = [Field(n, alias.name if alias is not None else None, c, t_) for n, c, t_ in zip(names, cols, types)]
    return Rel(stream, fields, True, steps=[nodes.scan(f"VALUES ({len(rows)} rows)", note="a bounded source: its rows once")])


def plan_select_without_from(planner, node: exp.Select) -> Rel:
    """SELECT without FROM: its items over one row."""
    one = exp.Values(expressions=[exp.Tuple(expressions=[exp.Literal.number(1)])])
    rel = plan_values(planner, one)
    return planner.project(Rel(rel.df, [], True, steps=rel.steps), node.expressions)
