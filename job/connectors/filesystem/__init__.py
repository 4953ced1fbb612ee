"""filesystem: a directory of files as a table (Flink's 'filesystem' connector).

Reading uses Spark's streaming file source: each micro-batch picks up the files that
appeared in the directory since the last one, and a restarted query continues from its
checkpoint without reading a file twice. The directory is watched for as long as the
query runs (like Flink's source with 'source.monitor-interval'); with ``--once`` the files
present at start are read and the query ends.

**Writers must move finished files into the directory atomically** (write elsewhere,
then rename): Spark's file source reads a file once, as it is when first listed, so a
file still being written is read half-way and the rest is never seen. Files and
directories whose names start with ``_`` or ``.`` are ignored, which is where in-progress
files of most writers (Flink's ``.part-…``, Spark's ``_temporary``) live. A directory
written by this connector's sink (or any Spark streaming file sink) is read through its
``_spark_metadata`` log, so only committed files are seen.

Text formats (json, csv, raw, debezium-json and other formats that decode a line) are
read line by line and decoded like a Kafka value; formats with a Spark file format
(parquet) are read by Spark directly. ``PARTITIONED BY`` columns are taken from the
``col=value`` directory names, as Flink and Hive lay them out.

Writing is append-only, through Spark's streaming file sink: exactly-once, because the
files of each micro-batch are committed to the ``_spark_metadata`` log together with the
query's checkpoint. Readers other than Spark should ignore files not in that log (or read
only after the query stopped cleanly).

With ``'metastore.table'`` (parquet only) the directory is also a table of Spark's
metastore, and the sink publishes each micro-batch itself, idempotently, instead of
through ``_spark_metadata``, which metastore readers never consult: see
:mod:`job.connectors.filesystem.lake` and :mod:`job.connectors.filesystem.metastore`.
"""
from __future__ import annotations

from job.connectors.base import APPEND, Connector, Option, Sink
from job.connectors.filesystem import metastore
from job.connectors.filesystem.layout import METADATA_KEYS, data_columns, file_format, is_complex
from job.connectors.filesystem.lake import LakeSink
from job.connectors.filesystem.sink import FileSystemSink
from job.connectors.filesystem.source import create_source
from job.options import table_error

OPTIONS = (
    Option("path", required=True, description="The directory: a local path, a file: or hdfs: URI, or a glob."),
    Option("format", required=True,
           description="Format of the files: json, csv, raw, parquet, avro or debezium-json (source only)."),
    Option("source.max-files-per-trigger", "int",
           description="Upper bound of new files read per micro-batch (Spark's maxFilesPerTrigger)."),
    Option("source.max-bytes-per-trigger", "int", default=1 << 30,
           description="Upper bound of the bytes of new files read per micro-batch (Spark's maxBytesPerTrigger; "
                       "at least one file is read): a backlog of files is read in bounded batches. Ignored when "
                       "'source.max-files-per-trigger' is set."),
    Option("metastore.table",
           description="Sink, format 'parquet': also register the directory as this external table "
                       "('db.name') of Spark's metastore, its partitions added after each micro-batch and "
                       "new nullable columns added on restart; query it with spark-sql or the Thrift server."),
    Option("metastore.create-database", "bool", default=True,
           description="Create the database of 'metastore.table' if it does not exist."),
)


# --------------------------------------------------------------------------- check

def check(table, options, role):
    fmt = file_format(table, options)
    for key in ("source.max-files-per-trigger", "source.max-bytes-per-trigger"):
        limit = options.get(key)
        if limit is not None and limit < 1:
            raise table_error(table, f"'{key}' must be at least 1, got {limit}", option=key)
    if role == "sink" and fmt.changelog:
        raise table_error(table, f"the filesystem connector cannot write format '{fmt.name}' (table '{table.name}'): "
                                 "it writes append-only files, and a changelog format needs a changelog",
                          option="format", hint="write 'json', 'csv' or 'parquet', or read this format as a source only")
    if role == "source" and fmt.decode is None and fmt.file_format is None:
        raise table_error(table, f"format '{fmt.name}' cannot be read from files (table '{table.name}')", option="format")
    if role == "sink" and fmt.encode is None and fmt.file_format is None:
        raise table_error(table, f"format '{fmt.name}' cannot be written to files (table '{table.name}')", option="format")
    for name in table.partitioned_by:
        col = table.column(name)
        if col is None or not col.is_physical:
            raise table_error(table, f"PARTITIONED BY column '{name}' is not a physical column of table '{table.name}'",
                              hint="partition by columns declared with a type (not computed or METADATA columns)")
        if is_complex(col.spark_type) or col.spark_type.lower() == "binary":
            raise table_error(table, f"PARTITIONED BY column '{name}' of table '{table.name}' has type {col.flink_type}, "
                                     "which cannot be a directory name", hint="partition by a column of a simple type")
    if options.get("metastore.table") is not None:
        _check_metastore(table, options, role, fmt)
    data = data_columns(table)
    if not data:
        raise table_error(table, f"every column of table '{table.name}' is a PARTITIONED BY column; the files would be empty",
                          hint="keep at least one physical column out of PARTITIONED BY")
    if fmt.single_column and len(data) != 1:
        raise table_error(table, f"format '{fmt.name}' holds exactly one column, but table '{table.name}' has "
                                 f"{len(data)} columns outside PARTITIONED BY: {data}", option="format",
                          hint="use 'json' or 'csv' for several columns")
    if fmt.name == "raw" and str(options.get("raw.charset", "UTF-8")).upper().replace("_", "-") not in ("UTF-8", "UTF8"):
        raise table_error(table, f"the filesystem connector reads and writes text as UTF-8; 'raw.charset' = "
                                 f"'{options.get('raw.charset')}' is not supported (table '{table.name}')", option="raw.charset")
    if fmt.name == "csv":
        for col in table.physical_columns:
            if col.name in data and (is_complex(col.spark_type) or col.spark_type.lower() == "binary"):
                raise table_error(table, f"column '{col.name}' of table '{table.name}' has type {col.flink_type}, "
                                         "which format 'csv' cannot hold", option="format",
                                  hint="use 'json' or 'parquet' for nested types")
    for col in table.columns:
        if col.kind != "metadata":
            continue
        key = col.metadata_key or col.name
        if key not in METADATA_KEYS:
            raise table_error(table, f"unknown filesystem metadata key '{key}' for column '{col.name}' of table '{table.name}'",
                              hint="available keys: " + ", ".join(METADATA_KEYS))
        if role == "sink" and not col.virtual:
            raise table_error(table, f"metadata column '{col.name}' of table '{table.name}' cannot be written: "
                                     "file metadata is read-only", hint="declare it METADATA VIRTUAL")


def _check_metastore(table, options, role, fmt):
    metastore.table_name(table, options)  # a well-formed name
    if fmt.name != "parquet":
        raise table_error(table, f"'metastore.table' needs 'format' = 'parquet' (table '{table.name}' writes '{fmt.name}'): "
                                 "the lake table is registered as Parquet", option="metastore.table",
                          hint="set 'format' = 'parquet', or drop 'metastore.table'")


def create_sink(ctx) -> Sink:
    """A lake table's sink with 'metastore.table', else plain files."""
    return LakeSink(ctx) if ctx.options.get("metastore.table") else FileSystemSink(ctx)


# --------------------------------------------------------------------------- hooks

def session_conf(tables, conf):
    """Hive support (Spark's metastore) only for a pipeline that needs it: one writing a
    lake table ('metastore.table') or serving the Thrift server."""
    return metastore.session_conf(conf) if metastore.uses_metastore(tables, conf) else {}


def source_identity(bound):
    """The directory and the format of its files."""
    return {k: bound.options[k] for k in ("path", "format") if k in bound.options}


CONNECTOR = Connector(
    identifier="filesystem",
    description="Reads a directory of files as a stream of new files; writes append-only, exactly-once files.",
    options=OPTIONS,
    source_mode=APPEND,
    sink_modes=(APPEND,),
    format_options=("format",),
    create_source=create_source,
    create_sink=create_sink,
    check=check,
    session_conf=session_conf,
    prepare_session=metastore.prepare_session,
    start_services=metastore.start_thrift_server,
    source_identity=source_identity,
)
