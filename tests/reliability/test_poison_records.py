"""Poison records next to good ones: 'on-error' = skip / dead-letter keep going and count
them, 'fail' stops at the first one with its position; no good record after a bad one is
lost. Adds to tests/run/test_bad_records.py: numbers too large for their type, huge
values (good, and delivered whole), JSON that is not an object, key-less records in an
upsert table.
"""
from __future__ import annotations

import json

import pytest

from tests.support.kafka_io import produce, topic_name
from tests.support.runs import run_inline

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

BIG = "x" * 400_000     # a big but legal value: must arrive whole, not count as bad
RECORDS = [
    ("k0", {"uid": "0", "n": 0, "note": "a"}),
    ("k1", {"uid": "1", "n": 99_999_999_999, "note": "INT overflow"}),     # bad: does not fit INT
    ("k2", {"uid": "2", "n": 2, "note": BIG}),
    ("k3", "[1, 2, 3]"),                                                    # bad: not an object
    ("k4", {"uid": "4", "n": 4, "note": "é \u2603 \U0001F600"}),
    ("k5", '{"uid": "5", "n": 5, "note": "truncated'),                      # bad: truncated JSON
    ("k6", {"uid": "6", "n": True, "note": "bool for INT"}),                # bad: wrong type
    ("k7", {"uid": "7", "n": 7, "note": "last"}),
]
GOOD = {"0": (0, "a"), "2": (2, BIG), "4": (4, "é \u2603 \U0001F600"), "7": (7, "last")}
BAD_OFFSETS = [1, 3, 5, 6]


def statements(bootstrap, src, out, policy, dead_letter=None):
    dl = f", 'dead-letter.table' = 'bad'" if dead_letter else ""
    out_ddl = f"CREATE TABLE out1 (uid STRING, n INT, note STRING) WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json')"
    return [f"CREATE TABLE src (uid STRING, n INT, note STRING) WITH ('connector' = 'kafka', 'topic' = '{src}', "
            f"'properties.bootstrap.servers' = '{bootstrap}', 'format' = 'json', 'on-error' = '{policy}'{dl})",
            out_ddl,
            *([f"CREATE TABLE bad (raw STRING, error STRING, position STRING) WITH ('connector' = 'filesystem', "
               f"'path' = '{dead_letter}', 'format' = 'json')"] if dead_letter else []),
            "INSERT INTO out1 SELECT uid, n, note FROM src"]


def written(spark, path) -> dict:
    return {r.uid: (r.n, r.note) for r in spark.read.schema("uid string, n int, note string").json(str(path)).collect()}


@pytest.mark.parametrize("policy", ["skip", "dead-letter"])
def test_skip_and_dead_letter_keep_every_good_record_and_count_the_bad(spark, kafka_bootstrap, tmp_path, policy):
    src, out, letters = topic_name("poison"), tmp_path / "out", tmp_path / "letters"
    produce(spark, kafka_bootstrap, src, RECORDS)
    metrics = tmp_path / "m.jsonl"
    r = run_inline(statements=statements(kafka_bootstrap, src, out, policy, letters if policy == "dead-letter" else None),
                   once=True, checkpoint_dir=str(tmp_path / "ck"), metrics_file=str(metrics))
    assert r.code == 0, r.err
    assert written(spark, out) == GOOD
    batches = [b for b in map(json.loads, metrics.read_text().splitlines())
               if b["event"] == "batch" and b["query"] == "sql-pipeline-1-out1"]     # not its dead-letter query
    assert sum(b.get("bad_records", 0) for b in batches) == len(BAD_OFFSETS)
    if policy == "dead-letter":
        rows = spark.read.json(str(letters)).collect()
        assert sorted(r.position for r in rows) == sorted(f"topic {src} partition 0 offset {o}" for o in BAD_OFFSETS)
        assert all(r.error for r in rows)

    # The job keeps going: later records, good and bad, after a restart.
    produce(spark, kafka_bootstrap, src, [("k8", "{{{"), ("k9", {"uid": "9", "n": 9, "note": "after"})])
    r = run_inline(statements=statements(kafka_bootstrap, src, out, policy, letters if policy == "dead-letter" else None),
                   once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    assert written(spark, out) == {**GOOD, "9": (9, "after")}


def test_fail_stops_at_the_first_bad_record_with_its_position(spark, kafka_bootstrap, tmp_path):
    src, out = topic_name("poison"), tmp_path / "out"
    produce(spark, kafka_bootstrap, src, RECORDS)
    r = run_inline(statements=statements(kafka_bootstrap, src, out, "fail"), once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 4, r.err
    assert f"topic {src} partition 0 offset 1" in r.error_line and "99999999999" in r.error_line, r.error_line


def upsert_statements(bootstrap, src, out, policy):
    return [f"CREATE TABLE users (uid STRING, accountId STRING, PRIMARY KEY (uid) NOT ENFORCED) WITH ("
            f"'connector' = 'upsert-kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{bootstrap}', "
            f"'key.format' = 'raw', 'value.format' = 'json', 'on-error' = '{policy}')",
            f"CREATE TABLE counts (accountId STRING, n BIGINT, PRIMARY KEY (accountId) NOT ENFORCED) WITH ("
            f"'connector' = 'upsert-kafka', 'topic' = '{out}', 'properties.bootstrap.servers' = '{bootstrap}', "
            "'key.format' = 'raw', 'value.format' = 'json')",
            "INSERT INTO counts SELECT accountId, COUNT(*) AS n FROM users GROUP BY accountId"]


KEYED = [("u1", {"uid": "u1", "accountId": "a"}), (None, {"uid": "u2", "accountId": "a"}),     # no key
         ("u3", {"uid": "u3", "accountId": "a"}), ("u4", "not json"), ("u5", {"uid": "u5", "accountId": "b"})]


def test_upsert_records_without_a_key_are_skipped_and_counted(spark, kafka_bootstrap, tmp_path):
    from tests.support.kafka_io import consume, upsert_state

    src, out = topic_name("keyless"), topic_name("counts")
    produce(spark, kafka_bootstrap, src, KEYED)
    r = run_inline(statements=upsert_statements(kafka_bootstrap, src, out, "skip"), once=True,
                   checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    assert {k: v["n"] for k, v in upsert_state(consume(spark, kafka_bootstrap, out)).items()} == {"a": 2, "b": 1}
    assert "2 bad records" in r.err.splitlines()[-1]


def test_upsert_record_without_a_key_under_fail(spark, kafka_bootstrap, tmp_path):
    src, out = topic_name("keyless"), topic_name("counts")
    produce(spark, kafka_bootstrap, src, KEYED)
    r = run_inline(statements=upsert_statements(kafka_bootstrap, src, out, "fail"), once=True,
                   checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 4, r.err
    assert "without a key" in r.error_line and f"topic {src} partition 0 offset 1" in r.error_line, r.error_line
