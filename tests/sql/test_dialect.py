"""Flink group windows run on Spark's native window operators."""
from __future__ import annotations

from job.sql.dialect import flink_to_spark


def test_queries_without_flink_windows_are_untouched():
    sql = "SELECT a,  b FROM t -- comment\nWHERE x = 'TUMBLE'"
    assert flink_to_spark(sql) == sql


def test_tumble_hop_session_become_spark_windows():
    sql = ("SELECT user_id, TUMBLE_START(ts, INTERVAL '1' MINUTE) AS ws, TUMBLE_END(ts, INTERVAL '1' MINUTE) AS we, "
           "COUNT(*) AS n FROM clicks GROUP BY user_id, TUMBLE(ts, INTERVAL '1' MINUTE)")
    out = flink_to_spark(sql)
    assert "WINDOW(ts, '1 minute').start AS ws" in out.replace("window", "WINDOW")
    assert "GROUP BY user_id, WINDOW(ts, '1 minute')" in out.replace("window", "WINDOW")
    hop = flink_to_spark("SELECT COUNT(*) FROM t GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '1' MINUTE)")
    assert "'1 minute', '5 second'" in hop
    assert "session_window(ts, '30 second')" in flink_to_spark(
        "SELECT COUNT(*) FROM t GROUP BY SESSION(ts, INTERVAL '30' SECOND)").lower()


def test_rewritten_window_query_runs_in_spark(spark):
    from datetime import datetime

    spark.createDataFrame([("u1", datetime(2024, 1, 1, 10, 0, 10)), ("u1", datetime(2024, 1, 1, 10, 0, 50)),
                           ("u1", datetime(2024, 1, 1, 10, 1, 5))], "user_id string, ts timestamp") \
        .createOrReplaceTempView("clicks_dialect")
    sql = flink_to_spark("SELECT user_id, TUMBLE_START(ts, INTERVAL '1' MINUTE) AS ws, COUNT(*) AS n "
                         "FROM clicks_dialect GROUP BY user_id, TUMBLE(ts, INTERVAL '1' MINUTE)")
    rows = sorted((r.ws.minute, r.n) for r in spark.sql(sql).collect())
    assert rows == [(0, 2), (1, 1)]
