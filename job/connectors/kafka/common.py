"""What the 'kafka' and 'upsert-kafka' connectors share: their common options, the
checks of a table's key and metadata columns, and the hooks the run asks (the brokers to
reach, the failure that means none answers, what a source's offsets refer to).

Reading and writing records is in :mod:`job.connectors.kafka.records`; the questions
Spark's connector cannot answer (is the broker there, which partitions exist, what did a
consumer group commit) in :mod:`job.connectors.kafka.admin`.
"""
from __future__ import annotations

from typing import Any, Mapping

from job.connectors.base import Endpoint, Option, addresses, columns_named, split_list
from job.options import table_error

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
    Option("scan.max-offsets-per-trigger", "int",
           description="Upper bound of records read per micro-batch (Spark's maxOffsetsPerTrigger): a backlog is "
                       "read in bounded batches. Default: as many of the table's rows as fit in the execution "
                       "memory of Spark's executors, at Spark's own estimate of a row's size (docs/tuning.md)."),
    Option("scan.min-offsets-per-trigger", "int", default=5_000,
           description="A running query's micro-batch waits for this many new records (over all partitions) or "
                       "for 'scan.max-trigger-delay', whichever comes first (Spark's minOffsetsPerTrigger): a slow "
                       "stream is read about once a second rather than in batches back to back, at a fraction of "
                       "the CPU. A query reading several such tables waits for this many over all of them: each "
                       "waits for its share. 0: no wait. Not under --once or for a bounded table."),
    Option("scan.max-trigger-delay", "duration", default=1_000,
           description="The longest a micro-batch waits for 'scan.min-offsets-per-trigger' records."),
    Option("scan.bounded.mode", "enum", default="unbounded", choices=("unbounded", "latest-offset"),
           description="'latest-offset': the table ends at the offsets it finds when the query starts, and a "
                       "pipeline whose every source ends runs to completion, as Flink's bounded sources do."),
    Option("scan.poll-timeout", "duration", description="Kafka consumer poll timeout."),
    Option("sink.delivery-guarantee", "enum", default="at-least-once", choices=("at-least-once", "none"),
           description="Spark's Kafka sink is at-least-once; upsert sinks are made exact by idempotent keys."),
)


def startup_options(default: str, description: str) -> tuple[Option, ...]:
    """'scan.startup.*': where a new query starts (each connector has its own default)."""
    return (
        Option("scan.startup.mode", "enum", default=default,
               choices=("earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets"),
               description=description),
        Option("scan.startup.timestamp-millis", "int", description="Start offset by record timestamp (mode 'timestamp')."),
        Option("scan.startup.specific-offsets", description="'partition:0,offset:42;partition:1,offset:300' "
                                                            "(mode 'specific-offsets')."),
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


def min_records_per_batch(options: Mapping[str, Any]) -> int:
    """How many new records a running query's micro-batch waits for from this table
    ('scan.min-offsets-per-trigger'; 0: none). A bounded table is read to its end: none."""
    return 0 if bounded(options) else int(options.get("scan.min-offsets-per-trigger") or 0)


def waits_for_records(bound) -> bool:
    return min_records_per_batch(bound.options) > 0


def topics(options: Mapping[str, Any]) -> list[str]:
    return split_list(options.get("topic", ""))


def key_columns(table, options) -> list[str]:
    """Columns carried by the record key ('key.fields'; upsert-kafka's is its PRIMARY KEY)."""
    if options.get("key.fields"):
        return columns_named(table, split_list(options["key.fields"]))
    return []


def check_columns(table, options, role: str, *, key_cols: list[str]) -> None:
    """Schema-level checks shared by both connectors; raises PipelineError."""
    from job.connectors.registry import format_for

    def fail(msg, option=None, hint=None):
        raise table_error(table, msg, option=option, hint=hint)

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


# --------------------------------------------------------------------------- hooks

BOOTSTRAP = "properties.bootstrap.servers"
DEFAULT_PORT = 9092


def endpoints(bound) -> list[Endpoint]:
    """The brokers: Kafka's own clients retry an unreachable one until their timeouts
    expire, so the run checks them first."""
    value = bound.options.get(BOOTSTRAP)
    return [Endpoint(BOOTSTRAP, value, addresses(value, DEFAULT_PORT), "broker")] if value else []


def is_unreachable(text: str) -> bool:
    # What Spark's Kafka source and sink report when no broker answers at all.
    return "Failed to construct kafka" in text


def source_identity(bound) -> dict[str, Any]:
    """The topic(s) and the value format: offsets of other topics mean nothing here."""
    return {k: bound.options[k] for k in ("topic", "topic-pattern", "format", "value.format") if k in bound.options}


# The hooks both Kafka connectors declare.
HOOKS = {"endpoints": endpoints, "is_unreachable": is_unreachable, "source_identity": source_identity,
         "waits_for_records": waits_for_records}
