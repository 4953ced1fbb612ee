"""Flink's type conversion functions (CAST and TRY_CAST are in the translator and
job.sql.flink.casts)."""
from __future__ import annotations

from job.sql.flink.functions import scalar
from job.sql.flink.typed import Typed, spark_string
from job.sql.types import STRING_TYPE

CATEGORY = "conversion"


@scalar("TYPEOF", CATEGORY, "TYPEOF(input)", "The Flink type of INPUT, as text (e.g. 'INT NOT NULL').")
def typeof(call):
    x = call.args(1, 2)[0]
    return Typed(spark_string(x.type.summary()), STRING_TYPE.nullable_as(True))
