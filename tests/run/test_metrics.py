"""Batch figures from StreamingQueryProgress dicts, the progress line, the exporters."""
from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from job.plan.sink_watch import OutputCounts
from job.run.metrics import MetricsFile, PrometheusExporter, QueryTotals, figures
from job.run.progress import ProgressReporter, format_figures

PROGRESS = {
    "id": "q-id", "name": "p-1-sink", "batchId": 7, "timestamp": "2024-01-31T10:00:00.000Z",
    "numInputRows": 1200, "inputRowsPerSecond": 600.0, "processedRowsPerSecond": 3950.4,
    "durationMs": {"triggerExecution": 310},
    "eventTime": {"watermark": "2024-01-31T09:59:00.000Z"},
    "stateOperators": [{"numRowsTotal": 1000, "memoryUsedBytes": 2_000_000},
                       {"numRowsTotal": 24, "memoryUsedBytes": 100_000}],
    "observedMetrics": {"bad_records_src": {"bad_records": 3}, "streamsql_output": {"rows": 40}},
    "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
}


def test_figures_from_progress():
    f = figures(PROGRESS)
    assert (f.query, f.batch_id, f.input_rows, f.output_rows, f.bad_records) == ("p-1-sink", 7, 1200, 40, 3)
    assert (f.state_rows, f.state_memory_bytes, f.latency_ms) == (1024, 2_100_000, 310)
    assert f.watermark == "2024-01-31T09:59:00.000Z" and f.upserts is None


def test_rocksdb_state_size_is_shown_next_to_its_memory():
    """RocksDB reports a few KB of memory for state of many MB: its SST files are the
    state's size (the join of the 1M-event benchmark: 18 KB memory, 1.7 MB files)."""
    ops = [{"numRowsTotal": 64, "memoryUsedBytes": 18_176, "customMetrics": {"rocksdbSstFileSize": 1_678_698}},
           {"numRowsTotal": 4, "memoryUsedBytes": 0, "customMetrics": {"rocksdbSstFileSize": 21_302}}]
    f = figures({**PROGRESS, "stateOperators": ops})
    assert (f.state_rows, f.state_memory_bytes, f.state_disk_bytes) == (68, 18_176, 1_700_000)
    assert "state 68 rows / 0.0 MB in memory, 1.7 MB on disk |" in format_figures(f)
    assert figures(PROGRESS).state_disk_bytes == 0  # the in-memory provider has no files


def test_recorded_change_counts_win_over_observations():
    f = figures(PROGRESS, {"rows": 5, "upserts": 4, "deletes": 1})
    assert (f.output_rows, f.upserts, f.deletes) == (5, 4, 1)
    line = format_figures(f)
    assert "[p-1-sink] batch 7" in line and "in 1,200 rows" in line and "out 5 rows (4 upserts, 1 deletes)" in line
    assert "state 1,024 rows / 2.1 MB" in line and "watermark 2024-01-31T09:59:00.000Z" in line
    assert "latency 310 ms" in line and "bad records 3" in line
    # a real-time query's batch is its checkpoint interval, not a latency
    assert "| checkpoint interval 0.3 s | bad records 3" in format_figures(f, real_time=True)


def test_unknown_output_and_no_watermark():
    p = {**PROGRESS, "observedMetrics": {}, "sink": {"numOutputRows": -1},
         "eventTime": {"watermark": "1970-01-01T00:00:00.000Z"}}
    f = figures(p)
    assert f.output_rows is None and f.watermark is None
    assert "out ? rows" in format_figures(f) and "watermark -" in format_figures(f)
    assert figures({**p, "sink": {"numOutputRows": 12}}).output_rows == 12


def test_reporter_ignores_other_queries_and_counts_totals(tmp_path):
    import io

    out = io.StringIO()
    counts = OutputCounts()
    metrics = MetricsFile(str(tmp_path / "m" / "metrics.jsonl"))
    reporter = ProgressReporter(out, queries={"p-1-sink"}, sink_keys={"p-1-sink": "/ck/p-1"}, exporters=[metrics],
                                outputs=counts)
    counts.record("/ck/p-1", 7, {"rows": 5, "upserts": 4, "deletes": 1})
    reporter.on_progress(PROGRESS)
    reporter.on_progress({**PROGRESS, "name": "someone-else"})
    reporter.on_progress({**PROGRESS, "batchId": 8, "numInputRows": 0, "stateOperators": [],
                          "observedMetrics": {}})
    reporter.summary("ok")
    reporter.detach()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "batch 7" in lines[0]
    assert lines[1] == "[p-1-sink] ok: 2 batches, 1,200 rows in, 5 rows out (4 upserts, 1 deletes), 3 bad records"
    records = [json.loads(l) for l in (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()]
    assert [r["event"] for r in records] == ["batch", "batch", "summary"]
    assert [r.get("input_rows") for r in records] == [1200, 0, 1200]
    assert records[0]["upserts"] == 4 and records[2]["status"] == "ok"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_query_that_ran_no_batch_is_reported_up_to_date_with_its_checkpoint(tmp_path):
    import io

    out = io.StringIO()
    metrics = MetricsFile(str(tmp_path / "metrics.jsonl"))
    reporter = ProgressReporter(out, queries={"p-1-sink", "p-2-other"},
                                sink_keys={"p-1-sink": "/ck/p-1-sink", "p-2-other": "/ck/p-2-other"},
                                exporters=[metrics], outputs=OutputCounts())
    reporter.on_progress(PROGRESS)
    reporter.summary("ok")
    reporter.detach()
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("[p-1-sink] ok: 1 batches, 1,200 rows in")
    assert lines[2] == "[p-2-other] ok: up to date, nothing new to read (checkpoint /ck/p-2-other)"
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["event"], r["query"], r.get("batches"), r.get("output_rows")) for r in records] == [
        ("batch", "p-1-sink", None, 40), ("summary", "p-1-sink", 1, 40), ("summary", "p-2-other", 0, 0)]


def test_a_stopped_or_failed_run_does_not_call_a_query_up_to_date():
    import io

    for status in ("stopped", "failed"):
        out = io.StringIO()
        reporter = ProgressReporter(out, queries={"p-1-sink"}, sink_keys={"p-1-sink": "/ck/p-1-sink"},
                                    outputs=OutputCounts())
        reporter.summary(status)
        assert out.getvalue() == ""


def test_prometheus_exporter_serves_the_figures():
    port = _free_port()
    exporter = PrometheusExporter(port)
    try:
        progress = {**PROGRESS, "stateOperators": PROGRESS["stateOperators"] + [
            {"numRowsTotal": 0, "customMetrics": {"rocksdbSstFileSize": 4096}}]}
        exporter.batch(figures(progress, {"rows": 5, "upserts": 4, "deletes": 1}))
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        exporter.close()
    assert 'streamsql_input_rows_total{query="p-1-sink"} 1200.0' in text
    assert 'streamsql_upserts_total{query="p-1-sink"} 4.0' in text
    assert 'streamsql_state_rows{query="p-1-sink"} 1024.0' in text
    assert 'streamsql_state_disk_bytes{query="p-1-sink"} 4096.0' in text
    assert 'streamsql_batch_id{query="p-1-sink"} 7.0' in text
    assert "streamsql_up 1.0" in text


def test_prometheus_exporter_binds_the_address_it_is_given():
    """--metrics-host: the endpoint answers on that address and on no other (127.0.0.2
    is this host's too, on Linux's loopback, but not the default's address)."""
    port = _free_port()
    exporter = PrometheusExporter(port, "127.0.0.2")
    try:
        text = urllib.request.urlopen(f"http://127.0.0.2:{port}/metrics", timeout=5).read().decode()
        assert "streamsql_up 1.0" in text
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)
    finally:
        exporter.close()


def test_metrics_host_reaches_the_exporter(spark):
    from tests.support.runs import run_inline

    port = _free_port()
    r = run_inline(statements=[
        "CREATE TABLE src (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '3')",
        "CREATE TABLE out1 (a INT) WITH ('connector' = 'blackhole')",
        "INSERT INTO out1 SELECT a FROM src"], once=True, metrics_port=port, metrics_host="192.0.2.1")
    assert r.code == 1, r.err
    assert r.error_line.startswith(f"error (exit 1, failed): cannot serve metrics on 192.0.2.1:{port}: "), r.error_line


def test_totals():
    t = QueryTotals()
    t.add(figures(PROGRESS))
    t.add(figures({**PROGRESS, "observedMetrics": {}}))
    assert (t.batches, t.input_rows, t.output_rows, t.output_known, t.bad_records) == (2, 2400, 40, True, 3)
