"""SIGKILL loop over the seed's aggregation, its 3-way join and an append pipeline into
partitioned Parquet (see crashloop.py): nothing lost, nothing duplicated.

CI kills the job a few times (STREAMSQL_CRASH_KILLS, default 2); the full loop is

    STREAMSQL_CRASH_KILLS=20 .venv/bin/python -m pytest tests/reliability/test_crash_loop.py
    .venv/bin/python -m tests.reliability.crashloop --kills 20     # same, with a JSON summary
"""
from __future__ import annotations

import os

import pytest

from tests.reliability.crashloop import CrashLoop

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_sigkill_loop_loses_and_duplicates_nothing(spark, kafka_bootstrap, tmp_path):
    kills = int(os.environ.get("STREAMSQL_CRASH_KILLS", "2"))
    seed = int(os.environ.get("STREAMSQL_CRASH_SEED", "7"))
    result = CrashLoop(spark, kafka_bootstrap, tmp_path, kills=kills, seed=seed).run()
    assert result["kills"] == kills
    assert any(k["at"].startswith("commit") for k in result["kill_log"])
    assert result["events"] > 0 and result["joined_rows"] > 0 and result["counts_rows"] > 0
