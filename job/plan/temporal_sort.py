"""``ORDER BY`` without ``LIMIT``: sorting a stream, as Flink plans it.

Flink's planner keeps such an ORDER BY only on the statement's own query: in a subquery,
a common table expression or a view, Calcite drops it (it cannot order anything a later
operator reads), so it is dropped here too (:func:`sorts_stream`). On the statement's
query it is Flink's temporal sort, and the first key must be a time attribute, ascending:

* an event-time attribute: rows wait until the watermark passes their time, then come
  out in time order, rows of one time by the other keys (the engine's ``temporalSort``,
  engine/…/TemporalSortOp.java); a row at or before the last time emitted is late and
  dropped, as in Flink;
* a processing-time attribute alone: the rows' arrival order already is that order, and
  Flink passes them through unchanged.

Anything else Flink refuses in a streaming query, and so does the job.
"""
from __future__ import annotations

from sqlglot import exp

from job.changelog.specs import TemporalSort
from job.plan import engine, nodes
from job.plan.event_time import time_attributes_kept, waits, without_event_time
from job.plan.ordering import sort_keys, written
from job.plan.relation import Rel


def sorts_stream(planner, node: exp.Select) -> bool:
    """Does ``node`` sort the stream it returns (an ORDER BY without LIMIT or OFFSET on the
    statement's own query), rather than carry an ORDER BY Flink's planner drops?"""
    return node.args.get("order") is not None and node.args.get("limit") is None \
        and node.args.get("offset") is None and planner.is_statement_query(node)


def plan_temporal_sort(planner, rel: Rel, order: exp.Order, fields: list) -> Rel:
    """``rel`` sorted by ``order`` (its keys resolved to ``fields`` of ``rel``)."""
    from pyspark.sql import functions as F

    first, time_field = order.expressions[0], fields[0]
    if time_field.time not in ("rowtime", "proctime") or first.args.get("desc"):
        raise planner.error(order, "Sort on a non-time-attribute field is not supported: a streaming query can only "
                                   "be sorted by a time attribute ascending, or ranked with ORDER BY … LIMIT N",
                            hint="add LIMIT N to keep the first N rows in that order (Flink's Top-N)")
    if not rel.append_only:
        raise planner.error(order, "a sort by time needs an append-only input, but this one has updates and deletes "
                                   "(Flink: StreamPhysicalTemporalSort doesn't support consuming update and delete "
                                   "changes)")
    text = written(planner, order.expressions)
    if time_field.time == "proctime":
        if len(fields) > 1:
            raise planner.error(order, f"ORDER BY the processing-time attribute {written(planner, [first])} and then "
                                       "other keys "
                                       "(Flink's processing-time sort) is not supported yet",
                                hint="order by the processing time alone: rows already arrive in that order")
        step = nodes.spark("sort", f"order by {text}", "rows pass in arrival order, which is processing-time order")
        return Rel(rel.df, list(rel.fields), True, rel.unique_key, rel.steps + [step], computed=rel.computed)
    sort = sort_keys(planner, order.expressions[1:], fields[1:])
    cols = rel.cols()
    df = without_event_time(rel.df).select(*[F.col(f"`{c}`") for c in cols],
                                           F.expr(f"unix_millis(`{time_field.col}`)").alias("__t"))
    spec = TemporalSort(row=tuple(cols), time="__t", sort=tuple(sort))
    sorted_ = engine.call(planner, spec, df)
    waits(planner, 0)  # the end of the input must pass the last row's time
    step = nodes.engine("temporal_sort", "temporalSort", f"sort by {text}",
                        "engine: temporalSort, one group; a row is emitted once the watermark passes its time, "
                        "late rows dropped", spec=planner.spec_for("temporalSort"))
    out = time_attributes_kept(sorted_, rel.df, rel.fields)
    return Rel(out, list(rel.fields), True, rel.unique_key, rel.steps + [step], computed=rel.computed)
