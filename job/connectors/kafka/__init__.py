"""kafka: a topic as an append-only table (or a changelog with 'debezium-json' or
'debezium-avro-confluent', which an updating query also writes).

The package also holds 'upsert-kafka' (:mod:`job.connectors.kafka.upsert`) and what the
two share: options, checks and hooks (``common``), the admin client (``admin``), and
reading and writing records (``records``).
"""
from __future__ import annotations

from job.connectors.base import APPEND, CHANGELOG, Connector, Option, Sink, SourceStream
from job.connectors.kafka import common
from job.connectors.kafka.admin import check_reachable
from job.connectors.kafka.records import (encoded_record, key_field, metadata_columns, position, read_topic, sequence,
                                          value_columns, value_format, write_options)
from job.connectors.rows import changelog_rows, table_frame

OPTIONS = common.COMMON + (
    Option("topic-pattern", description="Regular expression of topics to read (instead of 'topic')."),
    Option("format", description="Format of the value (same as 'value.format')."),
    Option("key.fields", description="';'-separated columns that form the record key."),
) + common.startup_options("group-offsets", "Where a new query starts; a restarted one continues from its checkpoint.")


def check(table, options, role):
    common.check_columns(table, options, role, key_cols=common.key_columns(table, options))


def create_source(ctx) -> SourceStream:
    from pyspark.sql import functions as F

    table, options = ctx.table, ctx.options
    key_cols = common.key_columns(table, options)
    df, value, key = read_topic(ctx, key_cols=key_cols)
    value_fmt, _ = value_format(table, options)
    major, minor = sequence(df)
    error = value.error if key is None else F.coalesce(key.error, value.error)
    control = {"__error": error, "__raw": df["value"].cast("string"), "__position": position(df),
               "__seq_major": major, "__seq_minor": minor}
    if value_fmt.changelog:
        staged = df.select("*", value.row.alias("__change"), error.alias("__err"), position(df).alias("__pos_text"))
        rows = changelog_rows(staged, table, "__change", physical_names=[])
        names = [c.name for c in table.physical_columns]
        physical = {n: F.col("__image")[n] for n in names}
        control = {"__kind": F.col("__kind"), "__seq_major": F.lpad(F.col("partition").cast("string"), 6, "0"),
                   "__seq_minor": F.col("offset") * 4 + F.coalesce(F.col("__pos"), F.lit(0)),
                   "__error": F.coalesce(F.col("__err"), F.col("__cdc_error")),
                   "__raw": F.col("value").cast("string"), "__position": F.col("__pos_text")}
        frame = table_frame(rows, table, physical=physical, metadata=metadata_columns(rows, table), control=control)
        return SourceStream(frame, CHANGELOG, bounded=common.bounded(options))
    physical = {c: value.row[c] for c in value_columns(table, options, key_cols)}
    if key is not None:
        strip = options.get("key.fields-prefix", "")
        for c in key_cols:
            physical.setdefault(c, key.row[key_field(c, strip)])
    frame = table_frame(df, table, physical=physical, metadata=metadata_columns(df, table), control=control)
    return SourceStream(frame, APPEND, bounded=common.bounded(options))


class KafkaSink(Sink):
    """Append-only writes through Spark's Kafka sink (at-least-once)."""

    def write_stream(self, df):
        opts = self.ctx.options
        if not self.ctx.offline:
            check_reachable(self.ctx.spark, opts)
        records = encoded_record(df, self.ctx.table, opts, key_cols=common.key_columns(self.ctx.table, opts),
                                 offline=self.ctx.offline)
        return records.writeStream.format("kafka").options(**write_options(opts))

    def write_change_stream(self, df):
        """An updating query's signed rows, written as they come by a format that writes
        changes (debezium-avro-confluent): each is one event, whatever its row kind, as
        Flink writes -U/+U as a delete and an insert. Other formats: None (refused by the
        planner before, as Flink refuses an updating query into an append-only sink)."""
        from pyspark.sql import functions as F

        opts = self.ctx.options
        fmt, _ = value_format(self.ctx.table, opts)
        if not fmt.writes_changes:
            return None
        if not self.ctx.offline:
            check_reachable(self.ctx.spark, opts)
        # A sign n is n copies of the change (an inner join can make a row twice).
        copies = df.select("*", F.explode(F.array_repeat(F.lit(1), F.abs(F.col("__sign")))).alias("__copy"))
        records = encoded_record(copies, self.ctx.table, opts, key_cols=common.key_columns(self.ctx.table, opts),
                                 offline=self.ctx.offline, sign=F.col("__sign"))
        return records.writeStream.format("kafka").options(**write_options(opts))

    def write_append(self, batch, batch_id):
        opts = self.ctx.options
        records = encoded_record(batch, self.ctx.table, opts, key_cols=common.key_columns(self.ctx.table, opts),
                                 offline=self.ctx.offline)
        records.write.format("kafka").options(**write_options(opts)).save()


CONNECTOR = Connector(
    identifier="kafka",
    description="Reads and writes Kafka topics as append-only tables (a changelog with 'debezium-json' or "
                "'debezium-avro-confluent'; an updating query writes its changes with 'debezium-avro-confluent').",
    options=OPTIONS,
    source_mode=APPEND,
    sink_modes=(APPEND,),
    format_options=("format", "key.format", "value.format"),
    create_source=create_source,
    create_sink=KafkaSink,
    check=check,
    **common.HOOKS,
)
