"""The engine's fast path for the json and debezium-json formats.

Spark's ``from_json`` is most of the cost of reading a JSON source: per record it builds
a reader, a parser and a filter set, and it writes every number back to text for the
conversions that give Flink's rules. For a table whose columns are all of simple types,
the engine decodes a clean record with Jackson's streaming parser straight into Spark's
row (engine/…/formats/FastJson.java) and hands any other record to the format's general
decoder, the definition, whose answer it reproduces exactly (the class states the
argument; tests/connectors/test_format_fast_json.py compares the two). So the formats keep
one description of Flink's rules, and the fast path only reads what it can read exactly.
"""
from __future__ import annotations

from typing import Callable

from job.formats.base import Decoded, as_text

FAST_JSON_CLASS = "streamsql.engine.formats.FastJson"
# Spark's type names of the column types the fast path reads.
SIMPLE_TYPES = ("string", "byte", "short", "integer", "long", "float", "double", "boolean", "decimal")


def with_fast_path(value, parsed, general: Callable[["Column"], Decoded], schema, *, debezium: bool,
                   payload: bool = False) -> Decoded:
    """The format's own decoding of ``value``, ``general(parsed)`` (``parsed``: Spark's
    ``from_json`` of it), read through the engine's fast path when every column of
    ``schema`` is of a simple type and a session with the engine is active.

    The general decoder reads ``parsed`` dozens of times (each field, each check). Written
    out, each read is a copy of ``from_json`` and its schema in the plan, which Spark then
    optimizes, serializes into every task and deserializes there, every micro-batch (70 kB
    for a 3-column Debezium table). Behind the fast path it is written once, as the
    argument of a lambda (``transform([parsed], p -> general(p))[0]``), which Spark
    evaluates without generated code: fine for the few records the fast path hands on."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    kinds = [f.dataType.typeName() for f in schema.fields]
    if spark is None or not kinds or any(k not in SIMPLE_TYPES for k in kinds):
        return general(parsed)
    from pyspark.sql import functions as F
    from pyspark.sql.classic.column import Column

    from job.changelog.jvm import static_call
    from job.changelog.specs import DecodedColumn, JsonDecoding, to_json

    spec = to_json(JsonDecoding(envelope="debezium" if debezium else "row", payload=payload,
                                columns=tuple(DecodedColumn(f.name, f.dataType.simpleString() if k == "decimal" else k)
                                              for f, k in zip(schema.fields, kinds))))  # decimal(p,s) as such
    both = F.transform(F.array(parsed), lambda p: general(p).struct())[0]
    column = "org.apache.spark.sql.Column"
    decoded = Column(static_call(spark, FAST_JSON_CLASS, "decode", (column, as_text(value)._jc), (column, both._jc),
                                 ("java.lang.String", spec)))
    return Decoded(decoded["row"], decoded["error"], decoded)
