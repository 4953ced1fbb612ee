"""Run the seed count in real-time mode in a process of its own (a real-time query needs
more task slots than the tests' shared local[2] session has), feed it, and print one JSON
file (DIR/result.json): the real-time query's physical plan's operator names, the sink's records as they
came, and the run's exit code.  Usage: python -m tests.support.real_time_run BOOTSTRAP DIR"""
from __future__ import annotations

import json
import re
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(bootstrap: str, workdir: str) -> None:
    from pyspark.sql import SparkSession

    from job.api import RunOptions, run
    from tests.support.kafka_io import consume, produce, topic_name

    users, counts = topic_name("rt_users"), topic_name("rt_counts")
    sql = Path(workdir) / "count.sql"
    sql.write_text("SET 'streamsql.real-time-mode' = 'auto';\nSET 'streamsql.real-time-mode.checkpoint-interval' = '5 s';\n"
                   "SET 'spark.sql.shuffle.partitions' = '2';\n"
                   + (ROOT / "examples" / "user_count_by_account" / "pipeline.sql").read_text())
    stop = threading.Event()
    result = {}
    options = RunOptions(files=[str(sql)], variables={"bootstrap": bootstrap, "users_topic": users,
                                                       "counts_topic": counts},
                         checkpoint_dir=str(Path(workdir) / "ckpt"), master="local[2,4]", stop_event=stop)
    import io

    err = io.StringIO()
    runner = threading.Thread(target=lambda: result.update(code=run(options, out=io.StringIO(), err=err)), daemon=True)
    runner.start()
    spark = None
    deadline = time.time() + 240
    def started():
        try:
            return bool(spark and spark.streams.active)
        except Exception:  # noqa: BLE001 - the first session, stopped to start one with more threads
            return False

    while time.time() < deadline and not started():
        time.sleep(1)
        spark = SparkSession.getActiveSession() or SparkSession._instantiatedSession or spark
    query = spark.streams.active[0]

    def user(uid, account):
        return uid, {"uid": uid, "accountId": account, "id": 1, "fullName": "bob", "op": "c"}

    produce(spark, bootstrap, users, [user("100-1", "100"), user("100-2", "100"), user("101-1", "101")])
    seen = []
    while time.time() < deadline and len(seen) < 3:
        time.sleep(1)
        seen = consume(spark, bootstrap, counts)
    execution = query._jsq.streamingQuery().lastExecution()
    plan = execution.executedPlan().toString() if execution is not None else ""
    stop.set()
    runner.join(120)
    (Path(workdir) / "result.json").write_text(json.dumps({"code": result.get("code"), "records": seen, "stderr": err.getvalue(),
                      "operators": sorted(set(re.findall(r"^[\s:|+-]*(?:\*\(\d+\) )?(\w+)", plan, re.M))),
                      "plan": plan}))


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2])
    except BaseException:
        import traceback

        (Path(sys.argv[2]) / "result.json").write_text(json.dumps({"error": traceback.format_exc()}))
        raise
