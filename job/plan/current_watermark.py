"""``CURRENT_WATERMARK(rowtime)``: each row with the watermark the rows before it made.

Flink's watermark assigner, with one reader, advances the watermark after every row: the
largest event time so far minus the table's delay, so each row sees the watermark of the
rows before it (NULL before the first). The job computes exactly that in an engine
operator right after the scan (``Engine.currentWatermark``: all rows of the table pass
one key in arrival order, the largest event time is kept in state), as a hidden field of
the relation (relation.WATERMARK: never part of ``*``, passed on by projections, dropped
from what the query finally shows). The function (job.sql.flink.functions.other) reads
that field.
"""
from __future__ import annotations

from job.plan.relation import WATERMARK, Field, Rel, keep_fields


def with_current_watermark(planner, rows, fields, table):
    """``rows`` with each row's watermark as a hidden column (job.plan.relation.WATERMARK:
    never part of ``*``), for CURRENT_WATERMARK over this table's rowtime attribute."""
    from pyspark.sql import functions as F

    from job.changelog.specs import CurrentWatermark
    from job.options import parse_duration_ms
    from job.plan.engine import call

    rowtime = next(f for f in fields if f.name.lower() == table.watermark.column.lower())
    col = planner.fresh()
    one = planner.fresh()
    keyed = rows.withColumn(one, F.lit(0))
    spec = CurrentWatermark(keys=(one,), rowtime=rowtime.col, delay_ms=parse_duration_ms(table.watermark.delay) or 0,
                            column=col, local=rowtime.type.name == "TIMESTAMP")
    out = call(planner, spec, keyed).drop(one)
    return out, Field(WATERMARK, rowtime.qualifier, col, rowtime.type.nullable_as(True))


def finish_query(planner, rel: Rel, query) -> Rel:
    """The INSERT's query planned: refused when it also has event-time operators (after
    the engine's operator Spark no longer sees the table's watermark they need), and
    without the hidden field."""
    from sqlglot import exp

    if not planner.uses_current_watermark():
        return rel
    if planner.event_time_span_ms is not None:
        call = next((c for c in query.tree.find_all(exp.Anonymous) if c.name.upper() == "CURRENT_WATERMARK"),
                    query.tree)
        raise planner.error(call, "CURRENT_WATERMARK in a query with event-time operators (windows, interval, "
                                  "temporal and window joins, OVER, deduplication on event time) is not supported yet")
    if not any(f.name == WATERMARK for f in rel.fields):
        return rel
    return keep_fields(rel, [f for f in rel.fields if f.name != WATERMARK])
