"""Seed 002's two Flink examples, on Spark, against the real broker — record by record.

After every input message the job runs once (--once) from its checkpoint, and the sink
topic must then hold exactly what Flink's would.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from job.api import RunOptions, run
from tests.support.kafka_io import consume, produce, topic_name, upsert_state

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def run_once(pipeline_file: Path, variables: dict, checkpoint: Path) -> None:
    code = run(RunOptions(files=[str(pipeline_file)], variables=variables, once=True, checkpoint_dir=str(checkpoint)))
    assert code == 0


def test_user_count_by_account(spark, kafka_bootstrap, tmp_path):
    users, counts = topic_name("users"), topic_name("counts")
    variables = {"bootstrap": kafka_bootstrap, "users_topic": users, "counts_topic": counts}
    sql = ROOT / "examples" / "user_count_by_account" / "pipeline.sql"
    steps = [
        (("100-1", {"uid": "100-1", "accountId": "100", "id": 1, "fullName": "bob", "op": "c"}), {"100": 1}),
        (("100-2", {"uid": "100-2", "accountId": "100", "id": 2, "fullName": "bob", "op": "c"}), {"100": 2}),
        (("101-1", {"uid": "101-1", "accountId": "101", "id": 1, "fullName": "bob", "op": "c"}), {"100": 2, "101": 1}),
        (("101-2", {"uid": "101-2", "accountId": "101", "id": 2, "fullName": "bob", "op": "c"}), {"100": 2, "101": 2}),
        # an update that changes nothing the query reads
        (("100-1", {"uid": "100-1", "accountId": "100", "id": 1, "fullName": "bob", "op": "u"}), {"100": 2, "101": 2}),
        # an account change moves the user between groups
        (("100-2", {"uid": "100-2", "accountId": "101", "id": 2, "fullName": "bob", "op": "u"}), {"100": 1, "101": 3}),
        # a delete (tombstone) removes it; the last user of account 100 leaves → the group is deleted
        (("100-1", None), {"101": 3}),
        # a tombstone for a key that never existed changes nothing
        (("999-9", None), {"101": 3}),
    ]
    for record, expected in steps:
        produce(spark, kafka_bootstrap, users, [record])
        run_once(sql, variables, tmp_path / "ckpt")
        state = upsert_state(consume(spark, kafka_bootstrap, counts))
        assert {k: v["userCount"] for k, v in state.items()} == expected, f"after {record}"
        assert all(v["accountId"] == k for k, v in state.items())


def test_user_count_by_account_from_yaml(spark, kafka_bootstrap, tmp_path):
    """The issue's 'done when': the YAML pipeline with --once fills the sink topic."""
    users, counts = topic_name("users"), topic_name("counts")
    produce(spark, kafka_bootstrap, users, [
        ("100-1", {"uid": "100-1", "accountId": "100", "id": 1, "fullName": "bob", "op": "c"}),
        ("100-2", {"uid": "100-2", "accountId": "100", "id": 2, "fullName": "bob", "op": "c"}),
        ("101-1", {"uid": "101-1", "accountId": "101", "id": 1, "fullName": "bob", "op": "c"}),
        ("101-2", {"uid": "101-2", "accountId": "101", "id": 2, "fullName": "bob", "op": "c"}),
        ("100-1", {"uid": "100-1", "accountId": "100", "id": 1, "fullName": "bob", "op": "u"}),
    ])
    code = run(RunOptions(pipeline=str(ROOT / "examples" / "user_count_by_account" / "pipeline.yaml"),
                          variables={"bootstrap": kafka_bootstrap, "users_topic": users, "counts_topic": counts},
                          once=True, checkpoint_dir=str(tmp_path / "ckpt")))
    assert code == 0
    state = upsert_state(consume(spark, kafka_bootstrap, counts))
    assert state == {"100": {"accountId": "100", "userCount": 2}, "101": {"accountId": "101", "userCount": 2}}


def test_user_favorite_color_and_cheese(spark, kafka_bootstrap, tmp_path):
    topics = {name: topic_name(name) for name in ("users", "color", "cheese", "output")}
    variables = {"bootstrap": kafka_bootstrap, **{f"{k}_topic": v for k, v in topics.items()}}
    yaml_file = ROOT / "examples" / "user_favorite_color_and_cheese" / "pipeline.yaml"

    def row(account, uid, color, cheese):
        return {"accountId": account, "userUid": uid, "favoriteColor": color, "favoriteCheese": cheese}

    steps = [
        ("users", ("103-1", {"uid": "103-1", "accountId": "103", "id": 1, "fullName": "bob", "op": "c"}),
         {"103-1": row("103", "103-1", None, None)}),
        ("color", ("103-1", {"userUid": "103-1", "favoriteColor": "blue", "op": "c"}),
         {"103-1": row("103", "103-1", "blue", None)}),
        ("cheese", ("103-1", {"userUid": "103-1", "favoriteCheese": "cheddar", "op": "c"}),
         {"103-1": row("103", "103-1", "blue", "cheddar")}),
        ("cheese", ("103-1", {"userUid": "103-1", "favoriteCheese": "brie", "op": "u"}),
         {"103-1": row("103", "103-1", "blue", "brie")}),
        # a second user, then an account change, then deletes from each side
        ("users", ("104-1", {"uid": "104-1", "accountId": "104", "id": 1, "fullName": "ann", "op": "c"}),
         {"103-1": row("103", "103-1", "blue", "brie"), "104-1": row("104", "104-1", None, None)}),
        ("users", ("103-1", {"uid": "103-1", "accountId": "105", "id": 1, "fullName": "bob", "op": "u"}),
         {"103-1": row("105", "103-1", "blue", "brie"), "104-1": row("104", "104-1", None, None)}),
        ("color", ("103-1", None),
         {"103-1": row("105", "103-1", None, "brie"), "104-1": row("104", "104-1", None, None)}),
        ("users", ("104-1", None),
         {"103-1": row("105", "103-1", None, "brie")}),
    ]
    for table, record, expected in steps:
        produce(spark, kafka_bootstrap, topics[table], [record])
        code = run(RunOptions(pipeline=str(yaml_file), variables=variables, once=True,
                              checkpoint_dir=str(tmp_path / "ckpt")))
        assert code == 0
        assert upsert_state(consume(spark, kafka_bootstrap, topics["output"])) == expected, f"after {table} {record}"
