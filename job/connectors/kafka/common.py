"""What the 'kafka' and 'upsert-kafka' connectors share: options, reading a topic with
Spark's own Kafka connector, decoding key and value into the table's columns, metadata
columns, and writing records.

Spark's connector (spark-sql-kafka-0-10) does the I/O; Kafka's AdminClient, reached
through the JVM Spark already runs, answers the few questions Spark cannot (is the broker
there, which partitions exist, what did a consumer group commit).
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from job.connectors.base import Option, columns_named, split_list
from job.connectors.rows import physical_schema
from job.errors import EXIT_UNREACHABLE, PipelineError

# Flink's metadata keys for Kafka, and what Spark's Kafka source calls them. The Pulsar
# keys of the original Flink experiment's tables (eventTime, properties, sequenceId) are
# accepted as aliases so that DDL written for upsert-pulsar runs on Kafka with only the
# connector options changed.
METADATA_KEYS = {
    "topic": "topic", "partition": "partition", "offset": "offset", "timestamp": "timestamp",
    "timestamp-type": "timestampType", "headers": "headers",
    "eventTime": "timestamp", "publishTime": "timestamp", "properties": "headers",
    "sequenceId": "offset", "messageId": "offset", "key": "key",
}
WRITABLE_METADATA = {"headers", "properties", "topic"}

COMMON = (
    Option("properties.bootstrap.servers", required=True, description="Kafka brokers, host:port[,host:port]."),
    Option("properties.group.id", description="Consumer group whose committed offsets 'group-offsets' starts from."),
    Option("properties.*", description="Passed to the Kafka client (e.g. properties.security.protocol)."),
    Option("topic", description="Topic name; for sources a ';'-separated list is allowed."),
    Option("key.format", description="Format of the record key."),
    Option("value.format", description="Format of the record value."),
    Option("key.fields-prefix", default="", description="Prefix of key columns in the schema, stripped when (de)serialising the key."),
    Option("value.fields-include", "enum", default="ALL", choices=("ALL", "EXCEPT_KEY"),
           description="Whether key columns are also in the value."),
    Option("scan.max-offsets-per-trigger", "int", default=1_000_000,
           description="Upper bound of records read per micro-batch (Spark's maxOffsetsPerTrigger): a backlog is "
                       "read in bounded batches."),
    Option("scan.bounded.mode", "enum", default="unbounded", choices=("unbounded", "latest-offset"),
           description="'latest-offset': the table ends at the offsets it finds when the query starts, and a "
                       "pipeline whose every source ends runs to completion, as Flink's bounded sources do."),
    Option("scan.poll-timeout", "duration", description="Kafka consumer poll timeout."),
    Option("sink.delivery-guarantee", "enum", default="at-least-once", choices=("at-least-once", "none"),
           description="Spark's Kafka sink is at-least-once; upsert sinks are made exact by idempotent keys."),
)
# Spark's Kafka source rejects these client properties (it manages them itself).
_SPARK_MANAGED = {"group.id", "auto.offset.reset", "key.deserializer", "value.deserializer",
                  "key.serializer", "value.serializer", "enable.auto.commit", "interceptor.classes"}


def client_properties(options: Mapping[str, Any]) -> dict[str, str]:
    """properties.* → Kafka client properties (without the prefix)."""
    return {k[len("properties."):]: str(v) for k, v in options.items()
            if k.startswith("properties.") and k[len("properties."):] not in _SPARK_MANAGED}


def spark_kafka_options(options: Mapping[str, Any]) -> dict[str, str]:
    return {"kafka." + k: v for k, v in client_properties(options).items()}


def bounded(options: Mapping[str, Any]) -> bool:
    """Does the table end ('scan.bounded.mode' = 'latest-offset')?"""
    return options.get("scan.bounded.mode") == "latest-offset"


def topics(options: Mapping[str, Any]) -> list[str]:
    return split_list(options.get("topic", ""))


def key_columns(table, options) -> list[str]:
    """Columns carried by the record key: key.fields, or the primary key (upsert-kafka)."""
    if options.get("key.fields"):
        return columns_named(table, split_list(options["key.fields"]))
    return list(table.primary_key) if options.get("__key_is_primary_key") else []


def check_columns(table, options, role: str, *, key_cols: list[str]) -> None:
    """Schema-level checks shared by both connectors; raises PipelineError."""
    from job.connectors.registry import format_for

    def fail(msg, option=None, hint=None):
        raise PipelineError(msg, origin=table.option_origins.get(option, table.source.origin if table.source else None),
                            statement=table.source.text if table.source else None, option=option, hint=hint)

    value_format = options.get("value.format") or options.get("format")
    if not value_format:
        fail(f"table '{table.name}' needs 'value.format' (or 'format')", option="value.format",
             hint="e.g. 'value.format' = 'json'")
    if options.get("key.format") and not key_cols:
        fail(f"'key.format' is set but table '{table.name}' names no key columns", option="key.fields",
             hint="set 'key.fields' = 'col1;col2' (or declare a PRIMARY KEY for upsert-kafka)")
    for c in key_cols:
        col = table.column(c)
        if col is None or not col.is_physical:
            fail(f"key column '{c}' is not a physical column of table '{table.name}'", option="key.fields")
    if key_cols and not options.get("key.format"):
        fail(f"table '{table.name}' has key columns {key_cols} but no 'key.format'", option="key.format",
             hint="e.g. 'key.format' = 'raw' for one STRING key column, or 'json'")
    if options.get("key.format"):
        fmt = format_for(options["key.format"], table=table, option="key.format")
        if fmt.single_column and len(key_cols) != 1:
            fail(f"'key.format' = '{fmt.name}' holds exactly one column, but the key has {len(key_cols)}: {key_cols}",
                 option="key.format", hint="use 'json' for composite keys")
    for col in table.columns:
        if col.kind == "metadata":
            key = col.metadata_key or col.name
            if key not in METADATA_KEYS:
                fail(f"unknown Kafka metadata key '{key}' for column '{col.name}' of table '{table.name}'",
                     hint="available keys: " + ", ".join(sorted(k for k in METADATA_KEYS if k != "key")))
    if role == "source" and options.get("topic-pattern") is None and not topics(options):
        fail(f"table '{table.name}' needs 'topic'", option="topic")
    if role == "sink" and len(topics(options)) != 1:
        fail(f"a Kafka sink writes exactly one topic; table '{table.name}' has 'topic' = '{options.get('topic', '')}'",
             option="topic")


# --------------------------------------------------------------------------- admin

def admin_call(spark, options, what: str, fn):
    """Run ``fn(admin)`` with a short-lived Kafka AdminClient; unreachable → exit 3."""
    jvm = spark._jvm
    props = jvm.java.util.Properties()
    for k, v in client_properties(options).items():
        props.put(k, v)
    props.put("request.timeout.ms", "10000")
    props.put("default.api.timeout.ms", "15000")
    admin = jvm.org.apache.kafka.clients.admin.AdminClient.create(props)
    try:
        return fn(admin, jvm)
    except Exception as exc:  # py4j wraps the Java exception; keep only its message
        servers = options.get("properties.bootstrap.servers")
        raise PipelineError(
            f"Kafka at '{servers}' could not be reached while {what}: {_java_message(exc)}",
            option="properties.bootstrap.servers", exit_code=EXIT_UNREACHABLE,
            hint="check that the broker is running and the address is right",
        ) from None
    finally:
        admin.close(jvm.java.time.Duration.ofSeconds(2))


def _java_message(exc: Exception) -> str:
    text = str(exc)
    for line in text.splitlines():
        if "Exception:" in line:
            return line.split("Exception:", 1)[1].strip()[:300]
    return text.splitlines()[0][:300] if text else type(exc).__name__


def check_reachable(spark, options) -> None:
    admin_call(spark, options, "listing topics",
               lambda admin, jvm: admin.listTopics().names().get(15, jvm.java.util.concurrent.TimeUnit.SECONDS))


def ensure_topics(spark, options, names: list[str]) -> None:
    """Create source topics that do not exist yet, with the broker's default partitions and
    replication. Spark's Kafka source fails on a missing topic where Flink's waits for it;
    creating it empty gives Flink's behaviour (a pipeline may start before its producers)."""
    def create(admin, jvm):
        unit = jvm.java.util.concurrent.TimeUnit.SECONDS
        existing = set(admin.listTopics().names().get(15, unit))
        missing = [n for n in names if n not in existing]
        if missing:
            empty = jvm.java.util.Optional.empty()
            topics = jvm.java.util.ArrayList([jvm.org.apache.kafka.clients.admin.NewTopic(n, empty, empty) for n in missing])
            try:
                admin.createTopics(topics).all().get(15, unit)
            except Exception as exc:  # created concurrently by someone else: fine
                if "TopicExistsException" not in str(exc):
                    raise
    admin_call(spark, options, f"creating missing topics {names}", create)


def partitions_of(spark, options, names: list[str]) -> dict[str, list[int]]:
    def describe(admin, jvm):
        result = admin.describeTopics(jvm.java.util.ArrayList(names)).allTopicNames().get(
            15, jvm.java.util.concurrent.TimeUnit.SECONDS)
        return {t: sorted(p.partition() for p in result.get(t).partitions()) for t in names}
    return admin_call(spark, options, f"describing topics {names}", describe)


def committed_offsets(spark, options, group: str) -> dict[tuple[str, int], int]:
    def fetch(admin, jvm):
        offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(
            15, jvm.java.util.concurrent.TimeUnit.SECONDS)
        return {(tp.topic(), tp.partition()): offsets.get(tp).offset() for tp in offsets.keySet()}
    return admin_call(spark, options, f"reading committed offsets of group '{group}'", fetch)


# --------------------------------------------------------------------------- read

def starting_offsets(spark, table, options) -> dict[str, str]:
    """Flink's scan.startup.mode → Spark's startingOffsets/startingTimestamp."""
    mode = options.get("scan.startup.mode", "group-offsets")
    if mode == "earliest-offset":
        return {"startingOffsets": "earliest"}
    if mode == "latest-offset":
        return {"startingOffsets": "latest"}
    if mode == "timestamp":
        ts = options.get("scan.startup.timestamp-millis")
        if ts is None:
            raise PipelineError("'scan.startup.mode' = 'timestamp' needs 'scan.startup.timestamp-millis'",
                                origin=table.option_origins.get("scan.startup.mode"), option="scan.startup.timestamp-millis",
                                statement=table.source.text if table.source else None)
        return {"startingTimestamp": str(ts)}
    names = topics(options)
    parts = partitions_of(spark, options, names)
    reset = -2 if options.get("properties.auto.offset.reset", "earliest") == "earliest" else -1
    if mode == "specific-offsets":
        given = _parse_specific_offsets(table, options.get("scan.startup.specific-offsets", ""))
        chosen = {t: {str(p): given.get(p, reset) for p in ps} for t, ps in parts.items()}
    else:  # group-offsets: what the group committed, else auto.offset.reset
        group = options.get("properties.group.id")
        committed = committed_offsets(spark, options, group) if group else {}
        chosen = {t: {str(p): committed.get((t, p), reset) for p in ps} for t, ps in parts.items()}
    return {"startingOffsets": json.dumps(chosen)}


def _parse_specific_offsets(table, text: str) -> dict[int, int]:
    """'partition:0,offset:42;partition:1,offset:300' → {0: 42, 1: 300}."""
    out = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        try:
            fields = {k.strip(): v.strip() for k, v in (kv.split(":", 1) for kv in part.split(","))}
            out[int(fields["partition"])] = int(fields["offset"])
        except (ValueError, KeyError):
            raise PipelineError(f"cannot read '{part}' in 'scan.startup.specific-offsets'",
                                origin=table.option_origins.get("scan.startup.specific-offsets"),
                                statement=table.source.text if table.source else None,
                                option="scan.startup.specific-offsets",
                                hint="write 'partition:0,offset:42;partition:1,offset:300'") from None
    return out


def read_topic(ctx, *, key_cols: list[str]):
    """The raw Kafka stream plus decoded key/value structs.

    Returns (df, value_decoded, key_decoded_or_None); df keeps Spark's Kafka columns.
    """
    from job.connectors.registry import format_for
    from job.formats.base import format_options

    spark, table, options = ctx.spark, ctx.table, ctx.options
    if not ctx.offline:
        check_reachable(spark, options)
        if not options.get("topic-pattern"):
            ensure_topics(spark, options, topics(options))
    reader = spark.readStream.format("kafka").options(**spark_kafka_options(options))
    if options.get("topic-pattern"):
        reader = reader.option("subscribePattern", options["topic-pattern"])
    else:
        reader = reader.option("subscribe", ",".join(topics(options)))
    reader = reader.option("includeHeaders", "true").option("failOnDataLoss", "false")
    if options.get("scan.max-offsets-per-trigger"):
        reader = reader.option("maxOffsetsPerTrigger", str(options["scan.max-offsets-per-trigger"]))
    if options.get("scan.poll-timeout"):
        reader = reader.option("kafkaConsumer.pollTimeoutMs", str(options["scan.poll-timeout"]))
    reader = reader.options(**({"startingOffsets": "earliest"} if ctx.offline else starting_offsets(spark, table, options)))
    df = reader.load()

    value_fmt_name = options.get("value.format") or options.get("format")
    value_fmt_option = "value.format" if options.get("value.format") else "format"
    value_fmt = format_for(value_fmt_name, table=table, option=value_fmt_option)
    prefix = "value." if options.get("value.format") else ""
    value_cols = [c.name for c in table.physical_columns
                  if not (options.get("value.fields-include") == "EXCEPT_KEY" and c.name in key_cols)]
    value = value_fmt.decode(df["value"], physical_schema(table, value_cols),
                             format_options(options, f"{prefix}{value_fmt.name}."))
    key = None
    if key_cols:
        key_fmt = format_for(options["key.format"], table=table, option="key.format")
        key_prefix = options.get("key.fields-prefix", "")
        key_schema = physical_schema(table, key_cols, strip_prefix=key_prefix)
        key = key_fmt.decode(df["key"], key_schema, format_options(options, f"key.{key_fmt.name}."))
    return df, value, key


def metadata_columns(df, table) -> dict[str, Any]:
    """Column name → expression for each METADATA column, from Spark's Kafka columns."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType, StringType, _parse_datatype_string

    out = {}
    for col in table.columns:
        if col.kind != "metadata":
            continue
        source = METADATA_KEYS[col.metadata_key or col.name]
        expr = df[source]
        if source == "headers":
            expr = F.map_from_entries(F.coalesce(df["headers"], F.array()))
            declared = _parse_datatype_string(col.spark_type)
            if isinstance(declared, MapType) and isinstance(declared.valueType, StringType):
                expr = F.transform_values(expr, lambda _k, v: v.cast("string"))
        elif source == "timestampType":
            expr = F.when(df["timestampType"] == 0, "CreateTime").when(df["timestampType"] == 1, "LogAppendTime").otherwise("NoTimestampType")
        out[col.name] = expr.cast(col.spark_type)
    return out


def position(df):
    """A human-readable record position for errors and dead letters."""
    from pyspark.sql import functions as F

    return F.concat(F.lit("topic "), df["topic"], F.lit(" partition "), df["partition"].cast("string"),
                    F.lit(" offset "), df["offset"].cast("string"))


def sequence(df):
    """(major, minor) that orders records of one key: partition, then offset."""
    from pyspark.sql import functions as F

    return F.lpad(df["partition"].cast("string"), 6, "0"), df["offset"]


# --------------------------------------------------------------------------- write

def encoded_record(df, table, options, *, key_cols: list[str], value_null=None):
    """Select Kafka's key/value(/headers) columns from a DataFrame of table rows.

    ``value_null``: a boolean column; where true the value is NULL (a tombstone).
    """
    from pyspark.sql import functions as F

    from job.connectors.registry import format_for
    from job.formats.base import format_options

    value_fmt_name = options.get("value.format") or options.get("format")
    prefix = "value." if options.get("value.format") else ""
    value_fmt = format_for(value_fmt_name, table=table,
                           option="value.format" if options.get("value.format") else "format")
    physical = [c.name for c in table.physical_columns
                if not (options.get("value.fields-include") == "EXCEPT_KEY" and c.name in key_cols)]
    vopts = format_options(options, f"{prefix}{value_fmt.name}.")
    value = value_fmt.encode(df[physical[0]] if value_fmt.single_column else F.struct(*[df[c] for c in physical]), vopts)
    if value_null is not None:
        value = F.when(value_null, F.lit(None)).otherwise(value)
    cols = [value.cast("binary").alias("value")]
    if key_cols:
        key_fmt = format_for(options["key.format"], table=table, option="key.format")
        strip = options.get("key.fields-prefix", "")
        kopts = format_options(options, f"key.{key_fmt.name}.")
        if key_fmt.single_column:
            key = key_fmt.encode(df[key_cols[0]], kopts)
        else:
            key = key_fmt.encode(F.struct(*[df[c].alias(c[len(strip):] if strip and c.startswith(strip) else c)
                                            for c in key_cols]), kopts)
        cols.append(key.cast("binary").alias("key"))
    for col in table.columns:
        if col.kind == "metadata" and not col.virtual and (col.metadata_key or col.name) in ("headers", "properties"):
            cols.append(F.transform(F.map_entries(df[col.name]),
                                    lambda e: F.struct(e["key"].alias("key"), e["value"].cast("binary").alias("value"))).alias("headers"))
    return df.select(*cols)


def write_options(options) -> dict[str, str]:
    return {**spark_kafka_options(options), "topic": topics(options)[0]}
