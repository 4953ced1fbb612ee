"""Reading a jdbc table: a bounded scan, kept as Parquet files under the query's
checkpoint that are the stream (see the package docstring).
"""
from __future__ import annotations

import re
import uuid

from job.connectors.base import APPEND, UPSERT, SourceStream
from job.connectors.hadoop import delete, empty_directory, numbered_dirs, rename
from job.connectors.jdbc.database import AUTH_STATES, UNREACHABLE_STATES, Database, safe_url, sql_error, states
from job.connectors.rows import clean_records, table_frame
from job.errors import PipelineError
from job.options import table_error


def _stored(i: int) -> str:
    return f"c{i}"  # Parquet column names stay simple whatever the declared names are


def create_source(ctx) -> SourceStream:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

    table = ctx.table
    physical = list(table.physical_columns)
    keyed = bool(table.primary_key)
    fields = [StructField(_stored(i), _parse_datatype_string(c.spark_type), True) for i, c in enumerate(physical)]
    if keyed:
        fields += [StructField("k", StringType(), True), StructField("s", StringType(), True)]
    schema = StructType(fields)
    if ctx.offline:
        base = empty_directory()
    else:
        base = snapshot(ctx, schema)
    df = ctx.spark.readStream.schema(schema).parquet(base + "/changes/*")
    cols = {c.name: F.col(_stored(i)) for i, c in enumerate(physical)}
    control = clean_records(F.concat(F.lit(f"table {ctx.options['table-name']} snapshot "), F.col("_metadata.file_name")))
    if keyed:
        control = {"__kind": F.col("k"), "__seq_major": F.col("s"), "__seq_minor": F.lit(0).cast("long"), **control}
    frame = table_frame(df, table, physical=cols, metadata={}, control=control)
    return SourceStream(frame, UPSERT if keyed else APPEND, bounded=True)


def snapshot(ctx, schema) -> str:
    """Read the table into ``<checkpoint>/sources/<table>/changes/<n>`` (see the module
    docstring); returns the source's base directory."""
    import tempfile

    spark, table = ctx.spark, ctx.table
    checkpoint = ctx.checkpoint or tempfile.mkdtemp(prefix="streamsql-jdbc-")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", table.name)
    base = f"{checkpoint.rstrip('/')}/sources/jdbc-{safe}"
    done = numbered_dirs(spark, base + "/changes")
    keyed = bool(table.primary_key)
    if done and not keyed:
        return base  # read once per checkpoint: the stream has (or will have) all of it
    current = read_table(ctx, schema)
    n = (done[-1] + 1) if done else 0
    tmp = f"{base}/_tmp/{uuid.uuid4().hex}"
    try:
        if not keyed:
            current.write.parquet(tmp + "/changes")
            rename(spark, tmp + "/changes", f"{base}/changes/{n:05d}")
            return base
        from pyspark.sql import functions as F

        data = [f.name for f in schema.fields if f.name not in ("k", "s")]
        current.select(*data).write.parquet(tmp + "/full")
        new = spark.read.schema(current.select(*data).schema).parquet(tmp + "/full")
        fulls = numbered_dirs(spark, base + "/full")
        if fulls:
            old = spark.read.schema(new.schema).parquet(f"{base}/full/{fulls[-1]:05d}")
            keys = [_stored(i) for i, c in enumerate(table.physical_columns) if c.name in table.primary_key]
            changed = new.subtract(old).withColumn("k", F.lit("U"))
            gone = old.join(new.select(*keys), keys, "left_anti").select(*data).withColumn("k", F.lit("D"))
            changes = changed.unionByName(gone)
        else:
            changes = new.withColumn("k", F.lit("U"))
        changes.withColumn("s", F.lit(f"{n:010d}")).write.parquet(tmp + "/changes")
        # Changes first: a crash before the full copy moves only repeats these changes
        # (idempotent upserts) on the next start, never loses them.
        rename(spark, tmp + "/changes", f"{base}/changes/{n:05d}")
        rename(spark, tmp + "/full", f"{base}/full/{n:05d}")
        for old_n in fulls:
            delete(spark, f"{base}/full/{old_n:05d}")
        return base
    finally:
        delete(spark, tmp)


def read_table(ctx, schema):
    """The table as a batch DataFrame with the stored column names and declared types."""
    from pyspark.sql import functions as F

    table, options = ctx.table, ctx.options
    db = Database(ctx.spark, table, options)
    try:
        columns = db.columns(options["table-name"])
        if columns is None:
            raise table_error(table, f"table '{options['table-name']}' does not exist in the database at '{safe_url(db.url)}' "
                                     f"(table '{table.name}')", option="table-name", hint="create it or fix 'table-name'")
        physical = list(table.physical_columns)
        for col in physical:
            if col.name.lower() not in columns:
                raise table_error(table, f"table '{options['table-name']}' in the database has no column '{col.name}' "
                                         f"(declared in table '{table.name}')", option="table-name",
                                  hint="its columns: " + ", ".join(m["name"] for m in columns.values()))
    finally:
        db.close()
    reader = (ctx.spark.read.format("jdbc").options(**db.spark_options())
              .option("dbtable", options["table-name"]).option("fetchsize", str(options.get("scan.fetch-size", 1000))))
    if options.get("scan.partition.column"):
        column = columns[options["scan.partition.column"].lower()]["name"]
        reader = (reader.option("partitionColumn", db.dialect.quote(column))
                  .option("numPartitions", str(options["scan.partition.num"]))
                  .option("lowerBound", options["scan.partition.lower-bound"])
                  .option("upperBound", options["scan.partition.upper-bound"]))
    try:
        df = reader.load()
        by_lower = {c.lower(): c for c in df.columns}
        out = df.select(*[F.col(f"`{by_lower[c.name.lower()]}`").cast(c.spark_type).alias(_stored(i))
                          for i, c in enumerate(physical)])
        out.schema  # noqa: B018 - resolve now, inside the try
    except PipelineError:
        raise
    except Exception as exc:  # noqa: BLE001
        state, message = sql_error(exc)
        if states(state, UNREACHABLE_STATES + AUTH_STATES):
            raise db.connect_error(exc) from None
        raise table_error(table, f"table '{options['table-name']}' (table '{table.name}') cannot be read: {message}",
                          option="table-name")
    return out
