"""SIGKILL loop over the seed's aggregation, its 3-way join and an append pipeline into
partitioned Parquet (see crashloop.py): nothing lost, nothing duplicated.

CI kills the job a few times (STREAMSQL_CRASH_KILLS, default 2) over 30 keys fed in small
rounds; the full loop, and the loop at scale (1M keys fed in bulk waves by Spark), are

    STREAMSQL_CRASH_KILLS=20 .venv/bin/python -m pytest tests/reliability/test_crash_loop.py
    .venv/bin/python -m tests.reliability.crashloop --kills 20     # same, with a JSON summary
    .venv/bin/python -m tests.reliability.crashloop --kills 10 --keys 1000000 --bulk 200000 \
        --waves 5 --max-offsets 50000                              # docs/reliability.md
"""
from __future__ import annotations

import os

import pytest

from tests.reliability.crashloop import CrashLoop

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_sigkill_loop_loses_and_duplicates_nothing(spark, kafka_bootstrap, tmp_path):
    kills = int(os.environ.get("STREAMSQL_CRASH_KILLS", "2"))
    seed = int(os.environ.get("STREAMSQL_CRASH_SEED", "7"))
    scale = {name: int(os.environ[f"STREAMSQL_CRASH_{name.upper()}"])
             for name in ("keys", "bulk", "waves", "max_offsets") if f"STREAMSQL_CRASH_{name.upper()}" in os.environ}
    result = CrashLoop(spark, kafka_bootstrap, tmp_path, kills=kills, seed=seed, **scale).run()
    assert result["kills"] == kills
    assert any(k["at"].startswith("commit") for k in result["kill_log"])
    assert result["events"] > 0 and result["joined_rows"] > 0 and result["counts_rows"] > 0


def test_sigkill_loop_in_real_time_mode(spark, kafka_bootstrap, tmp_path):
    """The same loop with the Kafka-to-Kafka queries in real-time mode (a 5 s checkpoint
    interval; the Parquet pipeline stays micro-batch): state exactly once across SIGKILL,
    the sinks at least once and idempotent per key, so their tables equal the reference.
    The drain runs in real-time mode too, until the sinks are still, then SIGTERM."""
    kills = int(os.environ.get("STREAMSQL_CRASH_KILLS", "1"))   # one in CI: each real-time start takes long
    result = CrashLoop(spark, kafka_bootstrap, tmp_path, kills=kills, seed=11, real_time=True).run()
    assert result["kills"] == kills
    assert result["events"] > 0 and result["joined_rows"] > 0 and result["counts_rows"] > 0
    log = (tmp_path / "job.log").read_text()
    assert ": real-time mode (checkpoint every 5 s" in log and "micro-batch mode: sink 'filesystem'" in log
