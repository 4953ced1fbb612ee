"""Windows on processing time: ``TUMBLE``/``HOP``/``CUMULATE`` over a ``PROCTIME()``
attribute (Nexmark q12), as Flink runs them.

Flink puts each row in the windows of the wall-clock time it is processed at and emits a
window once the clock passes its end: an append-only result, as for event time. A bounded
input ends before the clock passes the windows still open, and Flink drops them (its
processing-time timers do not fire at the end of the input): a short ``--once`` run
emits only the windows that ended while it read.

Here ``PROCTIME()`` is the micro-batch's time (Spark's ``current_timestamp()``), and the
windows close on a watermark that follows it: the processing-time column is the query's
event time with no delay, so a window is emitted by the first batch after the clock has
passed its end (an idle stream holds the last window until the next batch). Spark keeps
one watermark per query, the smallest of its sources': a table's own WATERMARK (on data
whose times may be years old) would hold the windows back for ever. So a query with a
processing-time window is planned again with the tables' watermarks left out
(:class:`PlanAgain`); an event-time operator in it (a window on a rowtime, an interval
join …) is then refused by name, as it could never fire. The ``--once`` end-of-input
markers that close event-time windows are left out too, so open windows are dropped at
the end of the input, as in Flink.
"""
from __future__ import annotations

import dataclasses


class PlanAgain(Exception):
    """The query has a processing-time window: plan it again without the tables' watermarks."""


def watermarked(planner, rel, time_field):
    """``rel`` with its processing-time column ``time_field`` as the query's event time (no
    delay), for Spark's windowed aggregation to close windows on."""
    if planner.table_watermarks:
        raise PlanAgain()
    from job.plan.event_time import without_event_time

    return dataclasses.replace(rel, df=without_event_time(rel.df).withWatermark(time_field.col, "0 seconds"))


def refuse_event_time(planner) -> None:
    """An event-time operator planned in a query without the tables' watermarks."""
    raise planner.error(None, "a query with a window on processing time (PROCTIME()) cannot also have event-time "
                              "operators (windows, joins, OVER or sorts on a rowtime attribute): it is not "
                              "supported yet", hint="compute them in separate INSERT statements")
