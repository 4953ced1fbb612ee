"""Opening a table for reading, as a scan node does: the connector's stream, its
bad-record policy, its watermark (with the end-of-input markers of ``--once``).

The policy is per table ('on-error'): ``fail`` stops the query at the first bad record
with its position and a preview; ``skip`` drops bad records and counts them;
``dead-letter`` sends them, with the error and the position, to another table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from job.connectors.base import APPEND, BoundTable, SourceContext, SourceStream
from job.options import parse_duration_ms
from job.plan.end_of_input import EndOfInput

BAD_RECORD_MARKER = "[STREAMSQL_BAD_RECORD]"
DEAD_LETTER_COLUMNS = ("raw", "error", "position", "source_table")


@dataclass
class OpenedSources:
    """Per query: the bad-record streams to dead-letter, and the metrics to observe."""

    dead_letters: list = field(default_factory=list)     # (dead-letter table name, DataFrame)
    observed: list = field(default_factory=list)         # observation names
    unbounded: list = field(default_factory=list)        # names of the tables read that never end


def policy_of(options) -> str:
    for key, value in options.items():
        if key.endswith("ignore-parse-errors") and value is True:
            return "skip"
    return options.get("on-error", "fail")


def open_source(spark, bound: BoundTable, *, once: bool, offline: bool = False,
                opened: Optional[OpenedSources] = None, checkpoint: Optional[str] = None,
                end_of_input=None, ordered: bool = True, waiting_tables: int = 1,
                real_time: bool = False, watermark: bool = True) -> SourceStream:
    """The stream of ``bound`` (a table bound for reading, the catalog's); ``watermark``:
    with the table's WATERMARK (job.plan.processing_time reads without)."""
    from pyspark.sql import functions as F

    table = bound.table
    options = bound.options
    stream = bound.connector.create_source(SourceContext(spark, table, dict(options), once=once, offline=offline,
                                                         checkpoint=checkpoint, ordered=ordered,
                                                         waiting_tables=waiting_tables, real_time=real_time))
    if opened is not None and not stream.bounded:
        opened.unbounded.append(table.name)
    df = stream.df
    if "__error" in df.columns:
        policy = policy_of(options)
        bad = F.col("__error").isNotNull()
        # Spark would push these filters below the projection that decodes the record and
        # substitute the decoding into the condition, once per CASE branch that mentions it
        # (a Debezium event was parsed up to six times). A nondeterministic conjunct keeps
        # the filter above that projection, where every use of the decoded record shares one
        # parse (with spark.sql.optimizer.enableJsonExpressionOptimization off, see
        # conf/spark-defaults.conf). Source decoding CPU: 16 s → 4.4 s per 500k events.
        here = F.spark_partition_id() >= 0
        if policy == "fail":
            message = F.concat(F.lit(f"{BAD_RECORD_MARKER} table '{table.name}': "), F.col("__error"),
                               F.lit(" at "), F.coalesce(F.col("__position"), F.lit("?")), F.lit(": "),
                               F.coalesce(F.substring(F.col("__raw"), 1, 200), F.lit("<null>")), F.lit(f" {BAD_RECORD_MARKER}"))
            df = df.filter(F.when(bad & here, F.raise_error(message)).isNull())
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
            df = df.filter(~(bad & here))
    if "__kind" in df.columns:
        # A changelog record with no change and no error is a Kafka tombstone that follows
        # a Debezium delete: it carries nothing for the table.
        df = df.filter(F.col("__kind").isNotNull())
    df = df.drop("__error", "__raw", "__position")
    if watermark and table.watermark is not None and stream.mode == APPEND:
        from job.plan.end_of_input import with_marker

        # With the end-of-input marker stream (job.plan.end_of_input): --once closes every window.
        df = with_marker(spark, df, table, None if offline else checkpoint,
                         parse_duration_ms(table.watermark.delay) or 0, end_of_input)
    return SourceStream(df, stream.mode, stream.bounded)


@dataclass
class QuerySources:
    """How one query opens its tables: through its connector, with the table's bad-record
    policy and, for a table with a WATERMARK, the end-of-input markers that let ``--once``
    close every window."""

    spark: object
    checkpoint: str
    once: bool = False
    offline: bool = False
    opened: OpenedSources = field(default_factory=OpenedSources)
    end_of_input: EndOfInput = field(default_factory=EndOfInput)
    waiting_tables: int = 1  # of the query's tables, how many wait for records (registry.waiting_tables)
    real_time: bool = False  # the query starts in real-time mode (job.plan.real_time)
    table_watermarks: bool = True  # False: without the tables' WATERMARKs (job.plan.processing_time)
    settings: object = None  # the query's translation settings (its functions), for computed columns

    def open(self, table, ordered: bool = True):
        from job.sql.flink.columns import opening_sources

        with opening_sources(self.settings):
            return self._open(table, ordered)

    def _open(self, table, ordered: bool):
        return open_source(self.spark, table, once=self.once, offline=self.offline, opened=self.opened,
                           checkpoint=self.checkpoint, end_of_input=self.end_of_input, ordered=ordered,
                           waiting_tables=self.waiting_tables, real_time=self.real_time,
                           watermark=self.table_watermarks)
