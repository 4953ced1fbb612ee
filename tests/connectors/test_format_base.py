"""Helpers the formats share (job/formats/base.py)."""
from job.formats.base import is_blank


def test_is_blank_is_true_only_for_null_empty_or_spaces(spark):
    values = [None, "", "   ", " x", "x ", "{}", "\t"]
    df = spark.createDataFrame([(v,) for v in values], "v string")
    got = [r["b"] for r in df.select(is_blank(df["v"]).alias("b")).collect()]
    # Spark's trim() removes spaces only, so a tab is content, as it was before.
    assert got == [True, True, True, False, False, False, False]
