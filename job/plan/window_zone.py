"""Windows on a TIMESTAMP_LTZ time attribute follow ``table.local-time-zone``.

Flink aligns TUMBLE, HOP and CUMULATE windows over a TIMESTAMP_LTZ rowtime to the wall
clock of the session's zone: a day window starts at local midnight, an hour window on
the local hour (which, in Asia/Kolkata, is half past an hour in UTC). window_start and
window_end are that wall clock (TIMESTAMP(3)); window_time is the instant of
window_end − 1 ms read in the zone (TIMESTAMP_LTZ(3)); across a daylight-saving change
a local hour that happens twice is one window, as in Flink. SESSION windows are the
same sessions in every zone; only their window_start and window_end are shown in it.

Spark's windowed aggregation and the watermark keep working on instants: the window
struct it groups by and closes holds the instants of the local start and end.
"""
from __future__ import annotations

from typing import Optional

from job.sql.flink.typed import spark_string

UTC_ZONES = ("UTC", "Z", "GMT", "UTC+00:00", "GMT+00:00", "Etc/UTC", "Etc/GMT")


def window_zone(planner, time_field) -> Optional[str]:
    """The zone a window on ``time_field`` aligns to, or None for UTC alignment."""
    if time_field.type.name != "TIMESTAMP_LTZ":
        return None
    zone = planner.settings.local_time_zone
    return None if zone in UTC_ZONES else zone


def local_time(column_sql: str, zone: str) -> str:
    """Spark SQL of the wall clock of the instant ``column_sql`` in ``zone``."""
    return f"from_utc_timestamp({column_sql}, {spark_string(zone)})"


def instant_struct(local, zone: str):
    """The window struct Spark groups by and closes: the instants of the local window
    ``local`` (a struct column of wall-clock start and end)."""
    from pyspark.sql import functions as F

    return F.struct(F.to_utc_timestamp(local["start"], zone).alias("start"),
                    F.to_utc_timestamp(local["end"], zone).alias("end"))


def local_columns(start, end, zone: str) -> dict:
    """window_start, window_end and window_time of a window whose wall-clock bounds are
    ``start`` and ``end``."""
    from pyspark.sql import functions as F

    return {"window_start": start, "window_end": end,
            "window_time": F.to_utc_timestamp(end - F.expr("INTERVAL 1 MILLISECOND"), zone)}


def shown_columns(instants, zone: str) -> dict:
    """The window columns of a window computed on instants (SESSION), shown in ``zone``."""
    from pyspark.sql import functions as F

    return local_columns(F.from_utc_timestamp(instants["start"], zone), F.from_utc_timestamp(instants["end"], zone),
                         zone)
