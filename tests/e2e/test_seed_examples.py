"""Seed 002's two Flink examples, on Spark, against the real broker — record by record.

After every input message the job runs once (--once) from its checkpoint, and the sink
topic must then hold exactly what Flink's would.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from job.run.runner import RunOptions, run
from tests.kafka_io import consume, produce, topic_name, upsert_state

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
