"""json: one JSON object per record, fields by column name (Flink's 'json' format)."""
from __future__ import annotations

from job.formats.base import (CORRUPT, TIMESTAMP_FORMATS, TIMESTAMP_WRITE_FORMATS, Decoded, Format,
                              as_text, is_blank, with_corrupt_field, without_corrupt_field)
from job.options import Option

OPTIONS = (
    Option("ignore-parse-errors", "bool", default=False,
           description="Skip records that are not valid JSON or do not fit the schema (same as 'on-error' = 'skip')."),
    Option("timestamp-format.standard", "enum", default="SQL", choices=("SQL", "ISO-8601"),
           description="How TIMESTAMP values are written (with microseconds) and read (0 to 9 "
                       "fraction digits): '2024-01-31 12:00:00.123456' or '2024-01-31T12:00:00.123456'."),
    Option("encode.ignore-null-fields", "bool", default=False,
           description="Leave out NULL fields when writing (Flink writes them as null)."),
)


def reader_options(options) -> dict:
    std = options.get("timestamp-format.standard", "SQL")
    return {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT, "timestampFormat": TIMESTAMP_FORMATS[std],
            "timestampNTZFormat": TIMESTAMP_FORMATS[std]}


def decode(value, schema, options) -> Decoded:
    from pyspark.sql import functions as F

    text = as_text(value)
    parsed = F.from_json(text, with_corrupt_field(schema), reader_options(options))
    error = (F.when(is_blank(text), F.lit(None))
              .when(parsed[CORRUPT].isNotNull(), F.lit("malformed JSON or a value that does not fit the declared type")))
    return Decoded(without_corrupt_field(parsed, schema), error)


def encode(row, options):
    from pyspark.sql import functions as F

    std = options.get("timestamp-format.standard", "SQL")
    return F.to_json(row, {"ignoreNullFields": str(options.get("encode.ignore-null-fields", False)).lower(),
                           "timestampFormat": TIMESTAMP_WRITE_FORMATS[std],
                           "timestampNTZFormat": TIMESTAMP_WRITE_FORMATS[std]})


FORMAT = Format("json", "JSON objects, one per record.", OPTIONS, decode=decode, encode=encode)
