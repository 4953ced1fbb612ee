"""Writing a filesystem table: append-only files through Spark's own writers,
partitioned like Flink and Hive (a lake table's sink is in ``lake``).
"""
from __future__ import annotations

from job.connectors.base import Sink
from job.connectors.filesystem.layout import data_columns, file_format, file_format_options, partition_columns


class FileSystemSink(Sink):
    """Append-only files through Spark's own writers, partitioned like Flink/Hive."""

    def _prepared(self, df):
        """(frame to write, Spark format, writer options)."""
        from pyspark.sql import functions as F

        from job.formats import csv as csv_format
        from job.formats.base import TIMESTAMP_WRITE_FORMATS

        table, options = self.ctx.table, self.ctx.options
        fmt = file_format(table, options)
        fopts = file_format_options(fmt, options)
        parts = partition_columns(table)
        data = data_columns(table)
        if fmt.files is not None:
            from job.connectors.rows import physical_schema

            columns, opts = fmt.files.writer(df, physical_schema(table, data), fopts)
            return df.select(*columns, *[F.col(f"`{c}`") for c in parts]), fmt.file_format, opts
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
