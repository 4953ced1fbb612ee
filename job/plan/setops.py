"""UNION ALL, UNION, INTERSECT and EXCEPT."""
from __future__ import annotations

from sqlglot import exp

from job.plan import nodes
from job.plan.relation import SIGN, Field, Rel
from job.sql.flink import rules


def plan_set_operation(planner, node: exp.Expression) -> Rel:
    if isinstance(node, (exp.Intersect, exp.Except)):
        word = "INTERSECT" if isinstance(node, exp.Intersect) else "EXCEPT"
        raise planner.error(node, f"{word} is not supported yet")
    rel = union_all(planner, [planner.query(node.this), planner.query(node.expression)], node)
    if node.args.get("distinct"):
        return planner.distinct(rel)
    return rel


def union_all(planner, rels: list[Rel], node) -> Rel:
    """The rows of every input; columns meet at Flink's least restrictive type."""
    from pyspark.sql import functions as F

    rels = [planner.settle(r) for r in rels]
    width = len(rels[0].fields)
    if any(len(r.fields) != width for r in rels):
        raise planner.error(node, "the inputs of UNION have different numbers of columns")
    types = []
    for i in range(width):
        common = rules.least_restrictive([r.fields[i].type for r in rels])
        if common is None:
            raise planner.error(node, f"column {i + 1} of UNION has no common type: "
                                      + ", ".join(str(r.fields[i].type) for r in rels))
        types.append(common)
    cols = [planner.fresh() for _ in range(width)]
    signed = not all(r.append_only for r in rels)
    frames = []
    for r in rels:
        tr = planner.translator(r, "UNION")
        from job.sql.flink.translate import Typed

        parts = []
        for f, c, t_ in zip(r.fields, cols, types):
            value = Typed(f"`{f.col}`", f.type)
            if f.type != t_:
                value = tr.cast(value, t_)
            parts.append(F.expr(value.sql).alias(c))
        df = planner.signed(r) if signed else r.df
        frames.append(df.select(*parts, *([F.col(SIGN)] if signed or SIGN in df.columns else [])))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other, allowMissingColumns=True)
    fields = [Field(f.name, None, c, t_) for f, c, t_ in zip(rels[0].fields, cols, types)]
    return Rel(df, fields, not signed, None, sum((r.steps for r in rels), []) + [
        nodes.spark("union", "union all", "stateless: the inputs' rows interleaved", inputs=len(rels))])
