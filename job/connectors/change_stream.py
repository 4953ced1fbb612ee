"""What the CDC connectors (postgres-cdc, mysql-cdc) share once their Python data source
has the changes: the stream read with its spec, the text of each column typed as the
table declares it, and the control columns the changelog machinery reads.

Both sources hand every value over as text (what the server's protocol gives, exactly),
so a value that does not fit its declared type is a bad record, named by column and
value, instead of a NULL."""
from __future__ import annotations

import json
import re
from typing import Callable, Mapping

from job.connectors.base import UPSERT, SourceStream


def change_stream(ctx, data_source: type, source_name: str, value_prefix: str, spec: dict, connection: dict,
                  typed: Callable, server: str, metadata: Mapping) -> SourceStream:
    """The upsert stream of ``ctx.table`` from ``data_source``: column ``i`` arrives as text
    in ``{value_prefix}{i}`` and ``typed(i, column, text)`` makes its value; ``server``
    names the database in a bad record's reason ("MySQL value '…' does not fit INT")."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from job.connectors.rows import table_frame

    table = ctx.table
    physical_cols = list(table.physical_columns)
    ctx.spark.dataSource.register(data_source)
    fields = [StructField("__kind", StringType()), StructField("__seq_major", StringType()),
              StructField("__seq_minor", LongType()), StructField("__position", StringType()),
              StructField("__raw", StringType())]
    fields += [StructField(f"{value_prefix}{i}", StringType()) for i in range(len(physical_cols))]
    # The connection (with its password) travels in an option whose name Spark redacts
    # ('password') in plans and logs; the rest of the spec is harmless to show.
    df = (ctx.spark.readStream.format(source_name).schema(StructType(fields))
          .option("spec", json.dumps(spec))
          .option("spec.connection.password", json.dumps(connection)).load())
    physical, errors = {}, []
    for i, col in enumerate(physical_cols):
        text = F.col(f"{value_prefix}{i}")
        value = typed(i, col, text)
        physical[col.name] = value
        if re.split(r"[(<]", col.spark_type.strip().lower(), maxsplit=1)[0] != "string":
            errors.append(F.when(text.isNotNull() & value.isNull(), F.concat(
                F.lit(f"column '{col.name}': {server} value '"), F.substring(text, 1, 100),
                F.lit(f"' does not fit {col.flink_type}"))))
    control = {"__kind": F.col("__kind"), "__seq_major": F.col("__seq_major"), "__seq_minor": F.col("__seq_minor"),
               "__error": F.coalesce(*errors, F.lit(None).cast("string")) if errors else F.lit(None).cast("string"),
               "__raw": F.col("__raw"), "__position": F.col("__position")}
    return SourceStream(table_frame(df, table, physical=physical, metadata=dict(metadata), control=control), UPSERT)
