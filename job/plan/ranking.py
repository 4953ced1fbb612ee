"""Top-N, deduplication, and ORDER BY … LIMIT, as Flink plans them.

Flink's Top-N is a pattern, not a clause: a subquery computes ``ROW_NUMBER()`` ``OVER
(PARTITION BY … ORDER BY …)`` and the outer query
keeps a range of ranks (``WHERE rn <= N``). The rows in the range change as rows arrive
and leave; the result is an updating table (+I/-U/+U/-D). With ``ROW_NUMBER``, ``rn = 1``
and a time attribute as the only order key it is Flink's deduplication: keeping the
first row per key by processing time emits each key's row once (an append-only result),
any other order may replace it. ``RANK()`` and ``DENSE_RANK()`` in that place are refused,
as Flink 2.3 refuses them on a stream.
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
    if function != "row_number":
        # Flink 2.3 plans RANK() and DENSE_RANK() filters as a Rank node and then fails
        # to translate it for a stream: refused here too, before anything runs.
        raise planner.error(window.this, f"{window.this.name.upper()}() on streaming table is not supported "
                                         "currently (Flink runs only ROW_NUMBER() as Top-N)", hint=TOPN_HINT)
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
    from job.plan.ordering import nulls_first
    sort = [SortKey(column=f.col, descending=d, nulls_first=nulls_first(o))
            for f, d, o in zip(order_fields, descending, order.expressions)]
    from job.plan import window_rank

    windowed = window_rank.plan_window_rank(planner, rel, partition, pcols, visible, sort,
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
    (rows m+1 … m+n by ROW_NUMBER in that order, without the rank column); without an
    ORDER BY, rows m+1 … m+n in arrival order. An ORDER BY without LIMIT sorts the
    statement's own stream (job.plan.temporal_sort) and is dropped elsewhere, as Flink's
    planner drops it."""
    from job.plan import temporal_sort

    order = node.args.get("order")
    limit = node.args.get("limit")
    offset = node.args.get("offset")
    if order is not None and limit is None and offset is None:
        if not temporal_sort.sorts_stream(planner, node):
            return rel
        rel = planner.settle(rel)
        return temporal_sort.plan_temporal_sort(planner, rel, order,
                                                [_order_field(planner, rel, o) for o in order.expressions])
    if limit is None:
        raise planner.error(offset, "OFFSET needs ORDER BY … LIMIT in a streaming query")
    n = _int_literal(limit.expression if isinstance(limit, exp.Limit) else limit.args.get("count"))
    if n is None:
        raise planner.error(limit, "LIMIT needs a whole number")
    skip = 0
    if offset is not None:
        skip = _int_literal(offset.expression if isinstance(offset, exp.Offset) else offset)
        if skip is None:
            raise planner.error(offset, "OFFSET needs a whole number")
    if order is None:
        _refuse_limit_in_file_reader(planner, rel, node, limit, skip + n)
    return _sorted_limit(planner, rel, order, skip + 1, skip + n)


def _refuse_limit_in_file_reader(planner, rel: Rel, node: exp.Select, limit, n: int) -> None:
    """Flink pushes a LIMIT without ORDER BY that reads one filesystem table directly (only
    a select list between them) into the file reader, which stops after the first n rows
    its format decodes. For a changelog format those are the file's first n changes (an
    update is two), not the table's first n rows: an answer the job does not reproduce."""
    from_ = node.args.get("from_") or node.args.get("from")
    table = from_.this if from_ is not None else None
    if rel.append_only or not isinstance(table, exp.Table) or any(
            node.args.get(k) for k in ("joins", "where", "group", "having", "distinct", "laterals")):
        return
    if any(table.name.lower() in ctes for ctes in planner._ctes) or planner.catalog.view(table.name) is not None:
        return
    bound = planner.catalog.bound_table(table.name)
    if bound is None or bound.connector.identifier != "filesystem":
        return
    raise planner.error(limit, f"LIMIT {n} without ORDER BY directly over the filesystem table {table.name}, read as a "
                               f"changelog ('format' = '{bound.options.get('format')}'): Flink pushes this limit into "
                               f"the file reader, which keeps the file's first {n} changes rather than the table's "
                               "first rows; the job does not reproduce that",
                        hint="filter the rows first (WHERE …), which Flink does not push the limit past, or give the "
                             "order: ORDER BY … LIMIT N")


HIDDEN_ORDER_KEY = "__order_key"


def with_hidden_order_keys(planner, node: exp.Select) -> tuple[exp.Select, int]:
    """For ``ORDER BY … LIMIT``, or a sorted stream, on something the select list does not
    show (``SELECT id … ORDER BY score DESC LIMIT 3``): a copy of ``node`` that also selects those keys,
    last, with the ORDER BY naming them; and how many it added (dropped again after the
    Top-N by :func:`without_hidden_order_keys`)."""
    from job.plan.relation import output_name

    from job.plan.temporal_sort import sorts_stream

    order = node.args.get("order")
    if order is None or (node.args.get("limit") is None and not sorts_stream(planner, node)):
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
    statement_query = planner.is_statement_query(node)
    node = node.copy()
    if statement_query:
        planner.planned_as_statement_query(node)
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


def _sorted_limit(planner, rel: Rel, order: Optional[exp.Order], lower: int, upper: int) -> Rel:
    from pyspark.sql import functions as F

    from job.plan.event_time import without_event_time
    from job.plan.ordering import sort_keys, written

    rel = planner.settle(rel)
    df = without_event_time(planner.signed(rel))
    ordered = order.expressions if order is not None else []
    fields = [_order_field(planner, rel, o) for o in ordered]
    sort = sort_keys(planner, ordered, fields)
    if not sort:
        # LIMIT alone: every row has the same (constant) sort key, so rows rank in arrival
        # order, as in Flink's Top-N without a sort key (its streaming LIMIT).
        df = df.withColumn(ARRIVAL_ORDER, F.lit(0))
        sort = [SortKey(column=ARRIVAL_ORDER, descending=False, nulls_first=True)]
    newest_first = bool(fields) and fields[-1].time == "proctime" and bool(ordered[-1].args.get("desc"))
    ranked = engine.rank(planner, df, [], [f.col for f in rel.fields], sort, "row_number", lower, upper,
                         rel.append_only, False, newest_first)
    what = f"rows {lower}..{upper}" if lower > 1 else f"the first {upper} rows"
    how = f"ordered by {written(planner, ordered)}" if ordered else "in arrival order"
    step = nodes.engine("rank", "rank", f"keep {what} {how}",
                        "engine: rank; stateful; retracts a row when it leaves the range",
                        spec=planner.spec_for("rank"))
    out = ranked.select(*[F.col(f"`{f.col}`") for f in rel.fields], F.col(SIGN))
    return Rel(out, list(rel.fields), False, rel.unique_key, rel.steps + [step], computed=rel.computed)


ARRIVAL_ORDER = "__arrival_order"
