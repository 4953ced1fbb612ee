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
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.kafka_io import produce, topic_name
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

# The final --once run: generous for a backlog of millions of records on a loaded machine;
# a drain that never exits fails the loop here instead of hanging it.
DRAIN_TIMEOUT_S = 3600
# The real-time variant: a short checkpoint interval, so that kills find commits to hit.
REAL_TIME = ("SET 'streamsql.real-time-mode' = 'auto';\n"
             "SET 'streamsql.real-time-mode.checkpoint-interval' = '5 s';\n")
# The real-time drain ends when the sinks have not changed for this long (three intervals).
QUIET_S = 15

# Failures of a start that are the machine's, not the job's: the loop restarts the job.
TRANSIENT = ("Python worker failed to connect back",)


class JobExited(AssertionError):
    """The job ended without being killed."""


class NoProgress(AssertionError):
    """No new checkpoint entry in time."""


@dataclass
class Feeder:
    """Produces rounds of changes to the three upsert topics and new append events.

    ``bulk`` = 0: small random rounds over ``n_keys`` keys, produced from Python. ``bulk`` >
    0: waves generated and written by Spark, never through Python: the first loads every
    key of the three tables; each later one moves about ``bulk`` users to other accounts
    (a twentieth of them deleted), changes about ``bulk / 2`` colours and cheeses each (a
    tenth deleted) and appends ``bulk / 10`` events."""

    spark: object
    bootstrap: str
    topics: dict
    seed: int
    n_keys: int = 30
    bulk: int = 0
    rounds: int = 0
    records: int = 0
    next_event: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    error: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def round(self) -> None:
        if self.bulk:
            return self.wave()
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
                self.records += len(records)
        self.rounds += 1

    def wave(self) -> None:
        """One bulk wave (see the class), written by Spark straight to the topics."""
        from tests.support.kafka_io import produce_frame

        spark, n, w = self.spark, self.n_keys, self.rounds
        accounts = max(len(ACCOUNTS), n // 20)
        keys = spark.range(n, numPartitions=max(2, n // 250_000)).selectExpr(
            "id", f"format_string('u%0{len(str(n - 1))}d', id) AS uid")

        def pick(fraction: float, salt: int):
            if w == 0:
                return keys
            return keys.where(f"pmod(hash(id, {self.seed}, {w}, {salt}), 1000000) < {int(fraction * 1_000_000)}")

        def choice(values, salt: int) -> str:
            items = ", ".join(f"'{v}'" for v in values)
            return f"element_at(array({items}), 1 + pmod(hash(id, {self.seed}, {w}, {salt}), {len(values)}))"

        def dropped(share: float, salt: int) -> str:
            return f"{w} > 0 AND pmod(hash(id, {self.seed}, {w}, {salt}), 1000) < {int(share * 1000)}"

        share = min(1.0, self.bulk / n)
        frames = {
            "users": pick(share, 1).selectExpr(
                "uid AS key", f"IF({dropped(0.05, 2)}, NULL, to_json(named_struct('uid', uid, 'accountId', "
                f"concat('a', CAST(pmod(hash(id, {self.seed}, {w}, 3), {accounts}) AS STRING)), 'id', "
                f"CAST(pmod(hash(id, {w}, 4), 100) AS INT), 'fullName', {choice(['bob', 'ann', 'zoë'], 5)}))) AS value"),
            "colors": pick(share / 2, 6).selectExpr(
                "uid AS key", f"IF({dropped(0.1, 7)}, NULL, to_json(named_struct('userUid', uid, 'favoriteColor', "
                f"{choice(COLORS, 8)}))) AS value"),
            "cheeses": pick(share / 2, 9).selectExpr(
                "uid AS key", f"IF({dropped(0.1, 10)}, NULL, to_json(named_struct('userUid', uid, 'favoriteCheese', "
                f"{choice(CHEESES, 11)}))) AS value"),
            "events": spark.range(self.next_event, self.next_event + max(1, self.bulk // 10)).selectExpr(
                "CAST(NULL AS STRING) AS key", f"to_json(named_struct('id', id, 'part', "
                f"{choice(PARTS, 12)}, 'payload', concat('e', CAST(id AS STRING)))) AS value"),
        }
        for name, frame in frames.items():
            frame = frame.cache()
            self.records += frame.count()
            produce_frame(frame, self.bootstrap, self.topics[name])
            frame.unpersist()
        self.next_event += max(1, self.bulk // 10)
        self.rounds += 1

    def run(self, interval: float = 1.5, max_rounds: int = 0) -> None:
        """Rounds until stopped; after ``max_rounds`` bulk waves, a trickle (a hundredth of
        a wave, every 5 s), so that the job always has input and the kills that wait for a
        new checkpoint entry find one."""
        try:
            while not self.stop.is_set():
                if max_rounds and self.rounds >= max_rounds and self.bulk:
                    self.bulk, max_rounds, interval = max(10, self.bulk // 100), 0, 5.0
                self.round()
                self.stop.wait(interval)
        except Exception as exc:  # noqa: BLE001 - reported by the loop
            self.error.append(exc)

    def start(self, max_rounds: int = 0) -> threading.Thread:
        thread = threading.Thread(target=self.run, kwargs={"max_rounds": max_rounds}, name="feeder", daemon=True)
        thread.start()
        return thread


@dataclass
class CrashLoop:
    spark: object
    bootstrap: str
    workdir: Path
    kills: int = 3
    seed: int = 1
    keys: int = 30
    bulk: int = 0
    waves: int = 0
    max_offsets: int = 40
    real_time: bool = False   # the Kafka-to-Kafka queries in real-time mode; the drain runs in it too
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
        self.pipeline.write_text((REAL_TIME if self.real_time else "") + PIPELINE)

    # -- the job ----------------------------------------------------------------------

    def command(self, once: bool) -> list:
        # Small batches while the job is being killed (many commits to hit); the final
        # drain takes big ones, so that it does not replay a long backlog 40 records a time.
        cmd = [sys.executable, "-m", "job.main", "--file", str(self.pipeline), "--checkpoint-dir", str(self.checkpoints),
               "--var", f"bootstrap={self.bootstrap}", "--var", f"lake={self.lake}",
               "--var", f"max_offsets={max(100_000, 4 * self.max_offsets) if once else self.max_offsets}"]
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
                raise NoProgress(f"no checkpoint progress within {timeout} s:\n{self.tail()}")
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
                    try:
                        hit = self.wait_for_new_file(proc, known, timeout=300, logs=(mode,), query=target)
                    except NoProgress:   # that query has caught up with its input: any other
                        hit = self.wait_for_new_file(proc, known, timeout=600, logs=(mode,))
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
        feeder = Feeder(self.spark, self.bootstrap, self.topics, self.seed, n_keys=self.keys, bulk=self.bulk)
        feeder.round()                      # the topics exist before the first start
        thread = feeder.start(max_rounds=self.waves)
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
        if self.real_time:
            return self.finish(self.drain_in_real_time(), feeder, t0)
        for attempt in range(3):   # the drain: --once over everything fed
            log_size = self.log.stat().st_size
            drain_started = time.monotonic()
            with open(self.log, "ab") as out:
                # A drain that never exits (the JVM hanging in its exit handlers after the
                # summary) fails here instead of blocking forever.
                proc = subprocess.run(self.command(once=True), cwd=ROOT, env=self.env(), stdout=out,
                                      stderr=subprocess.STDOUT, timeout=DRAIN_TIMEOUT_S)
            drain_seconds = time.monotonic() - drain_started
            text = self.log.read_bytes()[log_size:].decode(errors="replace")
            if proc.returncode == 0 or not any(m in text for m in TRANSIENT):
                break
            self.kill_log.append({"kill": None, "at": "the final --once run crashed by itself, restarted",
                                  "sigkill": False})
        assert proc.returncode == 0, f"the final --once run exited with {proc.returncode}:\n{self.tail()}"
        # The exit bound (job.run.shutdown) ends a JVM that does not exit by itself; the
        # drain must not have needed it.
        assert "had not exited" not in text, f"the drain's JVM did not exit by itself:\n{self.tail()}"
        return self.finish(drain_seconds, feeder, t0)

    def drain_in_real_time(self) -> float:
        """The drain of a real-time run: the job runs on until its sinks are still, then
        stops on SIGTERM. A --once drain would net the replayed input per batch, which is
        not how a real-time run left its sinks (docs/tuning.md, "Real-time mode")."""
        started = time.monotonic()
        log_size = self.log.stat().st_size
        proc = self.start_job()
        last, still_since = None, time.monotonic()
        while time.monotonic() - started < DRAIN_TIMEOUT_S:
            if proc.poll() is not None:
                raise JobExited(f"the draining job exited by itself with {proc.returncode}:\n{self.tail()}")
            if self.log.read_bytes()[log_size:].count(b": real-time mode (checkpoint every") < 2:
                time.sleep(1)   # its queries have not started yet: still sinks say nothing
                continue
            now = self.sink_sizes()
            if now != last:
                last, still_since = now, time.monotonic()
            elif time.monotonic() - still_since >= QUIET_S:
                break
            time.sleep(2)
        os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=300)
        assert code == 0, f"the draining job exited with {code} after SIGTERM:\n{self.tail()}"
        return time.monotonic() - started

    def sink_sizes(self) -> tuple:
        """Records in each sink topic, and files in the lake."""
        from tests.support.kafka_io import consume

        return (tuple(len(consume(self.spark, self.bootstrap, self.topics[t])) for t in ("counts", "joined"))
                + (sum(1 for _ in self.lake.rglob("*.parquet")),))

    def finish(self, drain_seconds: float, feeder, t0: float) -> dict:
        result = self.check()
        result.update(kills=sum(1 for k in self.kill_log if k.get("sigkill")),
                      crashes_by_themselves=sum(1 for k in self.kill_log if not k.get("sigkill")), rounds=feeder.rounds,
                      records_fed=feeder.records, keys=self.keys, drain_seconds=round(drain_seconds, 1),
                      seconds=round(time.monotonic() - t0, 1), kill_log=self.kill_log)
        return result

    # -- the reference ----------------------------------------------------------------

    def table(self, name: str, schema: str):
        """The table an upsert topic holds, computed by Spark: any size, nothing in Python."""
        from tests.support.kafka_io import upsert_table

        return upsert_table(self.spark, self.bootstrap, self.topics[name], schema)

    def sink_table(self, name: str, schema: str, key: str):
        table = self.table(name, schema)
        wrong = table.where(f"__key IS DISTINCT FROM CAST({key} AS STRING)").limit(5).collect()
        assert not wrong, f"{name}: records whose key is not their row's {key}: {wrong}"
        return table.drop("__key")

    def check(self) -> dict:
        from chispa import assert_df_equality

        spark = self.spark
        users = self.table("users", "uid string, accountId string, id int, fullName string").drop("__key")
        colors = self.table("colors", "userUid string, favoriteColor string").drop("__key")
        cheeses = self.table("cheeses", "userUid string, favoriteCheese string").drop("__key")
        expected_counts = spark.sql(COUNT_SQL, users=users)
        expected_joined = spark.sql(JOIN_SQL, users=users, colors=colors, cheeses=cheeses)
        counts = self.sink_table("counts", "accountId string, userCount bigint", "accountId")
        joined = self.sink_table("joined", "accountId string, userUid string, favoriteColor string, favoriteCheese string",
                                 "userUid")
        if self.keys <= 10_000:   # chispa collects both sides: small tables only
            assert_df_equality(counts, expected_counts, ignore_row_order=True, ignore_nullable=True)
            assert_df_equality(joined, expected_joined.select(*joined.columns), ignore_row_order=True,
                               ignore_nullable=True)
        else:                     # the same check, by Spark: no row on one side only, no duplicate
            for got, want, what in ((counts, expected_counts, "counts"),
                                    (joined, expected_joined.select(*joined.columns), "joined")):
                extra, missing = got.exceptAll(want), want.exceptAll(got)
                assert extra.isEmpty() and missing.isEmpty(), (
                    f"{what}: {extra.count()} rows wrong or extra, {missing.count()} missing; "
                    f"e.g. {extra.limit(3).collect()} / {missing.limit(3).collect()}")

        from pyspark.sql import functions as F

        sent = (spark.read.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                .option("subscribe", self.topics["events"]).option("startingOffsets", "earliest").load()
                .select(F.from_json(F.col("value").cast("string"), "id bigint, part string, payload string").alias("e"))
                .select("e.*"))
        lake = spark.read.parquet(str(self.lake)).select("id", "payload", "part")   # committed files only
        duplicated = lake.groupBy("id").count().where("count > 1").count()
        assert duplicated == 0, f"duplicated events in the lake: {duplicated}"
        missing = sent.select("id").exceptAll(lake.select("id"))
        extra = lake.select("id").exceptAll(sent.select("id"))
        assert missing.isEmpty() and extra.isEmpty(), (
            f"the lake misses {missing.count()} events (e.g. {missing.limit(5).collect()}) and has "
            f"{extra.count()} never sent")
        assert lake.where(f"payload != concat('e', CAST(id AS STRING)) OR part NOT IN {tuple(PARTS)}").isEmpty()
        return {"users": users.count(), "counts_rows": counts.count(), "joined_rows": joined.count(),
                "events": lake.count()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keys", type=int, default=30, help="user keys (default 30)")
    parser.add_argument("--bulk", type=int, default=0,
                        help="feed in bulk waves written by Spark: the first loads every key, each later one changes "
                             "about this many (default 0: small random rounds)")
    parser.add_argument("--waves", type=int, default=0, help="stop feeding after this many waves (default: never)")
    parser.add_argument("--max-offsets", type=int, default=40,
                        help="records per source and micro-batch while the job is killed (default 40)")
    parser.add_argument("--real-time", action="store_true", help="the Kafka-to-Kafka queries in real-time mode")
    parser.add_argument("--workdir", default="/tmp/streamsql-crashloop")
    parser.add_argument("--bootstrap", default=None, help="default: the test broker (scripts/kafka.sh --name test)")
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from tests.support.services import ensure_kafka
    from tests.support.spark_session import get_spark

    bootstrap = args.bootstrap or ensure_kafka()
    workdir = Path(args.workdir) / f"run-{int(time.time())}"
    loop = CrashLoop(get_spark(), bootstrap, workdir, kills=args.kills, seed=args.seed, keys=args.keys, bulk=args.bulk,
                     waves=args.waves, max_offsets=args.max_offsets, real_time=args.real_time)
    result = loop.run()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
