"""Generate the benchmark's changelog: Debezium JSON events for users, favourite colours
and favourite cheeses over N keys — creates, updates (account moves, value changes) and
deletes — as files (one directory per table) for the filesystem connector.

    python benchmarks/generate.py --events 1000000 --keys 100000 --out benchmarks/data
    python benchmarks/generate.py --per-table 5000000 --keys 100000 --out DIR   # N events in each table

Events are written as they are made (memory grows with the keys, not the events), so 5M
events per table (15M lines, about 1.3 GB) fit any machine.
"""
from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

COLORS = ["red", "blue", "green", "yellow", "black", "white"]
CHEESES = ["brie", "cheddar", "gouda", "comte", "feta", "stilton"]


TABLES = ("users", "colors", "cheeses")


def events(n_events: int, n_keys: int, seed: int, per_table: int = 0):
    """Yields (table, event) in order; every table is a changelog keyed by the user id.

    By default ``n_events`` in all, users half of them; with ``per_table`` each table gets
    exactly that many (the tables are then drawn evenly until each is full)."""
    rng = random.Random(seed)
    current: dict[str, dict[str, dict]] = {"users": {}, "colors": {}, "cheeses": {}}
    left = {t: per_table for t in TABLES}
    open_tables = list(TABLES)
    for _ in range(per_table * len(TABLES) if per_table else n_events):
        if per_table:
            table = open_tables[rng.randrange(len(open_tables))]
            left[table] -= 1
            if not left[table]:
                open_tables.remove(table)
        else:
            table = rng.choices(TABLES, weights=(0.5, 0.25, 0.25))[0]
        key = f"u{rng.randrange(n_keys)}"
        rows = current[table]
        old = rows.get(key)
        if old is not None and rng.random() < 0.1:
            del rows[key]
            yield table, {"before": old, "after": None, "op": "d"}
            continue
        if table == "users":
            new = {"uid": key, "accountId": f"a{rng.randrange(max(1, n_keys // 10))}", "score": rng.randrange(1000)}
        elif table == "colors":
            new = {"userUid": key, "favoriteColor": rng.choice(COLORS)}
        else:
            new = {"userUid": key, "favoriteCheese": rng.choice(CHEESES)}
        rows[key] = new
        yield table, {"before": old, "after": new, "op": "u" if old else "c"}


def write(out: Path, n_events: int, n_keys: int, files_per_table: int, seed: int, per_table: int = 0) -> dict[str, int]:
    """Write the changelog under ``out``/<table>/part-NNNNN.json; returns files per table."""
    per_file = max(1, (per_table or n_events) // files_per_table)
    handles, counts, written = {}, {}, {}
    for table in ("users", "colors", "cheeses"):
        (out / table).mkdir(parents=True, exist_ok=True)
        counts[table], written[table] = 0, 0
    for table, event in events(n_events, n_keys, seed, per_table):
        if table not in handles or counts[table] >= per_file:
            if table in handles:
                handles[table].close()
            path = out / table / f"part-{written[table]:05d}.json"
            written[table] += 1
            handles[table] = open(path, "w")
            counts[table] = 0
        handles[table].write(json.dumps(event) + "\n")
        counts[table] += 1
    for h in handles.values():
        h.close()
    return written


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--files", type=int, default=20, help="files per table")
    p.add_argument("--per-table", type=int, default=0, help="events in each table (instead of --events in all)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "data"))
    a = p.parse_args()
    print(write(Path(a.out), a.events, a.keys, a.files, a.seed, a.per_table))
