"""avro: Avro records whose schema is derived from the table's columns (Flink's 'avro' format).

Flink writes a Kafka record as one Avro datum in the binary encoding, with no header, in
the schema its AvroSchemaConverter derives from the table: a record named ``record`` in
namespace ``org.apache.flink.avro.generated``, nested rows named ``record_<field>``, every
nullable column a union ``["null", T]`` (null first, default null). Files hold it in
Avro's container format, the row itself declared as a union with null. Spark's spark-avro decodes and
encodes with that schema (``from_avro``/``to_avro``, and its file source and sink), so
records never pass through Python; the types Avro has no word for (TINYINT, SMALLINT,
TIME) are converted around it.

Only what Flink does is done: the schema always comes from the table, 'avro.encoding'
'json' and TIMESTAMP_LTZ with the legacy timestamp mapping are refused, as Flink fails on
them at run time, and so are the cases Flink cannot write (a TIMESTAMP of more than
millisecond precision under the legacy mapping).
"""
from __future__ import annotations

import json
from job.errors import PipelineError
from job.formats.base import Decoded, FileCodec, Format
from job.options import Option

NAMESPACE = "org.apache.flink.avro.generated"
FLINK_TYPE = "flink_type"      # StructField metadata: the column's Flink type, as written
NULLABLE = "flink_nullable"    # StructField metadata: false for NOT NULL and PRIMARY KEY columns

OPTIONS = (
    Option("encoding", "enum", default="binary", choices=("binary", "json"),
           description="Avro's encoding of each record. Only 'binary' (Flink's default) is supported; "
                       "'json' is refused."),
    Option("codec", default=None,
           description="Filesystem only: the compression codec of the Avro files: null, deflate, snappy, bzip2 "
                       "or xz (Flink's default: snappy)."),
    Option("timestamp_mapping.legacy", "bool", default=True,
           description="true (Flink's default): TIMESTAMP is Avro's timestamp-millis and TIMESTAMP_LTZ is refused. "
                       "false: TIMESTAMP is local-timestamp-millis/micros, TIMESTAMP_LTZ timestamp-millis/micros."),
)
CODECS = ("null", "deflate", "snappy", "bzip2", "xz")


class AvroTypeError(PipelineError):
    """A column whose type Flink's Avro format cannot hold."""


# --------------------------------------------------------------------------- schema

def _logical(field):
    """The Flink LogicalType of a StructField built by ``physical_schema``."""
    from job.sql.types import logical_type

    text = field.metadata.get(FLINK_TYPE)
    if text is None:
        raise AvroTypeError(f"column '{field.name}' has no Flink type for the Avro schema")
    t = logical_type(text)
    return t.nullable_as(bool(field.metadata.get(NULLABLE, True)) and t.nullable)


def _timestamp(t, legacy: bool, where: str):
    p = 6 if t.precision is None else t.precision
    if t.name == "TIMESTAMP_LTZ" and legacy:
        raise AvroTypeError(f"{where} has type {t.summary(False)}, which Flink's Avro format supports only with "
                            "'avro.timestamp_mapping.legacy' = 'false'")
    if legacy and p > 3:
        raise AvroTypeError(f"{where} has type {t.summary(False)}: Flink's Avro format writes TIMESTAMP with at most "
                            "millisecond precision under the legacy mapping (TIMESTAMP(3), or set "
                            "'avro.timestamp_mapping.legacy' = 'false')")
    if p > 6:
        raise AvroTypeError(f"{where} has type {t.summary(False)}: Avro holds at most microseconds")
    local = "" if legacy or t.name == "TIMESTAMP_LTZ" else "local-"
    unit = "millis" if p <= 3 else "micros"
    return {"type": "long", "logicalType": f"{local}timestamp-{unit}"}


def avro_type(t, legacy: bool, record_name: str, where: str):
    """Flink's AvroSchemaConverter.convertToSchema for one type (as JSON)."""
    n = t.name
    if n in ("CHAR", "VARCHAR"):
        base = "string"
    elif n == "BOOLEAN":
        base = "boolean"
    elif n in ("BINARY", "VARBINARY"):
        base = "bytes"
    elif n in ("TINYINT", "SMALLINT", "INTEGER", "INT"):
        base = "int"
    elif n == "BIGINT":
        base = "long"
    elif n in ("FLOAT", "DOUBLE"):
        base = n.lower()
    elif n == "DECIMAL":
        base = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    elif n == "DATE":
        base = {"type": "int", "logicalType": "date"}
    elif n == "TIME":
        if (t.precision or 0) > 3:
            raise AvroTypeError(f"{where} has type {t.summary(False)}: Flink's Avro format holds TIME with at most "
                                "millisecond precision (time-millis)")
        base = {"type": "int", "logicalType": "time-millis"}
    elif n in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        base = _timestamp(t, legacy, where)
    elif n == "ARRAY":
        base = {"type": "array", "items": avro_type(t.children[0], legacy, record_name, where)}
    elif n in ("MAP", "MULTISET"):
        if not t.children[0].is_character:
            raise AvroTypeError(f"{where} has type {t.summary(False)}: Avro maps have STRING keys")
        if n == "MAP":
            values = avro_type(t.children[1], legacy, record_name, where)
        else:  # the count of each element, as Flink writes a MULTISET
            values = "int"
        base = {"type": "map", "values": values}
    elif n == "ROW":
        base = record(list(zip(t.field_names, t.children)), legacy, record_name, where)
    else:
        raise AvroTypeError(f"{where} has type {t.summary(False)}, which Flink's Avro format cannot hold")
    return ["null", base] if t.nullable else base


def record(fields, legacy: bool, name: str, where: str = ""):
    out = []
    for field_name, t in fields:
        at = where + "." + field_name if where else f"column '{field_name}'"
        entry = {"name": field_name, "type": avro_type(t, legacy, f"{name}_{field_name}", at)}
        if t.nullable:
            entry["default"] = None
        out.append(entry)
    rec = {"type": "record", "name": name, "fields": out}
    if name == "record":
        rec["namespace"] = NAMESPACE
    return rec


def schema_for(schema, options) -> dict:
    """The Avro schema Flink derives for the columns of ``schema`` (a StructType with
    Flink types in its metadata): a nullable union of the record."""
    return record_schema([(f.name, _logical(f)) for f in schema.fields], options)


def record_schema(fields, options):
    legacy = bool(options.get("timestamp_mapping.legacy", True))
    return ["null", record(fields, legacy, "record")]


def check(fields, options) -> None:
    """Refuse, before anything runs, what Flink's Avro format refuses (by option name).
    ``fields``: (name, Flink LogicalType) of the table's physical columns."""
    if options.get("encoding", "binary") != "binary":
        raise AvroTypeError("'avro.encoding' = 'json' is not supported: records are read and written in Avro's "
                            "binary encoding")
    codec = options.get("codec")
    if codec is not None and codec not in CODECS:
        raise AvroTypeError(f"'avro.codec' = '{codec}' is no Avro codec (one of: {', '.join(CODECS)})")
    record_schema(fields, options)
    for name, t in fields:
        _check_nested_time(t, f"column '{name}'", top=True)


def _check_nested_time(t, where: str, top: bool) -> None:
    if t.name == "TIME" and not top:
        raise AvroTypeError(f"{where}: a TIME inside an ARRAY, MAP or ROW is not supported in Avro records yet")
    for child in t.children:
        _check_nested_time(child, where, top=False)


# --------------------------------------------------------------------------- Spark types

def avro_spark_type(t, legacy: bool) -> str:
    """The Spark type spark-avro reads an Avro value of Flink type ``t`` as (and must be
    given to write one)."""
    n = t.name
    if n in ("TINYINT", "SMALLINT", "TIME"):
        return "int"
    if n == "TIMESTAMP" and not legacy:
        return "timestamp_ntz"
    if n == "ARRAY":
        return f"array<{avro_spark_type(t.children[0], legacy)}>"
    if n == "MAP":
        return f"map<string,{avro_spark_type(t.children[1], legacy)}>"
    if n == "ROW":
        return "struct<" + ",".join(f"`{name}`:{avro_spark_type(c, legacy)}"
                                    for name, c in zip(t.field_names, t.children)) + ">"
    return t.spark


def _time_text(millis, precision: int):
    """Flink's TIME(p) as the job holds it (text, p fraction digits up to 3) from Avro's
    time-millis (milliseconds of the day)."""
    from pyspark.sql import functions as F

    pattern = "HH:mm:ss" + ("." + "S" * min(precision, 3) if precision else "")
    return F.date_format(F.timestamp_millis(millis.cast("long")), pattern)


def _time_millis(text):
    from pyspark.sql import functions as F

    return F.unix_millis(F.to_timestamp(F.concat(F.lit("1970-01-01 "), text))).cast("int")


def to_table(avro_row, schema):
    """The decoded Avro struct as the table's columns and types."""
    from pyspark.sql import functions as F

    columns = []
    for f in schema.fields:
        t = _logical(f)
        value = avro_row[f.name]
        value = _time_text(value, t.precision or 0) if t.name == "TIME" else value.cast(f.dataType)
        columns.append(value.alias(f.name))
    return F.struct(*columns)


def to_avro_row(row, schema, options):
    """The table's struct as the Spark types spark-avro writes with Flink's schema."""
    from pyspark.sql import functions as F

    legacy = bool(options.get("timestamp_mapping.legacy", True))
    columns = []
    for f in schema.fields:
        t = _logical(f)
        value = row[f.name]
        value = _time_millis(value) if t.name == "TIME" else value.cast(avro_spark_type(t, legacy))
        columns.append(value.alias(f.name))
    return F.struct(*columns)


# --------------------------------------------------------------------------- records

def decode(value, schema, options) -> Decoded:
    """A Kafka record is one datum of the record's schema, with no header (as measured
    on Flink 2.3: its files declare the union with null, its records do not)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    check([(f.name, _logical(f)) for f in schema.fields], options)
    data = value.cast("binary")
    parsed = from_avro(data, json.dumps(schema_for(schema, options)[1]), {"mode": "PERMISSIVE"})
    # With PERMISSIVE, spark-avro makes an undecodable record a row of NULLs. A real row of
    # NULLs is one 0x00 byte (the null branch) per field, and none if a field is NOT NULL.
    all_null = F.lit(True)
    for f in schema.fields:
        all_null = all_null & parsed[f.name].isNull()
    if all(_logical(f).nullable for f in schema.fields):
        malformed = all_null & (data != F.unhex(F.lit("00" * len(schema.fields))))
    else:
        malformed = all_null
    error = F.when(value.isNotNull() & malformed,
                   F.lit("the record is no Avro datum of the table's schema (malformed, or written with another "
                         "schema)"))
    return Decoded(to_table(parsed, schema), error)


def encode(row, options, schema=None):
    from pyspark.sql.avro.functions import to_avro

    if schema is None:
        raise AvroTypeError("the 'avro' format needs the table's column types to write records")
    check([(f.name, _logical(f)) for f in schema.fields], options)
    return to_avro(to_avro_row(row, schema, options), json.dumps(schema_for(schema, options)[1]))


def file_reader(schema, options):
    """spark-avro's file reader reads no top-level union, which Flink's files declare:
    the record's own schema is given as the reader schema, which Avro resolves against the
    file's union (a NULL row in a file fails the read, as it would in Flink)."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    legacy = bool(options.get("timestamp_mapping.legacy", True))
    spark_schema = StructType([StructField(f.name, _parse_datatype_string(avro_spark_type(_logical(f), legacy)), True)
                               for f in schema.fields])
    return spark_schema, {"avroSchema": json.dumps(schema_for(schema, options)[1])}


def file_columns(df, schema) -> dict:
    from pyspark.sql import functions as F

    row = to_table(F.struct(*[df[f"`{f.name}`"] for f in schema.fields]), schema)
    return {f.name: row[f.name] for f in schema.fields}


def file_writer(df, schema, options):
    """(the columns to write, writer options). Files are written with the record's schema,
    which Flink's reader (the union of null and the record) resolves."""
    from pyspark.sql import functions as F

    row = to_avro_row(F.struct(*[df[f"`{f.name}`"] for f in schema.fields]), schema, options)
    columns = [row[f.name].alias(f.name) for f in schema.fields]
    # Flink's default codec for Avro files is snappy.
    return columns, {"avroSchema": json.dumps(schema_for(schema, options)[1]),
                     "compression": options.get("codec") or "snappy"}


FORMAT = Format("avro", "Avro records in Flink's schema derived from the table.", OPTIONS, decode=decode,
                encode=encode, needs_schema=True, check=check,
                file_format="avro", files=FileCodec(file_reader, file_columns, file_writer))
