"""The SparkSession: conf/spark-defaults.conf, the pipeline's conf, SET statements.

Under spark-submit the session already carries spark-submit's settings; when the job is
called as a library (tests, Airflow's PythonOperator) this module adds what
spark-submit.sh would: the project's jars and defaults.
"""
from __future__ import annotations

import logging
import os
import sys
import types
from pathlib import Path
from typing import Mapping

from job.changelog.jvm import engine_jar
from job.run import driver_jvm

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS_FILE = ROOT / "conf" / "spark-defaults.conf"
DEFAULT_OPTIONS = "spark.driver.defaultJavaOptions"
JARS_DIR = ROOT / "jars" / "spark"

# Settings whose absence would make the job wrong, not just slow.
REQUIRED = {
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.mapKeyDedupPolicy": "LAST_WIN",
}


def read_defaults(path: Path = DEFAULTS_FILE) -> dict[str, str]:
    conf: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition(" ")
                conf[key.strip()] = value.strip()
    return conf


def project_jars() -> list[str]:
    """Spark's extra jars (jars/spark/) and the changelog engine's built for this PySpark
    (jars/engine/spark-<version>/)."""
    jars = sorted(str(p) for p in JARS_DIR.glob("*.jar")) if JARS_DIR.exists() else []
    engine = engine_jar()
    return jars + ([str(engine)] if engine.exists() else [])


def quiet_python_loggers(verbose: bool) -> None:
    """PySpark logs every analysis error with a Java stack trace through this logger;
    our own error message says it better."""
    level = logging.INFO if verbose else logging.CRITICAL
    # PySpark logs analysis errors of DataFrame calls and of spark.sql() under two names.
    # They must be created as PySparkLoggers: PySpark passes them keyword arguments
    # (errorClass=…) that a plain logging.Logger rejects once the level lets them through.
    from pyspark.logger import PySparkLogger

    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(level)
    for name in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(name).setLevel(level)


class _NumpyCheck(types.ModuleType):
    """Stands in for ``pyspark.testing.utils`` until something needs more of it than
    ``have_numpy``.

    PySpark asks that module whether numpy is installed in every ``lit()`` (which its
    Column operators call for each operand) and in its py4j converters for numpy values
    (asked about every argument of every call). The module imports pandas and pyarrow on
    import: 0.3 s of CPU in a driver that never meets a numpy value, paid in the wall time
    of every short ``--once`` run (a count over one event, five interleaved pairs:
    6.73 → 6.48 s). Every such caller only asks in order to test ``isinstance(value,
    numpy.…)``, and a value can only be numpy's once numpy is imported: ``have_numpy``
    answers that. Any other name loads the real module and takes its place."""

    def __getattr__(self, name):
        if name == "have_numpy":
            return "numpy" in sys.modules
        if name.startswith("__"):  # the import system probing (__path__ …): a plain module
            raise AttributeError(name)
        return getattr(_real("pyspark.testing.utils"), name)


class _TestingPackage(types.ModuleType):
    """``pyspark.testing`` as the attribute of ``pyspark`` that ``import
    pyspark.testing.utils`` reaches while the package itself is not imported (the stand-in
    in ``sys.modules`` spares the import system the package, whose ``__init__`` would load
    the real module). Importing the package puts the real one in its place."""

    def __getattr__(self, name):
        if name == "utils":
            return sys.modules.get("pyspark.testing.utils") or _real("pyspark.testing.utils")
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(_real("pyspark.testing"), name)


def _real(name: str):
    import importlib

    if isinstance(sys.modules.get("pyspark.testing.utils"), _NumpyCheck):
        del sys.modules["pyspark.testing.utils"]  # imported afresh, through its package, as PySpark would
    return importlib.import_module(name)


def check_numpy_without_pandas() -> None:
    """Put :class:`_NumpyCheck` in place, unless PySpark's module is already loaded."""
    import pyspark

    if "pyspark.testing.utils" in sys.modules:
        return
    sys.modules["pyspark.testing.utils"] = _NumpyCheck("pyspark.testing.utils")
    if "pyspark.testing" not in sys.modules:
        pyspark.testing = _TestingPackage("pyspark.testing")


def catalog_conf(program, offline: bool = False) -> dict[str, str]:
    """The static settings the pipeline's connectors need in the session (the lake's Hive
    support, when a table writes one). A --dry-run contacts no external system, no
    metastore either, so it plans without."""
    from job.connectors.registry import session_conf

    if offline:
        return {}
    return session_conf(program.catalog.bound_tables(), program.conf)


def launch_jvm_in_own_session(builder) -> None:
    """Start Spark's driver JVM in a session of its own, before the builder would.

    pyspark starts it in our process group, so a SIGTERM sent to the group (systemd's
    default, Airflow killing a task, ``kill -TERM -PGID``) killed the JVM at once and the
    graceful stop (runner.StopSignal: finish the batch in flight, exit 0) never ran. Apart
    from the group, the JVM still ends with us: it exits when its stdin, our pipe, closes.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False).setAll(list(builder._options.items()))
    SparkContext._gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})
    SparkContext._jvm = SparkContext._gateway.jvm


# Hadoop's local file system, when its native library is absent (it is in every Spark from
# PyPI or Maven), starts a chmod process after creating a file and a readlink process before
# renaming one: for a checkpoint on local disk that is several processes per micro-batch and
# state partition, about 70 a second at 1k events/s. The engine's (engine/.../fs/) does the
# same with java.nio. Other schemes (hdfs:, s3a:) are not affected.
# Hadoop key: (Hadoop's default, the engine's class).
LOCAL_FILE_SYSTEMS = {
    "fs.AbstractFileSystem.file.impl": ("org.apache.hadoop.fs.local.LocalFs", "streamsql.engine.fs.LocalFs"),
    "fs.file.impl": ("org.apache.hadoop.fs.LocalFileSystem", "streamsql.engine.fs.LocalFileSystem"),
}


def use_engine_local_files(spark) -> None:
    """Use the engine's local file systems, unless the user chose their own or Hadoop's
    configuration cannot load the engine's classes (then Hadoop's are used, as before).

    Set at run time, not in conf/spark-defaults.conf: spark-submit opens local files
    before the engine's jar is on any class path."""
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, (hadoops, class_name) in LOCAL_FILE_SYSTEMS.items():
        if hadoop_conf.get(key) in (None, hadoops) and hadoop_conf.getClassByNameOrNull(class_name) is not None:
            hadoop_conf.set(key, class_name)


def submitted_app_name() -> str | None:
    """spark-submit's --name (spark.app.name), or None when it was not given: spark-submit
    then names the application after the job's file."""
    from pyspark import SparkConf

    name = SparkConf().get("spark.app.name", None)
    return name if name and name != "main.py" else None


def build_session(app_name: str, conf: Mapping[str, str], *, verbose: bool = False, master: str | None = None,
                  force_master: bool = False):
    """Get or create the session; ``conf`` (YAML conf + SET statements) wins over defaults.
    ``force_master``: ``master`` also wins over spark-submit's (a session started again
    with the task slots real-time mode needs: job.run.real_time.fit)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    quiet_python_loggers(verbose)
    check_numpy_without_pandas()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    under_submit = "spark.app.id" in os.environ.get("SPARK_SUBMIT_OPTS", "") or os.environ.get("SPARK_ENV_LOADED")
    # The pipeline's name names the application, unless spark-submit was given --name.
    builder = SparkSession.builder
    if not (under_submit and submitted_app_name()):
        builder = builder.appName(app_name)
    if active is None and not under_submit:
        settings = {**read_defaults(), **REQUIRED}
        jars = project_jars()
        if jars:
            settings["spark.jars"] = ",".join(jars)
        # local[2,4]: two cores, and up to 4 attempts per task as on a cluster (local mode
        # defaults to one): a task that fails transiently (a Python worker that did not start
        # within Spark's fixed 10 s on an overloaded machine) is retried instead of failing
        # the query.
        settings.setdefault("spark.master", master or os.environ.get("SPARK_MASTER", "local[2,4]"))
        # What spark-submit.sh passes too (job/run/driver_jvm.py): the class-data-sharing
        # archive, the parallel collector unless the user's own driver options choose one,
        # and the rest, first; then the value the conf carries (the runner's log4j file, a
        # pipeline's own options), whose options win where both set one. Replacing ours
        # with it, as before, left every run through the library (Airflow's
        # PythonOperator, `python -m job.main`) without any of them.
        default_options = conf.get(DEFAULT_OPTIONS) or settings.get(DEFAULT_OPTIONS)
        settings[DEFAULT_OPTIONS] = driver_jvm.with_defaults(
            default_options, [settings.get(driver_jvm.EXTRA_OPTIONS), conf.get(driver_jvm.EXTRA_OPTIONS)])
        conf = {k: v for k, v in conf.items() if k != DEFAULT_OPTIONS}
        for key, value in settings.items():
            builder = builder.config(key, value)
    # Only Spark's own settings go to Spark: the pipeline's Flink keys ('table.exec.…',
    # 'streamsql.…') are the job's, and spark-submit would warn about each of them.
    spark_conf = {k: v for k, v in conf.items() if k.startswith("spark.")}
    for key, value in {**REQUIRED, **spark_conf}.items():
        builder = builder.config(key, value)
    if force_master and master:
        builder = builder.master(master)
    if active is None and not under_submit:
        launch_jvm_in_own_session(builder)
    spark = builder.getOrCreate()
    for key, value in spark_conf.items():  # runtime SQL confs also apply to an existing session
        try:
            spark.conf.set(key, value)
        except Exception:  # static confs of an already running session cannot change
            pass
    spark.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    use_engine_local_files(spark)
    from job.connectors.registry import prepare_session

    prepare_session(spark, conf, verbose)
    return spark
