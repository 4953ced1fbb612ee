"""What a format is: bytes or text in a record ↔ a row of the table's columns.

Formats are plain Spark column expressions, so decoding runs in the JVM next to the
source and never round-trips through Python. ``decode`` returns the row as a struct
column plus an error column (NULL for a good record) so that the table's ``on-error``
policy can fail, skip or dead-letter the bad ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

from job.options import Option

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import StructType

# Name of the hidden field that from_json/from_csv fill with a malformed record.
CORRUPT = "__corrupt_record"


@dataclass(frozen=True)
class Decoded:
    row: "Column"            # struct with the requested fields
    error: "Column"          # string: why the record is bad, or NULL
    whole: Optional["Column"] = None  # struct<row, error> as one expression, when the decoder has one

    def struct(self) -> "Column":
        """The decoded record as one struct<row, error>."""
        from pyspark.sql import functions as F

        return self.whole if self.whole is not None else F.struct(self.row.alias("row"), self.error.alias("error"))


def decoded_once(df, decoded: Decoded, name: str):
    """(``df`` plus column ``name``: ``decoded`` as one struct<row, error>, the Decoded
    that reads it). A source reads a decoded record many times (each column, its error);
    written out, each read is a copy of the decoder, which Spark plans, serializes into
    every task and deserializes there every micro-batch. Read from one column, there is
    one copy (Spark keeps a column read several times in its own projection)."""
    df = df.select("*", decoded.struct().alias(name))
    return df, Decoded(df[name]["row"], df[name]["error"])


@dataclass(frozen=True)
class Format:
    """A format's declaration.

    ``decode(value, schema, options)``: ``value`` is a string or binary column;
    returns :class:`Decoded`. ``encode(row, options)``: ``row`` is a struct column;
    returns a string or binary column. ``changelog`` formats (debezium-json) decode to
    ``struct<op, before, after>`` instead of the row itself. ``file_format`` names Spark's
    own file reader/writer when the filesystem connector should use it directly
    (parquet); otherwise files are read as text and decoded like a Kafka value.
    """

    name: str
    description: str
    options: tuple[Option, ...] = ()
    decode: Optional[Callable[["Column", "StructType", Mapping[str, Any]], Decoded]] = None
    encode: Optional[Callable[["Column", Mapping[str, Any]], "Column"]] = None
    changelog: bool = False
    # debezium-avro-confluent: a changelog format a sink writes changes in. ``encode`` takes
    # struct<before, after, op> (job.connectors.rows.debezium_change), and an updating
    # query's changes reach the sink as they come.
    writes_changes: bool = False
    file_format: Optional[str] = None
    single_column: bool = False      # raw: exactly one physical column
    # avro: the Avro schema is derived from the columns' Flink types, so ``encode`` takes
    # the StructType of the encoded columns too (``schema=``, with the Flink types in each
    # field's metadata, see job.connectors.rows.physical_schema).
    needs_schema: bool = False
    # ``check(fields, options)``: refuses columns or options the format cannot take, before
    # anything runs (raises PipelineError; the caller names the table and option).
    # ``fields``: (name, Flink LogicalType) of the table's physical columns.
    check: Optional[Callable[[list, Mapping[str, Any]], None]] = None
    # Formats Spark reads and writes as files itself but whose columns need converting
    # (avro): see :class:`FileCodec`. Used with ``file_format``.
    files: Optional["FileCodec"] = None
    # avro-confluent: the kafka connector adds the table's name ('@table'), the record part
    # ('@part': key or value) and its topics ('@topics') to the format's options, for the
    # registry's default subject and its errors.
    context: bool = False


@dataclass(frozen=True)
class FileCodec:
    """How the filesystem connector reads and writes a ``file_format`` whose Spark types
    differ from the table's. ``schema`` is the StructType of the file's columns with Flink
    types in the fields' metadata (job.connectors.rows.physical_schema); ``options`` the
    format's options without prefix.

    ``reader(schema, options)``: (the StructType Spark reads, reader options).
    ``columns(df, schema)``: the table's columns from what Spark read, by name.
    ``writer(df, schema, options)``: (the columns to write, in order, writer options).
    """

    reader: Callable[..., Any]
    columns: Callable[..., Any]
    writer: Callable[..., Any]


def format_options(options: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The options under ``prefix`` ('json.', 'value.json.') with the prefix removed."""
    return {k[len(prefix):]: v for k, v in options.items() if k.startswith(prefix)}


def with_corrupt_field(schema: "StructType") -> "StructType":
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType(list(schema.fields) + [StructField(CORRUPT, StringType())])


def without_corrupt_field(struct: "Column", schema: "StructType") -> "Column":
    from pyspark.sql import functions as F

    return F.struct(*[struct[f.name].alias(f.name) for f in schema.fields])


def as_text(value: "Column") -> "Column":
    from pyspark.sql.types import StringType

    return value.cast(StringType())


def is_blank(text: "Column") -> "Column":
    """True for NULL, '' or only spaces (what Spark's trim() removes), false otherwise.

    Decoders test every record: trim() copies each one, so it only runs for a record that
    starts with a space and could be blank."""
    from pyspark.sql import functions as F

    return text.isNull() | (text == "") | (text.startswith(" ") & (F.trim(text) == ""))


TIMESTAMP_FORMATS = {
    # Flink's 'SQL' standard: 2024-01-31 12:00:00.123456; 'ISO-8601': 2024-01-31T12:00:00.123456
    # Spark parses 1 to 9 fraction digits with this pattern (nanoseconds are cut to micro-
    # seconds): Flink writes as many as a TIMESTAMP(p) has.
    "SQL": "yyyy-MM-dd HH:mm:ss[.SSSSSSSSS]",
    "ISO-8601": "yyyy-MM-dd'T'HH:mm:ss[.SSSSSSSSS][XXX]",
}
# Microseconds, Spark's TIMESTAMP precision: milliseconds would lose part of every value.
TIMESTAMP_WRITE_FORMATS = {"SQL": "yyyy-MM-dd HH:mm:ss.SSSSSS", "ISO-8601": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"}
