"""State that scales: the cost of a small micro-batch over large state, and what its
checkpoint writes.

    export SPARK_LOCAL_IP=127.0.0.1
    .venv/bin/python benchmarks/state_scale.py --keys 2000000 --batches 20
    .venv/bin/python benchmarks/state_scale.py --keys 10000000 --batches 10

The job runs continuously (./spark-submit.sh without --once, default memory settings:
spark-submit's 1 GiB driver) over a directory of JSON-lines files:

    INSERT INTO totals SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k   -- blackhole sink

1. one file of --keys events, one per key, fills the aggregation's state with --keys keys
   (read in splits and micro-batches of at most 'source.max-bytes-per-trigger');
2. then --batches files of --events events each (keys drawn at random from the filled
   ones) are dropped in one at a time; each becomes one micro-batch.

Per small batch: its duration (Spark's triggerExecution, from --metrics-file), the state's
rows after it, and the bytes the batch's checkpoint wrote: the state store files of that
batch's version (RocksDB changelog checkpointing writes only the changes of the batch;
background snapshots of the whole state are counted separately, as they happen). One JSON
line per run in benchmarks/results/state_scale.jsonl, with the machine's load.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import engines  # noqa: E402

RESULTS = engines.RESULTS / "state_scale.jsonl"
PIPELINE = """
CREATE TABLE events (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '{data}', 'format' = 'json');
CREATE TABLE totals (k STRING, n BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED)
  WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k;
"""


def key(i: int) -> str:
    return f"k{i:09d}"


def write_file(directory: Path, name: str, keys) -> None:
    """Written beside the directory, then moved in: the source never sees half a file."""
    tmp = directory.parent / (name + ".tmp")
    with open(tmp, "w") as f:
        for k in keys:
            f.write('{"k":"%s","v":1}\n' % key(k))
    os.rename(tmp, directory / name)


def batches(metrics: Path) -> list[dict]:
    if not metrics.exists():
        return []
    out = []
    for line in metrics.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a line being written
            continue
        if record.get("event") == "batch":
            out.append(record)
    return out


def wait_for(metrics: Path, predicate, timeout: float, proc) -> list[dict]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        seen = batches(metrics)
        if predicate(seen):
            return seen
        if proc.poll() is not None:
            raise SystemExit(f"the job exited ({proc.returncode}) before its batches came; see its log")
        time.sleep(0.2)
    raise SystemExit(f"no such batch within {timeout}s")


def version_bytes(checkpoint: Path, version: int) -> int:
    """Bytes of the state store files of one version (a batch writes version batch id + 1)."""
    total = 0
    for path in checkpoint.rglob(f"{version}.*"):
        if "state" in path.parts and path.is_file():
            total += path.stat().st_size
    return total


def snapshot_bytes(checkpoint: Path) -> int:
    """RocksDB's snapshots of the whole state (uploaded in the background): SST files and
    the zip that lists them."""
    return sum(p.stat().st_size for pattern in ("*.zip", "*.sst") for p in checkpoint.rglob(pattern) if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=2_000_000)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--events", type=int, default=10, help="events per small batch")
    ap.add_argument("--work", default=os.environ.get("STREAMSQL_BENCH_WORK", "/tmp/streamsql-bench"))
    ap.add_argument("--note", default="")
    ap.add_argument("--results", default=str(RESULTS))
    args = ap.parse_args()

    run_dir = Path(args.work) / f"state-scale-{args.keys}"
    shutil.rmtree(run_dir, ignore_errors=True)
    data, checkpoint, metrics = run_dir / "events", run_dir / "checkpoint", run_dir / "metrics.jsonl"
    data.mkdir(parents=True)
    sql = run_dir / "pipeline.sql"
    sql.write_text(PIPELINE.format(data=data))
    started = time.time()
    write_file(data, "fill.json", range(args.keys))
    generate_s = time.time() - started

    cmd = engines.job_command(sql, checkpoint, once=False) + ["--metrics-file", str(metrics)]
    run = engines.Measured(cmd, run_dir / "job.log", env=engines.engine_env(), cwd=engines.engine_cwd("job"))
    try:
        filled = wait_for(metrics, lambda b: sum(x["input_rows"] for x in b) >= args.keys, 3600, run.proc)
        fill_s = time.time() - run.started
        rng = random.Random(7)
        small = []
        for i in range(args.batches):
            before = len(batches(metrics))
            write_file(data, f"small-{i:04d}.json", (rng.randrange(args.keys) for _ in range(args.events)))
            seen = wait_for(metrics, lambda b: any(x["input_rows"] > 0 for x in b[before:]), 600, run.proc)
            batch = next(x for x in seen[before:] if x["input_rows"] > 0)
            time.sleep(0.5)  # the commit's files are closed by the time progress is posted; a margin
            small.append({"batch_id": batch["batch_id"], "input_rows": batch["input_rows"],
                          "duration_ms": batch["latency_ms"], "state_rows": batch["state_rows"],
                          "checkpoint_bytes": version_bytes(checkpoint, batch["batch_id"] + 1)})
            print(f"batch {batch['batch_id']}: {batch['input_rows']} events, {batch['latency_ms']} ms, "
                  f"state {batch['state_rows']:,} keys, checkpoint {small[-1]['checkpoint_bytes']:,} bytes",
                  flush=True)
        cpu_s = run.cpu_now()
    finally:
        run.stop()
        figures = run.wait(60)

    durations = [b["duration_ms"] for b in small]
    record = {
        "kind": "state_scale", "engine": "job", "keys": args.keys, "events_per_batch": args.events,
        "fill_batches": len(filled), "fill_s": round(fill_s, 1), "generate_s": round(generate_s, 1),
        "fill_batch_ms": [b["latency_ms"] for b in filled if b["input_rows"] > 0],
        "small_batches": small,
        "small_ms_p50": engines.percentile(durations, 50), "small_ms_max": max(durations) if durations else None,
        "checkpoint_bytes_p50": engines.percentile([b["checkpoint_bytes"] for b in small], 50),
        "snapshot_bytes_total": snapshot_bytes(checkpoint),
        "state_rows": small[-1]["state_rows"] if small else None,
        "cpu_s_until_stop": round(cpu_s, 1), **figures,
        "machine": {"cores": os.cpu_count(), "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)},
        "commit": engines.git_commit(), "when": engines.now_utc(), "note": args.note,
    }
    engines.append_jsonl(Path(args.results), record)
    print(json.dumps({k: v for k, v in record.items() if k not in ("small_batches", "fill_batch_ms")}))


if __name__ == "__main__":
    main()
