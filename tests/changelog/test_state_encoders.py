"""The operators' state encoders are built once per executor thread, not once per task
(engine/.../StateVars.java): what is reused, and what never is."""
from __future__ import annotations

import threading

from job.changelog.jvm import static_call

SCHEMA = '{"type":"struct","fields":[{"name":"k","type":"string","nullable":true,"metadata":{}},' \
         '{"name":"n","type":"integer","nullable":false,"metadata":{}}]}'


def reused(spark, role: str, schema: str = SCHEMA):
    jvm = spark._jvm
    row_encoder = jvm.org.apache.spark.sql.Encoders.row(jvm.org.apache.spark.sql.types.DataType.fromJson(schema))
    return static_call(spark, "streamsql.engine.StateVars", "reused",
                       ("org.apache.spark.sql.Encoder", row_encoder), ("java.lang.String", role))


def resolved(encoder):
    """What Spark's state store does with a value encoder: resolve it against its own schema."""
    return encoder.resolveAndBind(getattr(encoder, "resolveAndBind$default$1")(),
                                  getattr(encoder, "resolveAndBind$default$2")())


def _identity(obj) -> int:
    from pyspark import SparkContext

    return SparkContext._jvm.java.lang.System.identityHashCode(obj)


def test_one_thread_reuses_a_variables_serializer_and_deserializer(spark):
    first, again = reused(spark, "acc/value"), reused(spark, "acc/value")  # two tasks, one thread
    assert _identity(first.createSerializer()) == _identity(again.createSerializer())
    assert _identity(resolved(first)) == _identity(resolved(again))
    assert _identity(resolved(first).createDeserializer()) == _identity(resolved(again).createDeserializer())


def test_roles_schemas_and_threads_never_share_one(spark):
    value = reused(spark, "side0/value").createSerializer()
    assert _identity(value) != _identity(reused(spark, "side0/key").createSerializer())
    other = SCHEMA.replace('"k"', '"key"')
    assert _identity(value) != _identity(reused(spark, "side0/value", other).createSerializer())
    elsewhere = []  # py4j runs another Python thread's calls on another JVM thread
    worker = threading.Thread(target=lambda: elsewhere.append(_identity(reused(spark, "side0/value").createSerializer())))
    worker.start()
    worker.join()
    assert elsewhere and elsewhere[0] != _identity(value)


def test_a_reused_encoder_still_encodes_and_decodes(spark):
    jvm = spark._jvm
    encoder = reused(spark, "row/value")
    values = spark.sparkContext._gateway.new_array(jvm.java.lang.Object, 2)
    values[0], values[1] = "a", 7  # py4j: a str and an Integer
    encoded = encoder.createSerializer().apply(jvm.org.apache.spark.sql.RowFactory.create(values)).copy()
    back = resolved(encoder).createDeserializer().apply(encoded)
    assert (back.getString(0), back.getInt(1)) == ("a", 7)


def test_resolving_against_other_columns_is_never_cached(spark):
    """Only the state store's case (the encoder's own schema) is kept: other input is
    resolved anew, each time."""
    encoder = reused(spark, "row/value")
    columns = getattr(encoder, "resolveAndBind$default$1")().reverse()
    analyzer = getattr(encoder, "resolveAndBind$default$2")()
    first, second = encoder.resolveAndBind(columns, analyzer), encoder.resolveAndBind(columns, analyzer)
    assert _identity(first) != _identity(second)
    assert _identity(first) != _identity(resolved(encoder))
