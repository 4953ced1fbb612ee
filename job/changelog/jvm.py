"""The bridge to the changelog engine in the JVM (engine/: Java against Spark's
transformWithState API, built by scripts/build_engine.sh into jars/engine/).

Each engine call takes a streaming DataFrame and one text argument (an operator's
specification as JSON) and returns a DataFrame. This module knows how to reach the
class through py4j and nothing about plans; it imports nothing of the job's, so the
planner and the connectors can both use it.
"""
from __future__ import annotations

ENGINE_CLASS = "streamsql.engine.Engine"
JAR_MISSING = "the changelog engine's jar is not on Spark's class path"


def engine_call(spark, operator: str, df, argument: str):
    """``Engine.<operator>(df, argument)`` as a Python DataFrame."""
    from pyspark.sql import DataFrame

    jdf = static_call(spark, ENGINE_CLASS, operator, ("org.apache.spark.sql.Dataset", df._jdf),
                      ("java.lang.String", argument))
    return DataFrame(jdf, spark)


def static_call(spark, class_name: str, method: str, *args):
    """``class_name.method(args…)`` of a class in the engine's jar; ``args`` are
    ``(Java parameter class name, value)`` pairs.

    py4j finds classes through the JVM's system class loader, which does not see the jars
    Spark adds at run time (spark.jars); the engine is found through the class loader
    Spark gives the gateway's threads instead, and its method called by reflection."""
    jvm = spark._jvm
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        cls = jvm.java.lang.Class.forName(class_name, True, loader)
    except Exception as exc:  # noqa: BLE001 - py4j wraps the JVM's ClassNotFoundException
        if "ClassNotFoundException" not in str(exc):
            raise
        from job.errors import PipelineError

        raise PipelineError(JAR_MISSING, hint="run ./scripts/setup.sh (it builds "
                                              "jars/engine/streamsql-engine.jar)") from None
    gateway = spark.sparkContext._gateway
    types = gateway.new_array(jvm.java.lang.Class, len(args))
    values = gateway.new_array(jvm.java.lang.Object, len(args))
    for i, (java_class, value) in enumerate(args):
        types[i] = _java_class(jvm, java_class, loader)
        values[i] = value
    return cls.getMethod(method, types).invoke(None, values)


def _java_class(jvm, name: str, loader):
    if name == "boolean":
        return jvm.java.lang.Boolean.TYPE
    return jvm.java.lang.Class.forName(name, True, loader)


def number_rows(spark, df, column: str):
    """``df`` with ``column``: each row's index within its partition (Engine.numberRows)."""
    return engine_call(spark, "numberRows", df, column)
