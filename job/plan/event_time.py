"""Helpers the event-time operators share."""
from __future__ import annotations

BARRIER = "__barrier"


def barrier(df):
    """``df`` with a column Spark cannot compute ahead of time, so that no filter above
    this point is pushed below it.

    Spark pushes a filter that does not read the event-time column below the watermark,
    into the source and the end-of-input marker stream (job.plan.end_of_input) unioned
    with it; a filter the marker row does not pass (a join's inferred ``key IS NOT NULL``)
    would drop it, and the watermark would never pass the last rows. Callers drop the
    column once their operator has run."""
    from pyspark.sql import functions as F

    return df.select("*", (F.spark_partition_id() < 0).alias(BARRIER))


def waits(planner, span_ms: int, delays_output_ms: int = 0) -> None:
    """An operator waits ``span_ms`` of event time (window size, interval bound) before
    it emits; the end of a bounded input must advance time past that. Spark passes a
    watermark down a chain of operators held back by each operator's delay (an interval
    join's output may be that much older than its input's watermark), so an operator
    planned after others waits for their delays too."""
    lag = getattr(planner, "_event_time_lag_ms", 0)
    planner.waits_for(lag + span_ms)
    planner._event_time_lag_ms = lag + delays_output_ms


def without_event_time(df):
    """``df`` with no column marked as its event time.

    Spark's event-time stateful operator drops input rows older than the watermark by
    the column its watermark was declared on, and refuses an input with two such
    columns (both sides of a join). The engine's operators apply Flink's own rules for
    late rows instead, on the time they are given as a BIGINT column. (An alias with
    metadata of its own replaces the column's watermark metadata.)"""
    from pyspark.sql import functions as F

    return df.select(*[F.col(f"`{c}`").alias(c, metadata={"streamsql": "plain"}) for c in df.columns])


def time_attributes_kept(df, before, fields) -> object:
    """``df`` (an engine operator's output) with its event-time attributes marked again
    as they were in ``before`` (its input, with watermark marks), so that a window or
    join after the operator can still close on them: Flink keeps them time attributes.
    The operator emits a row once the watermark has passed it, so its time is never
    behind the watermark Spark checks at the next operator."""
    from pyspark.sql import functions as F

    marks = {}
    for source in (before if isinstance(before, (list, tuple)) else [before]):
        for f in fields:
            if f.time == "rowtime" and f.col in source.columns \
                    and "spark.watermarkDelayMs" in source.schema[f.col].metadata:
                marks[f.col] = source.schema[f.col].metadata
    return df.select(*[F.col(f"`{c}`").alias(c, metadata=marks[c]) if c in marks else F.col(f"`{c}`")
                       for c in df.columns])
