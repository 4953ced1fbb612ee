"""Event-to-sink latency of Flink and the job at a fixed input rate, on Kafka.

    export SPARK_LOCAL_IP=127.0.0.1
    scripts/kafka.sh start --name bench --port 19192
    .venv/bin/python benchmarks/latency_engines.py --query count --rate 1000 --seconds 60 --warmup 30
    .venv/bin/python benchmarks/latency_engines.py --query join --rate 10000 --engines flink,job

For each engine in turn (a whole process, running continuously as in production: the job
by ./spark-submit.sh without --once, Flink by benchmarks/flink_runner.py at parallelism 2):

1. fresh input topics (2 partitions) and a sink topic whose records carry the time the
   broker appended them (message.timestamp.type = LogAppendTime, the same clock for both
   engines);
2. the engine starts, and benchmarks/kafka/KafkaTool.java's producer writes upsert records
   for the tables the query reads at --rate records/s for --warmup + --seconds (keys over
   --keys users, 10% tombstones). Each value carries ts: when the producer made it, in
   microseconds, unique per record;
3. the query (benchmarks/pipelines/latency_*.sql: the seed query carrying ts to its sink
   record, MAX(ts) for the count, each side's ts for the join) writes upsert-kafka;
4. after the producer stops, the engine drains (until the sink topic is still for 5 s, looked
   at from 3 s after the producer's end, every 2 s: each look starts a JVM), is
   stopped, and the sink topic is read back.

An event's latency is the broker's append time of the first sink record that shows its
change, minus the time the producer made it. Every event produced in the measured window
counts, tombstones included (benchmarks/latency_credit.py says how each is credited);
events produced during the warm-up (engine start, JIT, the backlog of the first batch)
are left out. `measured`: events credited; `unanswered`: events no sink record shows
(counted with their time to the end of the run); `unaffected`: events that change nothing
in the sink (a color for a user that does not exist), for which neither engine writes. *kept up*: the engine drained
within 5 s of the producer's end and its latency did not grow over the window (the last
quarter's p99 at most twice the first quarter's, or 1 s more). CPU-seconds per event: the
engine's whole process tree over the measured window / events offered in it.

One JSON line per run in benchmarks/results/latency_engines.jsonl.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import engines, kafka_tool, latency_credit  # noqa: E402

PIPELINES = ROOT / "benchmarks" / "pipelines"
READS = {"count": ["users"], "join": ["users", "colors", "cheeses"]}
RESULTS = engines.RESULTS / "latency_engines.jsonl"


def kept_up(samples: list[tuple[float, float]], drain_s: float) -> dict:
    """Did the engine keep up? No growing latency over the window, and a short drain."""
    samples = sorted(samples)
    q = max(1, len(samples) // 4)
    first = engines.percentile([l for _, l in samples[:q]], 99) or 0
    last = engines.percentile([l for _, l in samples[-q:]], 99) or 0
    growing = last > max(2 * first, first + 1000)
    return {"kept_up": bool(samples) and not growing and drain_s <= 5, "p99_first_quarter_ms": round(first),
            "p99_last_quarter_ms": round(last)}


def render(query: str, bootstrap: str, prefix: str) -> str:
    variables = {"bootstrap": bootstrap, "prefix": prefix}
    return (engines.render((PIPELINES / "latency_tables.sql").read_text(), variables) + "\n"
            + engines.render((PIPELINES / f"latency_{query}.sql").read_text(), variables))


def job_mode(log: Path) -> str:
    """Which mode ran the job's query, from its start-up line."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return "real-time" if ": real-time mode" in text else "micro-batch"


def run_one(a, engine: str, stamp: str, pair: int = 0) -> dict:
    prefix = f"lat-{stamp}-{pair}-{engine}-{a.query}-"
    for table in ("users", "colors", "cheeses"):
        kafka_tool.create_topic(a.bootstrap, prefix + table, a.partitions)
    kafka_tool.create_topic(a.bootstrap, prefix + "sink", a.partitions, message_timestamp_type="LogAppendTime")
    run_dir = Path(a.work) / "latency" / stamp / f"{pair}-{engine}"
    run_dir.mkdir(parents=True, exist_ok=True)
    sql_file = run_dir / f"{engine}.sql"
    sets = "".join(f"SET '{k}' = '{v}';\n" for k, v in (s.split("=", 1) for s in a.job_set)) if engine == "job" else ""
    sql_file.write_text(sets + render(a.query, a.bootstrap, prefix))
    cmd = (engines.job_command(sql_file, run_dir / "checkpoints", once=False, conf=a.job_conf) if engine == "job"
           else engines.flink_command(sql_file))
    proc = engines.Measured(cmd, run_dir / f"{engine}.log", engines.engine_env(), engines.engine_cwd(engine))
    started = time.time()
    producer = kafka_tool.start_rate(a.bootstrap, prefix, READS[a.query], a.rate, a.warmup + a.seconds, a.keys,
                                     a.seed, run_dir / "producer.log", events=run_dir / "events.tsv")
    window_start = started + a.warmup
    time.sleep(max(0.0, window_start - time.time()))
    cpu0 = proc.cpu_now()
    cpu_t0 = time.time()
    out, _ = producer.communicate()
    cpu1 = proc.cpu_now()
    cpu_t1 = time.time()
    summary = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    fed_until = summary.get("ended_ms", time.time() * 1000) / 1000
    window_start = summary.get("started_ms", started * 1000) / 1000 + a.warmup
    # drain: until the sink topic is still for 5 s (at most --drain-timeout). Each look at
    # the topic starts a JVM (KafkaTool), about a CPU-second on a 2-core machine, so the
    # first look waits 3 s and the next ones 2 s apart: looking every second from the
    # producer's end slowed the engine's batch of the window's last events.
    last_end, still_since = -1, time.time()
    deadline = time.time() + a.drain_timeout
    time.sleep(3)
    while time.time() < deadline and proc.proc.poll() is None:
        end = kafka_tool.end_offsets(a.bootstrap, prefix + "sink")
        if end != last_end:
            last_end, still_since = end, time.time()
        elif time.time() - still_since >= 5:
            break
        time.sleep(2)
    proc.stop()
    figures = proc.wait(60)
    for key in ("cpu_s", "cpu_user_s", "cpu_sys_s"):  # also counts the producer (reaped here too): see window_cpu_s
        figures.pop(key, None)
    records = list(kafka_tool.dump(a.bootstrap, prefix + "sink"))
    last_append = max((r[2] for r in records), default=0) / 1000
    credited = latency_credit.credit(a.query, latency_credit.read_events(run_dir / "events.tsv"), records,
                                     (window_start, fed_until), max(last_append, fed_until))
    samples = credited.samples
    drain_s = round(max(0.0, last_append - fed_until), 2)
    lat = latency_credit.all_latencies(credited, max(last_append, fed_until))
    offered = a.rate * a.seconds
    record = {
        "kind": "latency", "engine": engine, "query": a.query, "rate": a.rate, "keys": a.keys,
        "partitions": a.partitions, "warmup_s": a.warmup, "seconds": a.seconds,
        "produced": summary, "sink_records": len(records), "measured": len(samples),
        "unanswered": len(credited.unanswered), "unaffected": credited.unaffected,
        "latency_p50_ms": round(engines.percentile(lat, 50)) if lat else None,
        "latency_p99_ms": round(engines.percentile(lat, 99)) if lat else None,
        "latency_max_ms": round(max(lat)) if lat else None,
        "drain_s": drain_s, **kept_up(samples, drain_s),
        "window_cpu_s": round(cpu1 - cpu0, 2), "window_s": round(cpu_t1 - cpu_t0, 1),
        "cpu_ms_per_event": round((cpu1 - cpu0) / offered * 1000, 3) if offered else None,
        "engine_run": figures, "machine": {"cores": os.cpu_count()}, "commit": engines.git_commit(),
        "when": engines.now_utc(), "note": a.note, "round": stamp, "pair": pair, "credit": "every event",
        **({"mode": job_mode(run_dir / f"{engine}.log")} if engine == "job" else {}),
        **({"job_conf": a.job_conf} if engine == "job" and a.job_conf else {}),
        **({"job_set": a.job_set} if engine == "job" and a.job_set else {}),
    }
    if not lat:
        record["error"] = engines.tail(run_dir / f"{engine}.log", 12)
    return record


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--query", choices=tuple(READS), default="count")
    p.add_argument("--rate", type=int, default=1000, help="records/s into the tables the query reads")
    p.add_argument("--seconds", type=int, default=60, help="the measured window")
    p.add_argument("--warmup", type=int, default=30, help="seconds fed before the measured window")
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--engines", default="flink,job")
    p.add_argument("--drain-timeout", type=float, default=120)
    p.add_argument("--bootstrap", default=os.environ.get("BENCH_KAFKA", "127.0.0.1:19192"))
    p.add_argument("--work", default=os.environ.get("STREAMSQL_BENCH_WORK", "/tmp/streamsql-bench"))
    p.add_argument("--job-rev", help="run the job from a snapshot of this commit (default: the working tree)")
    p.add_argument("--job-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a --conf for the job's spark-submit (repeatable), e.g. for an A/B of a setting")
    p.add_argument("--job-set", action="append", default=[], metavar="KEY=VALUE",
                   help="a SET statement for the job's pipeline (repeatable), e.g. streamsql.trigger.interval=500ms")
    p.add_argument("--pairs", type=int, default=3, help="runs of each engine, interleaved (flink, job, flink, ...)")
    p.add_argument("--note", default="")
    p.add_argument("--results", default=str(RESULTS))
    a = p.parse_args()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    if a.job_rev:
        os.environ["STREAMSQL_JOB_REV"] = a.job_rev
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for pair, engine in ((i, e) for i in range(a.pairs) for e in a.engines.split(",")):
        record = run_one(a, engine, stamp, pair)
        engines.append_jsonl(Path(a.results), record)
        print(json.dumps({k: record.get(k) for k in ("pair", "engine", "mode", "query", "rate", "measured", "unanswered", "latency_p50_ms",
                                                     "latency_p99_ms", "drain_s", "kept_up", "cpu_ms_per_event",
                                                     "error")}), flush=True)


if __name__ == "__main__":
    main()
