"""iceberg: an Apache Iceberg table as a sink (append or upsert by PRIMARY KEY) and a
source, with the options of Iceberg's Flink connector ('connector' = 'iceberg').

**The writer is pyiceberg, not Iceberg's Spark runtime.** iceberg-spark-runtime 1.12.0,
the newest on Maven Central, is built for Spark 4.1: on Spark 4.2 and 4.3 loading its
catalog fails (``IncompatibleClassChangeError: class SparkView can not implement
org.apache.spark.sql.connector.catalog.View``), so it cannot run here at all. pyiceberg
does not depend on Spark's version. Its commit cost was measured (docs/connectors.md,
"iceberg"): each micro-batch is one Iceberg commit (one new metadata version), and an
upsert batch rewrites the data files that hold its keys (copy-on-write).

**Catalogs.** Flink's ``'catalog-type'`` is ``hive`` (its default), ``hadoop`` or ``rest``.
``hadoop`` runs (:mod:`job.connectors.iceberg.catalog`, a local warehouse); ``hive``,
``rest`` and ``catalog-impl`` are refused by name before anything runs.

**Sink** (:mod:`job.connectors.iceberg.sink`): the table is created in the catalog when
it does not exist, as Flink's connector does, from the declared columns, with the PRIMARY
KEY as its identifier fields and 'format-version' / 'write.upsert.enabled' as table
properties. Each micro-batch is one transaction: the rows of its keys are deleted and
the new rows appended. The snapshot records the writing query and the micro-batch
(``streamsql.sink-id``, ``streamsql.batch-id`` in its summary), and a batch already
recorded is skipped, so a batch replayed after kill -9 is committed once.

**Source** (:mod:`job.connectors.iceberg.source`), with the read options of Iceberg's
Flink source: by default a bounded read of the current snapshot ('snapshot-id',
'as-of-timestamp', or 'start-snapshot-id' / 'end-snapshot-id' for the appends between
two snapshots); with 'streaming' = 'true' the files that append snapshots add, looked
for every 'monitor-interval', from where 'starting-strategy' says, resumed from the
checkpointed snapshot. Overwrite and delete snapshots add nothing to a stream, as in
Flink. Options that change what is read and do not run here (branches, tags, watermark
columns, 'limit') are refused by name; split sizing options are accepted and change only
how files are grouped.
"""
from __future__ import annotations

from typing import Any, Mapping

from job.connectors.base import APPEND, UPSERT, Connector, Option, SourceStream
from job.connectors.iceberg import source
from job.options import table_error

# Flink's default database, which 'catalog-database' defaults to (the current database).
DEFAULT_DATABASE = "default_database"
RUNNABLE_CATALOG_TYPES = ("hadoop",)

OPTIONS = (
    Option("catalog-name", required=True, description="User-specified catalog name (required; the connector has "
           "no default)."),
    Option("catalog-type", "enum", default="hive", choices=("hive", "hadoop", "rest"),
           description="The Iceberg catalog: 'hadoop' (a warehouse directory) runs; 'hive' (Flink's default) and "
                       "'rest' are refused by name."),
    Option("catalog-impl", description="A custom catalog class (refused: Java catalogs do not run here)."),
    Option("catalog-database", default=DEFAULT_DATABASE,
           description="The Iceberg database (namespace); Flink's current database by default."),
    Option("catalog-table", description="The Iceberg table; the CREATE TABLE's name by default."),
    Option("warehouse", description="The warehouse directory of a 'hadoop' catalog (a local path or file: URI)."),
    Option("uri", description="The metastore or REST endpoint of a 'hive' or 'rest' catalog (refused with them)."),
    Option("format-version", "int", default=2,
           description="Table property of a created table: Iceberg format version 1 or 2."),
    Option("write.upsert.enabled", "bool", default=False,
           description="Table property: write inserts and updates as upserts by the PRIMARY KEY."),
    Option("upsert-enabled", "bool", description="Write option overriding 'write.upsert.enabled' for this job."),
    Option("write-format", "enum", default="parquet", choices=("parquet", "orc", "avro"),
           description="Data file format; parquet (orc and avro are refused)."),
    # Read options (Iceberg's FlinkReadOptions), for a table read from.
    Option("streaming", "bool", default=False,
           description="Read the table as a stream of appended snapshots; false (Flink's default): read one "
                       "snapshot and end."),
    Option("monitor-interval", "duration", default=60_000,
           description="How often a streaming read looks for new snapshots."),
    Option("starting-strategy", default=source.FROM_LATEST,
           description="Where a streaming read starts: " + ", ".join(source.STRATEGIES) + " (Flink's default: "
                       "INCREMENTAL_FROM_LATEST_SNAPSHOT, the latest snapshot's appends and all after it)."),
    Option("start-snapshot-id", "int", description="INCREMENTAL_FROM_SNAPSHOT_ID: the first snapshot read "
           "(inclusive); in a bounded read, the appends after it (exclusive) up to 'end-snapshot-id'."),
    Option("start-snapshot-timestamp", "int", description="INCREMENTAL_FROM_SNAPSHOT_TIMESTAMP: read from the "
           "oldest snapshot at or after this time (epoch milliseconds)."),
    Option("end-snapshot-id", "int", description="A bounded incremental read: the last snapshot read (inclusive); "
           "the current one by default."),
    Option("snapshot-id", "int", description="A bounded read of this snapshot (time travel)."),
    Option("as-of-timestamp", "int", description="A bounded read of the newest snapshot at or before this time "
           "(epoch milliseconds)."),
    Option("case-sensitive", "bool", default=False, description="Match column names case-sensitively."),
    Option("max-planning-snapshot-count", "int", description="A streaming read plans at most this many snapshots "
           "per micro-batch."),
    Option("split-size", description="Split sizing (accepted; each micro-batch's files are spread over the "
           "session's parallelism)."),
    Option("split-lookback", description="Split sizing (accepted, as 'split-size')."),
    Option("split-file-open-cost", description="Split sizing (accepted, as 'split-size')."),
    Option("include-column-stats", "bool", description="Load column statistics with each file (accepted; the "
           "rows read do not change)."),
    Option("limit", "int", description="Refused unless -1: the job does not stop a scan after N rows."),
    Option("branch", description="Refused unless 'main': branches are not read here."),
    Option("tag", description="Refused: tags are not read here."),
    Option("start-tag", description="Refused: tags are not read here."),
    Option("end-tag", description="Refused: tags are not read here."),
    Option("max-allowed-planning-failures", "int", description="Refused: a failed planning fails the micro-batch "
           "(the query restarts from its checkpoint)."),
    Option("watermark-column", description="Refused: declare a WATERMARK in the CREATE TABLE instead."),
    Option("watermark-column-time-unit", description="Refused with 'watermark-column'."),
)

CATALOG_KEYS = ("catalog-name", "catalog-type", "catalog-impl", "catalog-database", "catalog-table", "warehouse",
                "uri")

# Spark type (as the DDL spells it) → what Iceberg stores; anything else is refused by name.
SCALAR_TYPES = ("boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "string", "binary", "date",
                "timestamp", "timestamp_ntz")


def storable(spark_type: str) -> bool:
    t = spark_type.lower()
    return t in SCALAR_TYPES or t.startswith("decimal(") or t.startswith("varchar(") or t.startswith("char(")


def check_columns(table, connector: str) -> None:
    """A lake table's columns: no METADATA columns, and only types the Arrow writer stores
    (the iceberg and delta connectors)."""
    for col in table.columns:
        if col.kind == "metadata":
            raise table_error(table, f"column '{col.name}' of table '{table.name}': the {connector} connector has no "
                                     "METADATA columns", hint="declare it as a regular column")
        if col.is_physical and not storable(col.spark_type):
            raise table_error(table, f"column '{col.name}' of table '{table.name}' has type {col.flink_type}, which "
                                     f"the {connector} connector does not store yet",
                              hint="use a scalar type (STRING, numbers, BOOLEAN, DATE, TIMESTAMP, BYTES)")


# --------------------------------------------------------------------------- check

def check(table, options: Mapping[str, Any], role) -> None:
    try:
        import pyiceberg  # noqa: F401 - an extra: pip install 'streamsql[iceberg]'
    except ImportError:
        raise table_error(table, f"the iceberg connector (table '{table.name}') needs the Python package pyiceberg, "
                                 "which is not installed", "connector",
                          "pip install 'streamsql[iceberg]' where the job runs") from None
    kind = options.get("catalog-type")
    if options.get("catalog-impl"):
        raise table_error(table, f"'catalog-impl' = '{options['catalog-impl']}' of table '{table.name}': custom "
                                 "Iceberg catalog classes are not supported", option="catalog-impl",
                          hint="use 'catalog-type' = 'hadoop' with a 'warehouse' directory")
    if kind not in RUNNABLE_CATALOG_TYPES:
        default = "" if "catalog-type" in table.options else " (Flink's default)"
        raise table_error(table, f"'catalog-type' = '{kind}'{default} of table '{table.name}' is not supported: "
                                 "only Iceberg's 'hadoop' catalog runs here", option="catalog-type",
                          hint="set 'catalog-type' = 'hadoop' and 'warehouse' = '<directory>'")
    warehouse = options.get("warehouse")
    if not warehouse:
        raise table_error(table, f"table '{table.name}': a 'hadoop' catalog needs 'warehouse' (its directory)",
                          option="catalog-type")
    from urllib.parse import urlparse
    if urlparse(warehouse).scheme not in ("", "file"):
        raise table_error(table, f"'warehouse' = '{warehouse}' of table '{table.name}': only a local directory "
                                 "(a path or file: URI) is supported for a 'hadoop' catalog", option="warehouse",
                          hint="a Hadoop catalog commits by an atomic rename that object stores do not have")
    if options.get("uri"):
        raise table_error(table, f"'uri' of table '{table.name}' belongs to a 'hive' or 'rest' catalog, not 'hadoop'",
                          option="uri")
    if options.get("format-version") not in (1, 2):
        raise table_error(table, f"'format-version' = '{options.get('format-version')}' of table '{table.name}': "
                                 "1 or 2", option="format-version")
    if options.get("write-format") != "parquet":
        raise table_error(table, f"'write-format' = '{options['write-format']}' of table '{table.name}' is not "
                                 "supported: the iceberg connector writes Parquet", option="write-format")
    if upsert_enabled(options) and not table.primary_key and role != "source":  # a reader ignores it, as Flink's
        raise table_error(table, f"table '{table.name}' sets 'write.upsert.enabled' but has no PRIMARY KEY: "
                                 "upserts need the key's columns", option="write.upsert.enabled",
                          hint="declare PRIMARY KEY (...) NOT ENFORCED")
    if upsert_enabled(options) and options.get("format-version") == 1 and role != "source":
        raise table_error(table, f"table '{table.name}': format version 1 does not support upserts "
                                 "('write.upsert.enabled')", option="format-version", hint="use 'format-version' = '2'")
    if role == "source":
        check_read(table, options)
    if table.partitioned_by and role != "source":
        raise table_error(table, f"table '{table.name}': PARTITIONED BY is not supported by the iceberg connector "
                                 "yet (it writes unpartitioned tables)", hint="leave out PARTITIONED BY")
    check_columns(table, "iceberg")


# Read options that change what is read and do not run here: option → its default.
REFUSED_READ = {"limit": -1, "branch": "main", "tag": None, "start-tag": None, "end-tag": None,
                "max-allowed-planning-failures": None, "watermark-column": None,
                "watermark-column-time-unit": None}
STREAMING_ONLY_BOUNDED = ("snapshot-id", "as-of-timestamp", "end-snapshot-id")


def check_read(table, options: Mapping[str, Any]) -> None:
    """The read options, checked as Iceberg's ScanContext checks them, in its words."""
    def fail(message, option, hint=None):
        raise table_error(table, f"table '{table.name}': {message}", option=option, hint=hint)

    for key, default in REFUSED_READ.items():
        if key in options and options[key] != default:
            fail(f"the Iceberg read option '{key}' is not supported", key,
                 hint="leave it out" + (f" (or set it to '{default}')" if default is not None else ""))
    strategy = str(options.get("starting-strategy")).upper()
    if strategy not in source.STRATEGIES:
        fail(f"'starting-strategy' = '{options.get('starting-strategy')}' is not one of "
             + ", ".join(source.STRATEGIES), "starting-strategy")
    if options.get("streaming"):
        for key in STREAMING_ONLY_BOUNDED:
            if options.get(key) is not None:
                fail(f"Cannot set {key} option for streaming reader", key,
                     hint="these options read a bounded table; leave out 'streaming' = 'true'")
        by_id, by_time = strategy == source.FROM_SNAPSHOT_ID, strategy == source.FROM_SNAPSHOT_TIMESTAMP
        for key, wanted in (("start-snapshot-id", by_id), ("start-snapshot-timestamp", by_time)):
            what = "id" if key.endswith("id") else "timestamp"
            if wanted and options.get(key) is None:
                fail(f"Invalid starting snapshot {what} for {strategy} strategy: null", "starting-strategy",
                     hint=f"set '{key}'")
            if not wanted and options.get(key) is not None:
                fail(f"Invalid starting snapshot {what} for {strategy} strategy: not null", key,
                     hint=f"set 'starting-strategy' = '"
                          f"{source.FROM_SNAPSHOT_ID if by_id or what == 'id' else source.FROM_SNAPSHOT_TIMESTAMP}'")
        return
    pinned = [k for k in ("snapshot-id", "as-of-timestamp", "start-snapshot-id") if options.get(k) is not None]
    if len(pinned) > 1:
        fail(f"'{pinned[0]}' and '{pinned[1]}' cannot both be set", pinned[1])
    if options.get("end-snapshot-id") is not None and options.get("start-snapshot-id") is None:
        fail("'end-snapshot-id' needs 'start-snapshot-id' (a bounded incremental read)", "end-snapshot-id")


def read_spec(table, options: Mapping[str, Any]) -> dict:
    """What the source's reader needs, as JSON."""
    database, name = table_identifier(table, options)
    return {"catalog": options["catalog-name"], "warehouse": options["warehouse"], "database": database,
            "table": name, "streaming": bool(options.get("streaming")),
            "strategy": str(options.get("starting-strategy")).upper(),
            "start_id": options.get("start-snapshot-id"), "start_ts": options.get("start-snapshot-timestamp"),
            "end_id": options.get("end-snapshot-id"), "snapshot_id": options.get("snapshot-id"),
            "as_of": options.get("as-of-timestamp"), "case_sensitive": bool(options.get("case-sensitive")),
            "monitor_s": options["monitor-interval"] / 1000.0,
            "max_snapshots": options.get("max-planning-snapshot-count")}


def upsert_enabled(options: Mapping[str, Any]) -> bool:
    explicit = options.get("upsert-enabled")
    return bool(options.get("write.upsert.enabled") if explicit is None else explicit)


def table_identifier(table, options: Mapping[str, Any]) -> tuple[str, str]:
    """(database, table) in the Iceberg catalog."""
    return options.get("catalog-database") or DEFAULT_DATABASE, options.get("catalog-table") or table.name


# Options of CREATE CATALOG … WITH ('type' = 'iceberg') that are not its tables' options.
CATALOG_ONLY = ("type", "default-database", "property-version", "cache-enabled", "cache.expiration-interval-ms")


def warehouse_table_exists(options: Mapping[str, Any]) -> bool:
    """Does a local Hadoop warehouse hold this table already (its metadata directory)?"""
    import os
    from urllib.parse import urlparse

    warehouse = options.get("warehouse") or ""
    parsed = urlparse(warehouse)
    if options.get("catalog-type") != "hadoop" or parsed.scheme not in ("", "file"):
        return False
    root = parsed.path if parsed.scheme else warehouse
    return os.path.isdir(os.path.join(root, options["catalog-database"], options["catalog-table"], "metadata"))


def warehouse_columns(options: Mapping[str, Any]):
    """The columns and key of a table a local Hadoop warehouse holds (see warehouse_table_exists)."""
    from job.connectors.iceberg.schema import declared_columns
    from job.connectors.iceberg.sink import open_catalog

    table = open_catalog(options).load_table((options["catalog-database"], options["catalog-table"]))
    return declared_columns(table.schema())


def catalog_table_options(catalog_name: str, catalog_options: Mapping[str, str], database: str,
                          table: str) -> dict[str, str]:
    """The connector options of table ``catalog_name.database.table`` of a catalog made by
    ``CREATE CATALOG catalog_name WITH ('type' = 'iceberg', ...)``: what a CREATE TABLE with
    'connector' = 'iceberg' would say for it. Catalog options ('catalog-type', 'warehouse',
    'uri', 'catalog-impl') pass through unchanged, so one check refuses what cannot run."""
    options = {k: v for k, v in catalog_options.items() if k not in CATALOG_ONLY}
    options.update({"connector": "iceberg", "catalog-name": catalog_name, "catalog-database": database,
                    "catalog-table": table})
    return options


def _create_source(ctx) -> SourceStream:
    import json

    from job.connectors.iceberg.schema import verify
    from job.connectors.iceberg.sink import ensure_table, open_catalog
    from job.connectors.rows import clean_records, physical_schema, table_frame
    from pyspark.sql import functions as F

    table, options = ctx.table, ctx.options
    spec = read_spec(table, options)
    cols = [c for c in table.columns if c.is_physical]
    qualified = f"{spec['database']}.{spec['table']}"
    if not ctx.offline:
        catalog = open_catalog(options)
        ensure_table(catalog, table, options, cols)  # Flink's connector creates a missing table too
        current = catalog.load_table((spec["database"], spec["table"]))
        problem = verify(current.schema(), table, cols, writing=False)
        if problem:
            raise table_error(table, f"Iceberg table '{qualified}' in '{options['warehouse']}' cannot be read as "
                                     f"table '{table.name}': {problem}", option="catalog-table",
                              hint="declare the Iceberg table's columns")
        snapshot = current.current_snapshot()
        summary = snapshot.summary.additional_properties if snapshot and snapshot.summary else {}
        scans = (not spec["streaming"] and spec["start_id"] is None) or \
            (spec["streaming"] and spec["strategy"] == source.TABLE_SCAN_THEN_INCREMENTAL)
        if scans and int(summary.get("total-equality-deletes", "0") or 0) > 0:
            raise table_error(table, f"Iceberg table '{qualified}' in '{options['warehouse']}' holds equality delete "
                                     "files (written by Flink's upsert sink), which the iceberg connector cannot "
                                     f"read yet (table '{table.name}')", option="catalog-table",
                              hint="compact the table first (rewrite_data_files in Spark or Flink), or read only "
                                   "its appends ('streaming' = 'true')")
        try:
            source.initial_position(current, spec)
            if not spec["streaming"]:
                source.bounded_snapshot(current, spec)
        except source.ReadError as exc:
            raise table_error(table, f"table '{table.name}' (Iceberg table '{qualified}'): {exc}",
                              option="catalog-table") from None
    try:
        spec["partitions"] = max(1, ctx.spark.sparkContext.defaultParallelism)
    except Exception:  # no SparkContext in this client (Spark Connect)
        spec["partitions"] = 4
    ctx.spark.dataSource.register(source.data_source())  # registering again replaces it
    df = ctx.spark.readStream.format(source.DATA_SOURCE_NAME).schema(physical_schema(table)) \
        .option("spec", json.dumps(spec)).load()
    frame = table_frame(df, table, physical={c.name: F.col(f"`{c.name}`") for c in cols}, metadata={},
                        control=clean_records(F.lit(f"iceberg table {qualified}")))
    return SourceStream(frame, APPEND, bounded=not spec["streaming"])


def source_identity(bound) -> dict:
    """A checkpoint's offsets are snapshot ids of one Iceberg table."""
    database, name = table_identifier(bound.table, bound.options)
    return {"warehouse": bound.options.get("warehouse"), "table": f"{database}.{name}"}


def _create_sink(ctx):
    from job.connectors.iceberg.sink import IcebergSink
    return IcebergSink(ctx)


CONNECTOR = Connector(
    identifier="iceberg",
    description="An Apache Iceberg table in a Hadoop catalog (Flink's iceberg connector options): append or "
                "upsert sink committed once per micro-batch; a bounded or streaming (appends) source.",
    options=OPTIONS,
    mode_for=lambda table: UPSERT if table.primary_key else APPEND,
    # Read, a table is insert-only (Flink's source), whatever its key.
    source_mode=APPEND,
    create_source=_create_source,
    source_identity=source_identity,
    sink_modes=(APPEND, UPSERT),
    create_sink=_create_sink,
    check=check,
)
