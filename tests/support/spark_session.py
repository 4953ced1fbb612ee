"""One local SparkSession shared by every test that needs Spark.

Starting a JVM costs seconds, so tests import :func:`get_spark` instead of building their
own session. The settings mirror conf/spark-defaults.conf where they matter for results
(UTC session time zone, RocksDB state store), the driver JVM is started as a job run's,
and a test run is kept small (2 cores, 2 shuffle partitions, no UI).
"""
from __future__ import annotations

import os
import sys
import threading

_lock = threading.Lock()
_spark = None


def get_spark():
    """The shared ``local[2]`` SparkSession (created on first use)."""
    global _spark
    with _lock:
        if _spark is not None and _spark._jsc is not None and not _spark._jsc.sc().isStopped():
            return _spark
        # Workers must run the same interpreter (and see the same packages) as the driver.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python workers import job.* (UDFs, Python data sources): make the repo importable.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if root not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])

        from pyspark.sql import SparkSession

        from job.run import driver_jvm
        from tests.support.jvm import BOTH_COMPILERS
        from tests.support.services import LOG4J_CONF, spark_jars

        _spark = (
            SparkSession.builder.master("local[2]")
            .appName("tests")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.streaming.stateStore.providerClass",
                    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.sql.streaming.schemaInference", "false")
            .config("spark.sql.mapKeyDedupPolicy", "LAST_WIN")
            .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
            .config("spark.python.sql.dataFrameDebugging.enabled", "false")
            # Expressions interpreted, not compiled: the tests' inputs are a few rows, and
            # Spark generating and compiling Java for each projection and predicate of each
            # query cost more than evaluating them (14% of the CPU of 36 differential cases,
            # interleaved pairs). Spark keeps both paths equal; the job's own runs, those the
            # tests start included, compile as usual, and the engine's expressions are
            # interpreted either way (CodegenFallback).
            .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
            # One session runs every test of a run (1,900 of them, ~600 differential cases, each
            # its own queries): with the default 1 GiB heap a window aggregation late in the
            # differential run found no execution memory left (AGGREGATE_OUT_OF_MEMORY),
            # though it passes alone.
            .config("spark.driver.memory", "2g")
            .config("spark.jars", ",".join(spark_jars()))
            # The job's own driver JVM options (job/run/driver_jvm.py: the class archive, the
            # parallel collector, C2 later, RocksDB's library), as a job run has them: 18% less
            # CPU than the JVM's defaults over 60 differential cases, here.
            .config("spark.driver.extraJavaOptions",
                    driver_jvm.with_defaults(f"{BOTH_COMPILERS} -Dlog4j2.configurationFile=file:{LOG4J_CONF}"))
            .getOrCreate()
        )
        _spark.sparkContext.setLogLevel("ERROR")
        # Checkpoints written as a job run writes them: without a process per file
        # (job.run.session.use_engine_local_files).
        from job.run.session import use_engine_local_files

        use_engine_local_files(_spark)
        return _spark


def run_available_now(writer_or_df, checkpoint, *, timeout: float = 120.0):
    """Run a streaming query with Trigger.AvailableNow to completion.

    ``writer_or_df`` is a streaming DataFrame (its rows are collected through the memory
    sink and returned as a static DataFrame) or a configured DataStreamWriter (run as is;
    the finished StreamingQuery is returned)."""
    import uuid

    from pyspark.sql import DataFrame

    if isinstance(writer_or_df, DataFrame):
        name = "t_" + uuid.uuid4().hex
        query = (writer_or_df.writeStream.format("memory").queryName(name).outputMode("append")
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        _await(query, timeout)
        return get_spark().table(name)
    query = writer_or_df.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    _await(query, timeout)
    return query


def _await(query, timeout: float) -> None:
    finished = query.awaitTermination(timeout)
    if not finished:
        query.stop()
        raise AssertionError(f"streaming query did not finish within {timeout} s")
    if query.exception() is not None:
        raise query.exception()


def read_source(spark, table, checkpoint, columns=("id", "v")):
    """(the source stream of ``table``, every row it has now sorted), read through its
    connector in one --once run on ``checkpoint``: what a connector test asserts on."""
    from job.connectors.base import SourceContext
    from job.connectors.registry import validate_options

    connector, options = validate_options(table, "source")
    stream = connector.create_source(SourceContext(spark, table, options, once=True))
    got = []
    writer = stream.df.select(*columns).writeStream.foreachBatch(lambda b, _: got.extend(map(tuple, b.collect())))
    run_available_now(writer, checkpoint)
    return stream, sorted(got, key=repr)

