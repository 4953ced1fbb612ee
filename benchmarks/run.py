"""Benchmark the two seed queries over a generated changelog.

    python benchmarks/run.py --events 1000000 --keys 100000 [--source files|kafka] [--query count|join]

Generates the changelog (benchmarks/generate.py), runs the query with the job's own
library API until the whole input is processed, and records events/s, micro-batch
latency (p50/p99 of the time from a batch's start to its sink commit), state rows and
size, and the peak resident memory of the driver + executor processes. Results are
appended to benchmarks/results/results.jsonl; `--summary` rewrites the README table.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results" / "results.jsonl"
QUERIES = {"count": "count_by_account.sql", "join": "color_and_cheese.sql"}
# The generated tables each query reads: the count reads only users, about half the events.
READS = {"count": ("users",), "join": ("users", "colors", "cheeses")}


def events_read(data: Path, query: str) -> int:
    """How many of the generated events the query consumes (lines of the tables it reads)."""
    total = 0
    for table in READS[query]:
        for path in (data / table).iterdir():
            with open(path, "rb") as f:
                total += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    return total


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of a process and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total


def tree_cpu_seconds(pid: int) -> float:
    """CPU time (user + sys) of a process and its descendants: the driver JVM, the Python
    daemon and its workers. Live processes report their own time; finished ones were
    counted into their reaper's cutime/cstime. The machine is shared, so this is the
    number to compare between runs, not the wall time."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                stats[int(entry)] = fields
                children.setdefault(int(fields[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    ticks, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        if p in stats:  # fields after the name: utime=11, stime=12, cutime=13, cstime=14
            ticks += sum(int(x) for x in stats[p][11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_by_part(pid: int) -> dict[str, float]:
    """CPU seconds per part of the tree: JVM threads by kind (JIT compiler, GC, task
    threads…), Python workers, the driver's Python. Only live threads and processes
    count, so take the difference of two samples over a run."""
    from collections import Counter

    tck = os.sysconf("SC_CLK_TCK")
    parts: Counter = Counter()

    def stat(path):
        with open(path) as f:
            text = f.read()
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        # utime + stime, and for processes cutime + cstime (workers the daemon reaped)
        own = sum(int(x) for x in fields[11:13 if "/task/" in path else 15])
        return name, own / tck, int(fields[1])

    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                procs[int(entry)] = stat(f"/proc/{entry}/stat")
            except (OSError, ValueError):
                pass
    todo = [pid]
    while todo:
        p = todo.pop()
        todo += [c for c, (_, _, ppid) in procs.items() if ppid == p]
        name, cpu, _ = procs.get(p, ("?", 0.0, 0))
        if name == "java":
            for tid in os.listdir(f"/proc/{p}/task"):
                try:
                    tname, tcpu, _ = stat(f"/proc/{p}/task/{tid}/stat")
                except (OSError, ValueError):
                    continue
                kind = ("jit" if "CompilerThre" in tname else "gc" if tname.startswith(("GC ", "G1 ")) else
                        "tasks" if tname.startswith("Executor task") else "jvm other")
                parts[kind] += tcpu
        elif p == pid:
            parts["driver python"] += cpu
        else:
            parts["python workers"] += cpu
    return dict(parts)


def stage_wall_ms(stage: dict) -> int:
    """A stage's wall time from the REST API's submission and completion timestamps."""
    from datetime import datetime

    def at(key):
        return datetime.strptime(stage[key].replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    try:
        return round((at("completionTime") - at("submissionTime")).total_seconds() * 1000)
    except (KeyError, ValueError):
        return -1


def percentile(values, q):
    values = sorted(values)
    if not values:
        return 0.0
    k = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return values[k]


def load_kafka(spark, bootstrap: str, data: Path, prefix: str) -> dict[str, str]:
    """Copy the generated changelog into upsert topics: key = id, value = 'after' or tombstone."""
    from pyspark.sql import functions as F

    topics = {}
    for table, key in (("users", "uid"), ("colors", "userUid"), ("cheeses", "userUid")):
        topic = f"{prefix}{table}"
        ev = spark.read.json(str(data / table), schema=f"before struct<{key}:string>, after string, op string")
        records = ev.select(F.coalesce(F.get_json_object("after", f"$.{key}"), F.col(f"before.{key}")).alias("key"),
                            F.when(F.col("op") == "d", F.lit(None)).otherwise(F.col("after")).alias("value"))
        records.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()
        topics[table] = topic
    return topics


def sink_options(bootstrap: str) -> str:
    """The WITH options of the query's upsert-kafka sink (the pipelines' {{ sink_options }})."""
    return ("'connector' = 'upsert-kafka', 'properties.bootstrap.servers' = '%s', 'key.format' = 'raw', "
            "'value.format' = 'json'" % bootstrap)


def append_result(result: dict, path: str, note: str) -> None:
    """One JSON line per run in ``path``, also printed."""
    if note:
        result["note"] = note
    results = Path(path)
    results.parent.mkdir(parents=True, exist_ok=True)
    with open(results, "a") as f:
        f.write(json.dumps(result) + "\n")
    print(json.dumps(result, indent=1))


def write_summary(readme: Path = ROOT / "README.md") -> None:
    """The latest result per (query, source, cold/warm) as a table between the README's bench markers."""
    latest: dict = {}
    for line in RESULTS.read_text().splitlines():
        r = json.loads(line)
        latest[(r["query"], r["source"], r["events"], bool(r.get("warmup_events")))] = r
    rows = ["| query | source | JVM | events (read by the query) | wall s | events/s | events read/s | CPU s "
            "| load avg | state rows | peak RSS MB |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    names = {"count": "user_count_by_account (upsert GROUP BY)", "join": "color and cheese (3-way LEFT JOIN)"}
    for (query, source, _, warm), r in sorted(latest.items()):
        read = r.get("events_read")
        read_text, read_rate = (f"{read:,}", f"{r['events_read_per_s']:,}") if read else ("?", "–")
        rows.append(f"| {names.get(query, query)} | {source} | {'warm' if warm else 'cold'} | {r['events']:,} "
                    f"({read_text}) | {r['seconds']} | {r['events_per_s']:,} | {read_rate} "
                    f"| {r.get('cpu_seconds', '–')} | {r.get('load_avg', '–')} | {r['state_rows']:,} "
                    f"| {r['peak_rss_mb']:,} |")
    write_table(readme, "bench", rows)


def write_table(readme: Path, marker: str, rows: list[str]) -> None:
    """Replace what stands between the README's <!-- marker:start/end --> comments."""
    text = readme.read_text()
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        readme.write_text(head + start + "\n" + "\n".join(rows) + "\n" + end + tail)


def main() -> None:
    if "--summary" in sys.argv:
        from benchmarks import latency

        write_summary()
        latency.write_summary()
        return
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--files", type=int, default=50)
    p.add_argument("--source", choices=("files", "kafka"), default="files")
    p.add_argument("--query", choices=tuple(QUERIES), default="count")
    p.add_argument("--bootstrap", default="127.0.0.1:19092")
    p.add_argument("--max-per-batch", type=int, default=0, help="files or offsets per micro-batch (0: all)")
    p.add_argument("--work", default="/tmp/streamsql-bench")
    p.add_argument("--conf", action="append", default=[], help="extra Spark conf key=value")
    p.add_argument("--warmup", type=int, default=0,
                   help="first run the query over this many events in the same JVM, unmeasured (0: cold start)")
    p.add_argument("--note", default="", help="recorded with the result (e.g. the machine's load)")
    p.add_argument("--results", default=str(RESULTS), help="JSON-lines file the result is appended to")
    a = p.parse_args()

    from benchmarks.generate import write
    from job.pipeline.load import load_statements
    from job.run.program import build_program
    from job.run.queries import plan_queries, start_queries
    from job.run.session import build_session

    work = Path(a.work)
    conf = dict(kv.split("=", 1) for kv in a.conf)
    spark = build_session("benchmark", conf)

    def prepare(events: int, tag: str):
        """Generate (once) and load the input, plan the query with a fresh checkpoint."""
        data = work / f"data-{events}-{a.keys}-{a.files}"
        if not data.exists():
            write(data, events, a.keys, a.files, seed=1)
        run_id = f"bench{int(time.time())}{tag}"
        variables = {"data": str(data), "sink_options": sink_options(a.bootstrap), "sink_topics": "1",
                 "bootstrap": a.bootstrap, "kafka_bounded": "", "topic_prefix": f"{run_id}-"}
        files = [str(ROOT / "benchmarks" / "pipelines" / QUERIES[a.query])]
        if a.source == "files":
            files.insert(0, str(ROOT / "benchmarks" / "pipelines" / "tables_files.sql"))
        else:
            topics = load_kafka(spark, a.bootstrap, data, f"{run_id}-in-")
            variables.update({f"{t}_topic": n for t, n in topics.items()})
            files.insert(0, str(ROOT / "benchmarks" / "pipelines" / "tables_kafka.sql"))
        program = build_program(load_statements(files=files, variables=variables))
        if a.max_per_batch:  # bound micro-batches: several batches show latency and restart costs
            limit_key = "source.max-files-per-trigger" if a.source == "files" else "scan.max-offsets-per-trigger"
            for name in set().union(*program.reads.values()):
                program.catalog.table(name).options[limit_key] = str(a.max_per_batch)
        return program, plan_queries(spark, program, once=True, checkpoint_dir=str(work / "ckpt" / run_id))

    if a.warmup:  # the same query over a small input first: JIT-compiled code, running Python workers
        program, plans = prepare(a.warmup, "w")
        for q in start_queries(plans, program, once=True):
            q.awaitTermination()
    program, plans = prepare(a.events, "")
    consumed = events_read(work / f"data-{a.events}-{a.keys}-{a.files}", a.query)

    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss_bytes(os.getpid()))
            time.sleep(0.5)
    threading.Thread(target=sample, daemon=True).start()

    started, cpu_started, parts_started = time.time(), tree_cpu_seconds(os.getpid()), cpu_by_part(os.getpid())
    queries = start_queries(plans, program, once=True)
    for q in queries:
        q.awaitTermination()
    elapsed = time.time() - started
    cpu = tree_cpu_seconds(os.getpid()) - cpu_started
    parts_ended = cpu_by_part(os.getpid())
    parts = {k: round(v - parts_started.get(k, 0.0), 1) for k, v in sorted(parts_ended.items())}
    load = os.getloadavg()[0]
    done.set()
    progress = [pr for q in queries for pr in q.recentProgress]
    for pr in progress:
        print("PHASES", pr["batchId"], pr["numInputRows"], pr["durationMs"], [(o.get("allUpdatesTimeMs"), o.get("commitTimeMs"), o.get("numRowsUpdated")) for o in pr.get("stateOperators", [])], file=sys.stderr)
    rows = sum(pr["numInputRows"] for pr in progress)
    batch_ms = [pr["durationMs"]["triggerExecution"] for pr in progress if pr["numInputRows"]]
    busy = [pr for pr in progress if pr["numInputRows"]]
    state_rows = sum(op.get("numRowsTotal", 0) for op in (busy[-1]["stateOperators"] if busy else []))
    state_bytes = sum(op.get("memoryUsedBytes", 0) for op in (busy[-1]["stateOperators"] if busy else []))
    result = {
        "query": a.query, "source": a.source, "events": a.events, "keys": a.keys, "input_rows": rows,
        "batches": len(batch_ms), "seconds": round(elapsed, 1), "cpu_seconds": round(cpu, 1),
        "cpu_events_per_s": round(a.events / cpu) if cpu else 0,
        "cpu_parts": parts, "load_avg": round(load, 1),
        # whole-file sources count files as input rows, so rates are per generated event
        "events_per_s": round(a.events / elapsed),
        "events_read": consumed, "events_read_per_s": round(consumed / elapsed),
        "processing_events_per_s": round(a.events / (sum(batch_ms) / 1000)) if batch_ms else 0,
        "batch_latency_p50_ms": percentile(batch_ms, 50), "batch_latency_p99_ms": percentile(batch_ms, 99),
        "state_rows": state_rows, "state_mb": round(state_bytes / 1e6, 1), "peak_rss_mb": round(peak[0] / 1e6),
        "warmup_events": a.warmup, "conf": conf, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    append_result(result, a.results, a.note)
    if conf.get("spark.ui.enabled") == "true":  # per-stage wall time, to see where time goes
        import urllib.request
        base = spark.sparkContext.uiWebUrl + "/api/v1/applications/" + spark.sparkContext.applicationId
        stages = json.load(urllib.request.urlopen(base + "/stages"))
        for st in sorted(stages, key=lambda s: s["stageId"]):
            if st.get("executorRunTime", 0) > 500:
                wall = stage_wall_ms(st)
                print(f"stage {st['stageId']}: wall {wall} ms, run {st['executorRunTime']} ms, in {st.get('inputRecords')} "
                      f"shuffle-in {st.get('shuffleReadRecords')} out {st.get('shuffleWriteRecords')} :: {st['name'][:80]}",
                      file=sys.stderr)


if __name__ == "__main__":
    main()
