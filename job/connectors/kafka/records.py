"""Reading a topic with Spark's own Kafka connector (spark-sql-kafka-0-10), decoding key
and value into the table's columns with its metadata columns, and encoding rows into
Kafka records for writing.
"""
from __future__ import annotations

from typing import Any

from job.connectors.kafka.admin import check_reachable, ensure_topics, starting_offsets
from job.connectors.kafka.common import METADATA_KEYS, min_records_per_batch, spark_kafka_options, topics
from job.connectors.registry import format_for
from job.connectors.rows import physical_schema
from job.formats.base import decoded_once, format_options


def value_format(table, options, offline: bool = False):
    """(format, its options) of the record value: 'value.format' with its options under
    'value.<format>.', or 'format' with them under '<format>.'."""
    option = "value.format" if options.get("value.format") else "format"
    fmt = format_for(options.get(option), table=table, option=option)
    return fmt, _with_context(fmt, table, options, "value",
                              format_options(options, f"{'value.' if option == 'value.format' else ''}{fmt.name}."),
                              offline)


def key_format(table, options, offline: bool = False):
    """(format, its options) of the record key ('key.format')."""
    fmt = format_for(options["key.format"], table=table, option="key.format")
    return fmt, _with_context(fmt, table, options, "key", format_options(options, f"key.{fmt.name}."), offline)


def _with_context(fmt, table, options, part: str, fopts: dict, offline: bool) -> dict:
    """A format that asks for it (avro-confluent) learns the table, the record part and
    the topics (Flink's default registry subject is '<topic>-<part>'), and whether the
    run is a dry run that contacts no external system."""
    if fmt.context:
        fopts = {**fopts, "@format": fmt.name, "@table": table.name, "@part": part, "@offline": offline,
                 "@topics": [] if options.get("topic-pattern") else topics(options)}
    return fopts


def value_columns(table, options, key_cols) -> list[str]:
    """The physical columns in the record value (without the key's under 'EXCEPT_KEY')."""
    except_key = options.get("value.fields-include") == "EXCEPT_KEY"
    return [c.name for c in table.physical_columns if not (except_key and c.name in key_cols)]


def key_field(column: str, prefix: str) -> str:
    """A key column's field name in the record key: 'key.fields-prefix' removed."""
    return column[len(prefix):] if prefix and column.startswith(prefix) else column


# How long a fetch at the end of a partition's data waits for more (Kafka's default 500 ms).
# A micro-batch reads an offset range that is already in the log, so the wait only delays
# the batch that reaches the end of what was written: the last batch of a stream whose
# producer stopped took 1.8 s instead of 0.4 s (three topics, 500 ms per partition read in
# turn), and a bounded run ended that much later. A table's 'properties.fetch.max.wait.ms'
# wins.
FETCH_MAX_WAIT_MS = "10"

# Records one poll of the consumer returns (Kafka's default 500). Spark's reader asks the
# broker for the partition's earliest and latest offsets after every poll (two round trips),
# so with 500 a backlog paid them every 500 records: the count over a 5M-record upsert topic
# took 21.8 s, with 5,000 18.1 s (interleaved pairs; 20,000 and 100,000 no faster, since a
# fetch returns 1 MB per partition by default). What a poll returns was fetched already, so
# memory stays bounded by the fetch sizes. A table's 'properties.max.poll.records' wins.
MAX_POLL_RECORDS = "10000"


def consumer_options(options) -> dict[str, str]:
    """Spark's Kafka source options for the table: its client properties, and ours."""
    return {"kafka.fetch.max.wait.ms": FETCH_MAX_WAIT_MS, "kafka.max.poll.records": MAX_POLL_RECORDS,
            **spark_kafka_options(options)}


def batch_wait(options, *, once: bool, shared_by: int = 1) -> dict[str, str]:
    """Spark's options that make a running query's batch wait for enough records.

    Why: without a wait a batch starts as soon as the last one ends, and a batch costs
    about the same CPU for ten records as for thousands (planning, tasks, commits). The
    seed count at 1,000 events/s ran five batches a second and used 7.4 times Flink's CPU
    per event; waiting for 5,000 records or 1 s makes it about one, while a faster stream
    still fills its batches at once. Not under --once (the backlog is read to its end) or
    for a bounded table, and never above the table's upper bound of a batch.

    A query that reads several such tables waits for the minimum over all of them: each
    table waits for its share (``shared_by`` tables). Spark holds each source's records
    back until that source alone has its minimum or waited its delay, so with the whole
    minimum each, a table read at a few thousand records a second waited its full delay
    while the others filled batch after batch: the 3-way join at 10,000 events/s (half of
    them users, a quarter each colours and cheeses) had p50 / p99 883 / 1,592 ms, and
    501 / 1,114 ms with a third of the minimum each (at 35% more CPU per event, batches
    back to back). At 1,000 events/s no table reaches its share within the delay, so
    batches stay about one a second."""
    least = min_records_per_batch(options)
    most = options.get("scan.max-offsets-per-trigger")
    if once or least <= 0:
        return {}
    least = -(-least // max(1, shared_by))
    if most:
        least = min(least, int(most))
    return {"minOffsetsPerTrigger": str(least), "maxTriggerDelay": f"{int(options['scan.max-trigger-delay'])}ms"}


# Spark's memory manager keeps this much of an executor's heap for itself (UnifiedMemoryManager's
# RESERVED_SYSTEM_MEMORY_BYTES); execution and storage share spark.memory.fraction of the rest.
_SPARK_RESERVED_BYTES = 300 << 20
# An external sorter's own cost per record beside the row: a pointer and a key prefix (two longs).
_SORTER_BYTES_PER_RECORD = 16


def records_per_batch(spark, table) -> int:
    """The default upper bound of records per micro-batch: as many of the table's rows as fit
    in the executors' execution memory, at Spark's own estimate of a row's size.

    Why memory: each stateful operator sorts its batch by key before it runs (Spark's
    TransformWithState asks for that order), and a sort holds the rows of its task in
    execution memory, spilling to disk what does not fit. A batch that fits is sorted in
    memory; a backlog larger than that is read in batches of that size rather than spilled
    in one. A row's size is Spark's ``defaultSize`` of the table's columns (what its planner
    assumes for a row), plus the sorter's own cost per record."""
    jvm = spark._jvm
    conf = spark.sparkContext.getConf()
    if spark.sparkContext.master.startswith("local"):
        heap = int(jvm.java.lang.Runtime.getRuntime().maxMemory())
        executors = 1
    else:
        heap = int(jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes(conf.get("spark.executor.memory", "1g")))
        executors = max(1, int(conf.get("spark.executor.instances", "1")))
    fraction = float(conf.get("spark.memory.fraction", "0.6"))
    execution = max(heap - _SPARK_RESERVED_BYTES, heap // 2) * fraction * executors
    row = jvm.org.apache.spark.sql.types.DataType.fromJson(physical_schema(table).json()).defaultSize()
    return max(1, int(execution // (int(row) + _SORTER_BYTES_PER_RECORD)))


def read_topic(ctx, *, key_cols: list[str]):
    """The raw Kafka stream plus decoded key/value structs.

    Returns (df, value_decoded, key_decoded_or_None); df keeps Spark's Kafka columns.
    """
    spark, table, options = ctx.spark, ctx.table, ctx.options
    if not ctx.offline:
        check_reachable(spark, options)
        if not options.get("topic-pattern"):
            ensure_topics(spark, options, topics(options))
    reader = spark.readStream.format("kafka").options(**consumer_options(options))
    if options.get("topic-pattern"):
        reader = reader.option("subscribePattern", options["topic-pattern"])
    else:
        reader = reader.option("subscribe", ",".join(topics(options)))
    # Spark turns every record's headers into an array of structs when asked for them:
    # only a table that declares a headers column asks.
    if reads_headers(table):
        reader = reader.option("includeHeaders", "true")
    reader = reader.option("failOnDataLoss", "false")
    # Real-time mode refuses per-trigger offset limits ('not compatible with real time mode').
    if not ctx.real_time:
        most = options.get("scan.max-offsets-per-trigger") or records_per_batch(spark, table)
        reader = reader.option("maxOffsetsPerTrigger", str(most))
        options = {**options, "scan.max-offsets-per-trigger": most}
        reader = reader.options(**batch_wait(options, once=ctx.once, shared_by=ctx.waiting_tables))
    if options.get("scan.poll-timeout"):
        reader = reader.option("kafkaConsumer.pollTimeoutMs", str(options["scan.poll-timeout"]))
    reader = reader.options(**({"startingOffsets": "earliest"} if ctx.offline else starting_offsets(spark, table, options)))
    df = reader.load()

    value_fmt, value_opts = value_format(table, options, ctx.offline)
    value = value_fmt.decode(df["value"], physical_schema(table, value_columns(table, options, key_cols)), value_opts)
    df, value = decoded_once(df, value, "__value_decoded")
    key = None
    if key_cols:
        key_fmt, key_opts = key_format(table, options, ctx.offline)
        key_schema = physical_schema(table, key_cols, strip_prefix=options.get("key.fields-prefix", ""))
        key = key_fmt.decode(df["key"], key_schema, key_opts)
        df, key = decoded_once(df, key, "__key_decoded")
    return df, value, key


def reads_headers(table) -> bool:
    """Does a METADATA column of the table read the records' headers?"""
    return any(col.kind == "metadata" and METADATA_KEYS.get(col.metadata_key or col.name) == "headers"
               for col in table.columns)


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

def encoded_record(df, table, options, *, key_cols: list[str], value_null=None, offline: bool = False, sign=None):
    """Select Kafka's key/value(/headers) columns from a DataFrame of table rows.

    ``value_null``: a boolean column; where true the value is NULL (a tombstone).
    ``offline``: a dry run (formats contact no external system).
    ``sign``: a format that writes changes (debezium-avro-confluent) writes each row as
    the Debezium event of its sign (an insert where none is given).
    """
    from pyspark.sql import functions as F

    from job.connectors.rows import debezium_change

    value_fmt, vopts = value_format(table, options, offline)
    physical = value_columns(table, options, key_cols)
    value_row = df[physical[0]] if value_fmt.single_column else F.struct(*[df[c] for c in physical])
    if value_fmt.writes_changes:
        value_row = debezium_change(value_row, F.lit(1) if sign is None else sign)
    value = (value_fmt.encode(value_row, vopts, schema=physical_schema(table, physical)) if value_fmt.needs_schema
             else value_fmt.encode(value_row, vopts))
    if value_null is not None:
        value = F.when(value_null, F.lit(None)).otherwise(value)
    cols = [value.cast("binary").alias("value")]
    if key_cols:
        key_fmt, kopts = key_format(table, options, offline)
        strip = options.get("key.fields-prefix", "")
        if key_fmt.single_column:
            key = key_fmt.encode(df[key_cols[0]], kopts)
        else:
            key_row = F.struct(*[df[c].alias(key_field(c, strip)) for c in key_cols])
            key = (key_fmt.encode(key_row, kopts, schema=physical_schema(table, key_cols, strip_prefix=strip))
                   if key_fmt.needs_schema else key_fmt.encode(key_row, kopts))
        cols.append(key.cast("binary").alias("key"))
    for col in table.columns:
        if col.kind == "metadata" and not col.virtual and (col.metadata_key or col.name) in ("headers", "properties"):
            cols.append(F.transform(F.map_entries(df[col.name]),
                                    lambda e: F.struct(e["key"].alias("key"), e["value"].cast("binary").alias("value"))).alias("headers"))
    return df.select(*cols)


# Kafka 4's producer default (KIP-1030); the kafka-clients 3.9 of Spark's connector waits 0 ms.
SINK_LINGER_MS = "5"


def write_options(options) -> dict[str, str]:
    """Spark's Kafka sink options for the table: its client properties, the topic.

    The producer waits up to 5 ms to fill a request (the table's 'properties.linger.ms'
    wins): without it, each record a task wrote went in its own request as soon as the
    producer's thread woke. The seed count's sink at 1,000 events/s, one run each: the
    producer's thread 0.78 → under 0.23 CPU-s in 50 s, the process 19.4 → 18.3 CPU-s."""
    return {"kafka.linger.ms": SINK_LINGER_MS, **spark_kafka_options(options), "topic": topics(options)[0]}
