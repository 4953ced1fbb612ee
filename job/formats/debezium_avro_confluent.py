"""debezium-avro-confluent: Debezium change events in Avro with a Confluent schema registry
(Flink's 'debezium-avro-confluent' format, the value format of the kafka connector).

The event is the Avro record Flink's DebeziumAvroSerializationSchema derives from the
table's row: a record ``record`` (namespace ``org.apache.flink.avro.generated``) with the
fields ``before`` and ``after`` (the row, nullable: records ``record_before`` and
``record_after``) and ``op`` (a nullable string). Flink registers it, and writes it, as
the union of null and that record, since Flink's envelope row is nullable.

Reading: each record's writer schema (Debezium's own envelope with its ``source``,
``ts_ms`` and ``transaction`` fields, or Flink's) is resolved to that envelope by Avro's
schema resolution in the JVM (avro_confluent.parsed_datum), the other fields skipped.
``op`` c/r → +I(after); u → -U(before), +U(after); d → -D(before)
(job.connectors.rows.changelog_rows), as debezium-json. A null or empty value is a
tombstone and skipped, as Flink skips it; anything else that is not such an event is a
bad record.

Writing (Flink's serializer): an insert or update-after is an event with op 'c' and the
row in ``after``, a delete or update-before one with op 'd' and the row in ``before``
(job.connectors.rows.debezium_change): Flink writes no 'u'. The schema is registered
under 'debezium-avro-confluent.subject', by default '<topic>-value' as Flink's kafka
connector names it, when the query starts.

The registry options, their checks and the client are avro-confluent's: this format has
them all but 'auto.register.schemas', as Flink's has.
"""
from __future__ import annotations

import json

from job.formats import avro, avro_confluent
from job.formats.base import Decoded, Format

NAME = "debezium-avro-confluent"
OPTIONS = avro_confluent.registry_options(auto_register=False)
VALID_OPS = ("c", "r", "u", "d")
# Avro's binary encoding of a union's branch 1 (the record of ["null", record]): zig-zag 2.
UNION_RECORD_BRANCH = b"\x02"


def _named(options) -> dict:
    return {**options, avro_confluent.NAME: NAME}


def check(fields, options) -> None:
    avro_confluent.check(fields, _named(options))


def _fields(schema):
    return [(f.name, avro._logical(f)) for f in schema.fields]


def envelope(schema) -> dict:
    """The Avro record Flink derives for the envelope of the table's row (its
    createDebeziumAvroRowType through AvroSchemaConverter)."""
    fields = _fields(schema)

    def image(side):
        return {"name": side, "type": ["null", avro.record(fields, True, f"record_{side}")], "default": None}

    return {"type": "record", "name": "record", "namespace": avro.NAMESPACE,
            "fields": [image("before"), image("after"), {"name": "op", "type": ["null", "string"], "default": None}]}


def registered_schema(schema) -> str:
    """What Flink registers: the envelope row is nullable, so the union of null and it."""
    return json.dumps(["null", envelope(schema)])


def decode(value, schema, options) -> Decoded:
    """struct<before, after, op> of each event; ``error`` says why one is none."""
    from pyspark.sql import functions as F

    options = _named(options)
    avro_confluent.on_kafka(options, "the 'kafka' connector")
    check(_fields(schema), options)
    data = value.cast("binary")
    # Flink skips a null or empty value (a tombstone that follows a delete).
    data = F.when(F.length(data) > 0, data)
    parsed, error = avro_confluent.parsed_datum(data, json.dumps(envelope(schema)), options)
    op = parsed["op"]
    before, after = parsed["before"], parsed["after"]
    row = F.struct(F.when(before.isNotNull(), avro.to_table(before, schema)).alias("before"),
                   F.when(after.isNotNull(), avro.to_table(after, schema)).alias("after"), op.alias("op"))
    # An update or delete without 'before' is refused by changelog_rows, as by Flink.
    error = (F.when(error.isNotNull(), error)
             .when(parsed.isNull(), F.lit(None))
             .when(op.isNull(), F.lit("Debezium event without 'op'"))
             .when(~op.isin(*VALID_OPS), F.concat(F.lit("unknown Debezium op '"), op, F.lit("'")))
             .when(op.isin("c", "r", "u") & after.isNull(), F.lit("Debezium event without 'after'")))
    return Decoded(row, error)


def encode(row, options, schema=None):
    """``row`` is struct<before, after, op> (job.connectors.rows.debezium_change)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import to_avro

    if schema is None:
        raise avro.AvroTypeError(f"the '{NAME}' format needs the table's column types to write records")
    options = _named(options)
    avro_confluent.on_kafka(options, "the 'kafka' connector")
    check(_fields(schema), options)
    change = F.struct(*[F.when(row[side].isNotNull(), avro.to_avro_row(row[side], schema, {})).alias(side)
                        for side in ("before", "after")], row["op"].alias("op"))
    datum = to_avro(change, json.dumps(envelope(schema)))
    header = avro_confluent.header(options, registered_schema(schema))
    return F.concat(F.lit(header + UNION_RECORD_BRANCH), datum)


FORMAT = Format(NAME, "Debezium change events in Avro with a Confluent schema registry (a changelog).", OPTIONS,
                decode=decode, encode=encode, changelog=True, writes_changes=True, needs_schema=True, check=check,
                context=True)
