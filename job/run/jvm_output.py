"""The driver JVM's output: a quiet terminal by default.

A run prints our lines (progress, summaries, errors), the sink's output and real errors;
Spark's INFO lines, the loggers that repeat a failure we report ourselves, and the
notices the JVM prints on every start stay off unless ``--verbose``.
"""
from __future__ import annotations

import os

# Loggers whose ERROR lines repeat, with a JVM stack trace, a failure the runner reports
# itself in one line (a query that stopped, the task and stage that failed with it).
NOISY_LOGGERS = (
    "org.apache.spark.sql.execution.streaming",
    "org.apache.spark.sql.execution.datasources",
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.scheduler.TaskSchedulerImpl",
    "org.apache.spark.sql.kafka010",
    "org.apache.kafka",
    "org.apache.spark.api.python",
    "org.apache.spark.util.Utils",
)

# Lines the JVM and PySpark's own workers print on every run that say nothing to a user.
JVM_NOISE = (
    "WARNING: Using incubator modules: jdk.incubator.vector",
    "Streaming TransformWithStateInPandas Python worker",
    "Streaming TransformWithStateInPython Python worker",
)


def session_conf(conf: dict, verbose: bool) -> dict:
    """The pipeline's conf, plus conf/log4j2.properties for a driver JVM this process is
    about to launch (spark-submit.sh passes it itself): Spark's INFO lines stay off unless
    --verbose."""
    from job.run.session import ROOT

    log4j = ROOT / "conf" / "log4j2.properties"
    if verbose or not log4j.exists() or jvm_running():
        return dict(conf)
    if any(k in conf for k in ("spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions")):
        return dict(conf)
    return {**conf, "spark.driver.defaultJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}"}


def under_spark_submit() -> bool:
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


class JvmTextStream:
    """A text stream onto a ``java.io.PrintStream`` of the driver JVM."""

    def __init__(self, print_stream) -> None:
        self._ps = print_stream

    def write(self, text: str) -> int:
        self._ps.print(text)
        return len(text)

    def flush(self) -> None:
        self._ps.flush()


def jvm_stderr():
    """The JVM's ``System.err`` (spark-submit's own stderr), or None.

    spark-submit starts the Python driver with its stderr redirected into its stdout, so a
    message on Python's stderr would reach the caller on stdout; the JVM's stderr is the
    real one."""
    try:
        from pyspark import SparkContext

        SparkContext._ensure_initialized()
        return JvmTextStream(SparkContext._jvm.System.err)
    except Exception:  # noqa: BLE001 - fall back to Python's stderr
        return None


def jvm_running() -> bool:
    """True under spark-submit (the JVM started this process) or with a session already up."""
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        return True
    try:
        from pyspark import SparkContext

        return SparkContext._active_spark_context is not None
    except ImportError:
        return False


def quiet_jvm_logs(spark, verbose: bool) -> None:
    """Without --verbose, silence the loggers that repeat a failure we report ourselves
    (with stack traces that may quote option values)."""
    if verbose:
        return
    try:
        jvm = spark._jvm
        level = jvm.org.apache.logging.log4j.Level.OFF
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        for name in NOISY_LOGGERS:
            configurator.setLevel(name, level)
    except Exception:  # noqa: BLE001 - another logging backend: keep its settings
        pass
