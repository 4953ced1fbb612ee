"""An upsert sink's micro-batch: the signed rows net to one upsert or delete per key
(the engine's netChanges, a stateless per-batch operator)."""
import json
import os
import random
from types import SimpleNamespace

import pytest

from job.plan import engine
from job.plan.relation import SIGN

SCHEMA = f"id INT, name STRING, n BIGINT, {SIGN} INT"


def net_per_batch(spark, tmp_path, batches):
    """Run netChanges over ``batches`` (lists of (row, sign)), one micro-batch each."""
    source = tmp_path / "changes"
    source.mkdir()
    for i, changes in enumerate(batches):
        path = source / f"part-{i:03d}.json"
        path.write_text("".join(json.dumps({"id": r[0], "name": r[1], "n": r[2], SIGN: s}) + "\n" for r, s in changes))
        os.utime(path, (1_700_000_000 + 10 * i, 1_700_000_000 + 10 * i))  # read in this order
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(source))
    planner = SimpleNamespace(spark=spark, state_ttl_ms=0, ran=lambda spec: None)
    netted = engine.net_changes(planner, df, ["id"], ["id", "name", "n"])
    out: list = []
    query = (netted.writeStream.foreachBatch(lambda b, i: out.append(sorted(tuple(r) for r in b.collect())))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    return [b for b in out if b]


def expected(changes):
    """Net count per (key, row); per key the surviving row, or a delete of the retracted one."""
    net: dict = {}
    for row, sign in changes:
        net[row] = net.get(row, 0) + sign
    by_key: dict = {}
    for row, n in net.items():
        if n:
            by_key.setdefault(row[0], []).append((row, n))
    out = []
    for rows in by_key.values():
        alive = [row for row, n in rows if n > 0]
        out.append((*alive[0], "+U") if alive else (*rows[0][0], "-D"))
    return sorted(out)


@pytest.mark.parametrize("seed", range(3))
def test_a_batch_nets_to_one_change_per_key(spark, tmp_path, seed):
    """Random batches of a query unique on id: an update retracts the key's old row and
    inserts its new one, a delete retracts it, and some changes cancel in their batch."""
    rng = random.Random(seed)
    current: dict = {}
    batches = []
    for _ in range(3):
        changes = []
        for key in rng.sample(range(8), rng.randrange(1, 8)):
            old = current.get(key)
            new = None if old is not None and rng.random() < 0.3 else \
                (key, rng.choice(["a", "b", None, "ü"]), rng.choice([None, 1, 2**40]))
            if old is not None:
                changes.append((old, -1))
            if new is not None:
                changes.append((new, 1))
                if rng.random() < 0.2:  # inserted and retracted again within the batch
                    changes += [(new, -1), (new, 1)]
            current[key] = new
            if new is None:
                current.pop(key)
        rng.shuffle(changes)  # a batch's changes arrive in no particular order
        batches.append(changes)
    got = net_per_batch(spark, tmp_path, batches)
    assert got == [expected(b) for b in batches if expected(b)]


def test_update_delete_and_cancelled_change(spark, tmp_path):
    got = net_per_batch(spark, tmp_path, [[
        ((1, "old", 1), -1), ((1, "new", 1), 1),      # update → +U new
        ((2, "gone", 1), -1),                         # delete → -D
        ((3, "same", 1), -1), ((3, "same", 1), 1),    # no net change → nothing
    ]])
    assert got == [[(1, "new", 1, "+U"), (2, "gone", 1, "-D")]]
