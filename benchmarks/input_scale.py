"""Input that scales: one large Debezium JSON file, or a large Kafka backlog, read with
default memory, both engines.

    export SPARK_LOCAL_IP=127.0.0.1
    .venv/bin/python benchmarks/input_scale.py --gigabytes 2 --source-per-table 5000000
    scripts/kafka.sh start --name bench --port 19192
    .venv/bin/python benchmarks/input_scale.py --source kafka --records 50000000

The file is benchmarks/generate.py's `users` changelog for --source-per-table events
(throughput.py's data set, made once), written again and again into one file until it is
--gigabytes large. A replayed changelog ends in the table its first pass ends in (the last
event per key is the same), so the seed's count query has the same answer; what grows is
the input. Each engine runs the count query over that one file, cold page cache, as a
whole process with its default memory settings (the job: ./spark-submit.sh's defaults,
1 GB driver heap; Flink: PyFlink's mini-cluster defaults): exit code, wall and CPU seconds,
peak RSS of the process tree. One JSON line per run in results/input_scale.jsonl.

--source kafka: the same changelog replayed as upserts into one 2-partition topic until it
holds --records records (loaded once per size; the broker keeps it), which both engines read
to the offsets they find at their start ('scan.bounded.mode' = 'latest-offset'): a backlog
as a job started after an outage meets it. The job bounds each micro-batch by default
(maxOffsetsPerTrigger), so the backlog is read in batches, never whole.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import engines, kafka_tool  # noqa: E402
from benchmarks.throughput import dataset, engine_files, evict, machine, render_pipeline, run_engine  # noqa: E402

RESULTS = engines.RESULTS / "input_scale.jsonl"


def big_file(work: Path, source: Path, gigabytes: float) -> tuple[Path, int]:
    """A data directory whose users table is one file of ``gigabytes`` (the other tables
    are the source's: the count query does not read them). Returns it and its event count."""
    data = work / f"big-{gigabytes:g}g-from-{source.name}"
    meta = data / "_meta.json"
    if meta.exists():
        return data, json.loads(meta.read_text())["events"]
    shutil.rmtree(data, ignore_errors=True)
    (data / "users").mkdir(parents=True)
    for table in ("colors", "cheeses"):
        (data / table).symlink_to(source / table)
    parts = sorted((source / "users").glob("*.json"))
    target, written, events = gigabytes * 2**30, 0, 0
    with open(data / "users" / "part-00000.json", "wb") as out:
        while written < target:
            for part in parts:
                with open(part, "rb") as f:
                    for line in f:
                        out.write(line)
                        written += len(line)
                        events += 1
                        if written >= target:
                            break
                if written >= target:
                    break
    meta.write_text(json.dumps({"events": events, "bytes": written}))
    return data, events


def kafka_backlog(work: Path, source: Path, records: int, bootstrap: str) -> tuple[str, int]:
    """A 2-partition upsert topic of ``records`` records: the source's users changelog
    replayed (whole passes; the last one cut short by the tool's limit). Loaded once."""
    marker = work / f"backlog-{records}-from-{source.name}-{bootstrap.replace(':', '_')}.json"
    if marker.exists():
        loaded = json.loads(marker.read_text())
        if kafka_tool.end_offsets(bootstrap, loaded["topic"]) == loaded["records"]:
            return loaded["topic"], loaded["records"]
    parts = sorted((source / "users").glob("*.json"))
    per_pass = sum(1 for part in parts for _ in open(part, "rb"))
    passes = -(-records // per_pass)
    topic = f"backlog-{records}-{int(time.time())}"
    kafka_tool.create_topic(bootstrap, topic, 2)
    print(f"loading {passes} passes of {per_pass:,} events into {topic} ...", file=sys.stderr, flush=True)
    loaded = kafka_tool.load_debezium(bootstrap, topic, "uid", parts * passes)
    marker.write_text(json.dumps({"topic": topic, "records": loaded}))
    return topic, loaded


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gigabytes", type=float, default=2.0)
    p.add_argument("--source-per-table", type=int, default=5_000_000)
    p.add_argument("--engines", default="job,flink")
    p.add_argument("--work", default="/tmp/streamsql-bench")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--note", default="")
    p.add_argument("--source", choices=("files", "kafka"), default="files")
    p.add_argument("--records", type=int, default=50_000_000, help="--source kafka: the backlog's records")
    p.add_argument("--bootstrap", default="127.0.0.1:19192")
    a = p.parse_args()
    work = Path(a.work)
    source, _ = dataset(work, a.source_per_table, 100_000, 1)
    if a.source == "kafka":
        topic, events = kafka_backlog(work, source, a.records, a.bootstrap)
        data, size, evicted = source, None, []
        topics = {"users": topic, "colors": topic, "cheeses": topic}   # the count reads users only
    else:
        data, events = big_file(work, source, a.gigabytes)
        size = (data / "users" / "part-00000.json").stat().st_size
        evicted, topics = [data / "users"], {}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for engine in a.engines.split(","):
        evict(engine_files(engine) + evicted)
        sql = render_pipeline("count", a.source, engine, data, a.bootstrap, topics, "blackhole")
        figures = run_engine(engine, sql, work / "runs" / stamp / f"scale-{engine}", a.timeout)
        record = {"kind": "input_scale", "engine": engine, "query": "count", "source": a.source,
                  "file_bytes": size, "events": events,
                  **figures,
                  "events_per_s": round(events / figures["wall_s"]) if figures["exit"] == 0 else None,
                  "machine": machine(), "commit": engines.git_commit(), "when": engines.now_utc(), "note": a.note,
                  "round": stamp}
        engines.append_jsonl(RESULTS, record)
        print(json.dumps({k: record.get(k) for k in ("engine", "file_bytes", "events", "exit", "wall_s", "cpu_s",
                                                     "peak_rss_mb", "events_per_s", "load_before")}), flush=True)


if __name__ == "__main__":
    main()
