"""Event-time windows over an append-only table run on Spark's native operators and emit
each window once, when the watermark passes its end — Flink's TUMBLE semantics."""
from __future__ import annotations

import json

import pytest

from job.run.runner import RunOptions, run

pytestmark = pytest.mark.slow


FLINK = """INSERT INTO counts
           SELECT user_id, TUMBLE_START(ts, INTERVAL '1' MINUTE), COUNT(*)
           FROM clicks GROUP BY user_id, TUMBLE(ts, INTERVAL '1' MINUTE)"""
SPARK = """INSERT INTO counts
           SELECT user_id, window.start, COUNT(*)
           FROM clicks GROUP BY user_id, window(ts, '1 minute')"""


@pytest.mark.parametrize("insert", [FLINK, SPARK], ids=["flink-tumble", "spark-window"])
def test_tumble_window_with_watermark_appends_closed_windows(spark, tmp_path, insert):
    src, out = tmp_path / "clicks", tmp_path / "counts"
    src.mkdir()
    events = [("u1", "2024-01-01 10:00:10"), ("u1", "2024-01-01 10:00:50"), ("u2", "2024-01-01 10:00:20"),
              ("u1", "2024-01-01 10:01:05"), ("u1", "2024-01-01 10:03:00")]
    (src / "part-0.json").write_text("".join(json.dumps({"user_id": u, "ts": t}) + "\n" for u, t in events))
    statements = [
        f"""CREATE TABLE clicks (user_id STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
            WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'json')""",
        f"""CREATE TABLE counts (user_id STRING, window_start TIMESTAMP(3), clicks BIGINT)
            WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json')""",
        insert,
    ]
    assert run(RunOptions(statements=statements, once=True, checkpoint_dir=str(tmp_path / "ck"), explain=True)) == 0
    rows = sorted((r.user_id, r.window_start.strftime("%H:%M"), r.clicks)
                  for r in spark.read.schema("user_id string, window_start timestamp, clicks long").json(str(out)).collect())
    # the 10:03 window is still open: the watermark (10:02:55) has not passed its end
    assert rows == [("u1", "10:00", 2), ("u1", "10:01", 1), ("u2", "10:00", 1)]
