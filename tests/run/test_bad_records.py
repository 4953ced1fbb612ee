"""'on-error' per table for JSON in Kafka: fail, skip, dead-letter.

Bad kinds: malformed JSON, a string where INT is declared (seed 002's crash) and a
Debezium event without 'op'. Every good record — also those after a bad one — arrives.
"""
from __future__ import annotations

import json

import pytest

from tests.support.kafka_io import consume, produce, topic_name
from tests.support.runs import run_inline

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

# good, malformed, good, string-for-INT, good
JSON_RECORDS = [("k1", {"uid": "1", "n": 1}), ("k2", "{not json"), ("k3", {"uid": "3", "n": 3}),
                ("k4", {"uid": "4", "n": "four"}), ("k5", {"uid": "5", "n": 5})]
GOOD = [{"uid": "1", "n": 1}, {"uid": "3", "n": 3}, {"uid": "5", "n": 5}]


def json_pipeline(bootstrap, src, out, policy, dead_letter_ddl=""):
    dead_letter_option = ", 'dead-letter.table' = 'bad'" if dead_letter_ddl else ""
    return [
        f"CREATE TABLE src (uid STRING, n INT) WITH ('connector' = 'kafka', 'topic' = '{src}', "
        f"'properties.bootstrap.servers' = '{bootstrap}', 'format' = 'json', 'scan.startup.mode' = 'earliest-offset', "
        f"'on-error' = '{policy}'{dead_letter_option})",
        f"CREATE TABLE out1 (uid STRING, n INT) WITH ('connector' = 'kafka', 'topic' = '{out}', "
        f"'properties.bootstrap.servers' = '{bootstrap}', 'format' = 'json')",
        *([dead_letter_ddl] if dead_letter_ddl else []),
        "INSERT INTO out1 SELECT uid, n FROM src",
    ]


def values(spark, bootstrap, topic):
    return [json.loads(v) for _k, v in consume(spark, bootstrap, topic)]


def test_skip_drops_bad_records_counts_them_and_keeps_the_good_ones(spark, kafka_bootstrap, tmp_path):
    src, out = topic_name("src"), topic_name("out")
    produce(spark, kafka_bootstrap, src, JSON_RECORDS)
    metrics = tmp_path / "metrics.jsonl"
    r = run_inline(statements=json_pipeline(kafka_bootstrap, src, out, "skip"), once=True,
                   checkpoint_dir=str(tmp_path / "ck"), metrics_file=str(metrics))
    assert r.code == 0, r.err
    assert values(spark, kafka_bootstrap, out) == GOOD
    batch_lines = [l for l in r.err.splitlines() if " batch " in l]
    assert batch_lines and "bad records 2" in batch_lines[-1]
    assert "2 bad records" in r.err.splitlines()[-1]
    batches = [json.loads(l) for l in metrics.read_text().splitlines() if '"batch"' in l]
    assert sum(b["bad_records"] for b in batches) == 2

    # the job keeps running: new records after the bad ones are read by the next run
    produce(spark, kafka_bootstrap, src, [("k6", "]"), ("k7", {"uid": "7", "n": 7})])
    r = run_inline(statements=json_pipeline(kafka_bootstrap, src, out, "skip"), once=True,
                   checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    assert values(spark, kafka_bootstrap, out) == GOOD + [{"uid": "7", "n": 7}]


def test_dead_letter_to_a_kafka_topic(spark, kafka_bootstrap, tmp_path):
    src, out, dlq = topic_name("src"), topic_name("out"), topic_name("dlq")
    produce(spark, kafka_bootstrap, src, JSON_RECORDS)
    dead_letter = (f"CREATE TABLE bad (raw STRING, error STRING, position STRING, source_table STRING) WITH ("
                   f"'connector' = 'kafka', 'topic' = '{dlq}', 'properties.bootstrap.servers' = '{kafka_bootstrap}', "
                   "'format' = 'json')")
    r = run_inline(statements=json_pipeline(kafka_bootstrap, src, out, "dead-letter", dead_letter), once=True,
                   checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    assert values(spark, kafka_bootstrap, out) == GOOD
    letters = sorted(values(spark, kafka_bootstrap, dlq), key=lambda d: d["position"])
    assert [d["raw"] for d in letters] == ["{not json", json.dumps({"uid": "4", "n": "four"})]
    assert [d["position"] for d in letters] == [f"topic {src} partition 0 offset 1", f"topic {src} partition 0 offset 3"]
    assert all(d["source_table"] == "src" for d in letters)
    assert "malformed JSON" in letters[0]["error"]
    assert letters[1]["error"] == "field 'n': 'four' is no INT value"


def test_dead_letter_of_debezium_events_to_a_json_directory(spark, kafka_bootstrap, tmp_path):
    src, out = topic_name("cdc"), topic_name("out")
    event = lambda uid, n, op="c": {"before": None, "after": {"uid": uid, "n": n}, "op": op}  # noqa: E731
    produce(spark, kafka_bootstrap, src, [
        ("1", event("1", 1)), ("2", {"before": None, "after": {"uid": "2", "n": 2}}),   # no 'op'
        ("3", event("3", 3)), ("4", event("4", 4, op="x")), ("5", "{"), ("6", event("6", 6)),
    ])
    path = tmp_path / "dead-letters"
    statements = [
        f"CREATE TABLE src (uid STRING, n INT, PRIMARY KEY (uid) NOT ENFORCED) WITH ('connector' = 'kafka', "
        f"'topic' = '{src}', 'properties.bootstrap.servers' = '{kafka_bootstrap}', 'format' = 'debezium-json', "
        "'scan.startup.mode' = 'earliest-offset', 'on-error' = 'dead-letter', 'dead-letter.table' = 'bad')",
        f"CREATE TABLE bad (raw STRING, error STRING, position STRING) WITH ('connector' = 'filesystem', "
        f"'path' = '{path}', 'format' = 'json')",
        f"CREATE TABLE out1 (uid STRING, n INT, PRIMARY KEY (uid) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', "
        f"'topic' = '{out}', 'properties.bootstrap.servers' = '{kafka_bootstrap}', 'key.format' = 'raw', "
        "'value.format' = 'json')",
        "INSERT INTO out1 SELECT uid, n FROM src",
    ]
    r = run_inline(statements=statements, once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    assert {k: json.loads(v)["n"] for k, v in consume(spark, kafka_bootstrap, out)} == {"1": 1, "3": 3, "6": 6}
    letters = spark.read.json(str(path)).orderBy("position").collect()
    assert [l.position for l in letters] == [f"topic {src} partition 0 offset {o}" for o in (1, 3, 4)]
    assert [l.error for l in letters][:2] == ["Debezium event without 'op'", "unknown Debezium op 'x'"]
    assert "malformed" in letters[2].error and letters[2].raw == "{"


def test_fail_on_a_debezium_event_without_op(spark, kafka_bootstrap, tmp_path):
    src = topic_name("cdc")
    produce(spark, kafka_bootstrap, src, [("1", {"before": None, "after": {"uid": "1", "n": 1}, "op": "c"}),
                                          ("2", {"before": None, "after": {"uid": "2", "n": 2}})])
    statements = [
        f"CREATE TABLE src (uid STRING, n INT) WITH ('connector' = 'kafka', 'topic' = '{src}', "
        f"'properties.bootstrap.servers' = '{kafka_bootstrap}', 'format' = 'debezium-json', "
        "'scan.startup.mode' = 'earliest-offset')",
        "CREATE TABLE out1 (uid STRING, n INT) WITH ('connector' = 'print')",
        "INSERT INTO out1 SELECT uid, n FROM src",
    ]
    r = run_inline(statements=statements, once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 4, r.err
    assert "Debezium event without 'op'" in r.error_line
    assert f"topic {src} partition 0 offset 1: " in r.error_line and '"uid": "2"' in r.error_line
