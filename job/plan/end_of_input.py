"""The end of a bounded input under ``--once``: event time advances past every window.
The marker stream each watermarked table is read with is built here, with the table's scan;
the run writes the markers (job.run.end_of_input).

Flink's bounded sources end with a watermark of +∞, so every window, interval and timer
still open fires when the input is exhausted. Spark's ``availableNow`` trigger stops
once the data is read, with the watermark where the data left it (max event time minus
the table's delay): the last windows would never be emitted.

So every table with a WATERMARK is read together with a small *marker* stream: JSON
files under ``<query checkpoint>/end-of-input/<table>/`` holding one event time each.
After a ``--once`` run, a query with event-time operators is started once more with a
marker at (largest event time seen + the longest window, interval or gap + the table's
delay): the marker row moves the watermark past every open window and is dropped right
after the watermark, so no operator ever sees it; Spark's no-data batch then fires the
windows. The marker is a file of the checkpoint's own, consumed exactly once, so a
restart never replays it, and the watermark stays at the data's own time plus the
longest window: rows of a later run that are older are late, as they would be in Flink.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

FLAG = "__end_of_input"
DIRECTORY = "end-of-input"


@dataclass
class EndOfInput:
    """What a query needs to close its event-time state at the end of a bounded run."""

    span_ms: int = 0                                 # longest window / gap / interval bound
    tables: dict = field(default_factory=dict)       # marker directory → (rowtime column, delay in ms)


def marker_directory(checkpoint: str, table_name: str) -> str:
    from job.catalog import short_name

    return os.path.join(checkpoint, DIRECTORY, short_name(table_name).lower())


def with_marker(spark, df, table, checkpoint: Optional[str], delay_ms: int, registry: Optional[EndOfInput]):
    """``df`` (an append-only table's rows, before its watermark) with the marker rows of
    ``checkpoint``'s marker directory, and the filter that drops them after the
    watermark. Returns (df with watermark, filtered)."""
    from pyspark.sql import functions as F

    if checkpoint is None:
        return df.withWatermark(table.watermark.column, table.watermark.delay)
    directory = marker_directory(checkpoint, table.name)
    os.makedirs(directory, exist_ok=True)
    rowtime = table.watermark.column
    if registry is not None:
        registry.tables[directory] = (rowtime, delay_ms)
    # The data side's flag is false in a way the optimizer cannot fold into a constant:
    # a constant would let it drop the marker branch of the union outright.
    data = df.withColumn(FLAG, F.spark_partition_id() < 0)
    marker_schema = f"`{rowtime}` timestamp, `{FLAG}` boolean"
    markers = spark.readStream.schema(marker_schema).json(directory)
    aligned = markers.select(*[(F.col(f"`{c}`") if c == rowtime else F.lit(None).cast(t).alias(c))
                               for c, t in df.dtypes], F.col(FLAG))
    watermarked = data.unionByName(aligned).withWatermark(rowtime, table.watermark.delay)
    # Spark pushes a filter that does not name the event-time column below the watermark,
    # where it would drop the marker (a view's `WHERE event_type = 0` sees NULL there)
    # and the marker would never advance the watermark. This filter names that column,
    # and its nondeterministic part keeps every later filter above it: Spark neither
    # merges a filter into a nondeterministic one nor pushes it past.
    keep = (~F.col(FLAG) | F.col(f"`{rowtime}`").isNull()) & (F.spark_partition_id() >= 0)
    return watermarked.filter(keep).drop(FLAG)
