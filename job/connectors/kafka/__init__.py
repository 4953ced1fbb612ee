"""kafka: a topic as an append-only table (or a changelog with 'debezium-json')."""
from __future__ import annotations

from job.connectors.kafka import common as kc
from job.connectors.base import APPEND, CHANGELOG, Connector, Option, Sink, SourceStream
from job.connectors.rows import changelog_rows, table_frame

OPTIONS = kc.COMMON + (
    Option("topic-pattern", description="Regular expression of topics to read (instead of 'topic')."),
    Option("format", description="Format of the value (same as 'value.format')."),
    Option("key.fields", description="';'-separated columns that form the record key."),
    Option("scan.startup.mode", "enum", default="group-offsets",
           choices=("earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets"),
           description="Where a new query starts; a restarted one continues from its checkpoint."),
    Option("scan.startup.timestamp-millis", "int", description="Start offset by record timestamp (mode 'timestamp')."),
    Option("scan.startup.specific-offsets", description="'partition:0,offset:42;partition:1,offset:300' (mode 'specific-offsets')."),
)


def check(table, options, role):
    kc.check_columns(table, options, role, key_cols=kc.key_columns(table, options))


def create_source(ctx) -> SourceStream:
    from pyspark.sql import functions as F

    from job.connectors.registry import format_for

    table, options = ctx.table, ctx.options
    key_cols = kc.key_columns(table, options)
    df, value, key = kc.read_topic(ctx, key_cols=key_cols)
    value_fmt = format_for(options.get("value.format") or options.get("format"), table=table, option="value.format")
    major, minor = kc.sequence(df)
    error = value.error if key is None else F.coalesce(key.error, value.error)
    control = {"__error": error, "__raw": df["value"].cast("string"), "__position": kc.position(df),
               "__seq_major": major, "__seq_minor": minor}
    if value_fmt.changelog:
        staged = df.select("*", value.row.alias("__change"), error.alias("__err"), kc.position(df).alias("__pos_text"))
        rows = changelog_rows(staged, table, "__change", physical_names=[])
        names = [c.name for c in table.physical_columns]
        physical = {n: F.col("__image")[n] for n in names}
        control = {"__kind": F.col("__kind"), "__seq_major": F.lpad(F.col("partition").cast("string"), 6, "0"),
                   "__seq_minor": F.col("offset") * 4 + F.coalesce(F.col("__pos"), F.lit(0)),
                   "__error": F.coalesce(F.col("__err"), F.col("__cdc_error")),
                   "__raw": F.col("value").cast("string"), "__position": F.col("__pos_text")}
        frame = table_frame(rows, table, physical=physical, metadata=kc.metadata_columns(rows, table), control=control)
        return SourceStream(frame, CHANGELOG, bounded=kc.bounded(options))
    physical = {c.name: value.row[c.name] for c in table.physical_columns
                if not (options.get("value.fields-include") == "EXCEPT_KEY" and c.name in key_cols)}
    if key is not None:
        strip = options.get("key.fields-prefix", "")
        for c in key_cols:
            physical.setdefault(c, key.row[c[len(strip):] if strip and c.startswith(strip) else c])
    frame = table_frame(df, table, physical=physical, metadata=kc.metadata_columns(df, table), control=control)
    return SourceStream(frame, APPEND, bounded=kc.bounded(options))


class KafkaSink(Sink):
    """Append-only writes through Spark's Kafka sink (at-least-once)."""

    def write_stream(self, df):
        opts = self.ctx.options
        if not self.ctx.offline:
            kc.check_reachable(self.ctx.spark, opts)
        records = kc.encoded_record(df, self.ctx.table, opts, key_cols=kc.key_columns(self.ctx.table, opts))
        return records.writeStream.format("kafka").options(**kc.write_options(opts))

    def write_append(self, batch, batch_id):
        opts = self.ctx.options
        records = kc.encoded_record(batch, self.ctx.table, opts, key_cols=kc.key_columns(self.ctx.table, opts))
        records.write.format("kafka").options(**kc.write_options(opts)).save()


CONNECTOR = Connector(
    identifier="kafka",
    description="Reads and writes Kafka topics as append-only tables (a changelog with 'debezium-json').",
    options=OPTIONS,
    source_mode=APPEND,
    sink_modes=(APPEND,),
    format_options=("format", "key.format", "value.format"),
    create_source=create_source,
    create_sink=KafkaSink,
    check=check,
)
