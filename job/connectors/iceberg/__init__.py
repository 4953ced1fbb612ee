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

**Not yet a source**: reading an Iceberg table (Flink's 'streaming', 'monitor-interval',
'start-snapshot-id') is refused by name when a table is read from.
"""
from __future__ import annotations

from typing import Any, Mapping

from job.connectors.base import APPEND, UPSERT, Connector, Option
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
)

CATALOG_KEYS = ("catalog-name", "catalog-type", "catalog-impl", "catalog-database", "catalog-table", "warehouse",
                "uri")

# Spark type (as the DDL spells it) → what Iceberg stores; anything else is refused by name.
SCALAR_TYPES = ("boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "string", "binary", "date",
                "timestamp", "timestamp_ntz")


def storable(spark_type: str) -> bool:
    t = spark_type.lower()
    return t in SCALAR_TYPES or t.startswith("decimal(") or t.startswith("varchar(") or t.startswith("char(")


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
    if upsert_enabled(options) and not table.primary_key:
        raise table_error(table, f"table '{table.name}' sets 'write.upsert.enabled' but has no PRIMARY KEY: "
                                 "upserts need the key's columns", option="write.upsert.enabled",
                          hint="declare PRIMARY KEY (...) NOT ENFORCED")
    if upsert_enabled(options) and options.get("format-version") == 1:
        raise table_error(table, f"table '{table.name}': format version 1 does not support upserts "
                                 "('write.upsert.enabled')", option="format-version", hint="use 'format-version' = '2'")
    if table.partitioned_by:
        raise table_error(table, f"table '{table.name}': PARTITIONED BY is not supported by the iceberg connector "
                                 "yet (it writes unpartitioned tables)", hint="leave out PARTITIONED BY")
    for col in table.columns:
        if col.kind == "metadata":
            raise table_error(table, f"column '{col.name}' of table '{table.name}': the iceberg connector has no "
                                     "METADATA columns", hint="declare it as a regular column")
        if col.is_physical and not storable(col.spark_type):
            raise table_error(table, f"column '{col.name}' of table '{table.name}' has type {col.flink_type}, which "
                                     "the iceberg connector does not store yet",
                              hint="use a scalar type (STRING, numbers, BOOLEAN, DATE, TIMESTAMP, BYTES)")


def upsert_enabled(options: Mapping[str, Any]) -> bool:
    explicit = options.get("upsert-enabled")
    return bool(options.get("write.upsert.enabled") if explicit is None else explicit)


def table_identifier(table, options: Mapping[str, Any]) -> tuple[str, str]:
    """(database, table) in the Iceberg catalog."""
    return options.get("catalog-database") or DEFAULT_DATABASE, options.get("catalog-table") or table.name


def catalog_table_options(catalog_name: str, catalog_options: Mapping[str, str], database: str,
                          table: str) -> dict[str, str]:
    """The connector options of table ``catalog_name.database.table`` of a catalog made by
    ``CREATE CATALOG catalog_name WITH ('type' = 'iceberg', ...)``: what a CREATE TABLE with
    'connector' = 'iceberg' would say for it. Catalog options ('catalog-type', 'warehouse',
    'uri', 'catalog-impl') pass through unchanged, so one check refuses what cannot run."""
    options = {k: v for k, v in catalog_options.items() if k != "type"}
    options.update({"connector": "iceberg", "catalog-name": catalog_name, "catalog-database": database,
                    "catalog-table": table})
    return options


def _create_sink(ctx):
    from job.connectors.iceberg.sink import IcebergSink
    return IcebergSink(ctx)


CONNECTOR = Connector(
    identifier="iceberg",
    description="An Apache Iceberg table in a Hadoop catalog (Flink's iceberg connector options): append or "
                "upsert sink committed once per micro-batch.",
    options=OPTIONS,
    mode_for=lambda table: UPSERT if table.primary_key else APPEND,
    sink_modes=(APPEND, UPSERT),
    create_sink=_create_sink,
    check=check,
)
