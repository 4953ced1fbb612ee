"""The end of a bounded input under ``--once``: event time advances past every window.

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

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
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


def max_event_time(query) -> Optional[datetime]:
    """The largest event time the query's batches of this run saw (None: no data)."""
    best = None
    for progress in query.recentProgress or []:
        text = (progress.get("eventTime") or {}).get("max")
        if not text:
            continue
        value = datetime.strptime(text.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
        best = value if best is None or value > best else best
    return best


def write_markers(info: EndOfInput, seen: datetime) -> None:
    """One marker per watermarked table: past every window that holds data."""
    longest_delay = max((delay for _, delay in info.tables.values()), default=0)
    at = seen + timedelta(milliseconds=info.span_ms + longest_delay + 1)
    stamp = at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")
    for directory, (rowtime, _delay) in info.tables.items():
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"end-{int(at.timestamp() * 1000)}.json")
        with open(path + ".tmp", "w") as f:
            f.write(json.dumps({rowtime: stamp, FLAG: True}) + "\n")
        os.replace(path + ".tmp", path)


def close_windows(plans, queries) -> list:
    """After a ``--once`` wave: start again, with end-of-input markers, every query of
    ``plans`` that has event-time state and read data in this run. Returns the queries
    started (run them to the end like the wave's own)."""
    again = []
    for plan in plans:
        info = plan.end_of_input
        if info is None:
            continue
        query = next((q for q in queries if q.name == plan.name), None)
        seen = max_event_time(query) if query is not None else None
        if seen is None:
            continue
        write_markers(info, seen)
        again.append(plan.writer.start())  # the writer keeps its name, checkpoint and trigger
    return again
