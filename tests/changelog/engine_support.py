"""Shared machinery of the engine's end-to-end property tests (test_engine_*.py).

Random Debezium changelogs for a few keyed tables are written as files (one file = one
micro-batch through 'source.max-files-per-trigger' = '1'), a pipeline runs them into
upsert-kafka sinks, and the sink topics are compared with the same SELECT run by batch
Spark SQL over the tables' final contents (last write per key wins, a delete removes).
"""
from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from tests.support.kafka_io import consume, topic_name, upsert_state

# --------------------------------------------------------------------------- tables

@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]      # (name, SQL type)
    key: str

    @property
    def ddl_columns(self) -> str:
        return ", ".join(f"{n} {t}" for n, t in self.columns)

    @property
    def spark_schema(self) -> str:
        return ", ".join(f"{n} {t}" for n, t in self.columns)


USERS = Table("users", (("uid", "STRING"), ("accountId", "STRING"), ("score", "INT")), "uid")
COLORS = Table("colors", (("userUid", "STRING"), ("color", "STRING")), "userUid")
CHEESES = Table("cheeses", (("userUid", "STRING"), ("cheese", "STRING")), "userUid")
ACCOUNTS = Table("accounts", (("accountId", "STRING"), ("plan", "STRING")), "accountId")
TABLES = {t.name: t for t in (USERS, COLORS, CHEESES, ACCOUNTS)}

ACCOUNT_IDS = [f"a{i}" for i in range(6)]
COLOR_NAMES = ["red", "green", "blue", "teal"]
CHEESE_NAMES = ["brie", "cheddar", "gouda", "feta", "comte"]
PLANS = ["free", "pro", "team"]


def row_maker(table: Table, rng: random.Random) -> Callable[[str], dict]:
    """Random rows for a key: few distinct values, so updates move rows between
    groups and join keys, and sometimes change nothing at all."""
    if table is USERS:
        return lambda k: {"uid": k, "accountId": rng.choice(ACCOUNT_IDS),
                          "score": None if rng.random() < 0.08 else rng.randint(0, 12)}
    if table is COLORS:
        return lambda k: {"userUid": k, "color": rng.choice(COLOR_NAMES)}
    if table is CHEESES:
        return lambda k: {"userUid": k, "cheese": None if rng.random() < 0.1 else rng.choice(CHEESE_NAMES)}
    if table is ACCOUNTS:
        return lambda k: {"accountId": k, "plan": rng.choice(PLANS)}
    raise ValueError(table)


def keys_of(table: Table, n_keys: int) -> list[str]:
    if table is ACCOUNTS:
        # a few accounts users refer to never exist (the inner join drops their users)
        return ACCOUNT_IDS[:-1] + ["a9"]
    # users, colors and cheeses share one key space; each table holds a random part
    return [f"u{i:02d}" for i in range(n_keys)]


# --------------------------------------------------------------------------- changelogs

Event = tuple  # (op, before, after): a Debezium change


def random_changelog(table: Table, rng: random.Random, n_events: int, n_keys: int = 40,
                     sloppy: bool = True) -> list[Event]:
    """Inserts, updates (any column but the key) and deletes, each with the before image
    Flink's debezium-json needs. ``sloppy`` adds what a CDC source may deliver twice or
    out of turn — deletes of absent keys, duplicated events, snapshot reads of known keys,
    late replays — which only a pipeline with 'table.exec.source.cdc-events-duplicate'
    (normalization by key) reads as the latest row per key."""
    make = row_maker(table, rng)
    keys = keys_of(table, n_keys)
    state: dict[str, dict] = {}
    events: list[Event] = []
    while len(events) < n_events:
        key = rng.choice(keys)
        old = state.get(key)
        r = rng.random()
        if old is None:
            if r < 0.12 and sloppy:
                event = ("d", make(key), None)                   # delete of an absent key
            else:
                new = make(key)
                state[key] = new
                event = ("c", None, new)
        elif r < 0.2:
            del state[key]
            event = ("d", old, None)
        elif r < 0.25 and sloppy:
            new = make(key)
            state[key] = new
            event = ("r", None, new)                             # a snapshot read of a known key
        else:
            new = make(key)                                      # may equal old: a no-op update
            state[key] = new
            event = ("u", old, new)
        events.append(event)
        if not sloppy:
            continue
        if rng.random() < 0.1 and len(events) < n_events:
            events.append(event)                                 # the same event twice
        if rng.random() < 0.03 and len(events) > 3 and len(events) < n_events:
            # a late replay of an older event: it wins again, as an upsert stream says
            replay = events[rng.randrange(len(events) - 3)]
            events.append(replay)
            key_of = (replay[2] or replay[1])[table.key]
            if replay[0] == "d":
                state.pop(key_of, None)
            else:
                state[key_of] = replay[2]
    return events


def final_contents(table: Table, events: list[Event]) -> list[dict]:
    """The table after the events: the last write per key wins, a delete removes."""
    state: dict[str, dict] = {}
    for op, before, after in events:
        if op == "d":
            state.pop(before[table.key], None)
        else:
            state[after[table.key]] = after
    return [state[k] for k in sorted(state)]


def split_random(events: list, rng: random.Random, files: int) -> list[list]:
    """``files`` consecutive, non-empty chunks of random sizes (a file of one event is
    as likely as one of half the events)."""
    files = max(1, min(files, len(events)))
    cuts = sorted(rng.sample(range(1, len(events)), files - 1))
    return [events[a:b] for a, b in zip([0] + cuts, cuts + [len(events)])]


class Clock:
    """Strictly increasing file modification times (whole seconds), shared by every
    directory of a test, so later writes always sort after earlier ones."""

    def __init__(self) -> None:
        self.t = int(time.time()) - 24 * 3600

    def tick(self) -> int:
        self.t += 2
        return self.t


def write_files(directory: Path, chunks: list[list[Event]], clock: Clock, start: int = 0) -> list[Path]:
    """One debezium-json file per chunk, moved into place atomically, each with a
    later modification time than the one before (the source's order across files)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, chunk in enumerate(chunks, start):
        lines = [json.dumps({"before": b, "after": a, "op": op}) for op, b, a in chunk]
        final = directory / f"part-{i:05d}.json"
        tmp = directory / f".part-{i:05d}.json.tmp"
        tmp.write_text("\n".join(lines) + "\n")
        t = clock.tick()
        os.utime(tmp, (t, t))
        os.rename(tmp, final)
        paths.append(final)
    return paths


# --------------------------------------------------------------------------- pipelines

def source_ddl(table: Table, directory, files_per_trigger: Optional[int] = 1) -> str:
    limit = f", 'source.max-files-per-trigger' = '{files_per_trigger}'" if files_per_trigger else ""
    return (f"CREATE TABLE {table.name} ({table.ddl_columns}, PRIMARY KEY ({table.key}) NOT ENFORCED) WITH ("
            f"'connector' = 'filesystem', 'path' = '{directory}', 'format' = 'debezium-json'{limit})")


@dataclass(frozen=True)
class Query:
    """A SELECT with {table} placeholders, and the sink it is written into."""
    name: str
    select: str                                    # e.g. "SELECT … FROM {users} u …"
    sink_columns: tuple[tuple[str, str], ...]
    key: str
    tables: tuple[str, ...]
    # The same query for the batch Spark SQL reference where Spark's meaning differs from
    # Flink's (Flink's AVG of an INT is an INT, truncated): Spark SQL that computes Flink's.
    spark_select: str = ""

    def pipeline_select(self) -> str:
        return self.select.format(**{t: t for t in TABLES})

    def sink_ddl(self, topic: str, bootstrap: str) -> str:
        cols = ", ".join(f"{n} {t}" for n, t in self.sink_columns)
        return (f"CREATE TABLE {self.name}_sink ({cols}, PRIMARY KEY ({self.key}) NOT ENFORCED) WITH ("
                f"'connector' = 'upsert-kafka', 'topic' = '{topic}', 'key.format' = 'raw', "
                f"'value.format' = 'json', 'properties.bootstrap.servers' = '{bootstrap}')")

    def insert(self) -> str:
        return f"INSERT INTO {self.name}_sink {self.pipeline_select()}"

    @property
    def schema(self) -> str:
        return ", ".join(f"{n} {t}" for n, t in self.sink_columns)


AGG_COLUMNS = (("accountId", "STRING"), ("n", "BIGINT"), ("total", "BIGINT"), ("lo", "INT"), ("hi", "INT"),
               ("ds", "BIGINT"))

QUERIES = {
    # Conditional aggregates (FILTER) as well: rows their condition rejects,
    # and rows that stop or start meeting it on an update.
    "agg": Query(
        "agg",
        "SELECT accountId, COUNT(*) AS n, SUM(score) AS total, MIN(score) AS lo, MAX(score) AS hi, "
        "COUNT(DISTINCT score) AS ds, COUNT(*) FILTER (WHERE score > 4) AS big, COUNT(*) FILTER (WHERE score < 3) AS small, "
        "SUM(score) FILTER (WHERE uid > 'u2') AS part FROM {users} GROUP BY accountId",
        AGG_COLUMNS + (("big", "BIGINT"), ("small", "BIGINT"), ("part", "BIGINT")), "accountId", ("users",)),
    "having": Query(
        "having",
        "SELECT accountId, COUNT(*) AS n, SUM(score) AS total, MIN(score) AS lo, MAX(score) AS hi, "
        "COUNT(DISTINCT score) AS ds FROM {users} GROUP BY accountId HAVING COUNT(*) >= 3 AND MAX(score) > 6",
        AGG_COLUMNS, "accountId", ("users",)),
    "join3": Query(
        "join3",
        "SELECT u.uid, u.accountId, u.score, c.color, ch.cheese FROM {users} u "
        "LEFT JOIN {colors} c ON u.uid = c.userUid LEFT JOIN {cheeses} ch ON u.uid = ch.userUid",
        (("uid", "STRING"), ("accountId", "STRING"), ("score", "INT"), ("color", "STRING"), ("cheese", "STRING")),
        "uid", ("users", "colors", "cheeses")),
    # Four inputs on one key, one operator: an INNER join, a LEFT join on the inner
    # side's key, and the same table joined twice.
    "star": Query(
        "star",
        "SELECT u.uid, c.color, ch.cheese, ch2.cheese AS cheese2 FROM {users} u "
        "JOIN {colors} c ON u.uid = c.userUid LEFT JOIN {cheeses} ch ON c.userUid = ch.userUid "
        "LEFT JOIN {cheeses} ch2 ON u.uid = ch2.userUid WHERE u.score > 2",
        (("uid", "STRING"), ("color", "STRING"), ("cheese", "STRING"), ("cheese2", "STRING")),
        "uid", ("users", "colors", "cheeses")),
    "chain": Query(
        "chain",
        "SELECT u.uid, u.accountId, a.plan, ch.cheese FROM {users} u "
        "JOIN {accounts} a ON u.accountId = a.accountId LEFT JOIN {cheeses} ch ON u.uid = ch.userUid",
        (("uid", "STRING"), ("accountId", "STRING"), ("plan", "STRING"), ("cheese", "STRING")),
        "uid", ("users", "accounts", "cheeses")),
    "joinagg": Query(
        "joinagg",
        "SELECT c.color, COUNT(*) AS n, SUM(u.score) AS total, COUNT(DISTINCT u.accountId) AS accounts "
        "FROM {users} u JOIN {colors} c ON u.uid = c.userUid GROUP BY c.color",
        (("color", "STRING"), ("n", "BIGINT"), ("total", "BIGINT"), ("accounts", "BIGINT")),
        "color", ("users", "colors")),
    "full": Query(
        "full",
        "SELECT COALESCE(u.uid, c.userUid) AS k, u.uid, u.accountId, c.userUid AS cuid, c.color FROM {users} u "
        "FULL JOIN {colors} c ON u.uid = c.userUid",
        (("k", "STRING"), ("uid", "STRING"), ("accountId", "STRING"), ("cuid", "STRING"), ("color", "STRING")),
        "k", ("users", "colors")),
}


@dataclass
class Scenario:
    """Random changelogs for some tables, written as files, and what they end as."""
    root: Path
    seed: int
    sloppy: bool = True              # events repeat: read with 'table.exec.source.cdc-events-duplicate'
    events: dict[str, list[Event]] = field(default_factory=dict)
    chunks: dict[str, list[list[Event]]] = field(default_factory=dict)

    @classmethod
    def generate(cls, root: Path, seed: int, tables, *, max_events: int = 150, files: tuple[int, int] = (3, 6),
                 max_keys: int = 40, sloppy: bool = True) -> "Scenario":
        """Every table of ``tables`` (in a fixed order, so a seed means the same data
        whatever the query set) gets a changelog of up to ``max_events`` events over up
        to ``max_keys`` keys, in ``files`` (min, max) files."""
        sc = cls(root, seed, sloppy=sloppy)
        for name in TABLES:
            rng = random.Random(f"{seed}-{name}")
            table = TABLES[name]
            n_keys = rng.randint(max(4, max_keys // 2), max_keys)
            n = rng.randint(max_events // 2, max_events) if table is not ACCOUNTS else rng.randint(8, 20)
            events = random_changelog(table, rng, n, n_keys, sloppy)
            chunks = split_random(events, rng, rng.randint(*files))
            if name in tables:
                sc.events[name], sc.chunks[name] = events, chunks
        return sc

    def directory(self, table: str) -> Path:
        return self.root / "tables" / table

    def write(self, clock: Clock, upto: Optional[float] = None, start_fraction: float = 0.0) -> None:
        """Write the files of each table whose index is within the fraction range."""
        for name, chunks in self.chunks.items():
            lo = int(round(len(chunks) * start_fraction))
            hi = len(chunks) if upto is None else int(round(len(chunks) * upto))
            write_files(self.directory(name), chunks[lo:hi], clock, start=lo)

    def final(self, table: str) -> list[dict]:
        return final_contents(TABLES[table], self.events[table])

    @property
    def directories(self) -> dict[str, str]:
        return {t: str(self.directory(t)) for t in self.events}

    def prefix(self, fraction: float) -> "Scenario":
        """The scenario as far as ``write(upto=fraction)`` wrote it: what a reference for
        that point in the stream is computed from."""
        out = Scenario(self.root, self.seed, self.sloppy)
        for name, chunks in self.chunks.items():
            kept = chunks[: int(round(len(chunks) * fraction))]
            out.chunks[name] = kept
            out.events[name] = [e for c in kept for e in c]
        return out


def pipeline_sql(directories: dict, queries: list[Query], topics: dict, bootstrap: str,
                 duplicates: bool = True, files_per_trigger: Optional[int] = 1) -> str:
    """One statement set: the sources the queries read (Debezium files), one upsert-kafka
    sink per query, one INSERT per query. ``directories`` and ``topics`` may be template
    expressions. ``duplicates``: the changelogs are sloppy (see random_changelog), so
    the pipeline sets 'table.exec.source.cdc-events-duplicate'."""
    tables = sorted({t for q in queries for t in q.tables})
    sources = [source_ddl(TABLES[t], directories[t], files_per_trigger) for t in tables]
    return statement_set(sources, queries, topics, bootstrap, duplicates)


def statement_set(sources: list[str], queries: list[Query], topics: dict, bootstrap: str,
                  duplicates: bool = False) -> str:
    """The given source DDLs, one upsert-kafka sink per query, one INSERT per query."""
    statements = ["SET 'table.exec.source.cdc-events-duplicate' = 'true'"] if duplicates else []
    statements += sources
    statements += [q.sink_ddl(topics[q.name], bootstrap) for q in queries]
    statements += [q.insert() for q in queries]
    return ";\n".join(statements) + ";\n"


def fresh_topics(queries: list[Query]) -> dict[str, str]:
    return {q.name: topic_name(f"engine-{q.name}") for q in queries}


# --------------------------------------------------------------------------- checking

def reference(spark, scenario: Scenario, query: Query):
    """The query by batch Spark SQL over the final table contents, cast to the sink's types."""
    frames = {}
    for name in query.tables:
        table = TABLES[name]
        rows = [tuple(r[c] for c, _ in table.columns) for r in scenario.final(name)]
        frames[name] = spark.createDataFrame(rows, table.spark_schema)
    df = spark.sql(query.spark_select or query.select, **frames)
    return df.select(*[df[i].cast(t).alias(n) for i, (n, t) in enumerate(query.sink_columns)])


def sink_frame(spark, bootstrap: str, topic: str, query: Query):
    """The sink topic's table as a DataFrame; checks each record's key is its row's key."""
    state = upsert_state(consume(spark, bootstrap, topic))
    for key, value in state.items():
        assert value is not None and str(value[query.key]) == key, f"{query.name}: record key {key!r} holds {value}"
        assert set(value) == {n for n, _ in query.sink_columns}, f"{query.name}: unexpected fields in {value}"
    rows = [tuple(v[n] for n, _ in query.sink_columns) for v in state.values()]
    return spark.createDataFrame(rows, query.schema)


def assert_sink_matches(spark, bootstrap: str, topic: str, scenario: Scenario, query: Query, context: str = "") -> None:
    from chispa import assert_df_equality

    actual = sink_frame(spark, bootstrap, topic, query)
    expected = reference(spark, scenario, query)
    try:
        assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)
    except AssertionError as exc:
        raise AssertionError(f"query {query.name} ({context}, seed {scenario.seed}): the sink differs from batch "
                             f"Spark SQL over the final tables\n{exc}") from None


def assert_sinks_match(spark, bootstrap: str, topics: dict, scenario, queries: list[Query], context: str) -> None:
    """:func:`assert_sink_matches` for every query, reporting all that differ at once."""
    failures = []
    for query in queries:
        try:
            assert_sink_matches(spark, bootstrap, topics[query.name], scenario, query, context)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n\n".join(failures)


def changelog_stats(table: Table, events: list[Event]) -> dict[str, int]:
    """What a changelog exercises: inserts, updates, updates that change a non-key
    column's value (moves between groups / join keys), deletes, deletes of absent keys,
    duplicated events, and changes without a full before image."""
    stats = dict(inserts=0, updates=0, moves=0, deletes=0, absent_deletes=0, duplicates=0, partial_before=0)
    present: dict[str, dict] = {}
    for i, (op, before, after) in enumerate(events):
        if i and events[i - 1] == events[i]:
            stats["duplicates"] += 1
        if op == "u" and before is None or op == "d" and set(v for k, v in before.items() if k != table.key) == {None}:
            stats["partial_before"] += 1
        key = (after or before)[table.key]
        if op == "d":
            stats["deletes" if key in present else "absent_deletes"] += 1
            present.pop(key, None)
            continue
        old = present.get(key)
        if old is None:
            stats["inserts"] += 1
        else:
            stats["updates"] += 1
            if any(old[c] != after[c] for c, _ in table.columns if c != table.key):
                stats["moves"] += 1
        present[key] = after
    return stats
