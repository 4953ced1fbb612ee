"""The bridge to the changelog engine in the JVM (engine/: Java against Spark's
transformWithState API, built by scripts/build_engine.sh into jars/engine/spark-<version>/
against the jars of the installed PySpark).

Every engine operator is run by :func:`run_operator`, from its typed spec
(job.changelog.specs, serialized there and read by the engine's Java records): the one
place that calls the engine's operators. This module knows how to reach the engine's
classes through py4j and nothing about plans; it imports nothing of the job's outside
this package, so the planner and the connectors can both use it.
"""
from __future__ import annotations

from pathlib import Path

ENGINE_CLASS = "streamsql.engine.Engine"
ENGINE_DIR = Path(__file__).resolve().parents[2] / "jars" / "engine"
JAR_MISSING = "the changelog engine's jar is not on Spark's class path"


def engine_jar() -> Path:
    """The engine's jar built for the Spark that runs the job: Spark's internals differ
    between versions (4.2 and 4.3 both run the job), so each gets an engine compiled
    against its own jars, named, as scripts/build_engine.sh names it, by the version of
    its spark-core jar.

    That Spark is SPARK_HOME's when spark-submit started the driver (it sets it; the
    driver's pyspark may then be SPARK_HOME's python/lib zip, which has no jars), else
    the installed PySpark's."""
    import os
    import re
    from importlib.util import find_spec

    homes = [Path(os.environ["SPARK_HOME"])] if os.environ.get("SPARK_HOME") else []
    spec = find_spec("pyspark")
    homes += [Path(p) for p in (spec.submodule_search_locations or []) if spec]
    for home in homes:
        found = [m.group(1) for p in (home / "jars").glob("spark-core_*.jar")
                 if (m := re.fullmatch(r"spark-core_[0-9.]+-(.+)\.jar", p.name))]
        if found:
            return ENGINE_DIR / f"spark-{found[0]}" / "streamsql-engine.jar"
    return ENGINE_DIR / "spark-unknown" / "streamsql-engine.jar"


def run_operator(spark, spec, df):
    """The engine operator ``spec`` (a job.changelog.specs spec) describes, over ``df``."""
    from job.changelog.specs import to_json

    from pyspark.sql import DataFrame

    jdf = static_call(spark, ENGINE_CLASS, spec.operator, ("org.apache.spark.sql.Dataset", df._jdf),
                      ("java.lang.String", to_json(spec)))
    return DataFrame(jdf, spark)


def static_call(spark, class_name: str, method: str, *args):
    """``class_name.method(args…)`` of a class in the engine's jar; ``args`` are
    ``(Java parameter class name, value)`` pairs.

    py4j finds classes through the JVM's system class loader, which does not see the jars
    Spark adds at run time (spark.jars); the engine is found through the class loader
    Spark gives the gateway's threads instead, and its method called by reflection."""
    jvm = spark._jvm
    loader, cls = _engine_class(spark, class_name)
    gateway = spark.sparkContext._gateway
    types = gateway.new_array(jvm.java.lang.Class, len(args))
    values = gateway.new_array(jvm.java.lang.Object, len(args))
    for i, (java_class, value) in enumerate(args):
        types[i] = _java_class(jvm, java_class, loader)
        values[i] = value
    return cls.getMethod(method, types).invoke(None, values)


def _engine_class(spark, class_name: str):
    """(class loader, class) of a class in the engine's jar.

    A session started by this project's spark-submit.sh or library sessions has the jar;
    one started by a plain ``spark-submit`` without it (an Airflow SparkSubmitOperator given
    only the connectors' jars, say) gets it here, as Spark SQL's ADD JAR would add it, which
    also ships it to the executors."""
    jvm = spark._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    cls = _class_or_none(jvm, class_name, loader)
    jar = engine_jar()
    if cls is None and jar.is_file():
        add_jar(spark, str(jar))
        loader = spark._jsparkSession.sharedState().jarClassLoader()
        cls = _class_or_none(jvm, class_name, loader)
    if cls is None:
        from job.errors import PipelineError

        raise PipelineError(JAR_MISSING, hint="run ./scripts/setup.sh (it builds "
                                              f"{jar.relative_to(ENGINE_DIR.parents[1])})")
    return loader, cls


def _class_or_none(jvm, class_name: str, loader):
    try:
        return jvm.java.lang.Class.forName(class_name, True, loader)
    except Exception as exc:  # noqa: BLE001 - py4j wraps the JVM's ClassNotFoundException
        if "ClassNotFoundException" not in str(exc):
            raise
        return None


def add_jar(spark, path: str) -> None:
    """Spark SQL's ``ADD JAR``: into the session's class loader and to every executor."""
    spark.sql("ADD JAR '" + path.replace("\\", "\\\\").replace("'", "\\'") + "'")


def _java_class(jvm, name: str, loader):
    if name == "boolean":
        return jvm.java.lang.Boolean.TYPE
    return jvm.java.lang.Class.forName(name, True, loader)
