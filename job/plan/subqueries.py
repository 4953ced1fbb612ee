"""Subqueries in WHERE become joins, as Flink rewrites them (its "semi" and "anti" joins):

* ``x IN (SELECT k FROM …)`` and ``EXISTS (SELECT … WHERE inner.k = outer.x …)`` keep the
  rows that have a match: a join with the subquery's DISTINCT keys;
* ``NOT EXISTS (…)`` keeps the rows without one: a LEFT join with the distinct keys and a
  marker column, then ``marker IS NULL``; ``x NOT IN (SELECT k …)`` is the same when
  neither x nor k can be NULL.
* ``x NOT IN (SELECT k …)`` where x or k can be NULL is SQL's three-valued predicate, as
  Flink's null-aware anti join gives it: TRUE when the subquery is empty (even for a NULL
  x); otherwise the row is kept only when x is not NULL, matches no k, and no k is NULL.
  The anti join above, joined with the subquery's row count and NULL count (a global
  aggregation, LEFT JOIN ON TRUE), so a NULL arriving in the subquery or leaving it
  retracts or restores the rows. For one column and an uncorrelated subquery; a
  correlated or multi-column NOT IN over nullable values is refused by name.

Every join keeps its state and retracts as the subquery's rows come and go, so the
result stays Flink's under updates to either side.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from job.plan.relation import Field, Rel, conjuncts


def _subquery_of(cond: exp.Expression) -> Optional[tuple[str, exp.Expression, list]]:
    """(kind, select, outer values) for a conjunct that is a subquery predicate."""
    negated = False
    node = cond
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Not):
        negated, node = True, node.this
        while isinstance(node, exp.Paren):
            node = node.this
    if isinstance(node, exp.Exists):
        return ("not exists" if negated else "exists"), node.this, []
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        query = node.args["query"]
        query = query.this if isinstance(query, exp.Subquery) else query
        values = list(node.this.expressions) if isinstance(node.this, exp.Tuple) else [node.this]
        return ("not in" if negated else "in"), query, values
    return None


def plan_where(planner, rel: Rel, condition: exp.Expression) -> Rel:
    plain = []
    for cond in conjuncts(condition):
        found = _subquery_of(cond)
        if found is None:
            for sub in cond.find_all(exp.Subquery, exp.Exists, exp.Select):
                raise planner.error(sub, "a subquery here is not supported yet",
                                    hint="IN / EXISTS subqueries are supported as conditions of WHERE joined by AND; "
                                         "write other uses as a JOIN")
            plain.append(cond)
            continue
        kind, select, values = found
        rel = semi_join(planner, rel, cond, kind, select, values)
    for cond in plain:
        rel = planner.filter(rel, cond, "WHERE")
    return rel


def semi_join(planner, outer: Rel, cond: exp.Expression, kind: str, select: exp.Expression, values: list) -> Rel:
    from job.plan import joins

    uncorrelated = True
    if not isinstance(select, exp.Select) or select.args.get("group") is not None \
            or select.args.get("having") is not None or select.args.get("limit") is not None:
        inner = planner.query(select)
        inner_keys = [exp.column(f.name, f.qualifier) for f in inner.fields]
        correlated: list[tuple[exp.Expression, exp.Expression]] = []
        if kind in ("in", "not in"):
            if len(inner.fields) != len(values):
                raise planner.error(cond, f"IN compares {len(values)} value(s) with a subquery of "
                                          f"{len(inner.fields)} column(s)")
            correlated = list(zip(values, inner_keys))
        elif any(True for _ in select.find_all(exp.Column) if not _resolves(planner, inner, _)):
            raise planner.error(cond, "a correlated subquery with GROUP BY, HAVING or LIMIT is not supported yet")
    else:
        inner, correlated = _correlated(planner, outer, select, cond)
        uncorrelated = not correlated
        if kind in ("in", "not in"):
            items = planner.expand(inner, select.expressions)
            if len(items) != len(values):
                raise planner.error(cond, f"IN compares {len(values)} value(s) with a subquery of {len(items)} "
                                          "column(s)")
            correlated += list(zip(values, [expression if expression is not None else
                                             exp.column(field.name, field.qualifier)
                                             for _name, expression, field in items]))
    if not correlated:
        raise planner.error(cond, "an EXISTS subquery needs an equality with the outer query (inner.k = outer.x)",
                            hint="an uncorrelated EXISTS is true or false for every row at once: not supported yet")
    if kind == "not in":
        nullable = [v for v, k in correlated
                    if planner.expr(outer, v, "NOT IN").type.nullable or planner.expr(inner, k, "NOT IN").type.nullable]
        if nullable and (len(correlated) != 1 or not uncorrelated):
            raise planner.error(cond, "NOT IN (subquery) over values that can be NULL is supported for one column "
                                      "and an uncorrelated subquery; "
                                      + ("this one is correlated" if not uncorrelated else
                                         "this one compares several columns") + ", which is not supported yet",
                                hint="NULLs make NOT IN unknown; write NOT EXISTS (… WHERE inner.k = outer.x), "
                                     "or declare the columns NOT NULL")
        if nullable:
            return null_aware_anti_join(planner, outer, cond, inner, correlated[0])
    # The subquery's distinct keys (and a marker for the anti joins), under a fresh alias.
    alias = planner.fresh("__sq")
    items = [exp.alias_(k.copy(), f"__k{i}") for i, (_v, k) in enumerate(correlated)]
    if kind in ("not exists", "not in"):
        items.append(exp.alias_(exp.Boolean(this=True), "__matched"))
    keys = planner.project(inner, items, where="the subquery")
    keys = planner.distinct(keys)
    keys = planner.requalify(keys, alias)
    on = None
    for i, (value, _k) in enumerate(correlated):
        eq = exp.EQ(this=value.copy(), expression=exp.column(f"__k{i}", alias))
        on = eq if on is None else exp.and_(on, eq)
    outer_fields = list(outer.fields)
    if kind in ("exists", "in"):
        joined = joins.regular_join(planner, outer, keys, exp.Join(this=exp.to_identifier(alias), on=on))
        joined = planner.settle(joined)
    else:
        joined = joins.regular_join(planner, outer, keys, exp.Join(this=exp.to_identifier(alias), on=on,
                                                                    side="LEFT"))
        joined = planner.filter(joined, exp.Is(this=exp.column("__matched", alias), expression=exp.Null()),
                                "the NOT EXISTS")
    joined.fields = outer_fields
    joined.steps = before_last(joined, f"{kind} subquery as a {'semi' if kind in ('exists', 'in') else 'anti'} "
                                        f"join: {planner.current.flink_sql(cond)}")
    return joined


def null_aware_anti_join(planner, outer: Rel, cond: exp.Expression, inner: Rel,
                         pair: tuple[exp.Expression, exp.Expression]) -> Rel:
    """``x NOT IN (SELECT k …)`` with NULLs: the rows whose x matches no k (a LEFT join with
    the distinct keys), joined with the subquery's row and NULL counts; kept when the
    subquery is empty, or when x is not NULL, unmatched, and no k is NULL."""
    from job.plan import aggregates, joins

    value, key = pair
    inner = planner.settle(inner)
    alias, stats_alias = planner.fresh("__sq"), planner.fresh("__sn")
    keys = planner.project(inner, [exp.alias_(key.copy(), "__k0"), exp.alias_(exp.Boolean(this=True), "__matched")],
                           where="the subquery")
    keys = planner.requalify(planner.distinct(keys), alias)
    values = planner.project(inner, [exp.alias_(key.copy(), "__k")], where="the subquery")
    count_nulls = exp.Anonymous(this="COUNT", expressions=[exp.Case(
        ifs=[exp.If(this=exp.Is(this=exp.column("__k"), expression=exp.Null()), true=exp.Literal.number(1))])])
    counting = exp.Select(expressions=[exp.alias_(exp.Anonymous(this="COUNT", expressions=[exp.Star()]), "__n"),
                                       exp.alias_(count_nulls, "__nulls")])
    stats = planner.requalify(aggregates.group_aggregate(planner, values, counting), stats_alias)
    outer_fields = list(outer.fields)
    joined = joins.regular_join(planner, outer, keys, exp.Join(
        this=exp.to_identifier(alias), side="LEFT", on=exp.EQ(this=value.copy(), expression=exp.column("__k0", alias))))
    joined = planner.settle(joined)
    joined = joins.regular_join(planner, joined, stats, exp.Join(this=exp.to_identifier(stats_alias), side="LEFT",
                                                                 on=exp.Boolean(this=True)))

    def zero(name: str) -> exp.Expression:
        return exp.EQ(this=exp.Anonymous(this="COALESCE", expressions=[exp.column(name, stats_alias), exp.Literal.number(0)]),
                      expression=exp.Literal.number(0))

    keep = exp.or_(zero("__n"), exp.and_(
        exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null())),
        exp.Is(this=exp.column("__matched", alias), expression=exp.Null()),
        zero("__nulls")))
    joined = planner.filter(joined, keep, "the NOT IN")
    joined.fields = outer_fields
    joined.steps = before_last(joined, "not in subquery as a null-aware anti join (the subquery's row and NULL "
                                       f"counts joined in): {planner.current.flink_sql(cond)}")
    return joined


def _resolves(planner, rel: Rel, column: exp.Column) -> bool:
    return rel.refers_only_to(column)


def _correlated(planner, outer: Rel, select: exp.Select, cond) -> tuple[Rel, list]:
    """The subquery's FROM with its own conditions applied, and its correlation
    equalities (outer value, inner value)."""
    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None:
        raise planner.error(select, "a subquery needs a FROM clause")
    inner = planner.from_clause(from_.this, select.args.get("joins") or [])
    correlated, local = [], []
    where = select.args.get("where")
    for c in conjuncts(where.this if where is not None else None):
        if inner.refers_only_to(c):
            local.append(c)
            continue
        if isinstance(c, exp.EQ):
            a, b = c.this, c.expression
            if inner.refers_only_to(a) and outer.refers_only_to(b) and not inner.refers_only_to(b):
                correlated.append((b, a))
                continue
            if inner.refers_only_to(b) and outer.refers_only_to(a) and not inner.refers_only_to(a):
                correlated.append((a, b))
                continue
        raise planner.error(c, "in a correlated subquery only equalities between the inner and the outer query "
                               "are supported yet")
    for c in local:
        inner = planner.filter(inner, c, "the subquery's WHERE")
    return inner, correlated


# --------------------------------------------------------------------------- scalar subqueries

def lift_scalar_subqueries(planner, node: exp.Select) -> tuple[exp.Select, list[tuple[str, exp.Expression]]]:
    """``node`` with each uncorrelated scalar subquery of its select list and WHERE replaced
    by a column ``__ssN.__v`` (a copy: the parsed query is shared), and the subqueries
    under their aliases, for :func:`join_scalar` to join in."""
    from job.plan.aggregate_calls import is_aggregating

    def scalars(root: exp.Select) -> list[exp.Subquery]:
        parts = list(root.expressions) + ([root.args["where"]] if root.args.get("where") else [])
        return [sq for part in parts for sq in part.find_all(exp.Subquery)
                if not isinstance(sq.parent, (exp.In, exp.Exists)) and sq.find_ancestor(exp.Select) is root]

    if not scalars(node):
        return node, []
    node = node.copy()
    lifted = []
    group = node.args.get("group")
    for sq in scalars(node):
        in_select_list = sq.find_ancestor(exp.Where) is None
        if is_aggregating(node) and in_select_list and (group is None or group.args.get("grouping_sets")
                                                        or group.args.get("rollup") or group.args.get("cube")):
            raise planner.error(sq, "a scalar subquery in the select list of an aggregation without GROUP BY (or "
                                    "with grouping sets) is not supported yet",
                                hint="aggregate in a view or subquery, then use the scalar subquery outside it")
        alias = planner.fresh("__ss")
        aggregated = is_aggregating(node) and in_select_list
        lifted.append((alias, sq.this, [g.copy() for g in group.expressions] if aggregated else None))
        sq.replace(exp.column("__v", alias))
        if aggregated:
            # Joined in before the aggregation, the subquery's value is one per group (it
            # is uncorrelated, or correlated on the group's keys), so grouping by it too
            # keeps the groups and lets the select list name it; Flink joins it after
            # the aggregation, which gives the same rows.
            group.append("expressions", exp.column("__v", alias))
    return node, lifted


def join_scalar(planner, outer: Rel, alias: str, select: exp.Expression, group_keys: Optional[list] = None) -> Rel:
    """``outer`` LEFT JOIN the one-row result of ``select`` ON TRUE, as Flink runs a scalar
    subquery: every outer row sees the subquery's current value (NULL while it has none)
    and is retracted and re-emitted when the value changes. ``group_keys``: the GROUP BY
    of the aggregation whose select list holds the subquery (it may correlate on those
    only)."""
    from job.errors import PipelineError
    from job.plan import joins
    from job.plan.aggregate_calls import is_aggregating

    if not (isinstance(select, exp.Select) and is_aggregating(select) and select.args.get("group") is None):
        raise planner.error(select, "a scalar subquery is supported when it is a global aggregation (one row, "
                                    "e.g. SELECT MAX(x) FROM t); others are not supported yet",
                            hint="Flink fails at run time when a scalar subquery returns more than one row")
    correlated = _correlates(planner, select)
    if correlated:
        return _join_correlated_scalar(planner, outer, alias, select, group_keys)
    inner = planner.query(select)
    if len(inner.fields) != 1:
        raise planner.error(select, f"a scalar subquery returns one column, this one {len(inner.fields)}")
    value = inner.fields[0]
    values = planner.project(inner, [exp.alias_(exp.column(value.name, value.qualifier), "__v")],
                             where="the scalar subquery")
    values = planner.requalify(values, alias)
    shown = list(outer.fields)
    joined = joins.regular_join(planner, outer, values, exp.Join(this=exp.to_identifier(alias), side="LEFT",
                                                                 on=exp.Boolean(this=True)))
    joined.fields = shown + [f for f in joined.fields if f.qualifier == alias and f.name == "__v"]
    joined.steps = before_last(joined, f"scalar subquery ({planner.current.flink_sql(select)}) as a LEFT JOIN ON TRUE")
    return joined


def _correlates(planner, select: exp.Select) -> bool:
    """Whether ``select`` names a column of an enclosing query (its own FROM does not
    resolve it): planned on its own, it fails to resolve that column."""
    from job.errors import PipelineError

    try:
        planner.query(select)
    except PipelineError:
        return True
    return False


def _join_correlated_scalar(planner, outer: Rel, alias: str, select: exp.Select,
                            group_keys: Optional[list]) -> Rel:
    """``(SELECT agg(…) FROM inner WHERE inner.k = outer.x AND …)`` as Flink decorrelates
    it: the subquery grouped by its correlated keys (one row per key), LEFT JOINed to the
    outer rows on those keys. An outer row whose key has no group (or is NULL) sees the
    aggregation of no rows: NULL, or for COUNT 0. Both sides are changelog operators, so
    a change of the inner rows retracts and re-emits the outer rows of its key."""
    from job.plan import aggregates, joins

    inner, correlated = _correlated(planner, outer, select, select)
    if not correlated:
        raise planner.error(select, "a correlated scalar subquery needs an equality between the inner and the outer "
                                    "query (inner.k = outer.x)")
    if len(select.expressions) != 1:
        raise planner.error(select, f"a scalar subquery returns one column, this one {len(select.expressions)}")
    if group_keys is not None:
        # Flink 2.3 fails to plan this (its decorrelation compares the group's key with a
        # column of another type: "implicit type conversion … is not supported on join's
        # condition"), so it is refused rather than given an answer Flink has none for.
        raise planner.error(select, "a correlated scalar subquery in the select list of an aggregation is not "
                                    "supported (Flink 2.3 cannot plan it either)",
                            hint="aggregate in a view or subquery, then use the correlated subquery outside it")
    item = select.expressions[0]
    item = item.this if isinstance(item, exp.Alias) else item
    keys = [exp.alias_(k.copy(), f"__k{i}") for i, (_v, k) in enumerate(correlated)]
    grouped = exp.Select(expressions=keys + [exp.alias_(item.copy(), "__v")],
                         group=exp.Group(expressions=[k.copy() for _v, k in correlated]))
    empty = _value_of_no_rows(planner, item)
    values = planner.requalify(aggregates.group_aggregate(planner, inner, grouped), alias)
    on = None
    for i, (value, _k) in enumerate(correlated):
        eq = exp.EQ(this=value.copy(), expression=exp.column(f"__k{i}", alias))
        on = eq if on is None else exp.and_(on, eq)
    shown = list(outer.fields)
    joined = joins.regular_join(planner, outer, values, exp.Join(this=exp.to_identifier(alias), side="LEFT", on=on))
    joined = planner.settle(joined)
    value_field = next(f for f in joined.fields if f.qualifier == alias and f.name == "__v")
    if empty is not None:  # COUNT of no rows is 0, not the LEFT JOIN's NULL
        from pyspark.sql import functions as F

        key_field = next(f for f in joined.fields if f.qualifier == alias and f.name == "__k0")
        joined.df = joined.df.withColumn(value_field.col, F.when(F.col(key_field.col).isNull(), F.lit(empty))
                                         .otherwise(F.col(value_field.col)))
    joined.fields = shown + [value_field]
    joined.steps = before_last(joined, f"correlated scalar subquery ({planner.current.flink_sql(select)}) as a "
                                       "LEFT JOIN with its aggregation grouped by the correlated keys")
    return joined


def _value_of_no_rows(planner, item: exp.Expression):
    """What the subquery's aggregation gives over no rows when that is not NULL: COUNT's
    0; None when it is NULL (every other aggregate)."""
    from job.plan.aggregate_calls import aggregate_calls

    calls = list(aggregate_calls(item))
    if not calls:
        raise planner.error(item, "a correlated scalar subquery that does not aggregate (one row per outer row, "
                                  "SELECT p.x FROM p WHERE p.k = o.k) is not supported yet",
                            hint="aggregate it (MAX(p.x)) or write a LEFT JOIN")
    counts = [c for c in calls if isinstance(c, exp.Anonymous) and c.name.upper() == "COUNT"]
    if not counts:
        return None
    if item is not counts[0]:
        raise planner.error(item, "a correlated scalar subquery whose value over no rows is an expression of COUNT "
                                  "is not supported yet", hint="select COUNT(…) alone and compute outside")
    return 0


def before_last(rel: Rel, text: str) -> list:
    """``rel``'s plan with a step naming the subquery just before its last step (over the
    subquery's plan, or over the join it became)."""
    from job.plan.nodes import spark, with_mode

    *earlier, last = rel.steps
    return earlier + [with_mode(spark("subquery", text), earlier[-1].mode if earlier else rel.mode), last]
