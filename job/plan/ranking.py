"""Top-N, deduplication, and ORDER BY … LIMIT, as Flink plans them.

Flink's Top-N is a pattern, not a clause: a subquery computes ``ROW_NUMBER()`` (or
``RANK()``, ``DENSE_RANK()``) ``OVER (PARTITION BY … ORDER BY …)`` and the outer query
keeps a range of ranks (``WHERE rn <= N``). The rows in the range change as rows arrive
and leave; the result is an updating table (+I/-U/+U/-D). With ``ROW_NUMBER``, ``rn = 1``
and a time attribute as the only order key it is Flink's deduplication: keeping the
first row per key by processing time emits each key's row once (an append-only result),
any other order may replace it.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from job.changelog.columns import RANK
from job.changelog.specs import SortKey
from job.plan import engine, nodes
from job.plan.relation import NET, SIGN, Field, Rel, conjuncts, keep_fields
from job.sql.types import BIGINT_TYPE

RANKING = {"ROW_NUMBER": "row_number", "RANK": "rank", "DENSE_RANK": "dense_rank"}
TOPN_HINT = ("Flink's Top-N: SELECT … FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY k ORDER BY c DESC) AS rn "
             "FROM t) WHERE rn <= N")


def _rank_item(select: exp.Select):
    found = []
    for position, item in enumerate(select.expressions):
        inner = item.this if isinstance(item, exp.Alias) else item
        if isinstance(inner, exp.Window) and isinstance(inner.this, exp.Anonymous) \
                and inner.this.name.upper() in RANKING:
            found.append((position, item, inner))
    return found


def _int_literal(node) -> Optional[int]:
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    return None


def rank_range(node: Optional[exp.Expression], is_rank) -> tuple[Optional[int], Optional[int], list]:
    """(lower, upper, other conditions) of a WHERE over the rank column."""
    lower, upper, rest = 1, None, []
    flip = {exp.LT: exp.GT, exp.LTE: exp.GTE, exp.GT: exp.LT, exp.GTE: exp.LTE, exp.EQ: exp.EQ}
    for cond in conjuncts(node):
        op, a, b = type(cond), getattr(cond, "this", None), getattr(cond, "expression", None)
        if isinstance(cond, exp.Between) and is_rank(cond.this):
            lo, hi = _int_literal(cond.args["low"]), _int_literal(cond.args["high"])
            if lo is not None and hi is not None:
                lower, upper = max(lower, lo), hi if upper is None else min(upper, hi)
                continue
        if op in flip and b is not None and is_rank(b) and _int_literal(a) is not None:
            op, a, b = flip[op], b, a
        if op in flip and a is not None and is_rank(a) and _int_literal(b) is not None:
            n = _int_literal(b)
            if op is exp.LTE:
                upper = n if upper is None else min(upper, n)
            elif op is exp.LT:
                upper = n - 1 if upper is None else min(upper, n - 1)
            elif op is exp.EQ:
                lower, upper = max(lower, n), n if upper is None else min(upper, n)
            elif op is exp.GTE:
                lower = max(lower, n)
            else:
                lower = max(lower, n + 1)
            continue
        rest.append(cond)
    return lower, upper, rest


def plan_topn_source(planner, node: exp.Select):
    """For ``SELECT … FROM (SELECT …, ROW_NUMBER() OVER (…) AS rn …) [alias] WHERE rn <= N``:
    (the Top-N relation, the outer WHERE's other conditions); None for other queries."""
    from_ = node.args.get("from_") or node.args.get("from")
    if from_ is None or node.args.get("joins") or not isinstance(from_.this, exp.Subquery):
        return None
    subquery = from_.this
    inner = subquery.this
    if not isinstance(inner, exp.Select):
        return None
    found = _rank_item(inner)
    if not found:
        return None
    if len(found) > 1:
        raise planner.error(found[1][2], "a Top-N query ranks by one ranking function", hint=TOPN_HINT)
    position, item, window = found[0]
    if not isinstance(item, exp.Alias):
        raise planner.error(window, "name the rank column (… AS rn) and keep a range of it in the outer WHERE",
                            hint=TOPN_HINT)
    alias = item.alias
    qualifier = subquery.alias or None

    def is_rank(n) -> bool:
        return isinstance(n, exp.Column) and n.name.lower() == alias.lower() \
            and (not n.table or (qualifier or "").lower() == n.table.lower())

    where = node.args.get("where")
    lower, upper, rest = rank_range(where.this if where is not None else None, is_rank)
    if upper is None:
        raise planner.error(window, f"{window.this.name.upper()}() OVER (…) needs a range of ranks in the outer "
                                    f"WHERE (e.g. {alias} <= 10): Flink runs ranking only as Top-N", hint=TOPN_HINT)
    shows_rank = any(is_rank(c) for part in [*node.expressions, *rest] for c in part.find_all(exp.Column)) or \
        any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
            for e in node.expressions)
    rel = top_n(planner, inner, position, window, alias, lower, upper, shows_rank)
    return planner.requalify(rel, qualifier), rest


def top_n(planner, inner: exp.Select, position: int, window: exp.Window, alias: str, lower: int, upper: int,
          shows_rank: bool) -> Rel:
    from pyspark.sql import functions as F

    function = RANKING[window.this.name.upper()]
    if window.this.expressions:
        raise planner.error(window.this, f"{window.this.name.upper()}() takes no arguments")
    if window.args.get("spec") is not None:
        raise planner.error(window, "a ranking function takes no window frame (ROWS / RANGE)")
    order = window.args.get("order")
    if order is None or not order.expressions:
        raise planner.error(window, f"{window.this.name.upper()}() OVER (…) needs an ORDER BY", hint=TOPN_HINT)
    partition = list(window.args.get("partition_by") or [])
    # The inner query without its rank column, plus its partition and order keys.
    plain = inner.copy()
    items = [e for i, e in enumerate(plain.expressions) if i != position]
    hidden = [exp.alias_(p.copy(), f"__p{i}") for i, p in enumerate(partition)]
    hidden += [exp.alias_(o.this.copy(), f"__o{i}") for i, o in enumerate(order.expressions)]
    plain.set("expressions", items + hidden)
    rel = planner.settle(planner.select(plain))
    visible = rel.fields[: len(rel.fields) - len(hidden)]
    pcols = [f.col for f in rel.fields[len(visible): len(visible) + len(partition)]]
    order_fields = rel.fields[len(visible) + len(partition):]
    descending = tuple(bool(o.args.get("desc")) for o in order.expressions)
    for o in order.expressions:
        nulls_first = o.args.get("nulls_first")
        default = not o.args.get("desc")  # Flink: NULLs first ascending, last descending
        if nulls_first is not None and bool(nulls_first) != default:
            raise planner.error(o, "NULLS FIRST / NULLS LAST against Flink's default order is not supported yet")
    from job.plan import window_rank

    windowed = window_rank.plan_window_rank(planner, rel, partition, pcols, visible, order_fields, descending,
                                            function, lower, upper, shows_rank, alias, order)
    if windowed is not None:  # ranked by window: Flink's window Top-N (append-only)
        return windowed
    time_order = len(order_fields) == 1 and order_fields[0].time in ("proctime", "rowtime")
    dedup = function == "row_number" and lower == upper == 1 and time_order
    keep_first_by_arrival = dedup and order_fields[0].time == "proctime" and not descending[0]
    if time_order and order_fields[0].time == "proctime" and descending[0] and not dedup:
        pass  # Top-N on the latest rows by processing time: the same as by arrival, newest first
    if order_fields[0].time == "rowtime" and dedup:
        planner.waits_for(0)

    from job.plan.event_time import without_event_time

    # Without watermark marks: the order key and a shown column may both be the event
    # time, and Spark's stateful operator refuses two event-time columns.
    df = without_event_time(planner.signed(rel))
    # Among equal sort keys the earlier row ranks first, except when the order is the
    # processing time descending (the later row is the later time) and in a deduplication
    # that keeps the latest row: Flink's keeps the last of rows with equal event times.
    newest_first = (time_order and order_fields[-1].time == "proctime" and descending[-1]) or \
        (dedup and descending[0])
    sort = [SortKey(column=f.col, descending=d, nulls_first=not d) for f, d in zip(order_fields, descending)]
    ranked = engine.rank(planner, df, pcols, [f.col for f in visible], sort, function, lower, upper,
                         rel.append_only, shows_rank, newest_first)
    rank_col = planner.fresh()
    fields = list(visible)
    selected = [F.col(f"`{f.col}`") for f in visible]
    if shows_rank:
        fields.append(Field(alias, None, rank_col, BIGINT_TYPE.nullable_as(False)))
        selected.append(F.col(RANK).alias(rank_col))
    partition_cols = frozenset(pcols) & frozenset(f.col for f in visible)
    unique = None
    if shows_rank and len(partition_cols) == len(pcols):
        unique = partition_cols | {rank_col}
    elif rel.unique_key is not None and rel.unique_key <= {f.col for f in visible}:
        unique = rel.unique_key
    elif function == "row_number" and upper == 1 and partition:
        # One row per partition (a deduplication): the partition columns the query shows
        # are its key (a versioned view's PRIMARY KEY, for temporal joins).
        by_name = {f.name.lower(): f for f in visible}
        shown = [by_name.get(p.name.lower()) if isinstance(p, exp.Column) else None for p in partition]
        if all(f is not None and f.type == rel.field_of(c).type for f, c in zip(shown, pcols)):
            unique = frozenset(f.col for f in shown)
    what = "deduplicate" if dedup else f"top {lower}..{upper}" if lower > 1 else f"top {upper}"
    step = nodes.engine("deduplicate" if dedup else "rank", "rank",
                        f"{what} by {function}() over ({', '.join(planner.current.flink_sql(p) for p in partition) or 'everything'}) "
                        f"order by {', '.join(planner.current.flink_sql(o) for o in order.expressions)}",
                        "engine: rank; stateful; " + ("emits each key's first row once" if keep_first_by_arrival else
                                                      "retracts a row when it leaves the range"),
                        keys=tuple(planner.current.flink_sql(p) for p in partition), spec=planner.spec_for("rank"))
    out = ranked.select(*selected, F.col(SIGN), *([F.col(NET)] if shows_rank and unique is not None else []))
    return Rel(out, fields, keep_first_by_arrival and rel.append_only, unique, rel.steps + [step],
               computed=rel.computed, net_key=unique if shows_rank and unique is not None else None)


def plan_order_limit(planner, rel: Rel, node: exp.Select) -> Rel:
    """``ORDER BY … LIMIT n [OFFSET m]``: Flink plans it as a Top-N over the whole result
    (rows m+1 … m+n by ROW_NUMBER in that order, without the rank column)."""
    order = node.args.get("order")
    limit = node.args.get("limit")
    offset = node.args.get("offset")
    if order is not None and limit is None:
        first = order.expressions[0]
        field = None
        if isinstance(first.this, exp.Column):
            from job.errors import PipelineError

            try:
                field, _ = planner.translator(rel, "ORDER BY").scope.resolve_column(first.this)
            except PipelineError:  # a column of the input the select list does not show
                field = None
        if field is not None and field.time in ("rowtime", "proctime") and not first.args.get("desc"):
            # Flink runs this as a temporal sort (buffered until the watermark, or the next
            # processing-time millisecond, passes each row); the job has no such operator yet.
            kind = "event-time" if field.time == "rowtime" else "processing-time"
            raise planner.error(order, f"ORDER BY the {kind} attribute {first.this.sql()} (Flink's temporal sort, "
                                       "sorting a stream by time) is not supported yet")
        raise planner.error(order, "Sort on a non-time-attribute field is not supported: a streaming query can only "
                                   "be sorted by a time attribute ascending, or ranked with ORDER BY … LIMIT N",
                            hint="add LIMIT N to keep the first N rows in that order (Flink's Top-N)")
    if limit is None:
        raise planner.error(offset, "OFFSET needs ORDER BY … LIMIT in a streaming query")
    n = _int_literal(limit.expression if isinstance(limit, exp.Limit) else limit.args.get("count"))
    if n is None:
        raise planner.error(limit, "LIMIT needs a whole number")
    if order is None:
        raise planner.error(limit, "LIMIT without ORDER BY is not supported yet",
                            hint="give the order: ORDER BY … LIMIT N (Flink's Top-N)")
    skip = 0
    if offset is not None:
        skip = _int_literal(offset.expression if isinstance(offset, exp.Offset) else offset)
        if skip is None:
            raise planner.error(offset, "OFFSET needs a whole number")
    return _sorted_limit(planner, rel, order, skip + 1, skip + n)


HIDDEN_ORDER_KEY = "__order_key"


def with_hidden_order_keys(planner, node: exp.Select) -> tuple[exp.Select, int]:
    """For ``ORDER BY … LIMIT`` on something the select list does not show (``SELECT id
    … ORDER BY score DESC LIMIT 3``): a copy of ``node`` that also selects those keys,
    last, with the ORDER BY naming them; and how many it added (dropped again after the
    Top-N by :func:`without_hidden_order_keys`)."""
    from job.plan.relation import output_name

    order = node.args.get("order")
    if order is None or node.args.get("limit") is None:
        return node, 0
    items = node.expressions
    has_star = any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                   for e in items)
    shown = {output_name(e, i).lower() for i, e in enumerate(items)}

    def hidden(key) -> bool:
        if _int_literal(key) is not None:
            return False
        if isinstance(key, exp.Column):
            return not has_star and key.name.lower() not in shown
        return True

    if not any(hidden(o.this) for o in order.expressions):
        return node, 0
    if node.args.get("distinct"):
        raise planner.error(order, "SELECT DISTINCT … ORDER BY … LIMIT on something the query does not select is "
                                   "not supported yet", hint="add it to the select list")
    node = node.copy()
    added = []
    for o in node.args["order"].expressions:
        if hidden(o.this):
            name = f"{HIDDEN_ORDER_KEY}{len(added)}"
            added.append(exp.alias_(o.this.copy(), name))
            key = exp.column(name)
            key.meta["as_written"] = planner.current.flink_sql(o.this)  # for --explain
            o.set("this", key)
    node.set("expressions", [*node.expressions, *added])
    return node, len(added)


def without_hidden_order_keys(rel: Rel, hidden: int) -> Rel:
    """``rel`` without the last ``hidden`` fields (see :func:`with_hidden_order_keys`)."""
    return keep_fields(rel, rel.fields[:-hidden]) if hidden else rel


def _order_field(planner, rel: Rel, ordered: exp.Ordered) -> Field:
    """The result column an ORDER BY item names: by position, or by its name or alias."""
    key = ordered.this
    position = _int_literal(key)
    if position is not None:
        if not 1 <= position <= len(rel.fields):
            raise planner.error(key, f"ORDER BY position {position} is not in the select list (1..{len(rel.fields)})")
        return rel.fields[position - 1]
    if isinstance(key, exp.Column) and not isinstance(key.this, exp.Star):
        named = [f for f in rel.fields if f.name.lower() == key.name.lower()]
        if len(named) == 1:
            return named[0]
    raise planner.error(key, "ORDER BY … LIMIT on something the query does not select is not supported yet",
                        hint="add it to the select list, or order by a selected column's name or position")


def _sorted_limit(planner, rel: Rel, order: exp.Order, lower: int, upper: int) -> Rel:
    from pyspark.sql import functions as F

    from job.plan.event_time import without_event_time

    rel = planner.settle(rel)
    fields = [_order_field(planner, rel, o) for o in order.expressions]
    descending = [bool(o.args.get("desc")) for o in order.expressions]
    for o, d in zip(order.expressions, descending):
        nulls_first = o.args.get("nulls_first")
        if nulls_first is not None and bool(nulls_first) != (not d):  # Flink: NULLs first ascending
            raise planner.error(o, "NULLS FIRST / NULLS LAST against Flink's default order is not supported yet")
    sort = [SortKey(column=f.col, descending=d, nulls_first=not d) for f, d in zip(fields, descending)]
    newest_first = fields[-1].time == "proctime" and descending[-1]
    ranked = engine.rank(planner, without_event_time(planner.signed(rel)), [], [f.col for f in rel.fields], sort,
                         "row_number", lower, upper, rel.append_only, False, newest_first)
    what = f"rows {lower}..{upper}" if lower > 1 else f"the first {upper} rows"
    def written(o: exp.Ordered) -> str:
        text = o.this.meta.get("as_written") or planner.current.flink_sql(o.this)
        return text + (" DESC" if o.args.get("desc") else "")

    step = nodes.engine("rank", "rank", f"keep {what} ordered by {', '.join(written(o) for o in order.expressions)}",
                        "engine: rank; stateful; retracts a row when it leaves the range",
                        spec=planner.spec_for("rank"))
    out = ranked.select(*[F.col(f"`{f.col}`") for f in rel.fields], F.col(SIGN))
    return Rel(out, list(rel.fields), False, rel.unique_key, rel.steps + [step], computed=rel.computed)
