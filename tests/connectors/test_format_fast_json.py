"""The engine's fast JSON path (job/formats/fast_json.py, engine/…/formats/FastJson.java)
against the formats' general decoder, which defines the answer: on clean records, tricky
ones and random ones, both must give the same rows and the same errors."""
import json
import random

import pytest
from chispa import assert_df_equality
from pyspark.sql.types import (BooleanType, ByteType, DecimalType, DoubleType, FloatType, IntegerType, LongType,
                               ShortType, StringType, StructField, StructType)

import job.formats.fast_json as fast_json
from job.formats import debezium_json
from job.formats import json as json_format

SCHEMA = StructType([StructField("uid", StringType()), StructField("score", IntegerType()),
                     StructField("b", ByteType()), StructField("s", ShortType()), StructField("l", LongType()),
                     StructField("f", FloatType()), StructField("d", DoubleType()), StructField("ok", BooleanType()),
                     StructField("m", DecimalType(10, 2)), StructField("w", DecimalType(38, 18))])

SIMPLE_TYPES = fast_json.SIMPLE_TYPES
# Values of every JSON kind, in and out of each column's range, as text.
VALUES = ['"u1"', '" 12 "', '"12"', '"1.5"', '"abc"', '""', '"\\u00e9\\ud800"', '"true"', '"TRUE"', '"NaN"',
          '"Infinity"', "0", "-0", "7", "-128", "127", "200", "-129", "32767", "40000", "2147483647",
          "2147483648", "-9223372036854775808", "9223372036854775807", "9223372036854775808",
          "100000000000000000000", "1.5", "1.50", "-2.25", "1e2", "1.0E+2", "0.1000000000000000000001", "1e400",
          "-1e400", "3.4028235e38", "3.4028236e39", "1e-50", "16777217", "true", "false", "null", "[]", "[1, 2]",
          "0.005", "-0.005", "0.015", "2.675", "12345678.994", "12345678.995", "99999999.995", "-99999999.99",
          "1e-5", "1.5e3", "123456789012345678901234567890", "12345678901234567890.123456789", "0.00001",
          "1234567.0", "9999999999", "1e7", "0.000000000000000000000000000000000000001", "-0.0",
          "123456789012345678901234567890123456789", "12345678901234567890123456789012345678.9",
          "1.2345678901234567890123e5", "0.12345678901234567890123456789012345678",
          "{}", '{"x": [1, {"y": 2}]}']
# Values each column reads cleanly.
CLEAN = {"string": ['"u1"', '""', '"\\u00e9 \\" x"', "null"], "float": ["1.5", "1e2", "-2.25", "7", "null"],
         "double": ["1.5", "1e-50", "-0.0", "7", "null"], "boolean": ["true", "false", "null"],
         "decimal": ["1.25", "-0.005", "0", "12345678.99", "7", "0.125", "-3.14159", "null",
                     "0.1000000000000000000001", "0.12345678901234567890123456789"]}
INTEGERS = ["0", "-0", "7", "-128", "127", "null"]
ROWS = [
    '{"uid": "a", "score": 1, "b": 2, "s": 3, "l": 4, "f": 1.5, "d": 2.5, "ok": true}',
    '{"uid": "a", "uid": "b"}', '{"UID": "a", "Score": 1}', '{"uid": "a", "extra": {"deep": [1, 2, {"x": null}]}}',
    '{"uid": "a"} trailing', '{"uid": "a"}{"uid": "b"}', "{'uid': 'a'}", '  {"uid": "a"}  ', "", "   ", "null",
    "[]", '[{"uid": "a"}]', "{}", '{"uid": }', '{"uid": "a"', "not json", '"text"', "42",
    '\ufeff{"uid": "a"}', '\x00{"uid": "a"}', '{"uid": "\x00"}', '{"uid": "\u00ff\u4e2d\U0001f600"}',
]


def _debezium_events(rng: random.Random, n: int) -> list[str]:
    def image() -> str:
        fields = rng.sample(SCHEMA.fieldNames() + ["other", "UID"], rng.randint(0, 6))
        if rng.random() < 0.05 and fields:
            fields.append(fields[0])  # a duplicate field
        return "{" + ", ".join(f'"{f}": {_value(rng, f)}' for f in fields) + "}"

    out = []
    for _ in range(n):
        parts = []
        for name, chance in (("before", 0.7), ("after", 0.8), ("op", 0.95), ("ts_ms", 0.5), ("source", 0.3)):
            if rng.random() < chance:
                if name == "op":
                    value = rng.choice(['"c"', '"r"', '"u"', '"d"'] * 4 + ['"x"', "null", "1", '"C"'])
                elif name == "ts_ms":
                    value = rng.choice(["1700000000000"] * 6 + ["null", '"12"', "1.5", "100000000000000000000"])
                elif name == "source":
                    value = '{"db": "x", "lsn": [1, 2]}'
                else:
                    value = rng.choice([image()] * 6 + ["null", '"x"', "[]"])
                parts.append(f'"{name}": {value}')
        rng.shuffle(parts)
        event = "{" + ", ".join(parts) + "}"
        if rng.random() < 0.1:
            event = json.dumps({"schema": {"type": "struct"}, "payload": json.loads(event)}) \
                if _is_json(event) else '{"payload": ' + event + "}"
        out.append(rng.choice([event] * 20 + [event + " x", event[:-1], " " + event]))
    return out


def _value(rng: random.Random, name: str) -> str:
    if name not in SCHEMA.fieldNames() or rng.random() < 0.05:
        return rng.choice(VALUES)
    return rng.choice(CLEAN.get(SCHEMA[name].dataType.typeName(), INTEGERS))


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def _decoded(spark, texts, decode, options, fast: bool, monkeypatch):
    monkeypatch.setattr(fast_json, "SIMPLE_TYPES", SIMPLE_TYPES if fast else ())
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, v string")
    decoded = decode(df["v"], SCHEMA, options)
    out = df.select("i", decoded.row.alias("row"), decoded.error.alias("error"))
    assert ("fast_json" in out._jdf.queryExecution().analyzed().toString()) == fast
    return out


def _assert_fast_equals_general(spark, texts, decode, options, monkeypatch):
    general = _decoded(spark, texts, decode, options, False, monkeypatch).orderBy("i")
    fast = _decoded(spark, texts, decode, options, True, monkeypatch).orderBy("i")
    assert_df_equality(fast, general, ignore_nullable=True, allow_nan_equality=True)
    return fast


@pytest.mark.parametrize("ignore", [False, True])
def test_debezium_fast_path_gives_the_general_decoders_rows_and_errors(spark, monkeypatch, ignore):
    rng = random.Random(17)
    texts = _debezium_events(rng, 1500) + ROWS
    texts += ['{"op": "c", "after": {"%s": %s}}' % (f.name, v) for f in SCHEMA.fields for v in VALUES]
    fast = _assert_fast_equals_general(spark, texts, debezium_json.decode, {"ignore-parse-errors": ignore},
                                       monkeypatch)
    # The random events cover both paths: clean ones, and ones only the general decoder reads.
    good = fast.where("error IS NULL AND row.op IS NOT NULL").count()
    assert 0.3 * len(texts) < good < 0.9 * len(texts)


def test_debezium_schema_include_fast_path_matches(spark, monkeypatch):
    rng = random.Random(5)
    events = [e for e in _debezium_events(rng, 400) if _is_json(e) and "payload" not in e]
    texts = [json.dumps({"schema": {"type": "struct", "fields": [1, 2]}, "payload": json.loads(e)}) for e in events]
    texts += ['{"payload": null}', '{"schema": {}}', '{"payload": {"op": "c", "after": {"uid": "a"}}, "payload": {}}',
              '{"payload": {"op": "c", "after": {"uid": "a"}}}', '{"payload": "x"}'] + ROWS
    _assert_fast_equals_general(spark, texts, debezium_json.decode, {"schema-include": True}, monkeypatch)


@pytest.mark.parametrize("ignore", [False, True])
def test_json_fast_path_gives_the_general_decoders_rows_and_errors(spark, monkeypatch, ignore):
    rng = random.Random(23)
    texts = ['{"%s": %s}' % (f.name, v) for f in SCHEMA.fields for v in VALUES] + ROWS
    for _ in range(800):
        names = rng.sample([f.name for f in SCHEMA.fields] + ["zz"], rng.randint(0, 7))
        texts.append("{" + ", ".join(f'"{n}": {rng.choice(VALUES)}' for n in names) + "}")
    _assert_fast_equals_general(spark, texts, json_format.decode, {"ignore-parse-errors": ignore}, monkeypatch)


def test_a_table_with_other_column_types_keeps_the_general_decoder(spark):
    import datetime

    from pyspark.sql.types import TimestampType

    schema = StructType([StructField("id", StringType()), StructField("at", TimestampType())])
    df = spark.createDataFrame([('{"id": "a", "at": "2024-01-31 12:00:00.5"}',)], "v string")
    decoded = json_format.decode(df["v"], schema, {})
    out = df.select(decoded.row.alias("row"))
    assert "fast_json" not in out._jdf.queryExecution().analyzed().toString()
    assert out.collect()[0]["row"]["at"] == datetime.datetime(2024, 1, 31, 12, 0, 0, 500000)


def test_the_fast_path_takes_clean_records_and_leaves_the_rest(spark):
    """With a stand-in general decoder that marks its records, the records the fast path
    reads are exactly the clean ones."""
    from pyspark.sql import functions as F

    from job.formats.base import Decoded

    clean = ['{"op": "c", "after": {"uid": "a", "score": 1, "b": -128, "s": 40, "l": 9223372036854775807,'
             ' "f": 1e2, "d": -0.5, "ok": false}, "source": {"x": [1]}}',
             '{"before": {"uid": "a"}, "after": {"uid": "a", "zz": null}, "op": "u", "ts_ms": 1}',
             '{"before": {"uid": "a"}, "op": "d"}', '  {"op": "r", "after": {}}\n', '{"op": "u", "after": {"ok": null}}',
             '{"op": "c", "after": {"m": 1234567.994, "w": -0.005}}', '{"op": "c", "after": {"m": 7, "w": 2.675}}',
             '{"op": "c", "after": {"m": 12345678.994, "w": 0.1000000000000000000001}}']
    unclean = ['{"op": "c", "after": {"score": "1"}}', '{"op": "c", "after": {"b": 128}}',
               '{"op": "c", "after": {"l": 9223372036854775808}}', '{"op": "c", "after": {"d": 1e400}}',
               '{"op": "c", "after": {"f": 1e39}}', '{"op": "c", "after": {"ok": 1}}', '{"op": "c", "after": {"uid": 1}}',
               '{"op": "c", "after": {"uid": "a", "uid": "b"}}', '{"op": "c", "after": {}, "op": "c"}',
               '{"op": "c", "after": {}} x', "{'op': 'c', 'after': {}}", '{"op": "c"}', '{"op": "d", "after": {}}',
               '{"op": "x", "after": {}}', '{"after": {}}', '{"op": null, "after": {}}', '{"op": "c", "after": []}',
               '{"op": "c", "after": {}, "ts_ms": "1"}', '{"op": "c", "after": {}, "ts_ms": 1.5}', "", "[]", "null",
               '{"op": "c", "after": {"uid": "a"}', '{"op": "c", "after": {"m": 1e-5}}', '{"op": "c", "after": {"m": "1"}}',
               '{"op": "c", "after": {"m": 99999999.995}}', '{"op": "c", "after": {"m": 1.5e1}}', '{"op": "c", "after": {"w": 12345678901234567890123}}']
    texts = clean + unclean
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, v string")
    row_type = debezium_json.envelope(SCHEMA)[:3]
    stand_in = Decoded(F.lit(None).cast(row_type), F.lit("general"))
    decoded = fast_json.with_fast_path(df["v"], df["v"], lambda _parsed: stand_in, SCHEMA, debezium=True)
    got = {r.i: r.error for r in df.select("i", decoded.error.alias("error")).collect()}
    assert [texts[i] for i in sorted(got) if got[i] is None] == clean


def test_bytes_that_are_not_utf8_json_are_the_general_decoders(spark, monkeypatch):
    """Kafka values arrive as bytes: Jackson would read a byte-order mark or UTF-16 as such,
    Spark's reader reads UTF-8 only (an invalid byte becomes U+FFFD)."""
    values = ['{"uid": "a", "score": 2}', '\ufeff{"uid": "a"}', '{"uid": "\u00e9"}']
    raw = [v.encode() for v in values] + [v.encode("utf-16") for v in values] + [v.encode("utf-16-le") for v in values]
    raw += [b'{"uid": "\xff\xfe"}', b'{"uid": "\xc3"}', b"\xef\xbb\xbf{}"]
    rows = [(i, bytearray(r)) for i, r in enumerate(raw)]

    def decoded(fast):
        monkeypatch.setattr(fast_json, "SIMPLE_TYPES", SIMPLE_TYPES if fast else ())
        df = spark.createDataFrame(rows, "i int, v binary")
        d = json_format.decode(df["v"], SCHEMA, {})
        return df.select("i", d.row.alias("row"), d.error.alias("error")).orderBy("i")

    assert_df_equality(decoded(True), decoded(False), ignore_nullable=True)


def test_a_decoded_record_is_one_from_json_in_the_plan(spark):
    """The general decoder reads its from_json result for every column and check; each read
    must not be a copy of from_json in the plan (Spark ships the plan to every task of every
    micro-batch): read once, through the lambda and one column, whatever reads the record."""
    from job.formats.base import decoded_once

    df = spark.createDataFrame([('{"op": "c", "after": {"uid": "a", "score": 1}}',)], "v string")
    df, decoded = decoded_once(df, debezium_json.decode(df["v"], SCHEMA, {}), "__decoded")
    reads = df.select(*[decoded.row["after"][f].alias(f) for f in SCHEMA.fieldNames()], decoded.error.alias("e"))
    plan = reads._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("from_json(") == 1, plan[:2000]
    assert reads.collect()[0]["uid"] == "a"


def test_a_record_checked_for_errors_and_read_once_is_decoded_once(spark):
    """A table with one value column reads its decoded record twice: the bad-record check
    (a filter) and the column. Spark's optimizer would push the filter below the
    projection that decodes, with the decoding copied into it, and merge the projection
    into the one above, which decodes again; the decoder declares itself nondeterministic
    to keep it in its one projection."""
    from pyspark.sql import functions as F

    from job.formats.base import decoded_once

    one = StructType([StructField("uid", StringType())])
    df = spark.createDataFrame([('{"uid": "a"}',), ("{bad",)], "v string")
    df, decoded = decoded_once(df, json_format.decode(df["v"], one, {}), "__decoded")
    checked = df.filter(F.when(decoded.error.isNotNull() & (F.spark_partition_id() >= 0), F.lit(False))
                        .otherwise(F.lit(True)))
    reads = checked.select(decoded.row["uid"].alias("uid"))
    plan = reads._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("fast_json(") == 1, plan[:3000]
    assert [r["uid"] for r in reads.collect()] == ["a"]
