"""upsert-kafka: a compacted topic as a table keyed by its PRIMARY KEY.

Reading: the record key is the primary key, a record is the key's latest row, a NULL
value (tombstone) deletes the key. Writing: key = primary key, value = the row, and a
tombstone when the row is deleted.
"""
from __future__ import annotations

from job.connectors.kafka import common
from job.connectors.kafka.admin import check_reachable
from job.connectors.kafka.records import (encoded_record, key_field, metadata_columns, position, read_topic, sequence,
                                          value_columns, write_options)
from job.connectors.base import UPSERT, Connector, Sink, SourceStream
from job.connectors.rows import table_frame

OPTIONS = common.COMMON + common.startup_options(
    "earliest-offset", "Where a new query starts (an upsert table is normally read from the beginning).")


def check(table, options, role):
    from job.connectors.registry import format_for
    from job.options import table_error

    # The record key is the PRIMARY KEY.
    common.check_columns(table, options, role, key_cols=list(table.primary_key))
    value = format_for(options.get("value.format") or options["format"], table=table, option="value.format")
    if value.changelog:  # as Flink refuses it: the topic's records already are a changelog
        raise table_error(table, f"'upsert-kafka' connector doesn't support '{value.name}' as value format, because "
                                 f"'{value.name}' is not in insert-only mode (table '{table.name}')",
                          option="value.format")


def create_source(ctx) -> SourceStream:
    from pyspark.sql import functions as F

    table, options = ctx.table, ctx.options
    key_cols = list(table.primary_key)
    df, value, key = read_topic(ctx, key_cols=key_cols)
    strip = options.get("key.fields-prefix", "")
    physical = {c: value.row[c] for c in value_columns(table, options, key_cols)}
    for c in key_cols:  # the key is authoritative, and the only thing a tombstone has
        physical[c] = key.row[key_field(c, strip)]
    deleted = df["value"].isNull()
    major, minor = sequence(df)
    control = {
        "__kind": F.when(deleted, F.lit("D")).otherwise(F.lit("U")),
        "__seq_major": major, "__seq_minor": minor,
        "__error": F.coalesce(key.error, F.when(~deleted, value.error),
                              F.when(df["key"].isNull(), F.lit("record without a key in an upsert table"))),
        "__raw": df["value"].cast("string"), "__position": position(df),
    }
    return SourceStream(table_frame(df, table, physical=physical, metadata=metadata_columns(df, table),
                                    control=control), UPSERT, bounded=common.bounded(options))


class UpsertKafkaSink(Sink):
    """Upserts as keyed records, deletes as tombstones; replays rewrite the same values."""

    def write_changes(self, batch, batch_id):
        from pyspark.sql import functions as F

        opts = self.ctx.options
        records = encoded_record(batch, self.ctx.table, opts, key_cols=list(self.ctx.table.primary_key),
                                    value_null=F.col("__op").isin("-D", "-U"), offline=self.ctx.offline)
        records.write.format("kafka").options(**write_options(opts)).save()

    def write_append(self, batch, batch_id):
        from pyspark.sql import functions as F

        self.write_changes(batch.withColumn("__op", F.lit("+I")), batch_id)

    def write_upsert_stream(self, df):
        """Upserts and tombstones through Spark's own Kafka sink: no Python per batch."""
        from pyspark.sql import functions as F

        opts = self.ctx.options
        if not self.ctx.offline:
            check_reachable(self.ctx.spark, opts)
        records = encoded_record(df, self.ctx.table, opts, key_cols=list(self.ctx.table.primary_key),
                                    value_null=F.col("__op").isin("-D", "-U"), offline=self.ctx.offline)
        return records.writeStream.format("kafka").options(**write_options(opts))


CONNECTOR = Connector(
    identifier="upsert-kafka",
    description="A compacted Kafka topic as a table keyed by its PRIMARY KEY (upserts and tombstones).",
    options=OPTIONS,
    source_mode=UPSERT,
    sink_modes=("append", UPSERT),
    requires_primary_key=True,
    format_options=("key.format", "value.format"),
    create_source=create_source,
    create_sink=UpsertKafkaSink,
    check=check,
    **common.HOOKS,
)
