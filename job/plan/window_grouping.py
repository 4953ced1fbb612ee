"""GROUPING SETS, ROLLUP and CUBE in a window aggregation (``GROUP BY window_start,
window_end, ROLLUP (a, b)``): each row once per grouping set, the keys outside the set
NULL, aggregated by window, set and keys on Spark's windowed aggregation (the set's
number keeps ``(a, NULL)`` of set {a} apart from a NULL b of set {a, b})."""
from __future__ import annotations

from sqlglot import exp

from job.plan import nodes
from job.plan.relation import Field, Rel, flink_key


def grouping_sets(planner, keys: list) -> tuple[list, list]:
    """GROUP BY keys with GROUPING SETS / ROLLUP / CUBE → (every key expression, the
    grouping sets as sets of indexes into it)."""
    from itertools import combinations, product

    exprs: list = []
    index: dict = {}

    def at(e) -> int:
        key = flink_key(e)
        if key not in index:
            index[key] = len(exprs)
            exprs.append(e)
        return index[key]

    def members(e) -> list:
        e = e.this if isinstance(e, exp.Paren) else e
        return list(e.expressions) if isinstance(e, exp.Tuple) else [e]

    factors = []
    for k in keys:
        if isinstance(k, exp.GroupingSets):
            factors.append([frozenset(at(m) for m in members(s_)) for s_ in k.expressions])
        elif isinstance(k, exp.Rollup):
            cols = [at(m) for e in k.expressions for m in members(e)]
            factors.append([frozenset(cols[:n]) for n in range(len(cols), -1, -1)])
        elif isinstance(k, exp.Cube):
            cols = [at(m) for e in k.expressions for m in members(e)]
            factors.append([frozenset(c) for n in range(len(cols), -1, -1) for c in combinations(cols, n)])
        else:
            factors.append([frozenset([at(k)])])
    sets = []
    for combo in product(*factors):
        merged = frozenset().union(*combo)
        if merged not in sets:
            sets.append(merged)
    return exprs, sets


def expand_grouping_sets(planner, rel: Rel, node: exp.Select, window, keys: list):
    """For a window aggregation with GROUPING SETS, ROLLUP or CUBE: each row once per
    grouping set, the keys outside the set NULL. Returns (the expanded relation, the keys
    to aggregate it by: the set's number and every key, each key's expression and value,
    the set's number column, which the result does not show)."""
    from pyspark.sql import functions as F

    if window.struct_col is None:
        raise planner.error(node.args["group"], "GROUPING SETS in a SESSION window aggregation are not supported yet")
    exprs, sets = grouping_sets(planner, keys)
    tr = planner.translator(rel, "GROUP BY")
    values = [tr.expr(e) for e in exprs]
    cols = [planner.fresh() for _ in exprs]
    staged = rel.df.select("*", *[F.expr(v.sql).alias(c) for v, c in zip(values, cols)])
    gid = planner.fresh("_g")
    variants = F.array(*[F.struct(F.lit(i).alias(gid), *[
        (F.col(c) if j in members else F.lit(None).cast(v.type.spark)).alias(c)
        for j, (c, v) in enumerate(zip(cols, values))]) for i, members in enumerate(sets)])
    exploded = staged.select(*[F.col(f"`{c}`") for c in rel.df.columns if c not in cols],
                             F.explode(variants).alias("__set")).select("*", *[F.col(f"__set.`{c}`").alias(c)
                                                                              for c in [gid] + cols]).drop("__set")
    fields = list(rel.fields) + [Field(c, None, c, v.type.nullable_as(True)) for c, v in zip(cols, values)] \
        + [Field(gid, None, gid, rules_int())]
    expanded = Rel(exploded, fields, rel.append_only, None, rel.steps + [
        nodes.spark("grouping_sets", f"grouping sets: each row once per set of {len(sets)}", "stateless")], window=window,
        window_fields=rel.window_fields)
    group_keys = [exp.column(gid)] + [exp.column(c) for c in cols]
    return expanded, group_keys, {c: (e, v) for e, c, v in zip(exprs, cols, values)}, {gid}


def rules_int():
    from job.sql.types import logical_type

    return logical_type("INT")
