"""GROUPING SETS, ROLLUP and CUBE: which groupings an aggregation computes, and what
GROUPING(), GROUPING_ID() and GROUP_ID() say about each.

Both aggregations read this: the group aggregation (:mod:`job.plan.aggregates`, over
append-only and updating input) and the window aggregation (:mod:`job.plan.window_aggregate`).
Each input row, with its changelog sign, is copied once per grouping (a *variant*), the
keys outside the variant's set NULL and the variant's number in a hidden key column, and
the copies are aggregated by (variant, keys) like any GROUP BY: retractions flow through
unchanged, and a NULL in the data (variant of the full set) stays apart from a key the
variant leaves out. This is Flink's own plan (its Expand node).

The sets are Flink's (Calcite's): the GROUP BY items multiply (``GROUP BY a, ROLLUP (b)``
is the sets {a, b} and {a}); a ROLLUP or CUBE lists each set once, nested in GROUPING SETS
too; a set written twice is computed twice, GROUP_ID() numbering the copies. Flink
computes the n-th copies as one aggregation of the sets repeated n times or more; when
that is a single set that is not every key, Flink 2.3 groups that copy by every key
(still reporting the set in GROUPING()), and so does the job; without a GROUPING() or
GROUPING_ID() call Flink rejects such a query, and the job refuses it.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations, product
from typing import Optional

from sqlglot import exp

from job.plan.relation import flink_key

GROUPING_FUNCTIONS = ("GROUPING", "GROUPING_ID", "GROUP_ID")
SET_NODES = (exp.GroupingSets, exp.Rollup, exp.Cube)


@dataclass(frozen=True)
class Variant:
    keys: frozenset       # indexes of the keys it groups by (the others are NULL)
    declared: frozenset   # the grouping set as written: what GROUPING() reports
    group_id: int = 0     # GROUP_ID(): which copy of a set written more than once


@dataclass(frozen=True)
class Groupings:
    exprs: tuple          # every key expression, each once
    variants: tuple       # Variant, one per grouping computed

    @property
    def expands(self) -> bool:
        """More than one grouping: each row is copied once per variant."""
        return len(self.variants) > 1

    def in_every(self, index: int) -> bool:
        """Is key ``index`` a key of every variant (so never NULLed, its type unchanged)?"""
        return all(index in v.keys for v in self.variants)

    def index_of(self, node: exp.Expression) -> Optional[int]:
        key = flink_key(_bare(node))
        return next((i for i, e in enumerate(self.exprs) if flink_key(e) == key), None)


def uses_grouping_sets(keys: list) -> bool:
    """Does a GROUP BY list have GROUPING SETS, ROLLUP, CUBE or ``()``?"""
    return any(isinstance(k, SET_NODES) or (isinstance(k, exp.Tuple) and not k.expressions) for k in keys)


def analyze(keys: list) -> Groupings:
    """The GROUP BY list's key expressions and the groupings it computes."""
    exprs: list = []
    index: dict = {}

    def at(e) -> int:
        e = _bare(e)
        key = flink_key(e)
        if key not in index:
            index[key] = len(exprs)
            exprs.append(e)
        return index[key]

    def union_of(e) -> frozenset:
        """``(a, b)`` → {a, b}; ``()`` → {}; ``a`` → {a}."""
        e = e.this if isinstance(e, exp.Paren) else e
        members = e.expressions if isinstance(e, exp.Tuple) else [e]
        return frozenset(at(m) for m in members)

    def rolled(node) -> list:
        parts = [union_of(e) for e in node.expressions]
        if isinstance(node, exp.Rollup):
            found = [frozenset().union(*parts[:n]) for n in range(len(parts), -1, -1)]
        else:
            found = [frozenset().union(*c) for n in range(len(parts), -1, -1) for c in combinations(parts, n)]
        return list(dict.fromkeys(found))  # each set once, in order

    def sets_of(node) -> list:
        """The sets one item of GROUPING SETS (…) stands for (nested ones flattened)."""
        if isinstance(node, exp.GroupingSets):
            return [s for item in node.expressions for s in sets_of(item)]
        if isinstance(node, (exp.Rollup, exp.Cube)):
            return rolled(node)
        return [union_of(node)]

    factors = []
    for k in keys:
        if isinstance(k, exp.GroupingSets):
            factors.append(sets_of(k))
        elif isinstance(k, (exp.Rollup, exp.Cube)):
            factors.append(rolled(k))
        else:
            factors.append([union_of(k)])
    flat = [frozenset().union(*combo) for combo in product(*factors)] or [frozenset()]
    counts = Counter(flat)
    distinct = list(dict.fromkeys(flat))
    every = frozenset().union(*distinct)
    variants = []
    for level in range(max(counts.values())):
        sets = [s for s in distinct if counts[s] > level]
        for s in sets:
            # A level's aggregation of one set only is grouped by every key in Flink.
            variants.append(Variant(every if len(sets) == 1 else s, s, level))
    return Groupings(tuple(exprs), tuple(variants))


def plain(keys: list) -> Groupings:
    """A GROUP BY without grouping sets: one grouping, every key."""
    return Groupings(tuple(keys), (Variant(frozenset(range(len(keys))), frozenset(range(len(keys)))),))


def grouping_calls(node: exp.Select) -> list:
    """GROUPING(…), GROUPING_ID(…) and GROUP_ID() calls of the SELECT list and HAVING (not
    of subqueries)."""
    found = []
    for item in list(node.expressions) + ([node.args["having"]] if node.args.get("having") else []):
        for call in item.find_all(exp.Anonymous):
            if call.name.upper() in GROUPING_FUNCTIONS and call.find_ancestor(exp.Select) is node:
                found.append(call)
    return found


def grouping_values(planner, groupings: Groupings, call: exp.Anonymous, always=()) -> list[int]:
    """The value of a grouping function call for each variant. GROUPING(a, b) and
    GROUPING_ID(a, b) are the same bit vector: a bit per argument, the first argument's
    the highest, 1 where the variant's set leaves the argument out. ``always``: names of
    keys grouped by in every variant outside the sets (a window's columns)."""
    name = call.name.upper()
    if name == "GROUP_ID":
        if call.expressions:
            raise planner.error(call, "GROUP_ID() takes no arguments")
        return [v.group_id for v in groupings.variants]
    if not call.expressions:
        raise planner.error(call, f"{name} needs at least one argument")
    positions = []
    for arg in call.expressions:
        i = groupings.index_of(arg)
        if i is None and not (isinstance(_bare(arg), exp.Column) and _bare(arg).name.lower() in always):
            raise planner.error(arg, f"the argument of {name} must be a GROUP BY expression",
                                hint=f"'{planner.current.flink_sql(arg)}' is not one of the grouping keys")
        positions.append(i)
    n = len(positions)
    return [sum(1 << (n - 1 - j) for j, i in enumerate(positions) if i is not None and i not in v.declared)
            for v in groupings.variants]


def grouping_replacements(planner, node: exp.Select, groupings: Groupings, variant_sql: Optional[str],
                          always=()) -> dict:
    """Each grouping function call of ``node`` → its value (BIGINT NOT NULL, as Flink types
    it), read from the variant number ``variant_sql`` (None: one variant, a constant)."""
    from job.sql.flink.translate import Typed
    from job.sql.types import logical_type

    bigint = logical_type("BIGINT NOT NULL")
    calls = grouping_calls(node)
    collapsed = next((v for v in groupings.variants if v.keys != v.declared), None)
    if collapsed is not None and not any(c.name.upper() != "GROUP_ID" for c in calls):
        # Flink rewrites the GROUP_IDs away and is left with an aggregation of one set
        # that is not every key, which its planner rejects ("GROUPING SETS are currently
        # not supported"): refused here too, not given rows Flink has none for.
        raise planner.error(node.args["group"], "a grouping set written more than once, whose extra copies are of "
                                                "one set only, is rejected by Flink 2.3 ('GROUPING SETS are currently "
                                                "not supported') unless the query calls GROUPING() or GROUPING_ID()",
                            hint="write each grouping set once, or UNION ALL a second GROUP BY for the copy")
    out = {}
    for call in calls:
        values = grouping_values(planner, groupings, call, always)
        if variant_sql is None or len(set(values)) == 1:
            sql = f"CAST({values[0]} AS BIGINT)"
        else:
            sql = "CAST(CASE " + " ".join(f"WHEN {variant_sql} = {i} THEN {v}" for i, v in enumerate(values)) \
                  + " END AS BIGINT)"
        out[flink_key(call)] = Typed(sql, bigint)
    return out


def expand(df, groupings: Groupings, key_cols: list, key_types: list, variant_col: str):
    """Each row of ``df`` once per variant: the keys ``key_cols`` outside the variant NULL,
    the variant's number in ``variant_col``; the other columns (arguments, the changelog
    sign, positions) as they are."""
    from pyspark.sql import functions as F

    copies = F.array(*[F.struct(F.lit(i).alias(variant_col), *[
        (F.col(f"`{c}`") if j in v.keys else F.lit(None).cast(t)).alias(c)
        for j, (c, t) in enumerate(zip(key_cols, key_types))]) for i, v in enumerate(groupings.variants)])
    rest = [F.col(f"`{c}`") for c in df.columns if c not in key_cols]
    return df.select(*rest, F.explode(copies).alias("__copy")) \
        .select(*rest, *[F.col(f"__copy.`{c}`").alias(c) for c in [variant_col, *key_cols]])


def _bare(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node
