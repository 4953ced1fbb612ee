"""Event-time windows over an append-only table: each window is emitted once, when the
watermark passes its end, and the end of a bounded input (``--once``) closes every
window, as Flink's bounded sources do."""
from __future__ import annotations

import io
import json

import pytest

from job.api import RunOptions, run

pytestmark = pytest.mark.slow

LEGACY = """INSERT INTO counts
            SELECT user_id, TUMBLE_START(ts, INTERVAL '1' MINUTE), COUNT(*)
            FROM clicks GROUP BY user_id, TUMBLE(ts, INTERVAL '1' MINUTE)"""
TVF = """INSERT INTO counts
         SELECT user_id, window_start, COUNT(*)
         FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTES))
         GROUP BY window_start, window_end, user_id"""
EVENTS = [("u1", "2024-01-01 10:00:10"), ("u1", "2024-01-01 10:00:50"), ("u2", "2024-01-01 10:00:20"),
          ("u1", "2024-01-01 10:01:05"), ("u1", "2024-01-01 10:03:00")]


def statements(tmp_path, insert):
    src, out = tmp_path / "clicks", tmp_path / "counts"
    src.mkdir(exist_ok=True)
    return [
        f"""CREATE TABLE clicks (user_id STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
            WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'json')""",
        f"""CREATE TABLE counts (user_id STRING, window_start TIMESTAMP(3), clicks BIGINT)
            WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json')""",
        insert,
    ]


def write(tmp_path, name, events):
    (tmp_path / "clicks" / name).write_text("".join(json.dumps({"user_id": u, "ts": t}) + "\n" for u, t in events))


def written(spark, tmp_path):
    return sorted((r.user_id, r.window_start.strftime("%H:%M"), r.clicks) for r in spark.read.schema(
        "user_id string, window_start timestamp, clicks long").json(str(tmp_path / "counts")).collect())


@pytest.mark.parametrize("insert", [LEGACY, TVF], ids=["group-window", "window-tvf"])
def test_once_closes_every_window_at_the_end_of_the_input(spark, tmp_path, insert):
    sql = statements(tmp_path, insert)
    write(tmp_path, "part-0.json", EVENTS)
    assert run(RunOptions(statements=sql, once=True, checkpoint_dir=str(tmp_path / "ck"))) == 0
    # The 10:03 window closes too: the input ended (Flink's watermark goes to the end).
    assert written(spark, tmp_path) == [("u1", "10:00", 2), ("u1", "10:01", 1), ("u1", "10:03", 1),
                                        ("u2", "10:00", 1)]

    # A later run continues from the checkpoint: new windows are counted and emitted
    # once; rows older than the event time already closed are late and dropped.
    write(tmp_path, "part-1.json", [("u2", "2024-01-01 10:20:00"), ("u1", "2024-01-01 10:00:30")])
    assert run(RunOptions(statements=sql, once=True, checkpoint_dir=str(tmp_path / "ck"))) == 0
    assert written(spark, tmp_path) == [("u1", "10:00", 2), ("u1", "10:01", 1), ("u1", "10:03", 1),
                                        ("u2", "10:00", 1), ("u2", "10:20", 1)]


VIEW = """CREATE VIEW u1_clicks AS SELECT user_id, ts FROM clicks WHERE user_id = 'u1'"""
OVER_VIEW = """INSERT INTO counts
               SELECT user_id, window_start, COUNT(*)
               FROM TABLE(TUMBLE(TABLE u1_clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTES))
               GROUP BY window_start, window_end, user_id"""


def test_once_closes_windows_over_a_view_that_filters_other_columns(spark, tmp_path):
    """The end-of-input marker carries only the event time: a filter on another column
    (a view's WHERE, as in every Nexmark query) must not drop it before it moves the
    watermark, which Spark would do by pushing the filter below the watermark."""
    sql = statements(tmp_path, OVER_VIEW)
    sql.insert(2, VIEW)
    write(tmp_path, "part-0.json", EVENTS)
    assert run(RunOptions(statements=sql, once=True, checkpoint_dir=str(tmp_path / "ck"))) == 0
    assert written(spark, tmp_path) == [("u1", "10:00", 2), ("u1", "10:01", 1), ("u1", "10:03", 1)]


def test_sparks_window_function_is_not_flink_sql(tmp_path):
    err = io.StringIO()
    code = run(RunOptions(statements=statements(tmp_path, """INSERT INTO counts
        SELECT user_id, window.start, COUNT(*) FROM clicks GROUP BY user_id, window(ts, '1 minute')"""),
        dry_run=True), out=io.StringIO(), err=err)
    assert code == 2, err.getvalue()
    assert "SQL parse failed" in err.getvalue() or "not a Flink function" in err.getvalue(), err.getvalue()
