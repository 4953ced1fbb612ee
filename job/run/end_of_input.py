"""The end of a bounded input under ``--once``: after a run's wave, the queries with
event-time state are started once more with a marker past every open window
(job.plan.end_of_input explains the markers and builds their streams).
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from typing import Optional

from job.plan.end_of_input import FLAG, EndOfInput


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
