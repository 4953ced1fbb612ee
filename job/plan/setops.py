"""UNION ALL, UNION, INTERSECT and EXCEPT.

INTERSECT and EXCEPT (and their ALL forms) are planned the way Flink rewrites them: the
rows of both inputs, each tagged with the side it came from, grouped by every column
(NULLs equal, as set operations compare rows) counting each side's rows. The counts
follow the inputs' retractions, so the result stays Flink's over updating input:

* ``INTERSECT``: the rows both sides hold (left count > 0 and right count > 0);
* ``EXCEPT``: the rows only the left side holds (left count > 0, right count = 0);
* ``INTERSECT ALL`` / ``EXCEPT ALL``: each row ``min(l, r)`` / ``l - r`` times, as Flink's
  replicating table function emits it: a change of the counts retracts the old copies
  and inserts the new ones.
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from job.plan import nodes
from job.plan.relation import SIGN, Field, Rel
from job.sql.flink import rules
from job.sql.types import logical_type

BIGINT = logical_type("BIGINT NOT NULL")


def plan_set_operation(planner, node: exp.Expression) -> Rel:
    if isinstance(node, (exp.Intersect, exp.Except)):
        return intersect_except(planner, node)
    rel = union_all(planner, [planner.query(node.this), planner.query(node.expression)], node)
    if node.args.get("distinct"):
        return planner.distinct(rel)
    return rel


def intersect_except(planner, node: exp.Expression) -> Rel:
    from pyspark.sql import functions as F

    from job.plan import aggregates

    word = "INTERSECT" if isinstance(node, exp.Intersect) else "EXCEPT"
    distinct = node.args.get("distinct") is not False
    tagged = union_all(planner, [planner.query(node.this), planner.query(node.expression)], node,
                       word=word, tags=True)
    *columns, left, right = tagged.fields
    named = Rel(tagged.df, [Field(f.col, None, f.col, f.type) for f in tagged.fields], tagged.append_only,
                None, tagged.steps)
    counts = {"l": exp.Anonymous(this="SUM", expressions=[exp.column(left.col)]),
              "r": exp.Anonymous(this="SUM", expressions=[exp.column(right.col)])}
    if word == "INTERSECT":
        keep = exp.and_(exp.GT(this=counts["l"].copy(), expression=exp.Literal.number(0)),
                        exp.GT(this=counts["r"].copy(), expression=exp.Literal.number(0)))
        copies = exp.Anonymous(this="LEAST", expressions=[counts["l"].copy(), counts["r"].copy()])
    else:
        keep = exp.and_(exp.GT(this=counts["l"].copy(), expression=exp.Literal.number(0)),
                        exp.EQ(this=counts["r"].copy(), expression=exp.Literal.number(0)))
        copies = exp.Sub(this=counts["l"].copy(), expression=counts["r"].copy())
    select = exp.Select(expressions=[exp.column(f.col) for f in columns])
    select.set("group", exp.Group(expressions=[exp.column(f.col) for f in columns]))
    if distinct:
        select.set("having", exp.Having(this=keep))
    else:
        select.set("expressions", select.expressions + [exp.alias_(copies, "__copies")])
        select.set("having", exp.Having(this=exp.GT(this=copies.copy(), expression=exp.Literal.number(0))))
    out = aggregates.group_aggregate(planner, named, select)
    fields = [Field(f.name, None, o.col, o.type) for f, o in zip(columns, out.fields)]
    # The aggregate's step, in the user's words (not the tagged columns' internal names).
    at = next(i for i in range(len(out.steps) - 1, -1, -1) if out.steps[i].kind == "aggregate")
    out.steps = out.steps[:at] + [replace(out.steps[at], kind=word.lower(), keys=tuple(f.name for f in columns),
                                          text=f"{word}{'' if distinct else ' ALL'}: each row of "
                                               f"({', '.join(f.name for f in columns)}) counted on both sides")] \
        + out.steps[at + 1:]
    if distinct:
        out.fields = fields
        return out
    n = out.fields[-1].col
    df = out.df.select(*[F.col(f.col) for f in fields], F.col(SIGN),
                       F.explode(F.sequence(F.lit(1).cast("long"), F.col(n).cast("long"))).alias("__copy"))
    df = df.drop("__copy")
    return Rel(df, fields, False, None, out.steps + [
        nodes.spark("replicate", f"{word} ALL: each row min(left, right) times" if word == "INTERSECT"
                    else "EXCEPT ALL: each row (left - right) times",
                    "stateless: a count's change retracts the old copies and inserts the new ones")])


def union_all(planner, rels: list[Rel], node, word: str = "UNION", tags: bool = False) -> Rel:
    """The rows of every input; columns meet at Flink's least restrictive type."""
    from pyspark.sql import functions as F

    rels = [planner.settle(r) for r in rels]
    width = len(rels[0].fields)
    if any(len(r.fields) != width for r in rels):
        raise planner.error(node, f"the inputs of {word} have different numbers of columns")
    types = []
    for i in range(width):
        common = rules.least_restrictive([r.fields[i].type for r in rels])
        if common is None:
            raise planner.error(node, f"column {i + 1} of {word} has no common type: "
                                      + ", ".join(str(r.fields[i].type) for r in rels))
        types.append(common)
    cols = [planner.fresh() for _ in range(width)]
    tag_cols = [planner.fresh("_t") for _ in range(2)] if tags else []
    signed = not all(r.append_only for r in rels)
    frames = []
    for r in rels:
        tr = planner.translator(r, word)
        from job.sql.flink.translate import Typed

        parts = []
        for f, c, t_ in zip(r.fields, cols, types):
            value = Typed(f"`{f.col}`", f.type)
            if f.type != t_:
                value = tr.cast(value, t_)
            parts.append(F.expr(value.sql).alias(c))
        if tags:
            side = 0 if r is rels[0] else 1
            parts += [F.lit(1 - side).cast("long").alias(tag_cols[0]), F.lit(side).cast("long").alias(tag_cols[1])]
        df = planner.signed(r) if signed else r.df
        frames.append(df.select(*parts, *([F.col(SIGN)] if signed or SIGN in df.columns else [])))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other, allowMissingColumns=True)
    fields = [Field(f.name, None, c, t_) for f, c, t_ in zip(rels[0].fields, cols, types)]
    if tags:
        fields += [Field(t, None, t, BIGINT) for t in tag_cols]
    return Rel(df, fields, not signed, None, sum((r.steps for r in rels), []) + [
        nodes.spark("union", "union all", "stateless: the inputs' rows interleaved", inputs=len(rels))])
