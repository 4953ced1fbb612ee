"""A join's ON clause read for planning: its key equalities and the conditions on one
side or both, its kind (inner, left, right, full). Every kind of join reads it: regular,
interval, window, temporal and lookup joins."""
from __future__ import annotations

from sqlglot import exp

from job.plan.relation import conjuncts


def on_text(planner, pairs) -> str:
    return ", ".join(planner.current.flink_sql(a) + " = " + planner.current.flink_sql(b) for a, b in pairs)


def key_names(planner, pairs) -> tuple[str, ...]:
    """The join key as the left side's expressions (a plan node's keys)."""
    return tuple(planner.current.flink_sql(a) for a, _ in pairs)


def split_condition(planner, left: Rel, right: Rel, node: exp.Join):
    """The ON clause as (key equalities, left-only, right-only, mixed) conditions."""
    conds = conjuncts(node.args.get("on"))
    for name in node.args.get("using") or []:
        col = name.name if hasattr(name, "name") else str(name)
        conds.append(exp.EQ(this=exp.column(col), expression=exp.column(col)))
    pairs, left_only, right_only, mixed = [], [], [], []
    for cond in conds:
        if isinstance(cond, exp.EQ):
            a, b = cond.this, cond.expression
            if left.refers_only_to(a) and right.refers_only_to(b):
                pairs.append((a, b))
                continue
            if left.refers_only_to(b) and right.refers_only_to(a):
                pairs.append((b, a))
                continue
        if isinstance(cond, exp.Boolean) and cond.this:
            continue
        if left.refers_only_to(cond):
            left_only.append(cond)
        elif right.refers_only_to(cond):
            right_only.append(cond)
        else:
            mixed.append(cond)
    return pairs, left_only, right_only, mixed


def join_kind(node: exp.Join) -> str:
    side = (node.args.get("side") or "").lower()
    return {"left": "left", "right": "right", "full": "full"}.get(side, "inner")
