"""Crash loop: feed changelogs into Kafka while the job runs, SIGKILL it again and again.

One job runs three INSERTs, as one Spark application:

* the seed's aggregation (``user_count_by_account``: users per account) and its 3-way
  LEFT JOIN (``user_favorite_color_and_cheese``), both from ``upsert-kafka`` topics into
  ``upsert-kafka`` sinks, on the changelog engine;
* an append pipeline: a ``kafka`` topic of JSON events into ``filesystem`` Parquet files
  ``PARTITIONED BY (part)``.

A feeder thread keeps producing (inserts, updates that move users between accounts,
tombstones; events with unique ids) while the job is killed with SIGKILL — the whole
process group, JVM and Python workers — at random moments: some as soon as a new file
appears under a query's ``offsets/`` or ``commits/`` directory (a checkpoint commit in
progress), some at a random time after the job started making progress, some during
start-up. Each time the job is started again on the same checkpoints. Once the kills are
done the feeder stops, a last ``--once`` run drains the input, and:

* both upsert sinks must equal batch Spark SQL over the final contents of the input
  topics (last value per key, tombstones delete): nothing lost, nothing extra;
* the Parquet table must hold every input event exactly once.

Run from pytest (``tests/reliability/test_crash_loop.py``, a few kills) or on demand::

    .venv/bin/python -m tests.reliability.crashloop --kills 20
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.kafka_io import consume, produce, topic_name, upsert_state
from tests.support.runs import kill_job_tree

ROOT = Path(__file__).resolve().parents[2]
ACCOUNTS = [f"a{i}" for i in range(5)]
COLORS = ["red", "green", "blue", "teal"]
CHEESES = ["brie", "cheddar", "gouda", "feta"]
PARTS = ["north", "south", "east"]

PIPELINE = """
SET 'spark.sql.shuffle.partitions' = '2';
CREATE TABLE users (uid STRING, accountId STRING, id INT, fullName STRING, PRIMARY KEY (uid) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{{ users }}', 'key.format' = 'raw', 'value.format' = 'json',
      'properties.bootstrap.servers' = '{{ bootstrap }}', 'scan.max-offsets-per-trigger' = '{{ max_offsets }}');
CREATE TABLE user_favorite_color (userUid STRING, favoriteColor STRING, PRIMARY KEY (userUid) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{{ colors }}', 'key.format' = 'raw', 'value.format' = 'json',
      'properties.bootstrap.servers' = '{{ bootstrap }}', 'scan.max-offsets-per-trigger' = '{{ max_offsets }}');
CREATE TABLE user_favorite_cheese (userUid STRING, favoriteCheese STRING, PRIMARY KEY (userUid) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{{ cheeses }}', 'key.format' = 'raw', 'value.format' = 'json',
      'properties.bootstrap.servers' = '{{ bootstrap }}', 'scan.max-offsets-per-trigger' = '{{ max_offsets }}');
CREATE TABLE user_count_by_account (accountId STRING, userCount BIGINT, PRIMARY KEY (accountId) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{{ counts }}', 'key.format' = 'raw', 'value.format' = 'json',
      'properties.bootstrap.servers' = '{{ bootstrap }}');
CREATE TABLE user_favorite_color_and_cheese (accountId STRING, userUid STRING, favoriteColor STRING,
  favoriteCheese STRING, PRIMARY KEY (userUid) NOT ENFORCED)
WITH ('connector' = 'upsert-kafka', 'topic' = '{{ joined }}', 'key.format' = 'raw', 'value.format' = 'json',
      'properties.bootstrap.servers' = '{{ bootstrap }}');
CREATE TABLE events (id BIGINT, part STRING, payload STRING)
WITH ('connector' = 'kafka', 'topic' = '{{ events }}', 'format' = 'json', 'scan.startup.mode' = 'earliest-offset',
      'properties.bootstrap.servers' = '{{ bootstrap }}', 'scan.max-offsets-per-trigger' = '{{ max_offsets }}');
CREATE TABLE events_lake (id BIGINT, payload STRING, part STRING) PARTITIONED BY (part)
WITH ('connector' = 'filesystem', 'path' = '{{ lake }}', 'format' = 'parquet');

INSERT INTO user_count_by_account SELECT accountId, COUNT(1) AS userCount FROM users GROUP BY accountId;
INSERT INTO user_favorite_color_and_cheese
SELECT u.accountId, u.uid, c.favoriteColor, ch.favoriteCheese FROM users u
LEFT JOIN user_favorite_color c ON u.uid = c.userUid
LEFT JOIN user_favorite_cheese ch ON u.uid = ch.userUid;
INSERT INTO events_lake SELECT id, payload, part FROM events;
"""

COUNT_SQL = "SELECT accountId, COUNT(1) AS userCount FROM {users} GROUP BY accountId"
JOIN_SQL = ("SELECT u.accountId, u.uid AS userUid, c.favoriteColor, ch.favoriteCheese FROM {users} u "
            "LEFT JOIN {colors} c ON u.uid = c.userUid LEFT JOIN {cheeses} ch ON u.uid = ch.userUid")


# The pipeline's queries, by checkpoint folder name (the pipeline is named after its file).
QUERIES = ("pipeline-1-user_count_by_account", "pipeline-2-user_favorite_color_and_cheese", "pipeline-3-events_lake")

# Failures of a start that are the machine's, not the job's: the loop restarts the job.
TRANSIENT = ("Python worker failed to connect back",)


class JobExited(AssertionError):
    """The job ended without being killed."""


@dataclass
class Feeder:
    """Produces rounds of changes to the three upsert topics and new append events."""

    spark: object
    bootstrap: str
    topics: dict
    seed: int
    n_keys: int = 30
    rounds: int = 0
    next_event: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    error: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def round(self) -> None:
        rng, keys = self.rng, [f"u{i:02d}" for i in range(self.n_keys)]
        users, colors, cheeses = [], [], []
        for _ in range(rng.randint(5, 15)):
            uid = rng.choice(keys)
            r = rng.random()
            if r < 0.15:
                users.append((uid, None))                                   # tombstone: user deleted
            else:
                users.append((uid, {"uid": uid, "accountId": rng.choice(ACCOUNTS), "id": rng.randint(0, 99),
                                    "fullName": rng.choice(["bob", "ann", "zoë"])}))
            if rng.random() < 0.5:
                colors.append((uid, None if rng.random() < 0.1 else {"userUid": uid, "favoriteColor": rng.choice(COLORS)}))
            if rng.random() < 0.5:
                cheeses.append((uid, None if rng.random() < 0.1 else {"userUid": uid, "favoriteCheese": rng.choice(CHEESES)}))
        events = []
        for _ in range(rng.randint(10, 30)):
            events.append((None, {"id": self.next_event, "part": rng.choice(PARTS), "payload": f"e{self.next_event}"}))
            self.next_event += 1
        for name, records in (("users", users), ("colors", colors), ("cheeses", cheeses), ("events", events)):
            if records:
                produce(self.spark, self.bootstrap, self.topics[name], records)
        self.rounds += 1

    def run(self, interval: float = 1.5) -> None:
        try:
            while not self.stop.is_set():
                self.round()
                self.stop.wait(interval)
        except Exception as exc:  # noqa: BLE001 - reported by the loop
            self.error.append(exc)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="feeder", daemon=True)
        thread.start()
        return thread


@dataclass
class CrashLoop:
    spark: object
    bootstrap: str
    workdir: Path
    kills: int = 3
    seed: int = 1
    log: Path = None
    topics: dict = field(default_factory=dict)
    kill_log: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log = self.log or self.workdir / "job.log"
        self.rng = random.Random(f"kills-{self.seed}")
        for name in ("users", "colors", "cheeses", "events", "counts", "joined"):
            self.topics[name] = topic_name(f"crash-{name}")
        self.lake = self.workdir / "lake"
        self.checkpoints = self.workdir / "checkpoints"
        self.pipeline = self.workdir / "pipeline.sql"
        self.pipeline.write_text(PIPELINE)

    # -- the job ----------------------------------------------------------------------

    def command(self, once: bool) -> list:
        # Small batches while the job is being killed (many commits to hit); the final
        # drain takes big ones, so that it does not replay a long backlog 40 records a time.
        cmd = [sys.executable, "-m", "job.main", "--file", str(self.pipeline), "--checkpoint-dir", str(self.checkpoints),
               "--var", f"bootstrap={self.bootstrap}", "--var", f"lake={self.lake}",
               "--var", f"max_offsets={100_000 if once else 40}"]
        cmd += [a for k, v in self.topics.items() for a in ("--var", f"{k}={v}")]
        return cmd + (["--once"] if once else [])

    def env(self) -> dict:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONUNBUFFERED": "1"}
        env.pop("PYSPARK_GATEWAY_PORT", None)
        env.pop("PYSPARK_GATEWAY_SECRET", None)
        return env

    def start_job(self) -> subprocess.Popen:
        with open(self.log, "ab") as out:
            # Its own process group: SIGKILL takes the JVM and the Python workers with it.
            return subprocess.Popen(self.command(once=False), cwd=ROOT, env=self.env(), stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)

    def checkpoint_files(self, logs=("offsets", "commits"), query: str = "*") -> set:
        return {str(p) for d in logs for p in self.checkpoints.glob(f"{query}/{d}/*") if p.name.isdigit()}

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def wait_for_new_file(self, proc, known: set, timeout: float, poll: float = 0.01,
                          logs=("offsets", "commits"), query: str = "*") -> set:
        deadline = time.monotonic() + timeout
        while True:
            now = self.checkpoint_files(logs, query)
            if now - known:
                return now - known
            if proc.poll() is not None:
                raise JobExited(f"the job exited by itself with {proc.returncode}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no checkpoint progress within {timeout} s:\n{self.tail()}")
            time.sleep(poll)

    def kill_once(self, number: int) -> dict:
        mode = ("offsets", "random", "commits", "startup")[number % 4]
        started = time.monotonic()
        known = self.checkpoint_files()
        log_size = self.log.stat().st_size if self.log.exists() else 0
        proc = self.start_job()
        try:
            if mode == "startup":
                time.sleep(self.rng.uniform(1, 12))  # the JVM starting, the queries being planned
            else:
                known |= self.wait_for_new_file(proc, known, timeout=600)   # the job makes progress
                if mode in ("offsets", "commits"):
                    # the next batch planned (offsets/N) or committed (commits/N): kill now
                    # each query in turn: the changelog engine's commits as much as the file sink's
                    target = QUERIES[(number // 2) % len(QUERIES)]
                    hit = self.wait_for_new_file(proc, known, timeout=900, logs=(mode,), query=target)
                    mode = "commit " + ", ".join(sorted("/".join(Path(h).parts[-3:]) for h in hit))
                else:
                    time.sleep(self.rng.uniform(0, 4))
        except JobExited:
            # On an overloaded machine Spark may fail to start a Python worker within its
            # fixed 10 s; a supervisor restarts such a job like any other crash. Anything
            # else ending the job is a failure of the test.
            text = self.log.read_bytes()[log_size:].decode(errors="replace")
            if not any(marker in text for marker in TRANSIENT):
                raise
            mode = "the job crashed by itself (" + next(m for m in TRANSIENT if m in text) + ")"
        finally:
            if proc.poll() is None:
                kill_job_tree(proc, timeout=120)
            proc.wait(timeout=120)
        record = {"kill": number + 1, "at": mode, "alive_s": round(time.monotonic() - started, 1),
                  "sigkill": not mode.startswith("the job crashed")}
        with open(self.log, "a") as out:
            out.write(f"\n=== crashloop: SIGKILL {record}\n")
        return record

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> dict:
        t0 = time.monotonic()
        feeder = Feeder(self.spark, self.bootstrap, self.topics, self.seed)
        feeder.round()                      # the topics exist before the first start
        thread = feeder.start()
        try:
            number = 0
            while sum(1 for k in self.kill_log if k.get("sigkill")) < self.kills:
                self.kill_log.append(self.kill_once(number))
                number += 1
                assert number <= 2 * self.kills, f"too many crashes by themselves: {self.kill_log}"
                if feeder.error:
                    raise feeder.error[0]
        finally:
            feeder.stop.set()
            thread.join(timeout=120)
        if feeder.error:
            raise feeder.error[0]
        for attempt in range(3):   # the drain: --once over everything fed
            log_size = self.log.stat().st_size
            with open(self.log, "ab") as out:
                proc = subprocess.run(self.command(once=True), cwd=ROOT, env=self.env(), stdout=out,
                                      stderr=subprocess.STDOUT, timeout=1800)
            text = self.log.read_bytes()[log_size:].decode(errors="replace")
            if proc.returncode == 0 or not any(m in text for m in TRANSIENT):
                break
            self.kill_log.append({"kill": None, "at": "the final --once run crashed by itself, restarted",
                                  "sigkill": False})
        assert proc.returncode == 0, f"the final --once run exited with {proc.returncode}:\n{self.tail()}"
        result = self.check()
        result.update(kills=sum(1 for k in self.kill_log if k.get("sigkill")),
                      crashes_by_themselves=sum(1 for k in self.kill_log if not k.get("sigkill")), rounds=feeder.rounds, seconds=round(time.monotonic() - t0, 1),
                      kill_log=self.kill_log)
        return result

    # -- the reference ----------------------------------------------------------------

    def final_table(self, name: str, schema: str):
        state = upsert_state(consume(self.spark, self.bootstrap, self.topics[name]))
        columns = [c.split()[0] for c in schema.split(", ")]
        return self.spark.createDataFrame([tuple(v.get(c) for c in columns) for v in state.values()], schema)

    def sink_table(self, name: str, schema: str, key: str):
        state = upsert_state(consume(self.spark, self.bootstrap, self.topics[name]))
        columns = [c.split()[0] for c in schema.split(", ")]
        for k, v in state.items():
            assert str(v[key]) == k, f"{name}: record key {k!r} holds {v}"
        return self.spark.createDataFrame([tuple(v.get(c) for c in columns) for v in state.values()], schema)

    def check(self) -> dict:
        from chispa import assert_df_equality

        spark = self.spark
        users = self.final_table("users", "uid string, accountId string, id int, fullName string")
        colors = self.final_table("colors", "userUid string, favoriteColor string")
        cheeses = self.final_table("cheeses", "userUid string, favoriteCheese string")
        expected_counts = spark.sql(COUNT_SQL, users=users)
        expected_joined = spark.sql(JOIN_SQL, users=users, colors=colors, cheeses=cheeses)
        counts = self.sink_table("counts", "accountId string, userCount bigint", "accountId")
        joined = self.sink_table("joined", "accountId string, userUid string, favoriteColor string, favoriteCheese string",
                                 "userUid")
        assert_df_equality(counts, expected_counts, ignore_row_order=True, ignore_nullable=True)
        assert_df_equality(joined, expected_joined.select(*joined.columns), ignore_row_order=True, ignore_nullable=True)

        sent = [json.loads(v) for _k, v in consume(spark, self.bootstrap, self.topics["events"])]
        lake = spark.read.parquet(str(self.lake))   # through _spark_metadata: committed files only
        rows = lake.select("id", "payload", "part").collect()
        ids = sorted(r.id for r in rows)
        assert len(ids) == len(set(ids)), f"duplicated events in the lake: {len(ids) - len(set(ids))}"
        assert ids == sorted(e["id"] for e in sent), (f"the lake holds {len(ids)} events, {len(sent)} were sent; "
                                                      f"missing {sorted(set(e['id'] for e in sent) - set(ids))[:10]}")
        assert all(r.payload == f"e{r.id}" and r.part in PARTS for r in rows)
        return {"users": users.count(), "counts_rows": counts.count(), "joined_rows": joined.count(),
                "user_records": len(consume(spark, self.bootstrap, self.topics["users"])), "events": len(ids)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", default="/tmp/streamsql-crashloop")
    parser.add_argument("--bootstrap", default=None, help="default: the test broker (scripts/kafka.sh --name test)")
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from tests.support.services import ensure_kafka
    from tests.support.spark_session import get_spark

    bootstrap = args.bootstrap or ensure_kafka()
    workdir = Path(args.workdir) / f"run-{int(time.time())}"
    loop = CrashLoop(get_spark(), bootstrap, workdir, kills=args.kills, seed=args.seed)
    result = loop.run()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
