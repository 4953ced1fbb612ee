"""raw: the record's bytes are the single column's value (Flink's 'raw' format).

Typical for Kafka keys: 'key.format' = 'raw' with a STRING primary key."""
from __future__ import annotations

from job.formats.base import Decoded, Format
from job.options import Option

OPTIONS = (Option("charset", default="UTF-8", description="Charset for STRING columns."),)


def decode(value, schema, options) -> Decoded:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

    field = schema.fields[0]
    if isinstance(field.dataType, BinaryType):
        v = value.cast(BinaryType())
    elif isinstance(field.dataType, StringType):
        # Kafka keys/values are binary, file lines are strings: casting a string to binary
        # and decoding it again is a no-op, so one expression serves both.
        v = F.decode(value.cast(BinaryType()), options.get("charset", "UTF-8"))
    else:  # numbers etc. as text, as Flink's raw format would need them
        v = F.decode(value.cast(BinaryType()), "UTF-8").cast(field.dataType)
    return Decoded(F.struct(v.alias(field.name)), F.lit(None).cast("string"))


def encode(row, options):
    from pyspark.sql import functions as F

    # Spark cannot cast a struct to a string; the planner passes the single field's value.
    return F.encode(row.cast("string"), options.get("charset", "UTF-8"))


FORMAT = Format("raw", "The record's bytes as one column.", OPTIONS, decode=decode, encode=encode, single_column=True)
