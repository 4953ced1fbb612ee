"""json: one JSON object per record, fields by column name (Flink's 'json' format)."""
from __future__ import annotations

from job.formats.base import (CORRUPT, TIMESTAMP_FORMATS, TIMESTAMP_WRITE_FORMATS, Decoded, Format,
                              as_text, is_blank, with_corrupt_field)
from job.formats.fast_json import with_fast_path
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


# Flink's JSON reader (JsonToRowDataConverters) takes a number or a boolean written as a
# string: "123" into an INT column is 123, " 1.5 " into a DOUBLE 1.5, and a BOOLEAN is true
# for true or any casing of "true", false for anything else. Spark's reader fails such a
# record. So these columns are read as their text and converted here with Flink's rules.
# A DECIMAL column is read as a VARIANT and then as text: Spark's reader writes a number
# read as text through a double (0.1234567890123456789 loses its last digits), while a
# VARIANT keeps a number without exponent of up to 38 digits exactly, as Flink's
# BigDecimal does. An INT or BIGINT column is read as a VARIANT too: Flink takes a JSON
# number with a fraction there and cuts it (Jackson's canConvertToInt/asInt: 3.7 is 3,
# -2.5 is -2, 1e3 is 1000, within the type's range), while the same digits written as a
# string are an error (Integer.parseInt); TINYINT and SMALLINT parse the text either way.
_INTEGERS = ("byte", "short", "integer", "long")
_TRUNCATED = ("integer", "long")
_RANGE = {"integer": (-2**31, 2**31 - 1), "long": (-2**63, 2**63 - 1)}
_INTEGER_TEXT = r"^[+-]?[0-9]+$"
_DECIMAL_TEXT = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"  # what java.math.BigDecimal reads


def _lenient(data_type) -> bool:
    return data_type.typeName() in _INTEGERS + ("float", "double", "boolean") or data_type.typeName().startswith("decimal")


def lenient_schema(schema):
    """``schema`` with its number and boolean columns read as text, DECIMAL ones as a
    VARIANT (see above)."""
    from pyspark.sql.types import StringType, StructField, StructType, VariantType

    def read_as(data_type):
        kind = data_type.typeName()
        return VariantType() if kind.startswith("decimal") or kind in _TRUNCATED else StringType()

    return StructType([StructField(f.name, read_as(f.dataType), True) if _lenient(f.dataType) else f
                       for f in schema.fields])


def convert(parsed, schema, ignore_errors: bool):
    """(the row as ``schema``, an error naming the first column whose text is no value of
    its type, or NULL) from ``parsed``, read with :func:`lenient_schema`. With
    ``ignore_errors`` such a column is NULL and the row has no error, as with Flink's
    'json.ignore-parse-errors'."""
    from pyspark.sql import functions as F

    columns, errors = [], []
    for f in schema.fields:
        raw = parsed[f.name]
        kind = f.dataType.typeName()
        if kind in _TRUNCATED:
            value = _integer(raw, f.dataType)
            raw = raw.cast("string")
            columns.append(value.alias(f.name))
            errors.append(F.when(raw.isNotNull() & value.isNull(), _field_error(f, raw)))
            continue
        if kind.startswith("decimal"):
            raw = raw.cast("string")  # the VARIANT's text: a JSON null is NULL, a string its content
        if not _lenient(f.dataType):
            columns.append(raw.alias(f.name))
            continue
        if kind == "boolean":  # Boolean.parseBoolean: "true" in any casing, else false
            columns.append((F.lower(raw) == F.lit("true")).alias(f.name))
            continue
        text = F.trim(raw)
        value = F.when(text.rlike(_INTEGER_TEXT), text.try_cast(f.dataType)) if kind in _INTEGERS \
            else text.try_cast(f.dataType)
        columns.append(value.alias(f.name))
        # A number too large for its DECIMAL(p, s) is NULL in Flink (DecimalData.fromBigDecimal),
        # not an error; only text that is no number is.
        wrong = raw.isNotNull() & (~raw.rlike(_DECIMAL_TEXT) if kind.startswith("decimal") else value.isNull())
        errors.append(F.when(wrong, _field_error(f, raw)))
    error = F.coalesce(*errors) if errors and not ignore_errors else F.lit(None).cast("string")
    return F.struct(*columns), error


def _field_error(f, raw):
    from pyspark.sql import functions as F

    return F.concat(F.lit(f"field '{f.name}': '"), F.substring(raw, 1, 50),
                    F.lit(f"' is no {f.dataType.simpleString().upper()} value"))


def _integer(variant, data_type):
    """An INT or BIGINT column's value from its VARIANT, as Flink reads it: a JSON number
    within the type's range cut toward zero, or a string of an integer (NULL otherwise)."""
    from pyspark.sql import functions as F

    low, high = _RANGE[data_type.typeName()]
    number = F.try_variant_get(variant, "$", "decimal(38,18)")  # a long's 19 digits fit; beyond: NULL
    is_number = F.schema_of_variant(variant).rlike(r"^(TINYINT|SMALLINT|INT|BIGINT|FLOAT|DOUBLE|DECIMAL)")
    text = F.trim(variant.cast("string"))
    return (F.when(is_number, F.when(number.between(low, high), number.cast(data_type)))
            .when(text.rlike(_INTEGER_TEXT), text.try_cast(data_type)))


def decode(value, schema, options) -> Decoded:
    from pyspark.sql import functions as F

    text = as_text(value)

    def general(parsed) -> Decoded:
        row, field_error = convert(parsed, schema, bool(options.get("ignore-parse-errors")))
        error = (F.when(is_blank(text), F.lit(None))
                  .when(parsed[CORRUPT].isNotNull(), F.lit("malformed JSON or a value that does not fit the declared type"))
                  .otherwise(field_error))
        return Decoded(row, error)

    parsed = F.from_json(text, with_corrupt_field(lenient_schema(schema)), reader_options(options))
    return with_fast_path(value, parsed, general, schema, debezium=False)


def encode(row, options):
    from pyspark.sql import functions as F

    std = options.get("timestamp-format.standard", "SQL")
    return F.to_json(row, {"ignoreNullFields": str(options.get("encode.ignore-null-fields", False)).lower(),
                           "timestampFormat": TIMESTAMP_WRITE_FORMATS[std],
                           "timestampNTZFormat": TIMESTAMP_WRITE_FORMATS[std]})


FORMAT = Format("json", "JSON objects, one per record.", OPTIONS, decode=decode, encode=encode)
