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
:mod:`job.connectors.filesystem.metastore`.
"""
from __future__ import annotations

import re

from job.connectors.base import APPEND, CHANGELOG, UPSERT, Connector, Option, Sink, SourceStream, columns_named
from job.connectors.rows import changelog_rows, physical_schema, table_frame
from job.errors import EXIT_UNREACHABLE, PipelineError

OPTIONS = (
    Option("path", required=True, description="The directory (any Hadoop file system URI: file:, hdfs:, s3a:, …)."),
    Option("format", required=True,
           description="Format of the files: json, csv, raw, parquet or debezium-json (source only)."),
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

# Flink's file metadata keys → fields of Spark's hidden _metadata column.
METADATA_KEYS = {
    "file.path": "file_path",
    "file.name": "file_name",
    "file.size": "file_size",
    "file.modification-time": "file_modification_time",
}
# Directory names that stand for a NULL partition value: Spark's and Flink's defaults.
DEFAULT_PARTITION_NAMES = ("__HIVE_DEFAULT_PARTITION__", "__DEFAULT_PARTITION__")

_COMPLEX = ("struct<", "array<", "map<")


def _is_complex(spark_type: str) -> bool:
    return spark_type.strip().lower().startswith(_COMPLEX)


def _fail(table, message, option=None, hint=None, exit_code=None):
    kwargs = {} if exit_code is None else {"exit_code": exit_code}
    origin = table.option_origins.get(option) if option else None
    raise PipelineError(message, origin=origin or (table.source.origin if table.source else None),
                        statement=table.source.text if table.source else None, option=option, hint=hint, **kwargs)


def _format(table, options):
    from job.connectors.registry import format_for

    return format_for(options["format"], table=table, option="format")


def _format_options(fmt, options):
    from job.formats.base import format_options

    return format_options(options, fmt.name + ".")


def partition_columns(table) -> list[str]:
    return columns_named(table, table.partitioned_by)


def data_columns(table) -> list[str]:
    """Physical columns stored inside the files (partition columns live in directory names)."""
    parts = {p.lower() for p in table.partitioned_by}
    return [c.name for c in table.physical_columns if c.name.lower() not in parts]


# --------------------------------------------------------------------------- check

def check(table, options, role):
    fmt = _format(table, options)
    for key in ("source.max-files-per-trigger", "source.max-bytes-per-trigger"):
        limit = options.get(key)
        if limit is not None and limit < 1:
            _fail(table, f"'{key}' must be at least 1, got {limit}", option=key)
    if role == "sink" and fmt.changelog:
        _fail(table, f"the filesystem connector cannot write format '{fmt.name}' (table '{table.name}'): "
                     "it writes append-only files, and a changelog format needs a changelog",
              option="format", hint="write 'json', 'csv' or 'parquet', or read this format as a source only")
    if role == "source" and fmt.decode is None and fmt.file_format is None:
        _fail(table, f"format '{fmt.name}' cannot be read from files (table '{table.name}')", option="format")
    if role == "sink" and fmt.encode is None and fmt.file_format is None:
        _fail(table, f"format '{fmt.name}' cannot be written to files (table '{table.name}')", option="format")
    for name in table.partitioned_by:
        col = table.column(name)
        if col is None or not col.is_physical:
            _fail(table, f"PARTITIONED BY column '{name}' is not a physical column of table '{table.name}'",
                  hint="partition by columns declared with a type (not computed or METADATA columns)")
        if _is_complex(col.spark_type) or col.spark_type.lower() == "binary":
            _fail(table, f"PARTITIONED BY column '{name}' of table '{table.name}' has type {col.flink_type}, "
                         "which cannot be a directory name", hint="partition by a column of a simple type")
    if options.get("metastore.table") is not None:
        _check_metastore(table, options, role, fmt)
    data = data_columns(table)
    if not data:
        _fail(table, f"every column of table '{table.name}' is a PARTITIONED BY column; the files would be empty",
              hint="keep at least one physical column out of PARTITIONED BY")
    if fmt.single_column and len(data) != 1:
        _fail(table, f"format '{fmt.name}' holds exactly one column, but table '{table.name}' has "
                     f"{len(data)} columns outside PARTITIONED BY: {data}", option="format",
              hint="use 'json' or 'csv' for several columns")
    if fmt.name == "raw" and str(options.get("raw.charset", "UTF-8")).upper().replace("_", "-") not in ("UTF-8", "UTF8"):
        _fail(table, f"the filesystem connector reads and writes text as UTF-8; 'raw.charset' = "
                     f"'{options.get('raw.charset')}' is not supported (table '{table.name}')", option="raw.charset")
    if fmt.name == "csv":
        for col in table.physical_columns:
            if col.name in data and (_is_complex(col.spark_type) or col.spark_type.lower() == "binary"):
                _fail(table, f"column '{col.name}' of table '{table.name}' has type {col.flink_type}, "
                             "which format 'csv' cannot hold", option="format",
                      hint="use 'json' or 'parquet' for nested types")
    for col in table.columns:
        if col.kind != "metadata":
            continue
        key = col.metadata_key or col.name
        if key not in METADATA_KEYS:
            _fail(table, f"unknown filesystem metadata key '{key}' for column '{col.name}' of table '{table.name}'",
                  hint="available keys: " + ", ".join(METADATA_KEYS))
        if role == "sink" and not col.virtual:
            _fail(table, f"metadata column '{col.name}' of table '{table.name}' cannot be written: "
                         "file metadata is read-only", hint="declare it METADATA VIRTUAL")


def _check_metastore(table, options, role, fmt):
    from job.connectors.filesystem.metastore import table_name

    table_name(table, options)  # a well-formed name
    if fmt.name != "parquet":
        _fail(table, f"'metastore.table' needs 'format' = 'parquet' (table '{table.name}' writes '{fmt.name}'): "
                     "the lake table is registered as Parquet", option="metastore.table",
              hint="set 'format' = 'parquet', or drop 'metastore.table'")


# --------------------------------------------------------------------------- source

def create_source(ctx) -> SourceStream:
    from pyspark.errors import AnalysisException

    table, options = ctx.table, ctx.options
    fmt = _format(table, options)
    # Spark lists the directory when the stream is defined (partition discovery); a dry
    # run must not touch it, so it plans over an empty local directory instead.
    path = _empty_directory() if ctx.offline else options["path"]
    reader = ctx.spark.readStream
    # Bounded micro-batches by default (Spark takes one bound or the other, not both).
    if options.get("source.max-files-per-trigger"):
        reader = reader.option("maxFilesPerTrigger", str(options["source.max-files-per-trigger"]))
    elif options.get("source.max-bytes-per-trigger"):
        reader = reader.option("maxBytesPerTrigger", str(options["source.max-bytes-per-trigger"]))
    try:
        if fmt.file_format:
            df = reader.schema(physical_schema(table)).format(fmt.file_format).load(path)
        else:
            # Line by line, in splits: nothing is read whole (a changelog's records get
            # their position in the file from the engine's row numbers, see _text_source).
            df = reader.option("recursiveFileLookup", "false").text(path)
    except AnalysisException as exc:
        if "PATH_NOT_FOUND" in str(exc) or "Path does not exist" in str(exc):
            _fail(table, f"the directory '{options['path']}' of table '{table.name}' does not exist", option="path",
                  hint="create it (the source then waits for files to appear) or fix 'path'",
                  exit_code=EXIT_UNREACHABLE)
        raise
    if fmt.file_format:
        return _file_format_source(df, table)
    return _text_source(ctx.spark, df, table, options, fmt, ctx.ordered)


def _empty_directory() -> str:
    import atexit
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="streamsql-dry-run-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _file_format_source(df, table) -> SourceStream:
    """Formats Spark reads itself (parquet): columns come typed, partitions natively."""
    from pyspark.sql import functions as F

    meta = F.col("_metadata")
    physical = {c.name: F.col(f"`{c.name}`") for c in table.physical_columns}
    metadata = {c.name: meta[METADATA_KEYS[c.metadata_key or c.name]].cast(c.spark_type)
                for c in table.columns if c.kind == "metadata"}
    control = {"__error": F.lit(None).cast("string"), "__raw": F.lit(None).cast("string"),
               "__position": F.concat(F.lit("file "), meta["file_path"])}
    return SourceStream(table_frame(df, table, physical=physical, metadata=metadata, control=control), APPEND)


def _text_source(spark, df, table, options, fmt, ordered: bool = True) -> SourceStream:
    from pyspark.sql import functions as F

    from job.formats.base import format_options, is_blank

    fopts = format_options(options, fmt.name + ".")
    meta = F.col("_metadata")
    lines = df.select(
        F.col("value"),
        meta["file_path"].alias("__file"), meta["file_name"].alias("__fname"), meta["file_size"].alias("__fsize"),
        meta["file_block_start"].alias("__block"),
        F.unix_millis(meta["file_modification_time"]).alias("__mtime"),
    )
    if fmt.changelog and ordered:
        # A changelog normalized by key needs its records' order within the file. A split
        # of a file is read in order by one task: its start and the line's index in the
        # task's rows (the engine's row numbers) order the file's lines.
        from job.changelog.jvm import number_rows

        lines = number_rows(spark, lines, "__rec")
    elif fmt.changelog:
        lines = lines.select("*", F.lit(0).cast("long").alias("__rec"))
    if not fmt.single_column:  # blank lines are not records (raw keeps them: an empty value)
        lines = lines.where(~is_blank(F.col("value")))
    position = F.concat(F.lit("file "), F.col("__file"), F.lit(" (block "), F.col("__block").cast("string"), F.lit(")"))
    data = data_columns(table)
    decoded = fmt.decode(F.col("value"), physical_schema(table, data), fopts)
    partitions = {name: _partition_value(table, name) for name in partition_columns(table)}
    metadata = {c.name: _metadata_value(c) for c in table.columns if c.kind == "metadata"}

    if not fmt.changelog:
        physical = {n: decoded.row[n] for n in data} | partitions
        control = {"__error": decoded.error, "__raw": F.col("value"), "__position": position}
        return SourceStream(table_frame(lines, table, physical=physical, metadata=metadata, control=control), APPEND)

    # Files in (modification time, path) order, then a file's splits by their start.
    major = F.concat(F.lpad(F.col("__mtime").cast("string"), 15, "0"), F.lit("|"),
                     _path_below(F.col("__file"), options["path"]), F.lit("|"),
                     F.lpad(F.col("__block").cast("string"), 15, "0"))
    numbered = lines.select("*", major.alias("__seq_major"))
    staged = numbered.select("*", decoded.row.alias("__change"), decoded.error.alias("__err"))
    rows = changelog_rows(staged, table, "__change", physical_names=data)
    physical = {n: F.col("__image")[n] for n in data} | partitions
    control = {"__kind": F.col("__kind"), "__seq_major": F.col("__seq_major"),
               # -U sorts before +U of one event; a bad event (no entries) keeps position 0.
               "__seq_minor": F.col("__rec") * 4 + F.coalesce(F.col("__pos"), F.lit(0)),
               "__error": F.coalesce(F.col("__err"), F.col("__cdc_error")), "__raw": F.col("value"),
               "__position": position}
    frame = table_frame(rows, table, physical=physical, metadata=metadata, control=control)
    return SourceStream(frame, CHANGELOG)


def _path_below(file_path, directory: str):
    """``file_path`` from the table's ``directory`` on, for ordering files by path.

    Every record carries its file's position to the changelog operators (shuffled, sorted,
    passed to Python), so the short form is cheaper than the full URI. Every file of the
    table has the same qualified prefix, in which the directory's own text ends, so its
    first occurrence sits at the same place in every path and cutting there keeps the
    paths' order. A directory that is a glob or is not found in the paths keeps them whole.
    """
    from pyspark.sql import functions as F

    needle = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*:", "", directory).strip("/")
    if not needle or any(ch in needle for ch in "*?[{\\"):
        return file_path
    at = F.instr(file_path, needle)
    return F.when(at > 0, F.substr(file_path, at + len(needle))).otherwise(file_path)


def _partition_value(table, name):
    """A PARTITIONED BY column's value from the file's ``name=value`` directory."""
    from pyspark.sql import functions as F

    col = table.column(name)
    raw = F.regexp_extract(F.col("__file"), r"(?i)/" + re.escape(col.name) + r"=([^/]*)/", 1)
    # _metadata.file_path is a URI (%-escaped once more), and Spark and Flink escape
    # special characters in partition values ('%3A' for ':'): unescape twice. url_decode
    # would turn '+' into a space, so protect it first; a stray '%' written by another
    # tool is kept as it is.
    def unescape(text):
        return F.coalesce(F.try_url_decode(F.replace(text, F.lit("+"), F.lit("%2B"))), text)

    text = unescape(unescape(raw))
    return F.when((raw == "") | raw.isin(*DEFAULT_PARTITION_NAMES), F.lit(None)).otherwise(text).cast(col.spark_type)


def _metadata_value(col):
    from pyspark.sql import functions as F

    key = METADATA_KEYS[col.metadata_key or col.name]
    expr = {"file_path": F.col("__file"), "file_name": F.col("__fname"), "file_size": F.col("__fsize"),
            "file_modification_time": F.timestamp_millis(F.col("__mtime"))}[key]
    return expr.cast(col.spark_type)


# --------------------------------------------------------------------------- sink

class FileSystemSink(Sink):
    """Append-only files through Spark's own writers, partitioned like Flink/Hive."""

    def _prepared(self, df):
        """(frame to write, Spark format, writer options)."""
        from pyspark.sql import functions as F

        from job.formats import csv as csv_format
        from job.formats.base import TIMESTAMP_WRITE_FORMATS

        table, options = self.ctx.table, self.ctx.options
        fmt = _format(table, options)
        fopts = _format_options(fmt, options)
        parts = partition_columns(table)
        data = data_columns(table)
        if fmt.file_format:
            opts = {"compression": fopts["compression"]} if fopts.get("compression") else {}
            return df.select(*[F.col(f"`{c}`") for c in data + parts]), fmt.file_format, opts
        if fmt.name == "json":
            std = fopts.get("timestamp-format.standard", "SQL")
            # Spark's JSON writer drops NULL fields unless told otherwise; Flink writes them.
            opts = {"ignoreNullFields": str(fopts.get("encode.ignore-null-fields", False)).lower(),
                    "timestampFormat": TIMESTAMP_WRITE_FORMATS[std], "timestampNTZFormat": TIMESTAMP_WRITE_FORMATS[std]}
            return df.select(*[F.col(f"`{c}`") for c in data + parts]), "json", opts
        if fmt.name == "csv":
            opts = {k: v for k, v in csv_format._spark_options(fopts).items() if k != "comment"}
            # The format's timestampFormat is a parse pattern with optional sections, which
            # a writer would print all of ('…00.500000.500.5'): write Flink's SQL form.
            opts.update(header="false", timestampFormat=TIMESTAMP_WRITE_FORMATS["SQL"],
                        timestampNTZFormat=TIMESTAMP_WRITE_FORMATS["SQL"])
            return df.select(*[F.col(f"`{c}`") for c in data + parts]), "csv", opts
        # Any other line format: encode each row to one line of text.
        if fmt.single_column:
            value = df[f"`{data[0]}`"].cast("string")
        else:
            value = fmt.encode(F.struct(*[F.col(f"`{c}`") for c in data]), fopts).cast("string")
        return df.select(value.alias("value"), *[F.col(f"`{c}`") for c in parts]), "text", {}

    def write_stream(self, df):
        frame, spark_format, opts = self._prepared(df)
        return (frame.writeStream.format(spark_format).options(**opts).option("path", self.ctx.options["path"])
                .partitionBy(*partition_columns(self.ctx.table)).outputMode("append"))

    def write_append(self, batch, batch_id):
        """Batch writes (at-least-once: a replayed batch is written again).

        Do not mix with write_stream on one directory: once it has a _spark_metadata log,
        Spark readers only see the files listed there."""
        frame, spark_format, opts = self._prepared(batch)
        (frame.write.format(spark_format).options(**opts).mode("append")
         .partitionBy(*partition_columns(self.ctx.table)).save(self.ctx.options["path"]))


def create_sink(ctx) -> Sink:
    if ctx.options.get("metastore.table"):
        from job.connectors.filesystem.metastore import LakeSink

        return LakeSink(ctx)
    return FileSystemSink(ctx)


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
)
