"""TIMESTAMP values in the JSON formats: read with 0 to 9 fraction digits (Flink writes
as many as the column's precision), written with microseconds, Spark's precision, so a
value survives a round trip through a topic or a file unchanged."""
from __future__ import annotations

import pytest

from job.formats import json as json_format


@pytest.mark.parametrize("standard,text,expected", [
    ("SQL", "2024-01-31 12:00:00", "2024-01-31 12:00:00"),
    ("SQL", "2024-01-31 12:00:00.5", "2024-01-31 12:00:00.5"),
    ("SQL", "2024-01-31 12:00:00.12", "2024-01-31 12:00:00.12"),
    ("SQL", "2024-01-31 12:00:00.123", "2024-01-31 12:00:00.123"),
    ("SQL", "2024-01-31 12:00:00.1234", "2024-01-31 12:00:00.1234"),
    ("SQL", "2024-01-31 12:00:00.123456", "2024-01-31 12:00:00.123456"),
    ("SQL", "2024-01-31 12:00:00.123456789", "2024-01-31 12:00:00.123456"),  # TIMESTAMP(9): cut to micros
    ("ISO-8601", "2024-01-31T12:00:00.123456789Z", "2024-01-31 12:00:00.123456"),
    ("ISO-8601", "2024-01-31T12:00:00.25+02:00", "2024-01-31 10:00:00.25"),
    ("ISO-8601", "2024-01-31T12:00:00", "2024-01-31 12:00:00"),
])
def test_timestamps_with_any_fraction_are_read(spark, standard, text, expected):
    from pyspark.sql.types import StructType, StructField, TimestampType

    schema = StructType([StructField("t", TimestampType())])
    df = spark.createDataFrame([(f'{{"t": "{text}"}}',)], "value string")
    decoded = json_format.decode(df["value"], schema, {"timestamp-format.standard": standard})
    row = df.select(decoded.row["t"].cast("string").alias("t"), decoded.error.alias("error")).first()
    assert (row.t, row.error) == (expected, None)


@pytest.mark.parametrize("standard", ["SQL", "ISO-8601"])
def test_timestamps_keep_their_microseconds_through_a_round_trip(spark, standard):
    from pyspark.sql import functions as F

    df = spark.sql("SELECT struct(TIMESTAMP'2024-01-31 12:00:00.123456' AS t, "
                   "TIMESTAMP_NTZ'2024-01-31 12:00:00.000001' AS n) AS row")
    options = {"timestamp-format.standard": standard}
    text = df.select(json_format.encode(F.col("row"), options).alias("value"))
    sep = " " if standard == "SQL" else "T"
    assert text.first().value == (f'{{"t":"2024-01-31{sep}12:00:00.123456",'
                                  f'"n":"2024-01-31{sep}12:00:00.000001"}}')
    decoded = json_format.decode(text["value"], df.schema["row"].dataType, options)
    back = text.select(decoded.row.alias("row"))
    assert back.first().row == df.first().row
