"""Interval joins: two append-only streams joined on keys and a time range.

``a JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '1' HOUR AND b.ts`` (or the
same bounds written with >=, >, <, <=) is Flink's interval join when both times are the
inputs' event-time attributes and the condition bounds ``a.ts - b.ts`` from below and
from above. Each row waits in state while a row of the other side could still match it
(until the watermark passes its time plus the bound); an outer join emits a row padded
with NULLs once that wait is over and nothing matched. The output is append-only and
both inputs' time attributes stay time attributes.

Spark's own stream-stream join computes exactly that: it keeps both sides per key,
derives from the same range condition how long a row can still match, and emits the
padded rows of an outer join when the watermark passes them. The planner checks the
condition's shape itself (so a join Spark would run without bounds, keeping every row
forever, is a regular join or refused, never a silent difference) and hands Spark the
whole ON condition.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from job.plan import nodes
from job.plan.event_time import BARRIER, barrier, waits
from job.plan.relation import Field, Rel, conjuncts
from job.sql.flink.casts import interval_millis

_FLIP = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE}


@dataclass
class Bound:
    """``left.time - right.time`` OP ``millis``; OP one of > >= < <=."""
    op: type
    millis: int
    node: exp.Expression


def match_interval_join(planner, left, right, node):
    """An interval join, planned; None when ``node`` is a regular join."""
    from job.plan import join_condition, window_join

    windowed = window_join.match_window_join(planner, left, right, node)
    if windowed is not None:
        return windowed
    if node.args.get("on") is None:
        return None
    lt, rt = _time_fields(left), _time_fields(right)
    if not lt or not rt:
        return None
    bounds, other = [], []
    for cond in conjuncts(node.args["on"]):
        found = _bounds(planner, left, right, cond)
        if found is None:
            other.append(cond)
        else:
            bounds += found
    if not bounds:
        return None
    lower = [b for b in bounds if b.op in (exp.GT, exp.GTE)]
    upper = [b for b in bounds if b.op in (exp.LT, exp.LTE)]
    kind = join_condition.join_kind(node)
    if not lower or not upper:
        if kind == "inner":
            return None  # a regular join with a time condition, as in Flink
        raise planner.error(bounds[0].node, f"this {kind.upper()} JOIN bounds the time difference on one side only: an "
                                            "interval join needs a lower and an upper bound",
                            hint="e.g. a.ts BETWEEN b.ts - INTERVAL '1' HOUR AND b.ts")
    return plan_interval_join(planner, left, right, node, kind, lower, upper)


def _time_fields(rel: Rel) -> list[Field]:
    return [f for f in rel.fields if f.time in ("rowtime", "proctime")]


def _bounds(planner, left: Rel, right: Rel, cond: exp.Expression) -> Optional[list[Bound]]:
    """The bounds on ``left time - right time`` a condition states; None when it is not
    a comparison of the two sides' time attributes."""
    if isinstance(cond, exp.Between):
        low = _bounds(planner, left, right, exp.GTE(this=cond.this, expression=cond.args["low"]))
        high = _bounds(planner, left, right, exp.LTE(this=cond.this, expression=cond.args["high"]))
        if low is None or high is None:
            return None
        return [Bound(b.op, b.millis, cond) for b in low + high]
    if type(cond) not in _FLIP:
        return None
    a = _time_term(planner, left, right, cond.this)
    b = _time_term(planner, left, right, cond.expression)
    if a is None or b is None or a[0] == b[0]:
        return None
    op = type(cond)
    (side_a, field_a, offset_a), (_, field_b, offset_b) = a, b
    if side_a == "right":  # write it as left OP right
        op = _FLIP[op]
        (field_a, offset_a), (field_b, offset_b) = (field_b, offset_b), (field_a, offset_a)
    if field_a.time != field_b.time:
        return None
    if field_a.time == "proctime":
        raise planner.error(cond, "interval joins on processing time are not supported",
                            hint="join on event-time attributes (declare WATERMARK FOR the time columns)")
    # left + offset_a OP right + offset_b  ⇔  left - right OP offset_b - offset_a
    return [Bound(op, offset_b - offset_a, cond)]


def _time_term(planner, left: Rel, right: Rel, node: exp.Expression):
    """``time [± INTERVAL …]`` of one side → (side, time field, offset in ms)."""
    offset = 0
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
        millis = interval_millis(planner.translator(left, "the JOIN condition"), node.expression)
        offset = millis if isinstance(node, exp.Add) else -millis
        node = node.this
    if not isinstance(node, exp.Column):
        return None
    for side, rel in (("left", left), ("right", right)):
        if rel.refers_only_to(node):
            found, path = planner.translator(rel, "the JOIN condition").scope.resolve_column(node)
            if path or found.time not in ("rowtime", "proctime"):
                return None
            return side, found, offset
    return None


def plan_interval_join(planner, left: Rel, right: Rel, node: exp.Join, kind: str, lower: list, upper: list) -> Rel:
    from pyspark.sql import functions as F

    from job.plan import join_condition

    left, right = planner.settle(left), planner.settle(right)
    if not (left.append_only and right.append_only):
        raise planner.error(node, "an interval join needs two append-only inputs, but "
                                  + ("its left" if not left.append_only else "its right")
                                  + " input has updates and deletes")
    pairs, _, _, _ = join_condition.split_condition(planner, left, right, node)
    if not pairs:
        raise planner.error(node, "an interval join needs at least one equality between the two sides",
                            hint="Spark keeps no key to join on otherwise")
    both = Rel(None, left.fields + right.fields, True)
    condition = planner.translator(both, "the JOIN condition").condition(node.args["on"], "the JOIN condition").sql
    ldf, rdf = barrier(left.df), barrier(right.df).withColumnRenamed(BARRIER, BARRIER + "_r")
    if kind != "inner":
        # Spark's stream-stream outer join matches a NULL key with a NULL key (its state
        # is a hash of key rows); SQL's equality does not. A column that differs between
        # the sides when a key part is NULL keeps such rows apart.
        def null_key(rel, values, when_null):
            parts = " OR ".join(f"({planner.expr(rel, v, 'the JOIN condition').sql}) IS NULL" for v in values)
            return F.expr(f"CASE WHEN {parts} THEN {when_null} ELSE 2 END")
        ldf = ldf.withColumn("__nk_l", null_key(left, [a for a, _ in pairs], 0))
        rdf = rdf.withColumn("__nk_r", null_key(right, [b for _, b in pairs], 1))
        condition = f"({condition}) AND `__nk_l` = `__nk_r`"
    # The barriers take part in the condition (always true), or Spark would prune them.
    condition = f"({condition}) AND NOT `{BARRIER}` AND NOT `{BARRIER}_r`"
    spark_kind = {"inner": "inner", "left": "left_outer", "right": "right_outer", "full": "full_outer"}[kind]
    df = ldf.join(rdf, F.expr(condition), spark_kind)
    # A row waits until the other side's watermark passes its time plus the bound; the
    # end of a bounded input must advance time that far.
    span = max(abs(b.millis) for b in lower + upper)
    waits(planner, span, delays_output_ms=span)

    def text(bounds):
        return " and ".join(f"{planner.current.flink_sql(b.node)}" for b in dict((id(b.node), b) for b in bounds).values())

    fields = left.fields + right.fields
    if kind in ("left", "full"):
        fields = fields[:len(left.fields)] + [_nullable(f) for f in right.fields]
    if kind in ("right", "full"):
        fields = [_nullable(f) for f in fields[:len(left.fields)]] + fields[len(left.fields):]
    step = nodes.spark("interval_join", f"{kind} interval join on {join_condition.on_text(planner, pairs)} and "
                       f"{text(lower + upper)}",
                       f"Spark's stream-stream join: rows kept until the watermark passes their time + {span} ms"
                       + ("; unmatched rows emitted padded with NULLs then" if kind != "inner" else ""),
                       keys=join_condition.key_names(planner, pairs), stateful=True, inputs=2)
    return Rel(df.select(*[F.col(f"`{c}`") for c in left.cols() + right.cols()]), fields, True,
               steps=left.steps + right.steps + [step], computed=left.computed | right.computed)


def _nullable(f: Field) -> Field:
    from dataclasses import replace

    return replace(f, type=f.type.nullable_as(True))
