"""CPU of an idle pipeline: Flink and the job each running the seed count over an empty
upsert-kafka topic, whole processes, one after the other.

    export SPARK_LOCAL_IP=127.0.0.1
    scripts/kafka.sh start --name bench --port 19192
    .venv/bin/python benchmarks/idle.py --seconds 30

Each engine starts on a fresh 2-partition topic that nobody writes to; after --settle
seconds (start-up, first empty batch) the CPU seconds of its whole process tree are taken
over --seconds. An idle pipeline should cost next to nothing: what it spends is asking its
sources for new data. One JSON line per engine in benchmarks/results/idle.jsonl.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import engines, kafka_tool  # noqa: E402

RESULTS = engines.RESULTS / "idle.jsonl"
PIPELINE = """
CREATE TABLE users (uid STRING, accountId STRING, PRIMARY KEY (uid) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'properties.bootstrap.servers' = '{bootstrap}', 'topic' = '{topic}',
  'key.format' = 'raw', 'value.format' = 'json');
CREATE TABLE user_count_by_account (accountId STRING, userCount BIGINT, PRIMARY KEY (accountId) NOT ENFORCED)
  WITH ('connector' = 'blackhole');
INSERT INTO user_count_by_account SELECT accountId, COUNT(1) FROM users GROUP BY accountId;
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--settle", type=float, default=40)
    p.add_argument("--engines", default="flink,job")
    p.add_argument("--bootstrap", default=os.environ.get("BENCH_KAFKA", "127.0.0.1:19192"))
    p.add_argument("--work", default=os.environ.get("STREAMSQL_BENCH_WORK", "/tmp/streamsql-bench"))
    p.add_argument("--job-rev", help="run the job from a snapshot of this commit (default: the working tree)")
    p.add_argument("--note", default="")
    p.add_argument("--results", default=str(RESULTS))
    a = p.parse_args()
    if a.job_rev:
        os.environ["STREAMSQL_JOB_REV"] = a.job_rev
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for engine in a.engines.split(","):
        run_dir = Path(a.work) / "idle" / stamp / engine
        run_dir.mkdir(parents=True, exist_ok=True)
        topic = f"idle-{stamp}-{engine}"
        kafka_tool.create_topic(a.bootstrap, topic, 2)
        sql = run_dir / "pipeline.sql"
        sql.write_text(PIPELINE.format(bootstrap=a.bootstrap, topic=topic))
        cmd = (engines.flink_command(sql) if engine == "flink"
               else engines.job_command(sql, run_dir / "checkpoints", once=False))
        run = engines.Measured(cmd, run_dir / f"{engine}.log", engines.engine_env(), engines.engine_cwd(engine))
        time.sleep(a.settle)
        load = engines.load_avg()
        before = run.cpu_now()
        time.sleep(a.seconds)
        cpu = run.cpu_now() - before
        alive = run.proc.poll() is None
        run.stop()
        figures = run.wait(60)
        record = {"kind": "idle", "engine": engine, "seconds": a.seconds, "cpu_s": round(cpu, 2),
                  "cpu_share": round(cpu / a.seconds, 4), "running": alive, "load": load,
                  "peak_rss_mb": figures["peak_rss_mb"], "commit": engines.git_commit(), "when": engines.now_utc(),
                  "note": a.note}
        engines.append_jsonl(Path(a.results), record)
        print(record, flush=True)


if __name__ == "__main__":
    main()
