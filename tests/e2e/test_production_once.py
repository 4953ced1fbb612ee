"""--once: two consecutive runs over new data give what one run over everything gives."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.kafka_io import consume, produce, topic_name, upsert_state
from tests.support.runs import run_inline

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "user_count_by_account" / "pipeline.sql"
pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def user(uid, account, op="c"):
    return uid, {"uid": uid, "accountId": account, "id": int(uid.split("-")[1]), "fullName": "x", "op": op}


FIRST = [user("100-1", "100"), user("100-2", "100"), user("101-1", "101"), user("102-1", "102")]
SECOND = [user("100-2", "101", "u"), ("102-1", None), user("103-1", "103"), user("100-3", "100"),
          ("999-9", None), user("103-1", "100", "u")]
# 100-1, 100-3, 103-1 (moved on from 103: that account is gone) in 100; 100-2, 101-1 in 101
EXPECTED = {"100": 3, "101": 2}


def counts(spark, bootstrap, topic):
    return {k: v["userCount"] for k, v in upsert_state(consume(spark, bootstrap, topic)).items()}


def test_two_once_runs_equal_one(spark, kafka_bootstrap, tmp_path):
    users, split_counts, whole_counts = topic_name("users"), topic_name("counts"), topic_name("counts")

    def once(counts_topic, checkpoint):
        r = run_inline(files=[str(SEED)], once=True, checkpoint_dir=str(tmp_path / checkpoint),
                       variables={"bootstrap": kafka_bootstrap, "users_topic": users, "counts_topic": counts_topic})
        assert r.code == 0, r.err
        return r

    produce(spark, kafka_bootstrap, users, FIRST)
    once(split_counts, "split")
    assert counts(spark, kafka_bootstrap, split_counts) == {"100": 2, "101": 1, "102": 1}
    produce(spark, kafka_bootstrap, users, SECOND)
    second = once(split_counts, "split")
    assert "batch 1 " in second.err and "batch 0 " not in second.err  # continued from the checkpoint

    once(whole_counts, "whole")
    assert counts(spark, kafka_bootstrap, split_counts) == EXPECTED
    assert counts(spark, kafka_bootstrap, whole_counts) == EXPECTED

    # a third run with nothing new changes nothing
    third = once(split_counts, "split")
    assert "] batch " not in third.err
    assert counts(spark, kafka_bootstrap, split_counts) == EXPECTED
