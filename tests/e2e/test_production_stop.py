"""SIGTERM stops a continuous run at a batch boundary: exit 0, a consistent checkpoint,
and a --once restart that ends with exactly the reference result."""
from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.support.kafka_io import consume, produce, topic_name, upsert_state
from tests.support.runs import ROOT, run_inline, start_cli

SEED = ROOT / "examples" / "user_count_by_account" / "pipeline.sql"
pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def user(uid, account):
    return uid, {"uid": uid, "accountId": account, "id": 1, "fullName": "x", "op": "c"}


def reference(records) -> dict:
    users = {}
    for key, value in records:
        if value is None:
            users.pop(key, None)
        else:
            users[key] = value["accountId"]
    out = {}
    for account in users.values():
        out[account] = out.get(account, 0) + 1
    return out


def last_batch(directory: Path) -> int:
    return max((int(p.name) for p in directory.iterdir() if p.name.isdigit()), default=-1)


def test_sigterm_stops_at_a_batch_boundary_and_a_restart_completes(spark, kafka_bootstrap, tmp_path):
    users, counts = topic_name("users"), topic_name("counts")
    first = [user(f"u{i}", f"a{i % 5}") for i in range(240)]
    produce(spark, kafka_bootstrap, users, first)
    # the seed pipeline, reading at most 20 records per micro-batch so that the run is
    # still busy when the signal arrives
    sql = SEED.read_text().replace("'connector' = 'upsert-kafka',",
                                   "'connector' = 'upsert-kafka', 'scan.max-offsets-per-trigger' = '20',", 1)
    (tmp_path / "seed.sql").write_text(sql)
    checkpoint = tmp_path / "ck"
    args = ["-f", str(tmp_path / "seed.sql"), "--checkpoint-dir", str(checkpoint),
            "--var", f"bootstrap={kafka_bootstrap}", "--var", f"users_topic={users}", "--var", f"counts_topic={counts}"]
    # its own process group, signalled as a whole as systemd, Airflow or `kill -TERM -PGID`
    # do: the Spark JVM must not die of the signal before the graceful stop has run
    proc, lines, reader = start_cli(*args)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not any(re.search(r"\] batch [2-9] ", l) for l in lines):
            assert proc.poll() is None, "".join(lines)
            time.sleep(0.2)
        assert any(re.search(r"\] batch [2-9] ", l) for l in lines), "".join(lines)
        os.killpg(proc.pid, signal.SIGTERM)
        sent = time.monotonic()
        code = proc.wait(timeout=120)
        stopped_after = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    reader.join(10)
    err = "".join(lines)
    assert code == 0, err
    assert "received SIGTERM, stopping at the next batch boundary" in err
    assert re.search(r"\[seed-1-user_count_by_account\] stopped: \d+ batches", err), err
    print(f"stopped {stopped_after:.1f} s after SIGTERM")

    # at most the batch in flight when the signal came finished after it
    after_signal = err.split("received SIGTERM", 1)[1]
    assert len(re.findall(r"\] batch \d+ ", after_signal)) <= 1, err
    # the checkpoint: every reported batch committed; at most one more planned, not committed
    query_dir = checkpoint / "seed-1-user_count_by_account"
    done = last_batch(query_dir / "commits")
    assert done == max(int(b) for b in re.findall(r"\] batch (\d+) ", err))
    assert last_batch(query_dir / "offsets") in (done, done + 1)
    processed = sum(int(m.group(1)) for m in re.finditer(r"\] batch \d+ \| in (\d+) rows", err))
    assert 0 < processed < len(first)  # stopped mid-stream

    # more data, then a --once restart from the checkpoint: exactly the reference result
    second = [user(f"u{i}", f"a{(i + 1) % 5}") for i in range(0, 240, 7)] + [(f"u{i}", None) for i in range(1, 240, 11)]
    produce(spark, kafka_bootstrap, users, second)
    r = run_inline(files=[str(tmp_path / "seed.sql")], once=True, checkpoint_dir=str(checkpoint),
                   variables={"bootstrap": kafka_bootstrap, "users_topic": users, "counts_topic": counts})
    assert r.code == 0, r.err
    assert f"] batch {done + 1} " in r.err  # it went on from where the stopped run committed
    state = {k: v["userCount"] for k, v in upsert_state(consume(spark, kafka_bootstrap, counts)).items()}
    assert state == reference(first + second)
