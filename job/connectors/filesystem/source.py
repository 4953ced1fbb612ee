"""Reading a filesystem table: new files of the directory as a stream, decoded line by
line (or read by Spark itself, for parquet), with partition and file metadata columns.
"""
from __future__ import annotations

import re

from job.connectors.base import APPEND, CHANGELOG, SourceStream
from job.connectors.filesystem.layout import (DEFAULT_PARTITION_NAMES, METADATA_KEYS, data_columns, file_format,
                                              file_format_options, partition_columns)
from job.connectors.hadoop import empty_directory
from job.connectors.rows import changelog_rows, clean_records, physical_schema, table_frame
from job.errors import EXIT_UNREACHABLE
from job.formats.base import decoded_once
from job.options import table_error


def create_source(ctx) -> SourceStream:
    from pyspark.errors import AnalysisException
    from pyspark.sql.types import StructType

    table, options = ctx.table, ctx.options
    fmt = file_format(table, options)
    # Spark lists the directory when the stream is defined (partition discovery); a dry
    # run must not touch it, so it plans over an empty local directory instead.
    path = empty_directory() if ctx.offline else options["path"]
    reader = ctx.spark.readStream
    # Bounded micro-batches by default (Spark takes one bound or the other, not both).
    if options.get("source.max-files-per-trigger"):
        reader = reader.option("maxFilesPerTrigger", str(options["source.max-files-per-trigger"]))
    elif options.get("source.max-bytes-per-trigger"):
        reader = reader.option("maxBytesPerTrigger", str(options["source.max-bytes-per-trigger"]))
    try:
        if fmt.files is not None:
            file_schema, reader_options = fmt.files.reader(physical_schema(table, data_columns(table)),
                                                           file_format_options(fmt, options))
            parts = physical_schema(table, partition_columns(table))
            df = (reader.schema(StructType(file_schema.fields + parts.fields)).options(**reader_options)
                  .format(fmt.file_format).load(path))
        elif fmt.file_format:
            df = reader.schema(physical_schema(table)).format(fmt.file_format).load(path)
        else:
            # Line by line, in splits: nothing is read whole (a changelog's records get
            # their position in the file from the engine's row numbers, see _text_source).
            df = reader.option("recursiveFileLookup", "false").text(path)
    except AnalysisException as exc:
        if "PATH_NOT_FOUND" in str(exc) or "Path does not exist" in str(exc):
            raise table_error(table, f"the directory '{options['path']}' of table '{table.name}' does not exist", option="path",
                              hint="create it (the source then waits for files to appear) or fix 'path'",
                              exit_code=EXIT_UNREACHABLE)
        raise
    if fmt.file_format:
        return _file_format_source(df, table, fmt)
    return _text_source(ctx.spark, df, table, options, fmt, ctx.ordered)


def _file_format_source(df, table, fmt) -> SourceStream:
    """Formats Spark reads itself (parquet, avro): columns come typed (avro's converted
    to the table's types by the format), partitions natively."""
    from pyspark.sql import functions as F

    meta = F.col("_metadata")
    physical = {c.name: F.col(f"`{c.name}`") for c in table.physical_columns}
    if fmt.files is not None:
        physical.update(fmt.files.columns(df, physical_schema(table, data_columns(table))))
    metadata = {c.name: meta[METADATA_KEYS[c.metadata_key or c.name]].cast(c.spark_type)
                for c in table.columns if c.kind == "metadata"}
    control = clean_records(F.concat(F.lit("file "), meta["file_path"]))
    return SourceStream(table_frame(df, table, physical=physical, metadata=metadata, control=control), APPEND)


def _text_source(spark, df, table, options, fmt, ordered: bool = True) -> SourceStream:
    from pyspark.sql import functions as F

    from job.formats.base import is_blank

    fopts = file_format_options(fmt, options)
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
        from job.changelog.jvm import run_operator
        from job.changelog.specs import NumberRows

        lines = run_operator(spark, NumberRows(column="__rec"), lines)
    elif fmt.changelog:
        lines = lines.select("*", F.lit(0).cast("long").alias("__rec"))
    if not fmt.single_column:  # blank lines are not records (raw keeps them: an empty value)
        lines = lines.where(~is_blank(F.col("value")))
    position = F.concat(F.lit("file "), F.col("__file"), F.lit(" (block "), F.col("__block").cast("string"), F.lit(")"))
    data = data_columns(table)
    lines, decoded = decoded_once(lines, fmt.decode(F.col("value"), physical_schema(table, data), fopts), "__decoded")
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
