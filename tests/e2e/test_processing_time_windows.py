"""Windows on processing time (Flink's ``TUMBLE(TABLE t, DESCRIPTOR(proctime), …)``,
Nexmark q12): a window is emitted once the clock has passed its end. A bounded run
(``--once``) ends with the windows still open left unemitted, as Flink drops them at the
end of a bounded input; the checkpoint keeps them, and a later run emits them once its
clock has passed their end."""
from __future__ import annotations

import json
import time

import pytest

from job.api import RunOptions, run

pytestmark = pytest.mark.slow

TVF = """INSERT INTO counts
         SELECT user_id, COUNT(*), window_start, window_end
         FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(pt), INTERVAL '1' SECOND))
         GROUP BY user_id, window_start, window_end"""
LEGACY = """INSERT INTO counts
            SELECT user_id, COUNT(*), TUMBLE_START(pt, INTERVAL '1' SECOND), TUMBLE_END(pt, INTERVAL '1' SECOND)
            FROM clicks GROUP BY user_id, TUMBLE(pt, INTERVAL '1' SECOND)"""

# Nexmark q12's shape: PROCTIME() computed by a view that leaves the event time out.
OVER_VIEW = """INSERT INTO counts
               SELECT user_id, COUNT(*), window_start, window_end
               FROM TABLE(TUMBLE(TABLE timed, DESCRIPTOR(p), INTERVAL '1' SECOND))
               GROUP BY user_id, window_start, window_end"""
VIEW = "CREATE VIEW timed AS SELECT user_id, PROCTIME() AS p FROM clicks"


def statements(tmp_path, insert):
    src, out = tmp_path / "clicks", tmp_path / "counts"
    src.mkdir(exist_ok=True)
    # The table's own WATERMARK is on 2024's event times: a processing-time window must not
    # wait for it.
    return [f"""CREATE TABLE clicks (user_id STRING, ts TIMESTAMP(3), pt AS PROCTIME(),
                  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
                WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'json')""",
            f"""CREATE TABLE counts (user_id STRING, clicks BIGINT, window_start TIMESTAMP(3),
                  window_end TIMESTAMP(3))
                WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json')""",
            *([VIEW] if insert is OVER_VIEW else []), insert]


def write(tmp_path, name, users):
    (tmp_path / "clicks" / name).write_text(
        "".join(json.dumps({"user_id": u, "ts": "2024-01-01 10:00:00"}) + "\n" for u in users))


def written(spark, tmp_path):
    if not (tmp_path / "counts").exists():
        return []
    return sorted((r.user_id, r.clicks, (r.window_end - r.window_start).total_seconds()) for r in spark.read.schema(
        "user_id string, clicks long, window_start timestamp, window_end timestamp")
        .json(str(tmp_path / "counts")).collect())


@pytest.mark.parametrize("insert", [TVF, LEGACY, OVER_VIEW], ids=["window-tvf", "group-window", "over-a-view"])
def test_a_window_is_emitted_once_the_clock_passes_its_end(spark, tmp_path, insert):
    sql = statements(tmp_path, insert)
    write(tmp_path, "part-0.json", ["u1", "u1", "u2", "u1"])
    started = time.monotonic()
    assert run(RunOptions(statements=sql, once=True, checkpoint_dir=str(tmp_path / "ck"))) == 0
    # The input ended before the clock passed its window's end: nothing yet (Flink: nothing).
    assert written(spark, tmp_path) == []

    # A later run, after the window's end: its clock closes the first run's window. The
    # rows it reads are in a window of their own, still open when it ends.
    time.sleep(max(0.0, 1.2 - (time.monotonic() - started)))
    write(tmp_path, "part-1.json", ["u3"])
    assert run(RunOptions(statements=sql, once=True, checkpoint_dir=str(tmp_path / "ck"))) == 0
    assert written(spark, tmp_path) == [("u1", 3, 1.0), ("u2", 1, 1.0)]
