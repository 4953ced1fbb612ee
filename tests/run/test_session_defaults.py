"""What the job's Spark defaults (conf/spark-defaults.conf) turn off in the driver."""
from __future__ import annotations


def test_columns_are_built_without_pysparks_dataframe_debugging(spark):
    """PySpark records the Python call site of every Column function in the JVM, for error
    messages the job never shows (it reports errors in the pipeline's terms): some ten py4j
    round trips per F.col or F.lit. The job's defaults turn it off, and so does the tests'
    session, so that tests plan queries as the job does."""
    from pyspark.errors.utils import is_debugging_enabled
    from pyspark.sql import functions as F

    from job.run.session import read_defaults

    assert read_defaults()["spark.python.sql.dataFrameDebugging.enabled"] == "false"
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    F.col("x")  # PySpark reads the setting at the first Column function and keeps it
    assert not is_debugging_enabled()
