"""GROUPING SETS, ROLLUP and CUBE in a window aggregation (``GROUP BY window_start,
window_end, ROLLUP (a, b)``): each row once per grouping (job.plan.grouping_sets), the
keys outside its set NULL, aggregated by window, grouping number and keys on Spark's
windowed aggregation (the number keeps ``(a, NULL)`` of set {a} apart from a NULL b of
set {a, b})."""
from __future__ import annotations

from sqlglot import exp

from job.plan import grouping_sets, nodes
from job.plan.relation import Field, Rel
from job.sql.types import logical_type


def expand_grouping_sets(planner, rel: Rel, node: exp.Select, window, keys: list):
    """For a window aggregation with GROUPING SETS, ROLLUP or CUBE: each row once per
    grouping, the keys outside its set NULL. Returns (the expanded relation, the keys to
    aggregate it by: the grouping's number and every key, each key's expression and
    value, the grouping number's column, which the result does not show, the groupings)."""
    from pyspark.sql import functions as F

    if window.struct_col is None:
        raise planner.error(node.args["group"], "GROUPING SETS in a SESSION window aggregation are not supported yet")
    groupings = grouping_sets.analyze(keys)
    tr = planner.translator(rel, "GROUP BY")
    values = [tr.expr(e) for e in groupings.exprs]
    cols = [planner.fresh() for _ in groupings.exprs]
    staged = rel.df.select("*", *[F.expr(v.sql).alias(c) for v, c in zip(values, cols)])
    gid = planner.fresh("_g")
    expanded_df = grouping_sets.expand(staged, groupings, cols, [v.type.spark for v in values], gid)
    fields = list(rel.fields) + [Field(c, None, c, v.type.nullable_as(True)) for c, v in zip(cols, values)] \
        + [Field(gid, None, gid, logical_type("INT"))]
    expanded = Rel(expanded_df, fields, rel.append_only, None, rel.steps + [
        nodes.spark("grouping_sets", f"grouping sets: each row once per set of {len(groupings.variants)}",
                    "stateless")], window=window, window_fields=rel.window_fields)
    group_keys = [exp.column(gid)] + [exp.column(c) for c in cols]
    return expanded, group_keys, {c: (e, v) for e, c, v in zip(groupings.exprs, cols, values)}, {gid}, groupings
