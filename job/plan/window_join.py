"""Window joins: two window table functions' rows joined on their windows and keys.

``FROM (SELECT * FROM TABLE(TUMBLE(TABLE a, …))) L [LEFT|RIGHT|FULL] JOIN (SELECT * FROM
TABLE(TUMBLE(TABLE b, …))) R ON L.window_start = R.window_start AND L.window_end =
R.window_end AND L.k = R.k`` is Flink's window join: a window's rows of both sides are
joined once the watermark passes the window's end (an outer join then emits the
unmatched rows padded with NULLs), and the window is forgotten. The output is
append-only. It runs in the engine's ``windowJoin`` operator
(engine/…/WindowJoinOp.java), keyed by the join key and the window.

A join that equates only some of the window bounds, or joins an updating input, is a
regular join (job.plan.joins), as in Flink.
"""
from __future__ import annotations

from sqlglot import exp

from job.changelog.columns import SIDE
from job.changelog.specs import WindowJoin
from job.plan import engine, nodes
from job.plan.event_time import BARRIER, barrier, time_attributes_kept, waits, without_event_time
from job.plan.relation import Field, Rel
from job.sql.flink import rules


def _window_bound(planner, rel: Rel, node) -> str | None:
    """'window_start' / 'window_end' when ``node`` names that column of a window TVF's
    rows in ``rel`` (a TIMESTAMP(3) NOT NULL column of that name), else None."""
    if not isinstance(node, exp.Column):
        return None
    found, path = planner.translator(rel, "the JOIN condition").scope.resolve_column(node)
    name = found.name.lower()
    if path or name not in ("window_start", "window_end") or found.type.name != "TIMESTAMP" or found.type.nullable:
        return None
    return name


def match_window_join(planner, left: Rel, right: Rel, node: exp.Join):
    """A window join, planned; None when ``node`` is not one."""
    from job.plan import join_condition

    if node.args.get("on") is None or left.pending_join is not None:
        return None
    pairs, left_only, right_only, mixed = join_condition.split_condition(planner, left, right, node)
    bounds, keys = {}, []
    for a, b in pairs:
        la, rb = _window_bound(planner, left, a), _window_bound(planner, right, b)
        if la is not None and la == rb:
            bounds[la] = (a, b)
        else:
            keys.append((a, b))
    if set(bounds) != {"window_start", "window_end"}:
        return None
    left, right = planner.settle(left), planner.settle(right)
    if not (left.append_only and right.append_only):
        return None
    kind = join_condition.join_kind(node)
    extra = left_only + right_only + mixed
    if extra and kind != "inner":
        raise planner.error(extra[0], f"a condition other than equalities in a {kind.upper()} window join is not "
                                      "supported yet", hint="make the join INNER, or filter the inputs first")
    return plan_window_join(planner, left, right, node, kind, keys, bounds, extra)


def plan_window_join(planner, left: Rel, right: Rel, node: exp.Join, kind: str, keys: list, bounds: dict,
                     extra: list) -> Rel:
    from pyspark.sql import functions as F

    pairs = [bounds["window_start"], bounds["window_end"]] + keys
    lvals = [planner.expr(left, a, "the JOIN condition") for a, _ in pairs]
    rvals = [planner.expr(right, b, "the JOIN condition") for _, b in pairs]
    types = []
    for (a, _), lv, rv in zip(pairs, lvals, rvals):
        if not rules.comparable(lv.type, rv.type):
            raise planner.error(a, f"implicit type conversion between {lv.type.summary(False)} and "
                                   f"{rv.type.summary(False)} is not supported on a join's condition")
        types.append(rules.least_restrictive([lv.type, rv.type]).nullable_as(True))
    end_col = {"left": lvals[1].sql, "right": rvals[1].sql}

    def side(rel, values, number, end):
        tr = planner.translator(rel, "the JOIN condition")
        cols = [F.expr((v if v.type.nullable_as(True) == t else tr.cast(v, t)).sql) for v, t in zip(values, types)]
        no_key = F.lit(False)
        for c in cols:
            no_key = no_key | c.isNull()
        return barrier(rel.df).select(*[c.alias(f"__k{i}") for i, c in enumerate(cols)],
                                      F.lit(number).alias(SIDE), (F.expr(f"unix_millis({end})") - 1).alias("__t"),
                                      *[F.col(f"`{c}`") for c in rel.cols()], no_key.alias("__no_key"),
                                      F.col(BARRIER))

    ldf = side(left, lvals, 0, end_col["left"])
    rdf = side(right, rvals, 1, end_col["right"])
    matched = ldf.filter(~F.col("__no_key")).unionByName(rdf.filter(~F.col("__no_key")), allowMissingColumns=True)
    lcols, rcols = left.cols(), right.cols()
    spec = WindowJoin(keys=tuple(f"__k{i}" for i in range(len(pairs))), left=tuple(lcols), right=tuple(rcols),
                      time="__t", pad_left=kind in ("left", "full"), pad_right=kind in ("right", "full"))
    out = engine.call(planner, spec, without_event_time(matched.drop("__no_key")))
    # A row with a NULL key never matches: an outer side emits it padded at once.
    ltypes = {c: t for c, t in ldf.dtypes}
    rtypes = {c: t for c, t in rdf.dtypes}
    if kind in ("left", "full"):
        out = out.unionByName(ldf.filter(F.col("__no_key") & ~F.col(BARRIER)).select(
            *[F.col(f"`{c}`") for c in lcols], *[F.lit(None).cast(rtypes[c]).alias(c) for c in rcols]))
    if kind in ("right", "full"):
        out = out.unionByName(rdf.filter(F.col("__no_key") & ~F.col(BARRIER)).select(
            *[F.lit(None).cast(ltypes[c]).alias(c) for c in lcols], *[F.col(f"`{c}`") for c in rcols]))
    out = time_attributes_kept(out, [left.df, right.df], left.fields + right.fields)
    waits(planner, 0)

    def nullable(fields):
        return [Field(f.name, f.qualifier, f.col, f.type.nullable_as(True), f.time) for f in fields]

    lfields = nullable(left.fields) if kind in ("right", "full") else left.fields
    rfields = nullable(right.fields) if kind in ("left", "full") else right.fields
    on = ", ".join(planner.current.flink_sql(a) + " = " + planner.current.flink_sql(b) for a, b in pairs)
    step = nodes.engine("window_join", "windowJoin", f"{kind} window join on {on}",
                        "engine: windowJoin; a window's rows are joined once the watermark passes its end",
                        keys=tuple(planner.current.flink_sql(a) for a, _ in pairs), spec=planner.spec_for("windowJoin"),
                        inputs=2)
    rel = Rel(out, lfields + rfields, True, None, left.steps + right.steps + [step],
              computed=left.computed | right.computed)
    for cond in extra:
        rel = planner.filter(rel, cond, "the JOIN condition")
    return rel
