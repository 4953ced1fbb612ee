"""debezium-json: Debezium change events → a changelog (Flink's 'debezium-json').

``op`` c/r → +I(after); u → -U(before), +U(after); d → -D(before). With a PRIMARY KEY
the planner treats the stream as an upsert stream (after wins, d deletes the key), which
also makes duplicated or replayed events harmless.
"""
from __future__ import annotations

from job.formats.base import CORRUPT, Decoded, Format, as_text, is_blank
from job.formats.fast_json import with_fast_path
from job.formats.json import encode as json_encode
from job.formats.json import convert, lenient_schema, reader_options
from job.options import Option

OPTIONS = (
    Option("schema-include", "bool", default=False,
           description="Events carry Kafka Connect's schema envelope: the change is under 'payload'."),
    Option("ignore-parse-errors", "bool", default=False, description="Skip malformed events."),
    Option("timestamp-format.standard", "enum", default="SQL", choices=("SQL", "ISO-8601"),
           description="How TIMESTAMP values are written (with microseconds) and read (0 to 9 "
                       "fraction digits): '2024-01-31 12:00:00.123456' or '2024-01-31T12:00:00.123456'."),
)

VALID_OPS = ("c", "r", "u", "d")


def envelope(schema):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField("before", schema), StructField("after", schema),
                       StructField("op", StringType()), StructField("ts_ms", LongType())])


def decode(value, schema, options) -> Decoded:
    """Decodes to struct<before, after, op, ts_ms>; ``error`` flags bad events."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    env = envelope(lenient_schema(schema))
    text = as_text(value)
    schema_include = bool(options.get("schema-include"))
    if schema_include:
        wrapper = StructType([StructField("payload", env), StructField(CORRUPT, StringType())])
    else:
        wrapper = StructType(list(env.fields) + [StructField(CORRUPT, StringType())])
    ignore = bool(options.get("ignore-parse-errors"))

    def general(parsed) -> Decoded:
        change, corrupt = (parsed["payload"], parsed[CORRUPT]) if schema_include else (parsed, parsed[CORRUPT])
        op = change["op"]
        (before, before_error), (after, after_error) = (convert(change[side], schema, ignore) for side in ("before", "after"))
        row = F.struct(F.when(change["before"].isNotNull(), before).alias("before"),
                       F.when(change["after"].isNotNull(), after).alias("after"), op.alias("op"))
        error = (F.when(is_blank(text), F.lit(None))  # Kafka tombstone after a delete
                  .when(corrupt.isNotNull(), F.lit("malformed Debezium JSON or a value that does not fit the declared type"))
                  .when(after_error.isNotNull(), F.concat(F.lit("'after' "), after_error))
                  .when(before_error.isNotNull(), F.concat(F.lit("'before' "), before_error))
                  .when(op.isNull(), F.lit("Debezium event without 'op'"))
                  .when(~op.isin(*VALID_OPS), F.concat(F.lit("unknown Debezium op '"), op, F.lit("'")))
                  .when(op.isin("c", "r", "u") & change["after"].isNull(), F.lit("Debezium event without 'after'"))
                  .when((op == "d") & change["before"].isNull(), F.lit("Debezium delete without 'before'")))
        return Decoded(row, error)

    parsed = F.from_json(text, wrapper, reader_options(options))
    return with_fast_path(value, parsed, general, schema, debezium=True, payload=schema_include)


def encode(row, options):
    """``row`` is struct<before, after, op>; written as a Debezium event."""
    return json_encode(row, options)


FORMAT = Format("debezium-json", "Debezium change events as JSON (a changelog).", OPTIONS,
                decode=decode, encode=encode, changelog=True)
