"""Latency from input to sink, with the job running continuously at a fixed input rate.

    python benchmarks/latency.py --query count|join --rate 20000 --seconds 60 [--warmup 30]

A feeder streaming query (Spark's `rate` source → Kafka, in the same application) writes
upsert records for the three seed tables (users 50%, colours 25%, cheeses 25%; 10%
tombstones; keys over --keys users) at --rate records/s. The job runs the seed query over
those topics as it would in production (continuous micro-batches; `--interval` is the
pipeline's `execution.checkpointing.interval`, default 0: the next batch starts as soon as
the last one is done) into an upsert-kafka sink.

An event's latency is the time from its record's Kafka timestamp (when the feeder's
producer created it, i.e. when it became readable) to the end of the micro-batch that
consumed it (its result committed to the sink). After feeding for --warmup + --seconds,
the feeder stops and the job drains; events of the measured window (after the warmup,
which absorbs the cold start) give p50/p99/max. The job keeps up when the events it read
per second equals the rate and the drain is short. Results go to
benchmarks/results/latency.jsonl; `run.py --summary` puts them in the README.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.run import QUERIES, READS, append_result, percentile, sink_options, write_table  # noqa: E402

LATENCY_RESULTS = ROOT / "benchmarks" / "results" / "latency.jsonl"
TABLES = ("users", "colors", "cheeses")


def create_topics(bootstrap: str, names: list[str], partitions: int) -> None:
    for name in names:
        subprocess.run([str(ROOT / "scripts" / "kafka-topics.sh"), "--bootstrap-server", bootstrap, "--create",
                        "--topic", name, "--partitions", str(partitions)], check=True, capture_output=True)


def start_feeder(spark, bootstrap: str, prefix: str, rate: int, keys: int, checkpoint: str):
    """rate source → upsert records for the three tables, as benchmarks/generate.py shapes them."""
    from pyspark.sql import functions as F

    v = F.col("value")

    def pick(seed: int, n: int):
        return F.pmod(F.xxhash64(v, F.lit(seed)), F.lit(n))

    uid = F.concat(F.lit("u"), pick(1, keys).cast("string"))
    table = F.element_at(F.array(*[F.lit(t) for t in ("users", "users", "colors", "cheeses")]), (F.pmod(v, 4) + 1).cast("int"))
    colors = F.array(*[F.lit(c) for c in ("red", "blue", "green", "yellow", "black", "white")])
    cheeses = F.array(*[F.lit(c) for c in ("brie", "cheddar", "gouda", "comte", "feta", "stilton")])
    value = (F.when(pick(2, 10) == 0, F.lit(None).cast("string"))  # a tombstone
             .when(table == "users", F.to_json(F.struct(uid.alias("uid"),
                                                        F.concat(F.lit("a"), pick(3, max(1, keys // 10)).cast("string")).alias("accountId"),
                                                        pick(4, 1000).cast("int").alias("score"))))
             .when(table == "colors", F.to_json(F.struct(uid.alias("userUid"),
                                                         F.element_at(colors, (pick(5, 6) + 1).cast("int")).alias("favoriteColor"))))
             .otherwise(F.to_json(F.struct(uid.alias("userUid"),
                                           F.element_at(cheeses, (pick(6, 6) + 1).cast("int")).alias("favoriteCheese")))))
    topic = F.concat(F.lit(prefix), table)
    records = (spark.readStream.format("rate").option("rowsPerSecond", str(rate)).option("numPartitions", "1").load()
               .select(topic.alias("topic"), uid.alias("key"), value.alias("value")))
    return (records.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("kafka.linger.ms", "5").option("checkpointLocation", checkpoint)
            .trigger(processingTime="100 milliseconds").queryName("latency-feeder").start())


def offsets_of(offset) -> dict:
    """A Kafka source offset from a progress report: {topic: {partition: offset}}."""
    parsed = json.loads(offset) if isinstance(offset, str) else offset
    return parsed or {}


def batch_ranges(progress: list[dict], topics: set[str]) -> list[tuple]:
    """(topic, partition, start offset, end offset, batch end ms) per micro-batch and partition."""
    out = []
    for p in progress:
        if not p["numInputRows"]:
            continue
        ended = started_ms(p) + p["durationMs"]["triggerExecution"]
        for source in p["sources"]:
            start, end = offsets_of(source["startOffset"]), offsets_of(source["endOffset"])
            for topic, parts in end.items():
                if topic not in topics:
                    continue
                for part, offset in parts.items():
                    first = (start.get(topic) or {}).get(part, 0)
                    if offset > first:
                        out.append((topic, int(part), int(first), int(offset), int(ended)))
    return out


def started_ms(progress: dict) -> float:
    return datetime.strptime(progress["timestamp"].replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000


def end_offsets(spark, bootstrap: str, topics: list[str]) -> dict[tuple, int]:
    """(topic, partition) → the offset after its last record."""
    from pyspark.sql import functions as F

    records = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", ",".join(topics)).option("startingOffsets", "earliest").load())
    return {(r[0], r[1]): r[2] + 1 for r in records.groupBy("topic", "partition").agg(F.max("offset")).collect()}


def caught_up(query, ends: dict[tuple, int]) -> bool:
    last = query.lastProgress
    if not last:
        return False
    read = {}
    for source in last["sources"]:
        for topic, parts in offsets_of(source["endOffset"]).items():
            for part, offset in parts.items():
                read[(topic, int(part))] = int(offset)
    return all(read.get(tp, -1) >= end for tp, end in ends.items())


def event_latencies(spark, bootstrap: str, ranges: list[tuple], topics: list[str], measured_from_ms: int):
    """Per consumed event of the measured window: batch end − record timestamp, in ms."""
    from pyspark.sql import functions as F

    records = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", ",".join(topics)).option("startingOffsets", "earliest").load()
               .select("topic", "partition", "offset", F.unix_millis("timestamp").alias("ts")))
    batches = spark.createDataFrame(ranges, "topic string, partition int, first long, last long, ended long")
    joined = records.join(F.broadcast(batches), ["topic", "partition"]).where(
        (F.col("offset") >= F.col("first")) & (F.col("offset") < F.col("last")) & (F.col("ts") >= measured_from_ms))
    return [r[0] for r in joined.select((F.col("ended") - F.col("ts")).alias("ms")).collect()]


def write_summary(readme: Path = ROOT / "README.md") -> None:
    """The latest result per (query, rate, interval) as a table between the README's latency markers."""
    if not LATENCY_RESULTS.exists():
        return
    latest: dict = {}
    for line in LATENCY_RESULTS.read_text().splitlines():
        r = json.loads(line)
        latest[(r["query"], r["rate"], r["interval"])] = r
    rows = ["| query | offered records/s (all topics) | read by the query /s | p50 ms | p99 ms | max ms | batches "
            "| batch p50 ms | drain s | load avg |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (query, rate, interval), r in sorted(latest.items()):
        rows.append(f"| {query}{'' if interval == '0' else f' (interval {interval})'} | {rate:,} "
                    f"| {r['events_read_per_s']:,} | {r['latency_p50_ms']:,} | {r['latency_p99_ms']:,} "
                    f"| {r['latency_max_ms']:,} | {r['batches']} | {r['batch_p50_ms']:,} | {r['drain_s']} | {r['load_avg']} |")
    write_table(readme, "latency", rows)


def main() -> None:
    from job.pipeline.load import load_statements
    from job.run.program import build_program
    from job.run.queries import plan_queries, start_queries
    from job.run.session import build_session

    p = argparse.ArgumentParser()
    p.add_argument("--query", choices=tuple(QUERIES), default="count")
    p.add_argument("--rate", type=int, default=20_000, help="records/s over the three topics")
    p.add_argument("--seconds", type=int, default=60, help="the measured window")
    p.add_argument("--warmup", type=int, default=30, help="seconds fed before the measured window")
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--interval", default="", help="the job's micro-batch interval ('1 s'); default: back to back")
    p.add_argument("--bootstrap", default="127.0.0.1:19092")
    p.add_argument("--work", default="/tmp/streamsql-latency")
    p.add_argument("--note", default="")
    p.add_argument("--results", default=str(LATENCY_RESULTS))
    a = p.parse_args()

    run_id = f"lat{int(time.time())}"
    prefix = f"{run_id}-in-"
    topics = {t: prefix + t for t in TABLES}
    create_topics(a.bootstrap, list(topics.values()), a.partitions)
    # Every micro-batch's progress is needed afterwards (Spark keeps the last 100 by default).
    spark = build_session("latency-benchmark", {"spark.sql.streaming.numRecentProgressUpdates": "100000"})
    work = Path(a.work) / run_id

    variables = {"sink_options": sink_options(a.bootstrap), "sink_topics": "1",
                 "bootstrap": a.bootstrap, "kafka_bounded": "", "topic_prefix": f"{run_id}-",
                 **{f"{t}_topic": n for t, n in topics.items()}}
    statements = load_statements(files=[str(ROOT / "benchmarks" / "pipelines" / "tables_kafka.sql"),
                                        str(ROOT / "benchmarks" / "pipelines" / QUERIES[a.query])],
                                 variables=variables)
    program = build_program(statements)
    if a.interval:
        program.conf["execution.checkpointing.interval"] = a.interval
    for name in set().union(*program.reads.values()):  # the feeder starts first: read from the start
        program.catalog.table(name).options["scan.startup.mode"] = "earliest-offset"

    feeder = start_feeder(spark, a.bootstrap, prefix, a.rate, a.keys, str(work / "feeder"))
    plans = plan_queries(spark, program, once=False, checkpoint_dir=str(work / "ckpt"))
    jobs = start_queries(plans, program, once=False)
    fed_from = time.time()
    measured_from = fed_from + a.warmup
    time.sleep(a.warmup + a.seconds)
    feeder.stop()
    fed_until = time.time()

    read_topics = {topics[t] for t in READS[a.query]}
    ends = end_offsets(spark, a.bootstrap, sorted(read_topics))
    job = jobs[-1]
    deadline = time.time() + 600
    while time.time() < deadline and not caught_up(job, ends):
        time.sleep(0.2)
    drained = time.time()
    progress = list(job.recentProgress)
    for q in jobs:
        q.stop()

    ranges = batch_ranges(progress, read_topics)
    latencies = sorted(event_latencies(spark, a.bootstrap, ranges, sorted(read_topics), int(measured_from * 1000)))
    busy = [pr for pr in progress if pr["numInputRows"]]
    window = fed_until - measured_from
    result = {
        "query": a.query, "source": "kafka", "rate": a.rate, "keys": a.keys, "partitions": a.partitions,
        "interval": a.interval or "0", "warmup_s": a.warmup, "measured_s": round(window, 1),
        "events_measured": len(latencies), "events_read_per_s": round(len(latencies) / window) if window else 0,
        "latency_p50_ms": percentile(latencies, 50), "latency_p99_ms": percentile(latencies, 99),
        "latency_max_ms": latencies[-1] if latencies else 0,
        "batches": len(busy), "batch_p50_ms": percentile([pr["durationMs"]["triggerExecution"] for pr in busy], 50),
        "rows_per_batch_p50": percentile([pr["numInputRows"] for pr in busy], 50),
        "drain_s": round(drained - fed_until, 1), "load_avg": round(os.getloadavg()[0], 1),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    append_result(result, a.results, a.note)


if __name__ == "__main__":
    main()
