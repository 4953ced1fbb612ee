"""``SET 'table.exec.state.ttl'``: a key's state is forgotten once it has not been
touched for that long (processing time, as in Flink), so a key that comes back starts
from nothing; without a TTL the key is remembered.

Spark gives state a TTL only in TimeMode.ProcessingTime, whose operators ask for a batch
after every batch (a --once run would never end), so the engine keeps the TTL by its own
clock: a last-written time per key, checked when the key is processed again.
"""
from __future__ import annotations

import json
import time

import pytest

from job.api import collect

QUERY = "SELECT uid, COUNT(*) AS n, SUM(amount) AS total FROM clicks GROUP BY uid"


def statements(path, ttl=None):
    ddl = (f"CREATE TABLE clicks (uid STRING, amount INT) WITH ('connector' = 'filesystem', 'path' = '{path}', "
           "'format' = 'json')")
    return [ddl] + ([f"SET 'table.exec.state.ttl' = '{ttl}'"] if ttl else [])


def write(path, name, rows):
    (path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_key_is_forgotten_after_its_ttl(spark, tmp_path):
    first = [{"uid": "a", "amount": 1}, {"uid": "a", "amount": 2}, {"uid": "b", "amount": 5}]
    later = [{"uid": "a", "amount": 10}]
    runs = {}
    for ttl in (None, "2 s"):
        data = tmp_path / f"data-{ttl is not None}"
        data.mkdir()
        write(data, "part-0", first)
        checkpoint = str(tmp_path / f"ck-{ttl is not None}")
        before = collect(statements(data, ttl), QUERY, spark=spark, checkpoint_dir=checkpoint)
        time.sleep(4)  # longer than the TTL: key a is not touched meanwhile
        write(data, "part-1", later)
        after = collect(statements(data, ttl), QUERY, spark=spark, checkpoint_dir=checkpoint)
        runs[ttl] = (before, after)

    for before, _ in runs.values():
        assert sorted(before.rows) == [("a", 2, 3), ("b", 1, 5)]
    # Without a TTL, key a's count goes on from its state: its old row is retracted.
    _, kept = runs[None]
    assert ("-U", ("a", 2, 3)) in kept.changes and ("+U", ("a", 3, 13)) in kept.changes
    # With a 2 s TTL, key a's state expired: it starts again from the new row alone,
    # and nothing of the old state is retracted (Flink emits the same).
    _, forgotten = runs["2 s"]
    assert [row for _, row in forgotten.changes if row[0] == "a"] == [("a", 1, 10)]
    assert all(kind in ("+I", "+U") for kind, _ in forgotten.changes)
