"""An upsert sink's micro-batch: the signed rows collapse to one upsert or delete per key."""
import random

import pytest
from chispa import assert_df_equality

from job.plan.relation import SIGN
from job.plan.sink import collapse

SCHEMA = f"id INT, name STRING, n BIGINT, {SIGN} INT"


def expected_rows(changes):
    """The reference: net count per (key, row); per key the surviving row (the greatest if
    several survive, as the sink picks), or a delete showing the greatest retracted row."""
    net = {}
    for row, sign in changes:
        net[row] = net.get(row, 0) + sign
    by_key = {}
    for row, n in net.items():
        if n:
            by_key.setdefault(row[0], []).append((row, n))
    out = []
    for rows in by_key.values():
        alive = [row for row, n in rows if n > 0]
        if alive:
            out.append((*max(alive, key=row_json_order), "+U"))
        else:
            out.append((*max((row for row, _ in rows), key=row_json_order), "-D"))
    return out


def row_json_order(row):
    # Rows are compared as their JSON text by the sink: {"id":…,"name":…,"n":…}.
    import json

    fields = {"id": row[0], "name": row[1], "n": row[2]}
    return json.dumps({k: v for k, v in fields.items() if v is not None}, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("seed", range(6))
def test_collapse_matches_net_changes(spark, seed):
    rng = random.Random(seed)
    changes = []
    for _ in range(rng.randrange(1, 60)):
        row = (rng.randrange(6), rng.choice(["a", "b", None, "ü"]), rng.choice([None, 1, 2**40]))
        changes.append((row, rng.choice([1, 1, -1, 2])))
        if rng.random() < 0.3:  # a change cancelled in the same batch
            changes.append((row, -changes[-1][1]))
    batch = spark.createDataFrame([(*row, sign) for row, sign in changes], SCHEMA)
    actual = collapse(batch, ["id"], ["id", "name", "n"])
    expected = spark.createDataFrame(expected_rows(changes), "id INT, name STRING, n BIGINT, __op STRING")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_update_delete_and_cancelled_change(spark):
    batch = spark.createDataFrame([
        (1, "old", 1, -1), (1, "new", 1, 1),      # update → +U new
        (2, "gone", 1, -1),                       # delete → -D
        (3, "same", 1, -1), (3, "same", 1, 1),    # no net change → nothing
    ], SCHEMA)
    rows = sorted(tuple(r) for r in collapse(batch, ["id"], ["id", "name", "n"]).collect())
    assert rows == [(1, "new", 1, "+U"), (2, "gone", 1, "-D")]
