"""Throughput of Flink and the job on the same input, whole processes, interleaved pairs.

    export SPARK_LOCAL_IP=127.0.0.1
    scripts/flink.sh install                                  # Flink 2.3 + its Kafka SQL connector
    scripts/kafka.sh start --name bench --port 19192          # only for --source kafka / --check
    .venv/bin/python benchmarks/throughput.py --query count --source files --per-table 500000 --pairs 3
    .venv/bin/python benchmarks/throughput.py --query join --source kafka --per-table 500000 --pairs 3
    .venv/bin/python benchmarks/throughput.py --query join --per-table 5000000 --keys 1000000 --pairs 3
    .venv/bin/python benchmarks/throughput.py --query join --per-table 5000000 --keys 1000000 --sink upsert-kafka
    .venv/bin/python benchmarks/throughput.py --query count --source files --per-table 20000 --check

The input is benchmarks/generate.py's changelog with --per-table events in each of the
three tables (written once per size under --work; for Kafka also loaded once into
2-partition upsert topics that both engines read). Each run is a whole process, timed from
its start to its exit: the job by `./spark-submit.sh -- --file pipeline.sql --once` (local
Spark on this machine's cores), Flink by benchmarks/flink_runner.py in Flink's own
virtualenv (PyFlink's mini-cluster, streaming mode, parallelism 2). Both read the same
rendered SQL (the seed pipeline, source tables from benchmarks/pipelines/) into a
`blackhole` sink (--sink blackhole, the default) or a real one (--sink upsert-kafka);
Kafka sources have 'scan.bounded.mode' = 'latest-offset' (both engines stop at the end of
what is there). --keys sets the number of user ids the changelog draws from (the users
table's keys; accounts are a tenth of them).

With --sink upsert-kafka each run writes into a new 2-partition topic of its own, and the
time includes writing it (a blackhole takes the raw change stream; a real sink is what a
user's pipeline pays, and the engines write different numbers of records: Flink every
change, the job each key's net change per batch). After each run the table the topic
stands for (last value per key) is compared with the reference (the query over the
tables the changelog leaves) and with the other engine's table of the same pair; the
record keeps both verdicts and the topic's record count.

Pairs alternate which engine goes first (F,J then J,F ...). The first pair is *cold*: before
each of its runs the input files and the engine's own jars and libraries are dropped from the
OS page cache (posix_fadvise DONTNEED, per file: nothing else on the machine is touched).
The other pairs are *warm*: the same fresh processes with the page cache as the previous runs
left it. No run reuses a JVM: every run pays its start-up, which is what a scheduled `--once`
run pays. For Kafka input, cold evicts only the engines' files (the broker owns its log).

Per run, one JSON line in benchmarks/results/throughput.jsonl: wall s, CPU s of the whole
process tree (user + sys, every process the engine started), events read (the lines of the
tables the query reads: the count reads only users) and events read per wall second, peak
RSS of the tree, load average before and after, the machine, commit and note.

--check runs each engine once into a real sink instead (upsert-kafka topics, one per engine)
and compares the tables those topics stand for (last value per key) with each other and with
a reference (the query computed in Python from the tables the changelog leaves); then runs
the query once more per engine without a sink (Flink's collect(), the job's
job.api.collect) and compares those final rows with the reference too: results/check.jsonl.
Keep --check's input small (20k events per table take about 3 minutes): PyFlink's collect()
hands the changelog to Python row by row, and at 100k events per table it had not finished
the count's after 15 minutes.

Each table is one file by default: Flink's filesystem source reads a table's files in
parallel with no order between them, so a changelog spread over several files gives Flink
wrong final rows (with 10 files per table, 391 of 1,000 account counts differed from the
changelog's; the job orders records by file and line).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import engines, kafka_tool  # noqa: E402
from benchmarks.generate import TABLES, write  # noqa: E402

PIPELINES = ROOT / "benchmarks" / "pipelines"
QUERIES = {"count": "count_by_account.sql", "join": "color_and_cheese.sql"}
READS = {"count": ("users",), "join": ("users", "colors", "cheeses")}
KEYS = {"users": "uid", "colors": "userUid", "cheeses": "userUid"}
SINK_KEY = {"count": "accountId", "join": "userUid"}
SINK_TOPIC = {"count": "counts", "join": "color_and_cheese"}
RESULTS = engines.RESULTS / "throughput.jsonl"


def dataset(work: Path, per_table: int, keys: int, files: int, seed: int = 1) -> tuple[Path, dict]:
    """The generated input (made once per size): its directory and events per table."""
    data = work / f"data-pt{per_table}-k{keys}-f{files}-s{seed}"
    meta = data / "_meta.json"
    if not meta.exists():
        if data.exists():
            shutil.rmtree(data)
        started = time.time()
        print(f"generating {per_table:,} events per table into {data} ...", file=sys.stderr, flush=True)
        write(data, 0, keys, files, seed, per_table=per_table)
        meta.write_text(json.dumps({"events": {t: per_table for t in TABLES}, "keys": keys, "files": files,
                                    "seed": seed, "seconds": round(time.time() - started, 1)}))
    return data, json.loads(meta.read_text())


def kafka_topics(data: Path, bootstrap: str, partitions: int = 2) -> dict[str, str]:
    """The data set's upsert topics (loaded once; reloaded if the broker lost them)."""
    marker = data / f"_kafka_{bootstrap.replace(':', '_')}.json"
    if marker.exists():
        loaded = json.loads(marker.read_text())
        if all(kafka_tool.end_offsets(bootstrap, t) == n for t, n in loaded["counts"].items()):
            return loaded["topics"]
    tag = f"bench-{data.name}-{int(time.time())}"
    topics, counts = {}, {}
    for table in TABLES:
        topic = f"{tag}-{table}"
        kafka_tool.create_topic(bootstrap, topic, partitions)
        print(f"loading {table} into {topic} ...", file=sys.stderr, flush=True)
        counts[topic] = kafka_tool.load_debezium(bootstrap, topic, KEYS[table], sorted((data / table).glob("*.json")))
        topics[table] = topic
    marker.write_text(json.dumps({"topics": topics, "counts": counts}))
    return topics


def render_pipeline(query: str, source: str, engine: str, data: Path, bootstrap: str, topics: dict,
                    sink: str, sink_prefix: str = "") -> str:
    """The SQL both engines run: source tables + the seed query, the same text for both
    (Kafka sources end at the offsets they start with: 'scan.bounded.mode' = 'latest-offset')."""
    if sink == "blackhole":
        sink_options, sink_topics = "'connector' = 'blackhole'", ""
    else:
        sink_options = (f"'connector' = 'upsert-kafka', 'properties.bootstrap.servers' = '{bootstrap}', "
                        "'key.format' = 'raw', 'value.format' = 'json'")
        sink_topics = "1"
    variables = {"data": str(data), "bootstrap": bootstrap, "sink_options": sink_options, "sink_topics": sink_topics,
                 "topic_prefix": sink_prefix,
                 "kafka_bounded": ", 'scan.bounded.mode' = 'latest-offset'",
                 **{f"{t}_topic": topics.get(t, "") for t in TABLES}}
    tables = (PIPELINES / ("tables_files.sql" if source == "files" else "tables_kafka.sql")).read_text()
    return engines.render(tables, variables) + "\n" + engines.render((PIPELINES / QUERIES[query]).read_text(), variables)


def evict(paths) -> int:
    """Drop files from the OS page cache (posix_fadvise DONTNEED; only these files)."""
    n = 0
    for base in paths:
        base = Path(base)
        for path in ([base] if base.is_file() else base.rglob("*")):
            if path.is_file() and not path.is_symlink():
                try:
                    fd = os.open(path, os.O_RDONLY)
                    try:
                        os.fsync(fd) if os.access(path, os.W_OK) else None
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                        n += 1
                    finally:
                        os.close(fd)
                except OSError:
                    pass
    return n


def engine_files(engine: str) -> list[Path]:
    """What an engine loads from disk at start: its jars and Python libraries."""
    if engine == "flink":
        return [ROOT / ".services" / "flink-venv" / "lib", engines.FLINK_JARS]
    site = next((ROOT / ".venv" / "lib").glob("python3*/site-packages"), None)
    return [p for p in (site / "pyspark" if site else None, ROOT / "job", ROOT / "build", ROOT / "jars" / "spark") if p]


def machine() -> dict:
    return {"cores": os.cpu_count(), "mem_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)}


def run_engine(engine: str, sql: str, run_dir: Path, timeout: float, job_conf=()) -> dict:
    run_dir.mkdir(parents=True, exist_ok=True)
    sql_file = run_dir / f"{engine}.sql"
    sql_file.write_text(sql)
    log = run_dir / f"{engine}.log"
    if engine == "job":
        cmd = engines.job_command(sql_file, run_dir / "checkpoints", once=True, conf=job_conf)
    else:
        cmd = engines.flink_command(sql_file)
    figures = engines.Measured(cmd, log, engines.engine_env(), engines.engine_cwd(engine)).wait(timeout)
    if figures["exit"] != 0:
        figures["error"] = engines.tail(log, 12)
    if engine == "flink":  # Flink's own phases: JVM + planning, then the job itself
        phases = {}
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("phase "):
                _, name, at = line.split()
                phases[name] = float(at)
        if "planned" in phases and "finished" in phases:
            figures["flink_job_s"] = round(phases["finished"] - phases["planned"], 2)
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    return figures


def throughput(a) -> None:
    work = Path(a.work)
    data, meta = dataset(work, a.per_table, a.keys, a.files)
    topics = kafka_topics(data, a.bootstrap) if a.source == "kafka" else {}
    events_read = sum(meta["events"][t] for t in READS[a.query])
    stamp = time.strftime("%Y%m%d-%H%M%S")
    engines_order = a.engines.split(",")
    expected = None
    if a.sink == "upsert-kafka":  # the reference, once: the query over the final tables
        expected = [dict(v, __key=k) for k, v in reference(a.query, final_tables(data, READS[a.query])).items()]
    for pair in range(a.pairs):
        order = engines_order if pair % 2 == 0 else engines_order[::-1]
        cold = pair == 0 and not a.no_cold
        sink_tables: dict[str, list] = {}
        for engine in order:
            if cold:
                evict(engine_files(engine) + ([data / t for t in READS[a.query]] if a.source == "files" else []))
            prefix, sink_topic = "", None
            if a.sink == "upsert-kafka":
                prefix = f"tput-{stamp}-{pair}-{engine}-"
                sink_topic = prefix + SINK_TOPIC[a.query]
                kafka_tool.create_topic(a.bootstrap, sink_topic, 2)
            sql = render_pipeline(a.query, a.source, engine, data, a.bootstrap, topics,
                                  "blackhole" if a.sink == "blackhole" else "kafka", prefix)
            figures = run_engine(engine, sql, work / "runs" / stamp / f"{pair}-{engine}", a.timeout, a.job_conf)
            if sink_topic and figures["exit"] == 0:
                figures.update(sink_verdicts(a.bootstrap, sink_topic, expected, sink_tables, engine))
            record = {
                "kind": "throughput", "engine": engine, "query": a.query, "source": a.source,
                "per_table": a.per_table, "keys": a.keys, "sink": a.sink, "events_read": events_read,
                "cache": "cold" if cold else "warm", "pair": pair, "first": order[0],
                **figures,
                "events_per_s": round(events_read / figures["wall_s"]) if figures["exit"] == 0 else None,
                "cpu_us_per_event": round(figures["cpu_s"] / events_read * 1e6, 2) if figures["exit"] == 0 else None,
                "machine": machine(), "commit": engines.git_commit(), "when": engines.now_utc(), "note": a.note,
                "round": stamp, **({"job_conf": a.job_conf} if engine == "job" and a.job_conf else {}),
            }
            engines.append_jsonl(Path(a.results), record)
            print(json.dumps({k: record.get(k) for k in ("engine", "query", "source", "per_table", "keys", "sink",
                                                          "cache", "exit", "wall_s", "cpu_s", "events_per_s",
                                                          "peak_rss_mb", "load_before", "sink_records",
                                                          "sink_same_as_reference", "sink_same_as_other")}),
                  flush=True)


def sink_verdicts(bootstrap: str, topic: str, expected: list, tables: dict[str, list], engine: str) -> dict:
    """The run's sink topic read back: its record count, and whether the table it stands
    for equals the reference and the other engine's table of the same pair (None before
    the other engine has run)."""
    records = [(k, v) for _p, _o, _t, k, v in sorted(kafka_tool.dump(bootstrap, topic), key=lambda r: (r[0], r[1]))]
    rows = [dict(v, __key=k) for k, v in engines.upsert_table(records).items()]
    tables[engine] = rows
    versus = engines.compare_rows(rows, expected)
    other = next((t for e, t in tables.items() if e != engine), None)
    return {"sink_topic": topic, "sink_records": len(records), "sink_rows": len(rows),
            "sink_same_as_reference": versus["same"],
            **({} if versus["same"] else {"sink_versus_reference": versus}),
            "sink_same_as_other": None if other is None else engines.compare_rows(rows, other)["same"]}


def final_tables(data: Path, tables=TABLES) -> dict[str, dict[str, dict]]:
    """Each table's rows after its whole changelog (files in name order, lines in order)."""
    out = {}
    for table in tables:
        rows: dict[str, dict] = {}
        for path in sorted((data / table).glob("*.json")):
            with open(path) as f:
                for line in f:
                    ev = json.loads(line)
                    if ev["op"] == "d":
                        rows.pop(ev["before"][KEYS[table]], None)
                    else:
                        rows[ev["after"][KEYS[table]]] = ev["after"]
        out[table] = rows
    return out


def reference(query: str, tables: dict[str, dict[str, dict]]) -> dict[str, dict]:
    """The seed query's result computed from the final tables, keyed as its sink is."""
    users = tables["users"]
    if query == "count":
        counts: dict[str, int] = {}
        for row in users.values():
            counts[row["accountId"]] = counts.get(row["accountId"], 0) + 1
        return {k: {"accountId": k, "userCount": n} for k, n in counts.items()}
    colors, cheeses = tables["colors"], tables["cheeses"]
    return {uid: {"accountId": u["accountId"], "userUid": uid,
                  "favoriteColor": (colors.get(uid) or {}).get("favoriteColor"),
                  "favoriteCheese": (cheeses.get(uid) or {}).get("favoriteCheese")} for uid, u in users.items()}


def check(a) -> None:
    """Each engine once into an upsert-kafka topic of its own; the tables they stand for compared."""
    work = Path(a.work)
    data, meta = dataset(work, a.per_table, a.keys, a.files)
    topics = kafka_topics(data, a.bootstrap) if a.source == "kafka" else {}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    tables, figures = {}, {}
    for engine in a.engines.split(","):
        prefix = f"check-{stamp}-{engine}-"
        sink_topic = prefix + SINK_TOPIC[a.query]
        kafka_tool.create_topic(a.bootstrap, sink_topic, 2)
        sql = render_pipeline(a.query, a.source, engine, data, a.bootstrap, topics, "kafka", prefix)
        figures[engine] = run_engine(engine, sql, work / "runs" / stamp / f"check-{engine}", a.timeout)
        records = [(k, v) for _p, _o, _t, k, v in sorted(kafka_tool.dump(a.bootstrap, sink_topic), key=lambda r: (r[0], r[1]))]
        tables[engine] = engines.upsert_table(records)
        figures[engine]["sink_records"] = len(records)
    # the reference: the query over the tables the changelogs leave (per key, order is kept
    # by the files and by the key-partitioned topics alike)
    expected = reference(a.query, final_tables(data, READS[a.query] if a.query == "join" else ("users",)))
    rows = {e: [dict(v, __key=k) for k, v in t.items()] for e, t in tables.items()}
    ref_rows = [dict(v, __key=k) for k, v in expected.items()]
    names = list(tables)
    versus = {e: engines.compare_rows(rows[e], ref_rows) for e in names}
    diff = engines.compare_rows(rows[names[0]], rows[names[-1]])
    # the query's own result, without a sink: Flink's collect(), the job's job.api.collect
    columns = ["accountId", "userCount"] if a.query == "count" else ["accountId", "userUid", "favoriteColor",
                                                                    "favoriteCheese"]
    ref_list = [[v[c] for c in columns] for v in expected.values()]
    collected, versus_collect = {}, {}
    for engine in names:
        sql_file = work / "runs" / stamp / f"check-{engine}" / f"{engine}.sql"
        got = engines.collect_rows(engine, sql_file, sql_file.with_name("collect.json"), a.timeout)
        collected[engine] = {k: v for k, v in got.items() if k != "rows"}
        if "rows" in got:
            versus_collect[engine] = engines.compare_rows(got["rows"], ref_list)
    record = {"kind": "check", "query": a.query, "source": a.source, "per_table": a.per_table, "keys": a.keys,
              "engines": names, "same": diff["same"], "diff": diff,
              "same_as_reference": {e: d["same"] for e, d in versus.items()}, "versus_reference": versus,
              "collect_same_as_reference": {e: d["same"] for e, d in versus_collect.items()},
              "collect_versus_reference": versus_collect, "collect_runs": collected,
              "runs": figures, "when": engines.now_utc(), "commit": engines.git_commit(), "note": a.note}
    engines.append_jsonl(Path(a.results).with_name("check.jsonl"), record)
    print(json.dumps({"query": a.query, "source": a.source, "same": diff["same"], "rows": diff["rows"],
                      "only_" + names[0]: diff["only_first"], "only_" + names[-1]: diff["only_second"],
                      "sink_same_as_reference": record["same_as_reference"],
                      "collect_same_as_reference": record["collect_same_as_reference"]}), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--query", choices=tuple(QUERIES), default="count")
    p.add_argument("--source", choices=("files", "kafka"), default="files")
    p.add_argument("--per-table", type=int, default=500_000, help="events in each of the three tables")
    p.add_argument("--keys", type=int, default=100_000, help="user ids the changelog draws from (the users table's "
                   "keys; accounts are a tenth of them)")
    p.add_argument("--sink", choices=("blackhole", "upsert-kafka"), default="blackhole",
                   help="upsert-kafka: each run into a topic of its own, its final table checked against the "
                        "reference and the other engine's")
    p.add_argument("--files", type=int, default=1,
                   help="files per table (1: Flink reads files in parallel with no order between them, so a "
                        "changelog over several files gives it wrong results)")
    p.add_argument("--pairs", type=int, default=3, help="interleaved pairs; the first is cold")
    p.add_argument("--no-cold", action="store_true", help="no cold pair: every pair warm")
    p.add_argument("--engines", default="flink,job", help="which engines, in the first pair's order")
    p.add_argument("--check", action="store_true", help="compare both engines' results once (real sink) instead")
    p.add_argument("--bootstrap", default=os.environ.get("BENCH_KAFKA", "127.0.0.1:19192"))
    p.add_argument("--work", default=os.environ.get("STREAMSQL_BENCH_WORK", "/tmp/streamsql-bench"))
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--job-rev", help="run the job from a snapshot of this commit (default: the working tree)")
    p.add_argument("--job-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a --conf for the job's spark-submit (repeatable), e.g. for an A/B of a setting")
    p.add_argument("--note", default="")
    p.add_argument("--results", default=str(RESULTS))
    a = p.parse_args()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    if a.job_rev:
        os.environ["STREAMSQL_JOB_REV"] = a.job_rev
    check(a) if a.check else throughput(a)


if __name__ == "__main__":
    main()
