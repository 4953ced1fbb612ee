"""Engine.combine (the local netting of signed rows before a shuffle) on random rows:
per distinct values the signs add up to the input's, whatever the table's limit (a small
limit passes on the oldest half again and again)."""
import json
import random
from collections import Counter, defaultdict

import pytest

from job.changelog.jvm import engine_call


def random_rows(seed: int, n: int):
    rng = random.Random(seed)
    words = [None, "", "a", "b", "Aa", "BB", "ß", "x" * 40]  # "Aa" and "BB" share a hash
    return [(rng.choice(words), rng.choice([None, 0, 1, -1, 7, 2 ** 40]), rng.choice([1, -1]))
            for _ in range(n)]


@pytest.mark.parametrize("limit", [2, 5, 64, 100_000])
def test_signs_add_up_per_values(spark, limit):
    rows = random_rows(limit, 3_000)
    df = spark.createDataFrame(rows, "k string, v long, __sign int").repartition(2)
    combined = engine_call(spark, "combine", df, json.dumps({"sign": "__sign", "limit": limit})).collect()

    expected = defaultdict(int)
    for k, v, sign in rows:
        expected[(k, v)] += sign
    got = defaultdict(int)
    for r in combined:
        assert r["__sign"] != 0  # netted to nothing: not passed on
        got[(r["k"], r["v"])] += r["__sign"]
    assert {k: n for k, n in got.items() if n} == {k: n for k, n in expected.items() if n}
    if limit >= 100:  # a table that never fills passes each distinct row once per partition
        assert max(Counter((r["k"], r["v"]) for r in combined).values()) <= 2
