"""Opening a table for reading: the connector's stream, its bad-record policy, its
watermark.

The policy is per table ('on-error'): ``fail`` stops the query at the first bad record
with its position and a preview; ``skip`` drops bad records and counts them;
``dead-letter`` sends them, with the error and the position, to another table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from job.connectors.base import APPEND, SourceContext, SourceStream
from job.connectors.registry import validate_options

BAD_RECORD_MARKER = "[STREAMSQL_BAD_RECORD]"
DEAD_LETTER_COLUMNS = ("raw", "error", "position", "source_table")


@dataclass
class OpenedSources:
    """Per query: the bad-record streams to dead-letter, and the metrics to observe."""

    dead_letters: list = field(default_factory=list)     # (dead-letter table name, DataFrame)
    observed: list = field(default_factory=list)         # observation names


def policy_of(options) -> str:
    for key, value in options.items():
        if key.endswith("ignore-parse-errors") and value is True:
            return "skip"
    return options.get("on-error", "fail")


def open_source(spark, table, *, once: bool, offline: bool = False,
                opened: Optional[OpenedSources] = None) -> SourceStream:
    from pyspark.sql import functions as F

    connector, options = validate_options(table, "source")
    stream = connector.create_source(SourceContext(spark, table, options, once=once, offline=offline))
    df = stream.df
    if "__error" in df.columns:
        policy = policy_of(options)
        bad = F.col("__error").isNotNull()
        if policy == "fail":
            message = F.concat(F.lit(f"{BAD_RECORD_MARKER} table '{table.name}': "), F.col("__error"),
                               F.lit(" at "), F.coalesce(F.col("__position"), F.lit("?")), F.lit(": "),
                               F.coalesce(F.substring(F.col("__raw"), 1, 200), F.lit("<null>")), F.lit(f" {BAD_RECORD_MARKER}"))
            df = df.filter(F.when(bad, F.raise_error(message)).isNull())
        else:
            if opened is not None:
                name = f"bad_records_{table.name}".replace(".", "_")
                df = df.observe(name, F.count(F.when(bad, 1)).alias("bad_records"))
                opened.observed.append(name)
                if policy == "dead-letter":
                    letters = df.filter(bad).select(
                        F.col("__raw").alias("raw"), F.col("__error").alias("error"),
                        F.col("__position").alias("position"), F.lit(table.name).alias("source_table"))
                    opened.dead_letters.append((options["dead-letter.table"], letters))
            df = df.filter(~bad)
    if "__kind" in df.columns:
        # A changelog record with no change and no error is a Kafka tombstone that follows
        # a Debezium delete: it carries nothing for the table.
        df = df.filter(F.col("__kind").isNotNull())
    df = df.drop("__error", "__raw", "__position")
    if table.watermark is not None and stream.mode == APPEND:
        df = df.withWatermark(table.watermark.column, table.watermark.delay)
    return SourceStream(df, stream.mode, stream.bounded)
