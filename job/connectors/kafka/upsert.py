"""upsert-kafka: a compacted topic as a table keyed by its PRIMARY KEY.

Reading: the record key is the primary key, a record is the key's latest row, a NULL
value (tombstone) deletes the key. Writing: key = primary key, value = the row, and a
tombstone when the row is deleted.
"""
from __future__ import annotations

from job.connectors.kafka import common as kc
from job.connectors.base import UPSERT, Connector, Option, Sink, SourceStream
from job.connectors.rows import table_frame

OPTIONS = kc.COMMON + (
    Option("scan.startup.mode", "enum", default="earliest-offset",
           choices=("earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets"),
           description="Where a new query starts (an upsert table is normally read from the beginning)."),
    Option("scan.startup.timestamp-millis", "int", description="Start offset by record timestamp (mode 'timestamp')."),
    Option("scan.startup.specific-offsets", description="'partition:0,offset:42;partition:1,offset:300'."),
)


def _options(options):
    return {**options, "__key_is_primary_key": True}


def check(table, options, role):
    opts = _options(options)
    kc.check_columns(table, opts, role, key_cols=kc.key_columns(table, opts))


def create_source(ctx) -> SourceStream:
    from pyspark.sql import functions as F

    table = ctx.table
    options = _options(ctx.options)
    key_cols = list(table.primary_key)
    df, value, key = kc.read_topic(ctx, key_cols=key_cols)
    strip = options.get("key.fields-prefix", "")
    physical = {c.name: value.row[c.name] for c in table.physical_columns
                if not (options.get("value.fields-include") == "EXCEPT_KEY" and c.name in key_cols)}
    for c in key_cols:  # the key is authoritative, and the only thing a tombstone has
        physical[c] = key.row[c[len(strip):] if strip and c.startswith(strip) else c]
    deleted = df["value"].isNull()
    major, minor = kc.sequence(df)
    control = {
        "__kind": F.when(deleted, F.lit("D")).otherwise(F.lit("U")),
        "__seq_major": major, "__seq_minor": minor,
        "__error": F.coalesce(key.error, F.when(~deleted, value.error),
                              F.when(df["key"].isNull(), F.lit("record without a key in an upsert table"))),
        "__raw": df["value"].cast("string"), "__position": kc.position(df),
    }
    return SourceStream(table_frame(df, table, physical=physical, metadata=kc.metadata_columns(df, table),
                                    control=control), UPSERT, bounded=kc.bounded(options))


class UpsertKafkaSink(Sink):
    """Upserts as keyed records, deletes as tombstones; replays rewrite the same values."""

    def write_changes(self, batch, batch_id):
        from pyspark.sql import functions as F

        opts = _options(self.ctx.options)
        records = kc.encoded_record(batch, self.ctx.table, opts, key_cols=list(self.ctx.table.primary_key),
                                    value_null=F.col("__op").isin("-D", "-U"))
        records.write.format("kafka").options(**kc.write_options(opts)).save()

    def write_append(self, batch, batch_id):
        from pyspark.sql import functions as F

        self.write_changes(batch.withColumn("__op", F.lit("+I")), batch_id)

    def write_upsert_stream(self, df):
        """Upserts and tombstones through Spark's own Kafka sink: no Python per batch."""
        from pyspark.sql import functions as F

        opts = _options(self.ctx.options)
        if not self.ctx.offline:
            kc.check_reachable(self.ctx.spark, opts)
        records = kc.encoded_record(df, self.ctx.table, opts, key_cols=list(self.ctx.table.primary_key),
                                    value_null=F.col("__op").isin("-D", "-U"))
        return records.writeStream.format("kafka").options(**kc.write_options(opts))


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
)
