"""Joins: regular joins of changelogs (INNER/LEFT/RIGHT/FULL on equalities), and the
special joins Flink has — CROSS JOIN UNNEST, LATERAL TABLE of a table function, interval joins, temporal joins
(``FOR SYSTEM_TIME AS OF``), lookup joins — dispatched from :func:`plan_join`.

A regular join keeps both sides in state and emits at once: a row arriving on one side
is joined with every row the other side holds under the same key, and an outer join's
padded row is retracted when its first match arrives — Flink's streaming join.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from sqlglot import exp

from job.changelog.columns import SIDE, UPSERT_KIND, UPSERT_MAJOR, UPSERT_MINOR
from job.changelog.specs import JoinSide
from job.plan import engine, nodes
from job.plan.join_condition import join_kind, key_names, on_text, split_condition
from job.plan.relation import NET, SIGN, Field, PendingJoin, Rel
from job.sql.flink import rules

NO_KEY = "__no_key"  # a join input row whose key never matches (see join_input)


def plan_join(planner, left: Rel, node: exp.Join) -> Rel:
    right_node = node.this
    if isinstance(right_node, exp.Unnest):
        from job.plan import unnest

        return unnest.plan_unnest(planner, left, node)
    if isinstance(right_node, exp.Lateral):
        from job.plan import lateral

        return lateral.plan_lateral_table(planner, left, node)
    if isinstance(right_node, exp.Table) and right_node.args.get("version") is not None:
        from job.plan import temporal

        return temporal.plan_temporal_join(planner, left, node)
    from job.plan import constant_join

    constant = constant_join.constant_row(right_node)
    if constant is not None and constant_join.applies(node):
        return constant_join.plan_constant_join(planner, left, node, *constant)
    right = planner.relation(right_node)
    from job.plan import interval

    interval_join = interval.match_interval_join(planner, left, right, node)
    if interval_join is not None:
        return interval_join
    return regular_join(planner, left, right, node)


def is_cross(node: exp.Join) -> bool:
    """``FROM a, b`` or ``a CROSS JOIN b``: a join without a condition of its own."""
    return node.args.get("on") is None and not node.args.get("using") and \
        (node.args.get("kind") or "").lower() in ("", "cross") and not node.args.get("side")


def with_where_conditions(planner, left: Rel, node: exp.Join, where: list) -> exp.Join:
    """``node`` with the WHERE conditions that compare its two sides as its ON clause
    (when one of them is an equality: an equi-join), taken out of ``where``."""
    def sides(cond) -> set:
        # A column the left relation does not know is the joined table's (or unknown,
        # which planning the join reports as it would in WHERE).
        return {"left" if left.refers_only_to(col) else "right" for col in cond.find_all(exp.Column)}

    both = [c for c in where if sides(c) == {"left", "right"}
            and not any(True for _ in c.find_all(exp.Subquery, exp.Exists, exp.Select))]
    if not any(isinstance(c, exp.EQ) for c in both):
        return node
    for c in both:
        where.remove(c)
    joined = node.copy()
    joined.set("kind", None)
    joined.set("on", exp.and_(*[c.copy() for c in both]) if len(both) > 1 else both[0].copy())
    return joined


def regular_join(planner, left: Rel, right: Rel, node: exp.Join) -> Rel:
    from pyspark.sql import functions as F

    kind = join_kind(node)
    pairs, left_only, right_only, mixed = split_condition(planner, left, right, node)
    if not pairs or (node.args.get("kind") or "").lower() == "cross":  # no equality between the sides
        return _join_on_one_key(planner, left, right, node)
    if mixed and kind != "inner":
        raise planner.error(mixed[0], f"this {kind.upper()} JOIN condition compares both sides with something other "
                                      "than '=', which is not supported yet", hint="move it to WHERE, or make the "
                                                                                   "join INNER")

    # INNER and LEFT joins without conditions of their own, all on one key, become one
    # operator: a pending join on the left is extended when this join uses its key.
    one_key = kind in ("inner", "left") and not (left_only or right_only or mixed)
    extending = left.pending_join is not None and one_key and left.pending_join.extendable
    if left.pending_join is not None and not extending:
        left = planner.settle(left)

    # A side-only condition on the *preserved* side of an outer join decides whether the
    # row may match at all (unmatched rows are still emitted, padded with NULLs); on the
    # other side it simply filters the input.
    left_gate = left_only if kind in ("left", "full") else []
    right_gate = right_only if kind in ("right", "full") else []

    def typed_keys(rel: Rel, keys):
        return [planner.expr(rel, k, "the JOIN condition") for k in keys]

    lvals, rvals = typed_keys(left, [a for a, _ in pairs]), typed_keys(right, [b for _, b in pairs])
    key_types = []
    for (a, b), lv, rv in zip(pairs, lvals, rvals):
        if not rules.comparable(lv.type, rv.type):
            raise planner.error(a, f"implicit type conversion between {lv.type.summary(False)} and "
                                   f"{rv.type.summary(False)} is not supported on a join's condition",
                                hint="CAST one side, e.g. CAST(… AS " + rv.type.summary(False) + ")")
        common = rules.least_restrictive([lv.type, rv.type])
        key_types.append(common.nullable_as(True))

    # An upsert side joined on exactly its primary key, with no condition of its own, is
    # normalized inside the join (one stateful operator instead of two). The join key
    # must also *be* the primary key: compared after a cast that can map two keys to
    # one (STRING '1' and '01' both become BIGINT 1), one key's row would replace the
    # other's.
    def fusable(rel: Rel, values, conds) -> bool:
        if rel.pending_upsert is None or conds:
            return False
        plain = [v.sql.strip("`") for v in values]
        same_type = all(v.type.nullable_as(True) == k or (v.type.is_integral and k.is_integral)
                        for v, k in zip(values, key_types))
        return set(plain) == set(rel.pending_upsert) and len(plain) == len(rel.pending_upsert) and same_type

    fuse_left = fusable(left, lvals, left_only)
    fuse_right = fusable(right, rvals, right_only)
    if not fuse_left and not extending:
        left = planner.settle(left)
    if not fuse_right:
        right = planner.settle(right)
    for cond in ([] if left_gate else left_only):
        left = planner.filter(left, cond, "the JOIN condition")
    for cond in ([] if right_gate else right_only):
        right = planner.filter(right, cond, "the JOIN condition")
    lvals, rvals = typed_keys(left, [a for a, _ in pairs]), typed_keys(right, [b for _, b in pairs])

    def key_columns(rel: Rel, values):
        tr = planner.translator(rel, "the JOIN condition")
        out = []
        for i, (v, k) in enumerate(zip(values, key_types)):
            cast = v if v.type.nullable_as(True) == k else tr.cast(v, k)
            out.append(F.expr(cast.sql))
        return out

    lkeys, rkeys = key_columns(left, lvals), key_columns(right, rvals)
    lcols = [v.sql.strip("`") for v in lvals]
    rcols = [v.sql.strip("`") for v in rvals]
    lplain = {c for c in lcols if c in left.cols()}
    rplain = {c for c in rcols if c in right.cols()}
    if extending:
        pending = left.pending_join
        if key_types == pending.key_types and all(c in cols for c, cols in zip(lcols, pending.anchors)) \
                and len(lcols) == len(pending.anchors):
            return extend_join(planner, left, right, kind, rkeys, rcols, fuse_right, lplain, rplain, pairs)
        left = planner.settle(left)

    lp, rp = join_input(planner, left, lkeys, 0, left_gate), join_input(planner, right, rkeys, 1, right_gate)
    upsert_sides = tuple(side for side, fused in ((0, fuse_left), (1, fuse_right)) if fused)
    unique_sides = tuple(side for side, rel_, plain in ((0, left, lplain), (1, right, rplain))
                         if rel_.unique_key is not None and rel_.unique_key <= plain)
    # Rows that cannot match (NULL key) need no state: an outer side's go through the
    # operator, which emits them padded with NULLs, an inner side's are dropped here.
    passthrough = tuple(side for side, outer, fused in ((0, ("left", "full"), fuse_left), (1, ("right", "full"), fuse_right))
                        if kind in outer and not fused)
    # Per key part, the columns that hold the key in every output row: the left key (left
    # rows are never padded in an INNER or LEFT join), and an INNER join's right key.
    anchors = [{c for c in ({lc, rc} if kind == "inner" else {lc}) if c in left.cols() + right.cols()}
               for lc, rc in zip(lcols, rcols)]
    pending = PendingJoin(
        inputs=[lp, rp], schemas=[engine.schema_of(left), engine.schema_of(right)], kinds=[kind],
        upsert_sides=upsert_sides, unique_sides=unique_sides, key_types=key_types, anchors=anchors,
        passthrough=passthrough,
        schema=joined_schema(left, right), extendable=one_key and all(c in left.cols() for c in lcols))
    key = join_key(left, right, kind, lplain, rplain)
    steps = left.steps + right.steps + [nodes.engine(
        "join", "join", f"{kind} join on {on_text(planner, pairs)}",
        "engine: join; stateful; emits at once, retracts padded rows when a match arrives"
        + ("; normalizes the upsert " + " and ".join(("left", "right")[s_] for s_ in upsert_sides)
           + " side by its key in the same operator" if upsert_sides else ""),
        keys=key_names(planner, pairs), inputs=2)]
    rel = Rel(None, left.fields + right.fields, kind == "inner" and left.append_only and right.append_only, key, steps,
              computed=left.computed | right.computed, pending_join=pending)
    for cond in (mixed if kind == "inner" else []):
        rel = planner.filter(rel, cond, "the JOIN condition")
    return rel


def _join_on_one_key(planner, left: Rel, right: Rel, node: exp.Join) -> Rel:
    """A join without an equality between its sides (a cross join, ``ON TRUE``, ``ON a.x <
    b.y``) on a constant key: every row meets every row of the other side in one operator
    instance, as Flink runs such a join (its non-equi join runs with parallelism 1 and
    keeps both sides in state). The rest of the ON clause is the join's condition."""
    from pyspark.sql import functions as F

    from job.sql.types import INT_TYPE

    tag = planner.fresh("__one")

    def keyed(rel: Rel, side: str) -> Rel:
        rel = planner.settle(rel)
        col = planner.fresh()
        return Rel(rel.df.withColumn(col, F.lit(1)), [*rel.fields, Field(tag, f"{tag}_{side}", col, INT_TYPE)],
                   rel.append_only, rel.unique_key, rel.steps, computed=rel.computed)

    left_keyed, right_keyed = keyed(left, "l"), keyed(right, "r")
    equal = exp.EQ(this=exp.column(tag, f"{tag}_l"), expression=exp.column(tag, f"{tag}_r"))
    on = node.args.get("on")
    joined = node.copy()
    joined.set("kind", None if (node.args.get("kind") or "").lower() == "cross" else node.args.get("kind"))
    joined.set("using", None)
    joined.set("on", exp.and_(equal, on.copy()) if on is not None else equal)
    rel = regular_join(planner, left_keyed, right_keyed, joined)
    rel = planner.settle(rel)
    rel.fields = [f for f in rel.fields if f.name != tag]
    # The join node(s) this join added (not its inputs'; found by kind and identity, not by
    # their wording) join on no key of the query's: say so, and keep no key.
    inputs = {id(step) for step in left_keyed.steps + right_keyed.steps}
    constant = f"{tag}_l.{tag} = {tag}_r.{tag}"
    rel.steps = [replace(step, text=step.text.replace(constant, "a constant key (every row meets every row: one "
                                                                "operator instance)"), keys=())
                 if step.kind == "join" and id(step) not in inputs else step for step in rel.steps]
    return rel


def extend_join(planner, left: Rel, right: Rel, kind: str, rkeys, rcols: list, fuse_right: bool, lplain: set,
                rplain: set, pairs) -> Rel:
    """One more input for the pending join on ``left``'s key."""
    pending = left.pending_join
    side = len(pending.inputs)
    rows = join_input(planner, right, rkeys, side, [])
    anchors = pending.anchors
    if kind == "inner":  # an inner-joined input's key equals the key in every output row
        anchors = [a | ({rc} if rc in right.cols() else set()) for a, rc in zip(anchors, rcols)]
    extended = replace(
        pending, inputs=pending.inputs + [rows], schemas=pending.schemas + [engine.schema_of(right)],
        kinds=pending.kinds + [kind], upsert_sides=pending.upsert_sides + ((side,) if fuse_right else ()),
        unique_sides=pending.unique_sides + ((side,) if right.unique_key is not None
                                            and right.unique_key <= rplain else ()),
        anchors=anchors, schema=joined_schema(left, right),
        # Input 0's NULL-key rows are emitted padded only while every join is LEFT.
        passthrough=pending.passthrough if kind == "left" else ())
    steps = left.steps + right.steps + [nodes.engine(
        "join", "join", f"{kind} join on {on_text(planner, pairs)}",
        f"same key: joined in the previous join's operator, now {side + 1} inputs"
        + ("; normalizes the upsert right side by its key there" if fuse_right else ""),
        keys=key_names(planner, pairs), inputs=2)]
    return Rel(None, left.fields + right.fields, kind == "inner" and left.append_only and right.append_only,
               join_key(left, right, kind, lplain, rplain), steps, computed=left.computed | right.computed,
               pending_join=extended)


def joined_schema(left: Rel, right: Rel):
    from pyspark.sql.types import StructType

    lschema = left.pending_join.schema if left.pending_join is not None else engine.schema_of(left)
    return StructType(lschema.fields + engine.schema_of(right).fields)


def join_input(planner, rel: Rel, keys, side: int, gates):
    """A join input as the engine reads it: the key parts (``__k0`` …, NULL when a part
    is NULL or a gate condition fails: such rows never match), the side, the sign (or,
    for an upsert side normalized in the join, its kind and source position), and the
    input's own columns; plus NO_KEY, true for the rows that never match."""
    from pyspark.sql import functions as F

    null_key = F.lit(False)
    for k in keys:
        null_key = null_key | k.isNull()
    for g in gates:
        cond = planner.translator(rel, "the JOIN condition").condition(g, "the JOIN condition")
        null_key = null_key | ~F.coalesce(F.expr(cond.sql), F.lit(False))
    key_parts = [F.when(null_key, F.lit(None)).otherwise(k).alias(f"__k{i}") for i, k in enumerate(keys)]
    columns = [F.col(f"`{c}`") for c in rel.cols()]
    if rel.pending_upsert is not None:  # fused: raw upserts, ordered by the join
        return rel.df.select(*key_parts, F.lit(side).alias(SIDE), F.lit(0).alias(SIGN), UPSERT_KIND, UPSERT_MAJOR,
                             UPSERT_MINOR, *columns, null_key.alias(NO_KEY))
    df = planner.signed(rel)
    return df.select(*key_parts, F.lit(side).alias(SIDE), F.col(SIGN),
                     F.lit(None).cast("string").alias(UPSERT_KIND), F.lit(None).cast("string").alias(UPSERT_MAJOR),
                     F.lit(None).cast("long").alias(UPSERT_MINOR), *columns, null_key.alias(NO_KEY))


def settle_join(planner, rel: Rel) -> Rel:
    """Plan a pending join as the engine's join: all inputs in one stream, grouped by key."""
    from pyspark.sql import functions as F

    pending = rel.pending_join

    def keyed(side: int, rows):  # the rows the operator reads: a side that passes NULL keys keeps them
        return (rows if side in pending.passthrough else rows.filter(~F.col(NO_KEY))).drop(NO_KEY)

    matched = keyed(0, pending.inputs[0])
    for side, rows in enumerate(pending.inputs[1:], start=1):
        matched = matched.unionByName(keyed(side, rows), allowMissingColumns=True)
    binary = len(pending.inputs) == 2
    kind = pending.kinds[0]
    sides = []
    for i, schema in enumerate(pending.schemas):
        if i == 0:
            padded = binary and kind in ("right", "full")
        else:
            padded = pending.kinds[i - 1] in ("left", "full")
        sides.append(JoinSide(columns=tuple(schema.fieldNames()), padded=padded, upsert=i in pending.upsert_sides,
                              unique=i in pending.unique_sides, passes_null_key=i in pending.passthrough))
    keys = [f"__k{i}" for i in range(len(pending.key_types))]
    joined = engine.join(planner, matched, keys, sides)
    columns = [c for schema in pending.schemas for c in schema.fieldNames()]
    # The operator nets by join key. That is the output's unique key when the unique key
    # is one col per key part, each holding that part in every row with the key's own
    # type: one row per join key, and rows of one sink key under one join key. Passed-
    # through NULL-key rows are many under one key (unnetted), so they rule it out.
    unique = rel.unique_key
    types = {f.col: f.type.nullable_as(True) for f in rel.fields}
    per_join_key = (unique is not None and not pending.passthrough and set(pending.kinds) <= {"inner", "left"}
                    and len(unique) == len(pending.anchors)
                    and all(len(unique & anchor) == 1 and types.get(next(iter(unique & anchor))) == key_type
                            for anchor, key_type in zip(pending.anchors, pending.key_types)))
    out = joined.select(*[F.col(f"`{c}`") for c in columns], F.col(SIGN), F.col(NET))
    # The operator's spec goes to the join that completed it (the last of the joins on this key).
    steps = rel.steps[:-1] + [replace(rel.steps[-1], spec=planner.spec_for("join"))]
    return Rel(out, rel.fields, rel.append_only, unique, steps, computed=rel.computed,
               net_key=unique if per_join_key else None)


def join_key(left: Rel, right: Rel, kind: str, lplain: set, rplain: set) -> Optional[frozenset]:
    """A unique key of the join's output, as Flink derives it."""
    lk, rk = left.unique_key, right.unique_key
    if lk is not None and rk is not None and rk <= rplain and kind in ("inner", "left"):
        return lk       # each left row matches at most one right row
    if lk is not None and rk is not None and lk <= lplain and kind in ("inner", "right"):
        return rk
    if lk is not None and rk is not None:
        return lk | rk
    return None
