"""Nexmark q0-q22 on Flink and on the job: does the job run it, same result as Flink, events/s.

    scripts/nexmark.sh install                                   # the generator (crates.io)
    scripts/nexmark.sh queries --from DIR                        # the Flink queries (see below)
    export SPARK_LOCAL_IP=127.0.0.1
    .venv/bin/python benchmarks/nexmark.py run --events 100000               # every query
    .venv/bin/python benchmarks/nexmark.py run --events 100000 --query q0 --query q5 --no-timing

Input: `scripts/nexmark.sh generate` (the `nexmark` crate's generator, its JSON lines turned
into the JSON of Flink's Nexmark table by `nexmark.py convert`), made once per size under
--work. The queries are read, unchanged, from $NEXMARK_QUERIES (default
.services/nexmark-queries/; no registry ships them, so they are neither installed nor kept in
this repository: copy nexmark/nexmark's nexmark-flink/src/main/resources/queries there with
`scripts/nexmark.sh queries --from DIR`). Only connector options are rewritten:

* the source (ddl_gen.sql's `datagen` table, its schema, computed dateTime and watermark
  kept): 'connector' = 'filesystem' over the generated files, 'format' = 'json';
* ddl_views.sql: ${NEXMARK_TABLE} is that table;
* each query's sink: 'connector' = 'blackhole' (q10's filesystem sink too);
* q13's side_input: 'connector' = 'filesystem' over a generated CSV of 10,000 keys;
* q14's function (CREATE FUNCTION … 'com.github.nexmark.flink.udf.CountChar'): an ADD JAR of
  its jar before it (`scripts/nexmark.sh udf --from DIR` builds it from nexmark's sources).

For each query: (1) the result on both engines: Flink runs the INSERT's query with collect()
(benchmarks/flink_runner.py --collect), the job with job.api.collect (to the end of the input,
every window closed, as --once and as Flink's bounded sources do); final rows after applying
the changelog are compared. Queries on processing time (PROCTIME: q12, q13) have no one
right answer and are not compared. (2) events/s: each engine as a whole process into the
blackhole sink (the job: ./spark-submit.sh --once), all generated events over its wall time.
A query the job refuses is reported with the job's message, and nothing is timed for it.

One JSON line per query in benchmarks/results/nexmark.jsonl; benchmarks/summary.py puts the
latest of each in docs/performance.md.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import engines  # noqa: E402

RESULTS = engines.RESULTS / "nexmark.jsonl"
QUERIES = [f"q{i}" for i in range(23)]
# Queries whose changelog Flink's collect() gives as upserts on a key (+U without the -U
# before it: Top-1 per auction): Flink's rows are folded on that key (the job's collect gives
# the retractions, so its changelog folds as it is).
UPSERT_KEYS = {"q9": "id"}
NONDETERMINISTIC = {"q12": "processing time (PROCTIME)", "q13": "processing time (PROCTIME lookup join)"}


def queries_dir() -> Path:
    return Path(os.environ.get("NEXMARK_QUERIES", ROOT / ".services" / "nexmark-queries"))


# --- the generator's events in Flink's schema -----------------------------------------------

def _ts(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


def convert_event(event: dict) -> dict:
    """One event of the `nexmark` crate's JSON ({"Person": {...}} / "Auction" / "Bid") as a row
    of Flink's Nexmark table: event_type 0/1/2 and the person / auction / bid ROW."""
    out = {"event_type": None, "person": None, "auction": None, "bid": None, "dateTime": None}
    if "Person" in event:
        p = event["Person"]
        out["event_type"] = 0
        out["person"] = {"id": p["id"], "name": p["name"], "emailAddress": p["email_address"],
                         "creditCard": p["credit_card"], "city": p["city"], "state": p["state"],
                         "dateTime": _ts(p["date_time"]), "extra": p["extra"]}
    elif "Auction" in event:
        x = event["Auction"]
        out["event_type"] = 1
        out["auction"] = {"id": x["id"], "itemName": x["item_name"], "description": x["description"],
                          "initialBid": x["initial_bid"], "reserve": x["reserve"], "dateTime": _ts(x["date_time"]),
                          "expires": _ts(x["expires"]), "seller": x["seller"], "category": x["category"],
                          "extra": x["extra"]}
    elif "Bid" in event:
        b = event["Bid"]
        out["event_type"] = 2
        out["bid"] = {"auction": b["auction"], "bidder": b["bidder"], "price": b["price"], "channel": b["channel"],
                      "url": b["url"], "dateTime": _ts(b["date_time"]), "extra": b["extra"]}
    else:
        raise ValueError(f"not a Nexmark event: {str(event)[:200]}")
    # the event's time once more at the top (read only by --variant physical-datetime; Flink's
    # table computes it from the nested rows and ignores this field)
    out["dateTime"] = (out["person"] or out["auction"] or out["bid"])["dateTime"]
    return out


def convert(lines, out: Path, files: int) -> dict:
    """Generator JSON lines → out/events/part-NNNNN.json (round robin over ``files``) and
    out/side_input.csv; returns the counts, also written to out/_meta.json."""
    (out / "events").mkdir(parents=True, exist_ok=True)
    handles = [open(out / "events" / f"part-{i:05d}.json", "w") for i in range(files)]
    counts = {"person": 0, "auction": 0, "bid": 0}
    n = 0
    try:
        for line in lines:
            if not line.strip():
                continue
            row = convert_event(json.loads(line))
            counts[("person", "auction", "bid")[row["event_type"]]] += 1
            handles[n % files].write(json.dumps(row, separators=(",", ":")) + "\n")
            n += 1
    finally:
        for h in handles:
            h.close()
    with open(out / "side_input.csv", "w") as f:
        for key in range(10_000):
            f.write(f"{key},{key}\n")
    meta = {"events": n, **counts, "files": files}
    (out / "_meta.json").write_text(json.dumps(meta))
    return meta


def dataset(work: Path, events: int, files: int) -> tuple[Path, dict]:
    data = work / f"nexmark-v2-{events}-f{files}"
    if not (data / "_meta.json").exists():
        print(f"generating {events:,} Nexmark events into {data} ...", file=sys.stderr, flush=True)
        subprocess.run([str(ROOT / "scripts" / "nexmark.sh"), "generate", str(events), str(data), str(files)],
                       check=True)
    return data, json.loads((data / "_meta.json").read_text())


# --- rewriting connector options -------------------------------------------------------------

def with_clause(statement: str) -> tuple[int, int] | None:
    """(start, end) of the text inside a CREATE TABLE's top-level WITH ( … ), or None."""
    depth, i, n = 0, 0, len(statement)
    while i < n:
        ch = statement[i]
        if ch in "'`\"":
            j = statement.find(ch, i + 1)
            while j >= 0 and j + 1 < n and statement[j + 1] == ch:
                j = statement.find(ch, j + 2)
            i = n if j < 0 else j + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and statement[i:i + 4].upper() == "WITH" and (i == 0 or not statement[i - 1].isalnum()) \
                and not statement[i + 4:i + 5].isalnum():
            m = re.compile(r"\s*\(").match(statement, i + 4)
            if m:
                start = m.end()
                d, j = 1, start
                while j < n and d:
                    c = statement[j]
                    if c in "'`\"":
                        k = statement.find(c, j + 1)
                        j = n if k < 0 else k + 1
                        continue
                    d += c == "("
                    d -= c == ")"
                    j += 1
                return start, j - 1
        i += 1
    return None


def set_options(statement: str, options: dict[str, str]) -> str:
    span = with_clause(statement)
    if span is None:
        raise ValueError(f"no WITH clause in: {statement[:80]}")
    text = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    return statement[:span[0]] + text + statement[span[1]:]


_CREATE_TABLE = re.compile(r"^\s*CREATE\s+(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)`?", re.I)


_CREATE_FUNCTION = re.compile(r"^(?:\s*--[^\n]*\n)*\s*CREATE\s+(?:TEMPORARY\s+)?(?:SYSTEM\s+)?FUNCTION\b", re.I)
UDF_JAR = ROOT / ".services" / "nexmark" / "nexmark-udf.jar"

_COMPUTED_DATETIME = re.compile(r"`dateTime`\s+AS\s+CASE\b.*?\bEND\s*,", re.I | re.S)


def pipeline(query: str, qdir: Path, data: Path, variant: str = "") -> str:
    """The statements one engine runs for ``query``: source, views, the query's own file,
    with only connector options rewritten.

    ``variant`` 'physical-datetime' (a diagnostic, never the benchmark's answer): the source's
    computed `dateTime` (a CASE over the nested rows' times) becomes a physical column read
    from the same event's top-level copy, watermark unchanged; so what a query needs beyond
    that column shows."""
    source = [s for s in engines.split_statements((qdir / "ddl_gen.sql").read_text())]
    if variant == "physical-datetime":
        replaced = [_COMPUTED_DATETIME.sub("`dateTime` TIMESTAMP(3),", s) for s in source]
        if replaced == source:
            raise ValueError("no computed `dateTime` AS CASE … END column in ddl_gen.sql")
        source = replaced
    elif variant:
        raise ValueError(f"unknown variant {variant!r}")
    source = [set_options(s, {"connector": "filesystem", "path": str(data / "events"), "format": "json"})
              for s in source]
    views = engines.split_statements((qdir / "ddl_views.sql").read_text().replace("${NEXMARK_TABLE}", "datagen"))
    out = []
    own = engines.split_statements((qdir / f"{query}.sql").read_text())
    if any(_CREATE_FUNCTION.match(s) for s in own):
        # q14's function: its jar (scripts/nexmark.sh udf), added as a Flink user adds one
        if not UDF_JAR.exists():
            raise ValueError(f"{query} calls a user-defined function: build its jar with "
                             f"scripts/nexmark.sh udf --from <nexmark checkout>/nexmark-flink/src/main/java")
        out.append(f"ADD JAR '{UDF_JAR}'")
    for s in own:
        m = _CREATE_TABLE.match(s)
        if m and m.group(1).lower() == "side_input":
            s = set_options(s, {"connector": "filesystem", "path": str(data / "side_input.csv"), "format": "csv"})
        elif m:
            s = set_options(s, {"connector": "blackhole"})
        out.append(s)
    text = ";\n".join(source + views + out) + ";\n"
    left = re.findall(r"\$\{\w+\}", text)
    if left:
        raise ValueError(f"{query}: placeholders left after rewriting: {sorted(set(left))}")
    return text


# --- running -------------------------------------------------------------------------------

def collect(engine: str, sql_file: Path, out: Path, timeout: float, query: str = "") -> dict:
    return engines.collect_rows(engine, sql_file, out, timeout, UPSERT_KEYS.get(query) if engine == "flink" else None)


def timed(engine: str, sql_file: Path, run_dir: Path, events: int, timeout: float) -> dict:
    log = run_dir / f"{engine}-timed.log"
    cmd = (engines.job_command(sql_file, run_dir / "checkpoints", once=True) if engine == "job"
           else engines.flink_command(sql_file))
    figures = engines.run_measured(cmd, log, engines.engine_env(), timeout, cwd=engines.engine_cwd(engine))
    if figures["exit"] != 0:
        figures["error"] = engines.first_error(log)
    else:
        figures["events_per_s"] = round(events / figures["wall_s"])
    return figures


def run_query(query: str, a, data: Path, meta: dict, stamp: str) -> dict:
    run_dir = Path(a.work) / "nexmark-runs" / stamp / query
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {"kind": "nexmark", "query": query, "events": meta["events"], "variant": a.variant or None,
              "when": engines.now_utc(),
              "commit": engines.git_commit(), "note": a.note, "round": stamp}
    try:
        sql = pipeline(query, queries_dir(), data, a.variant)
    except (OSError, ValueError) as exc:
        record["error"] = f"cannot prepare the query: {exc}"
        return record
    sql_file = run_dir / "pipeline.sql"
    sql_file.write_text(sql)
    flink = collect("flink", sql_file, run_dir / "flink-rows.json", a.timeout, query)
    job = collect("job", sql_file, run_dir / "job-rows.json", a.timeout)
    record["flink"] = {"ok": "rows" in flink, "error": flink.get("error") or flink.get("failed"),
                       "rows": len(flink["rows"]) if "rows" in flink else None, "changes": flink.get("changes")}
    record["job"] = {"runs": "rows" in job, "refused": job.get("refused"), "failed": job.get("failed"),
                     "rows": len(job["rows"]) if "rows" in job else None, "changes": job.get("changes")}
    if "rows" in flink and "rows" in job:
        if query in NONDETERMINISTIC:
            record["same_result"] = None
            record["not_compared"] = NONDETERMINISTIC[query]
        else:
            diff = engines.compare_rows(flink["rows"], job["rows"])
            record["same_result"] = diff["same"]
            if not diff["same"]:
                record["diff"] = diff
    if not a.no_timing:
        if record["flink"]["ok"]:
            record["flink"]["timed"] = timed("flink", sql_file, run_dir, meta["events"], a.timeout)
        if record["job"]["runs"]:
            record["job"]["timed"] = timed("job", sql_file, run_dir, meta["events"], a.timeout)
    record["load_after"] = engines.load_avg()
    return record


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="generator JSON lines on stdin → Flink's Nexmark rows")
    c.add_argument("--out", required=True)
    c.add_argument("--files", type=int, default=2)
    r = sub.add_parser("run", help="run queries on both engines")
    r.add_argument("--events", type=int, default=100_000)
    r.add_argument("--files", type=int, default=2)
    r.add_argument("--query", action="append", help="q0 … q22 (repeatable; default: all)")
    r.add_argument("--no-timing", action="store_true", help="compare results only")
    r.add_argument("--variant", default="", choices=("", "physical-datetime"),
                   help="a diagnostic change of the source (see pipeline()); recorded as such, not in the main table")
    r.add_argument("--timeout", type=float, default=1800)
    r.add_argument("--work", default=os.environ.get("STREAMSQL_BENCH_WORK", "/tmp/streamsql-bench"))
    r.add_argument("--job-rev", help="run the job from a snapshot of this commit (default: the working tree)")
    r.add_argument("--note", default="")
    r.add_argument("--results", default=str(RESULTS))
    a = p.parse_args()
    if a.cmd == "convert":
        print(json.dumps(convert(sys.stdin, Path(a.out), a.files)), file=sys.stderr)
        return
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    if a.job_rev:
        os.environ["STREAMSQL_JOB_REV"] = a.job_rev
    data, meta = dataset(Path(a.work), a.events, a.files)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for query in a.query or QUERIES:
        record = run_query(query, a, data, meta, stamp)
        engines.append_jsonl(Path(a.results), record)
        job = record.get("job", {})
        print(json.dumps({"query": query, "flink_ok": record.get("flink", {}).get("ok"), "job_runs": job.get("runs"),
                          "same_result": record.get("same_result"),
                          "job_message": (job.get("refused") or job.get("failed") or "")[:300],
                          "flink_error": (record.get("flink", {}).get("error") or "")[:200],
                          "flink_eps": record.get("flink", {}).get("timed", {}).get("events_per_s"),
                          "job_eps": job.get("timed", {}).get("events_per_s")}), flush=True)


if __name__ == "__main__":
    main()
