"""The delta connector as a source: the read options of Delta's Flink source (checked as
its builders check them, in its words), the declared columns against the table's Delta
schema, and the stream (job.connectors.delta.source reads it).

In Flink these options are "job-specific": Delta's catalog takes them only in an OPTIONS
hint (``SELECT … FROM t /*+ OPTIONS('mode' = 'streaming') */``). Both the hint and the
WITH clause are accepted here.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Mapping

from job.connectors.base import APPEND, CHANGELOG, Option, SourceStream
from job.options import table_error

READ_OPTIONS = (
    Option("mode", default="batch", description="'batch' (Flink's default): read the table at one version and "
           "end; 'streaming': read it, then every new commit (case-insensitive)."),
    Option("versionAsOf", "int", description="Batch: read this version of the table (time travel)."),
    Option("timestampAsOf", description="Batch: read the latest version committed at or before this time "
           "('2022-02-24', '2022-02-24 04:55:00[.001]', UTC)."),
    Option("startingVersion", description="Streaming: read only the changes from this version on (inclusive), "
           "a non-negative number or 'latest', without the table's contents before it."),
    Option("startingTimestamp", description="Streaming: read only the changes from the first version committed "
           "at or after this time (as 'timestampAsOf')."),
    Option("updateCheckIntervalMillis", "int", default=5000,
           description="Streaming: how often the table is looked at for new commits, in milliseconds."),
    Option("updateCheckDelayMillis", "int", default=1000, description="Streaming: the delay of the first look "
           "for new commits (accepted; the first micro-batch reads what the table has when the query starts)."),
    Option("ignoreDeletes", "bool", default=False, description="Streaming: pass over commits that only remove "
           "data (instead of failing)."),
    Option("ignoreChanges", "bool", default=False, description="Streaming: pass over commits that rewrite data "
           "(MERGE, UPDATE, DELETE), reading their rewritten files' rows again; includes 'ignoreDeletes'."),
    Option("parquetBatchSize", "int", default=2048, description="Rows per record batch read from a Parquet file."),
    Option("readChangeFeed", "bool", default=False, description="Streaming (Delta's reader option; Flink's "
           "connector has none): read the table's change data feed as a changelog (+I/-U/+U/-D); the table "
           "needs 'delta.enableChangeDataFeed'."),
)

BATCH_ONLY = ("versionAsOf", "timestampAsOf")
STREAMING_ONLY = ("startingVersion", "startingTimestamp", "updateCheckIntervalMillis", "updateCheckDelayMillis",
                  "ignoreDeletes", "ignoreChanges", "readChangeFeed")

_TIMESTAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?Z?$")


def timestamp_ms(text: str) -> int:
    """A date or date-time option value (Delta's Flink formats, read as UTC) in epoch ms."""
    m = _TIMESTAMP.match(text.strip())
    if not m:
        raise ValueError(text)
    day = datetime.strptime(m.group(1), "%Y-%m-%d")
    hh, mm, ss = (int(g or 0) for g in m.group(2, 3, 4))
    frac = int(((m.group(5) or "") + "000")[:3])
    value = day.replace(hour=hh, minute=mm, second=ss, tzinfo=timezone.utc)
    return int(value.timestamp() * 1000) + frac


def shown_name(table) -> str:
    """The table's name as the pipeline writes it: a scan with an OPTIONS hint reads a copy
    registered under a name made from the hint's place (job.sql.flink.hints.synthetic_name),
    which means nothing to the reader of an error."""
    return table.name.split("__options_")[0]


def reads_change_feed(table) -> bool:
    """Is the table read as its change feed (a changelog)? From its raw options, as the
    table's changelog mode is known before they are typed."""
    options = getattr(table, "options", None) or {}
    return str(options.get("readChangeFeed", "false")).strip().lower() == "true"


def check_read(table, options: Mapping[str, Any]) -> None:
    """The read options, checked as Delta's source builders check them."""
    def fail(message, option, hint=None):
        raise table_error(table, f"table '{shown_name(table)}': {message}", option=option, hint=hint)

    mode = str(options.get("mode")).lower()
    if mode not in ("batch", "streaming"):
        fail(f"'mode' = '{options.get('mode')}': must be 'batch' or 'streaming'", "mode")
    used = [k for k in table.options if k in BATCH_ONLY + STREAMING_ONLY]
    wrong = BATCH_ONLY if mode == "streaming" else STREAMING_ONLY
    for key in used:
        if key in wrong:
            fail(f"Used inapplicable option for source configuration: '{key}' applies to 'mode' = "
                 f"'{'batch' if mode == 'streaming' else 'streaming'}' only", key,
                 hint=f"leave it out, or set 'mode' = '{'batch' if mode == 'streaming' else 'streaming'}'")
    for pair in (BATCH_ONLY, ("startingVersion", "startingTimestamp")):
        if all(options.get(k) is not None for k in pair):
            fail(f"Used mutually exclusive options for Source definition. Invalid options [{','.join(pair)}]",
                 pair[1])
    for key in ("versionAsOf", "updateCheckIntervalMillis", "updateCheckDelayMillis", "parquetBatchSize"):
        if options.get(key) is not None and options[key] < 0:
            fail(f"'{key}' = '{options[key]}' must be a non-negative number", key)
    start = options.get("startingVersion")
    if start is not None and not (str(start).lower() == "latest" or re.fullmatch(r"\d+", str(start))):
        fail(f"Illegal value used for [startingVersion] option. Expected values are non-negative integers or "
             f"\"latest\" keyword (case insensitive). Used value was [{start}]", "startingVersion")
    for key in ("timestampAsOf", "startingTimestamp"):
        if options.get(key) is not None:
            try:
                timestamp_ms(str(options[key]))
            except ValueError:
                fail(f"Illegal value used for [{key}] option. Expected values are date/datetime String formats "
                     f"('2022-02-24', '2022-02-24 04:55:00', '2022-02-24T04:55:00.001Z'). Used value was "
                     f"[{options[key]}]", key)


def read_spec(table, options: Mapping[str, Any]) -> dict:
    from job.connectors.delta import local_path

    start = options.get("startingVersion")
    return {"path": local_path(options), "table": shown_name(table),
            "streaming": str(options.get("mode")).lower() == "streaming",
            "cdf": bool(options.get("readChangeFeed")),
            "version_as_of": options.get("versionAsOf"),
            "timestamp_as_of": timestamp_ms(options["timestampAsOf"]) if options.get("timestampAsOf") else None,
            "timestamp_as_of_text": options.get("timestampAsOf"),
            "starting_version": None if start is None else str(start).lower(),
            "starting_ts": timestamp_ms(options["startingTimestamp"]) if options.get("startingTimestamp") else None,
            "starting_ts_text": options.get("startingTimestamp"),
            "ignore_changes": bool(options.get("ignoreChanges")), "ignore_deletes": bool(options.get("ignoreDeletes")),
            "check_s": options["updateCheckIntervalMillis"] / 1000.0, "batch_size": options["parquetBatchSize"]}


# Declared Spark type → the Delta types whose values it holds.
_HOLDS = {"tinyint": {"byte"}, "smallint": {"byte", "short"}, "int": {"byte", "short", "integer"},
          "bigint": {"byte", "short", "integer", "long"}, "float": {"float"}, "double": {"float", "double"},
          "string": {"string"}, "boolean": {"boolean"}, "binary": {"binary"}, "date": {"date"},
          "timestamp": {"timestamp", "timestamp_ntz"}, "timestamp_ntz": {"timestamp", "timestamp_ntz"}}


def holds(spark_type: str, delta_type) -> bool:
    t = spark_type.lower().replace(" ", "")
    if not isinstance(delta_type, str):
        return False  # struct, array, map: not read yet
    if t.startswith(("varchar(", "char(")):
        t = "string"
    declared, stored = re.fullmatch(r"decimal\((\d+),(\d+)\)", t), re.fullmatch(r"decimal\((\d+),(\d+)\)", delta_type)
    if declared:
        return bool(stored) and stored.group(2) == declared.group(2) and int(stored.group(1)) <= int(declared.group(1))
    return delta_type in _HOLDS.get(t, ())


def schema_problem(fields: list, cols) -> str | None:
    """Why the Delta schema's ``fields`` (its JSON) cannot be read as the declared columns."""
    by_lower = {f["name"].lower(): f for f in fields}
    for col in cols:
        field = by_lower.get(col.name.lower())
        if field is None:
            return f"it has no column '{col.name}' (its columns: {', '.join(f['name'] for f in fields)})"
        if not holds(col.spark_type, field["type"]):
            shown = field["type"] if isinstance(field["type"], str) else field["type"].get("type")
            return f"its column '{field['name']}' is Delta {shown}, which the declared {col.flink_type} cannot hold"
    return None


def create_source(ctx) -> SourceStream:
    import json

    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from job.connectors.delta import source
    from job.connectors.rows import clean_records, physical_schema, table_frame

    table, options = ctx.table, ctx.options
    spec = read_spec(table, options)
    cols = [c for c in table.columns if c.is_physical]
    spec["schema"] = []
    if not ctx.offline:
        spec["schema"] = _check_table(table, options, spec, cols)
    try:
        spec["partitions"] = max(1, ctx.spark.sparkContext.defaultParallelism)
    except Exception:  # no SparkContext in this client (Spark Connect)
        spec["partitions"] = 4
    schema = physical_schema(table)
    if spec["cdf"]:
        schema = StructType(schema.fields + [StructField(source.KIND, StringType()),
                                             StructField(source.SEQ_MAJOR, StringType()),
                                             StructField(source.SEQ_MINOR, LongType())])
    ctx.spark.dataSource.register(source.data_source())  # registering again replaces it
    df = ctx.spark.readStream.format(source.DATA_SOURCE_NAME).schema(schema).option("spec", json.dumps(spec)).load()
    control = clean_records(F.lit(f"delta table {options['table-path']}"))
    if spec["cdf"]:
        control = {name: F.col(name) for name in (source.KIND, source.SEQ_MAJOR, source.SEQ_MINOR)} | control
    frame = table_frame(df, table, physical={c.name: F.col(f"`{c.name}`") for c in cols}, metadata={},
                        control=control)
    return SourceStream(frame, CHANGELOG if spec["cdf"] else APPEND, bounded=not spec["streaming"])


def _check_table(table, options, spec: dict, cols) -> list:
    """Refuse, before anything runs, a path without a Delta table, columns it cannot give,
    features not read here, and a start the history does not have. Returns the schema's
    (name, type) pairs, which a stream keeps reading."""
    import json

    from deltalake import DeltaTable

    from job.connectors.delta import source

    path = options["table-path"]

    def fail(message, option="table-path", hint=None):
        raise table_error(table, f"Delta table '{path}' cannot be read as table '{shown_name(table)}': {message}",
                          option=option, hint=hint)

    if not DeltaTable.is_deltatable(spec["path"]):
        fail("the directory holds no Delta table (no _delta_log)", hint="check 'table-path'")
    current = DeltaTable(spec["path"])
    fields = json.loads(current.schema().to_json())["fields"]
    problem = schema_problem(fields, cols)
    if problem:
        fail(problem, hint="declare the Delta table's columns with types that hold them")
    config = current.metadata().configuration or {}
    if config.get("delta.columnMapping.mode", "none") != "none":
        fail(f"it uses column mapping ('delta.columnMapping.mode' = '{config['delta.columnMapping.mode']}'), which "
             "the delta connector does not read yet")
    if spec["cdf"] and str(config.get("delta.enableChangeDataFeed", "false")).lower() != "true":
        fail("'readChangeFeed' needs the table's change data feed, and the table does not set "
             "'delta.enableChangeDataFeed' = 'true'", option="readChangeFeed",
             hint="enable it on the table (ALTER TABLE … SET TBLPROPERTIES), or leave out 'readChangeFeed'")
    try:
        source.initial_position(current, spec)
        if not spec["streaming"]:
            source.bounded_version(current, spec)
    except source.ReadError as exc:
        at = next((k for k in ("versionAsOf", "timestampAsOf", "startingVersion", "startingTimestamp")
                   if k in table.options), "table-path")
        raise table_error(table, f"table '{shown_name(table)}' (Delta table '{path}'): {exc}", option=at) from None
    return [[f["name"], f["type"]] for f in fields]


def source_identity(bound) -> dict:
    """A checkpoint's offsets are versions of one Delta table."""
    from job.connectors.delta import local_path

    return {"table-path": local_path(bound.options)}
