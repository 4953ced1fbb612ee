"""--metrics-file and --metrics-port during real runs over Kafka."""
from __future__ import annotations

import json
import re
import socket
import threading
import time
import urllib.request

import pytest

from tests.support.kafka_io import produce, topic_name
from tests.support.runs import run_inline

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def pipeline(bootstrap, src, sink_topic, extra=""):
    return [
        f"CREATE TABLE src (uid STRING, n INT) WITH ('connector' = 'kafka', 'topic' = '{src}', "
        f"'properties.bootstrap.servers' = '{bootstrap}', 'format' = 'json', 'scan.startup.mode' = 'earliest-offset'{extra})",
        f"CREATE TABLE totals (uid STRING, total BIGINT, PRIMARY KEY (uid) NOT ENFORCED) WITH ("
        f"'connector' = 'upsert-kafka', 'topic' = '{sink_topic}', 'properties.bootstrap.servers' = '{bootstrap}', "
        "'key.format' = 'raw', 'value.format' = 'json')",
        "INSERT INTO totals SELECT uid, SUM(n) FROM src GROUP BY uid",
    ]


def test_metrics_file_has_one_line_per_batch(spark, kafka_bootstrap, tmp_path):
    src, out = topic_name("src"), topic_name("totals")
    produce(spark, kafka_bootstrap, src, [(u, {"uid": u, "n": 1}) for u in ("a", "b", "a", "c", "a")])
    metrics = tmp_path / "metrics.jsonl"
    r = run_inline(statements=pipeline(kafka_bootstrap, src, out, ", 'scan.max-offsets-per-trigger' = '2'"), once=True,
                   checkpoint_dir=str(tmp_path / "ck"), metrics_file=str(metrics))
    assert r.code == 0, r.err
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    batches = [x for x in records if x["event"] == "batch"]
    assert [b["input_rows"] for b in batches] == [2, 2, 1]
    assert [b["batch_id"] for b in batches] == [0, 1, 2]
    # upserts per batch: {a, b}, {a, c}, {a}
    assert [(b["output_rows"], b["upserts"], b["deletes"]) for b in batches] == [(2, 2, 0), (2, 2, 0), (1, 1, 0)]
    assert all(b["state_rows"] >= 1 and b["latency_ms"] > 0 for b in batches)
    [summary] = [x for x in records if x["event"] == "summary"]
    assert (summary["batches"], summary["input_rows"], summary["upserts"], summary["status"]) == (3, 5, 5, "ok")
    # the progress lines show the same figures, and a summary at the end
    lines = [l for l in r.err.splitlines() if "] batch " in l]
    assert len(lines) == 3 and "in 2 rows" in lines[0] and "out 2 rows (2 upserts, 0 deletes)" in lines[0]
    assert re.search(r"state \d+ rows / [\d.]+ MB", lines[0])
    assert r.err.splitlines()[-1].endswith("ok: 3 batches, 5 rows in, 5 rows out (5 upserts, 0 deletes)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scrape(port: int) -> str:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return ""


def test_prometheus_endpoint_serves_gauges_during_a_continuous_run(spark, kafka_bootstrap, tmp_path):
    src, out = topic_name("src"), topic_name("totals")
    produce(spark, kafka_bootstrap, src, [(u, {"uid": u, "n": 1}) for u in ("a", "b", "a")])
    port, stop = _free_port(), threading.Event()
    result = {}
    runner = threading.Thread(target=lambda: result.update(r=run_inline(
        statements=pipeline(kafka_bootstrap, src, out), checkpoint_dir=str(tmp_path / "ck"), metrics_port=port,
        stop_event=stop)))
    runner.start()
    try:
        deadline, text = time.monotonic() + 180, ""
        while time.monotonic() < deadline and 'streamsql_input_rows_total{query="sql-pipeline-1-totals"} 3.0' not in text:
            time.sleep(0.5)
            text = _scrape(port)
        assert 'streamsql_input_rows_total{query="sql-pipeline-1-totals"} 3.0' in text, text
        produce(spark, kafka_bootstrap, src, [("d", {"uid": "d", "n": 1})])
        while time.monotonic() < deadline and 'streamsql_input_rows_total{query="sql-pipeline-1-totals"} 4.0' not in text:
            time.sleep(0.5)
            text = _scrape(port)
        assert 'streamsql_input_rows_total{query="sql-pipeline-1-totals"} 4.0' in text, text
        assert "streamsql_up 1.0" in text
        assert re.search(r'streamsql_state_rows\{query="sql-pipeline-1-totals"\} [1-9]', text)
        assert re.search(r'streamsql_upserts_total\{query="sql-pipeline-1-totals"\} 3.0', text)
        assert 'streamsql_batch_input_rows{query="sql-pipeline-1-totals"} 1.0' in text
    finally:
        stop.set()
        runner.join(120)
    assert not runner.is_alive()
    assert result["r"].code == 0, result["r"].err
    assert "stopping at the next batch boundary" in result["r"].err
    assert _scrape(port) == ""  # the endpoint is gone with the run
