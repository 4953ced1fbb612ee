"""The figures of a run, per query and micro-batch, and where they go.

:func:`figures` turns one ``StreamingQueryProgress`` (as a dict) into a
:class:`BatchFigures`: input rows and rate, output rows (with upserts and deletes when
the sink receives changes), bad records skipped or dead-lettered, state rows and memory,
watermark and batch latency. The progress line (``job.run.progress``), the JSON-lines
file (``--metrics-file``) and the Prometheus endpoint (``--metrics-port``) all show these
same figures.

Output rows: Spark reports them only for some sinks (``sink.numOutputRows`` is -1 for
``foreachBatch``), so the sink the plan writes through counts them (job.plan.sink_watch
says how); :func:`figures` reads those counts.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

from job.plan.sink_watch import OUTPUT_OBSERVATION

BAD_RECORDS_PREFIX = "bad_records_"


@dataclass
class BatchFigures:
    query: str
    batch_id: int
    timestamp: str
    input_rows: int
    input_rows_per_second: float
    processed_rows_per_second: float
    output_rows: Optional[int]          # None: the sink does not tell
    upserts: Optional[int]              # None: not a change stream
    deletes: Optional[int]
    bad_records: int
    state_rows: int
    state_memory_bytes: int
    watermark: Optional[str]
    latency_ms: int                     # the batch's wall-clock duration (trigger to commit)
    # RocksDB's SST files: the state's size. Its memory figure counts only what RocksDB
    # holds in memory right now, which can be a few KB for state of many MB.
    state_disk_bytes: int = 0
    event = "batch"

    def as_json(self) -> dict:
        return {"event": self.event, **asdict(self)}


# --------------------------------------------------------------------------- figures

def _state(progress: dict) -> tuple[int, int, int]:
    """(rows, memory bytes, RocksDB file bytes) over the query's stateful operators."""
    ops = progress.get("stateOperators") or []
    return (sum(int(op.get("numRowsTotal", 0) or 0) for op in ops),
            sum(int(op.get("memoryUsedBytes", 0) or 0) for op in ops),
            sum(int((op.get("customMetrics") or {}).get("rocksdbSstFileSize", 0) or 0) for op in ops))


def _metric(row, name: str):
    if row is None:
        return None
    if isinstance(row, dict):
        return row.get(name)
    try:
        return row[name]
    except (KeyError, ValueError, IndexError):
        return None


def figures(p: dict, outputs: Optional[dict] = None) -> BatchFigures:
    """One batch's figures from its progress dict (``json.loads(progress.json)``) and the
    counts its sink recorded for it (job.plan.sink_watch), if any."""
    observed = p.get("observedMetrics") or {}
    bad = sum(int(_metric(v, "bad_records") or 0) for k, v in observed.items() if k.startswith(BAD_RECORDS_PREFIX))
    upserts = deletes = None
    rows = None
    if outputs:
        rows, upserts, deletes = outputs.get("rows"), outputs.get("upserts"), outputs.get("deletes")
    elif OUTPUT_OBSERVATION in observed:
        row = observed[OUTPUT_OBSERVATION]
        rows, upserts, deletes = _metric(row, "rows"), _metric(row, "upserts"), _metric(row, "deletes")
    if rows is None:
        sink_rows = (p.get("sink") or {}).get("numOutputRows", -1)
        rows = sink_rows if sink_rows is not None and sink_rows >= 0 else None
    state_rows, state_mem, state_disk = _state(p)
    watermark = (p.get("eventTime") or {}).get("watermark")
    if watermark == "1970-01-01T00:00:00.000Z":  # no event time seen yet
        watermark = None
    return BatchFigures(
        query=p.get("name") or p.get("id") or "?",
        batch_id=int(p.get("batchId", -1)),
        timestamp=p.get("timestamp", ""),
        input_rows=int(p.get("numInputRows", 0) or 0),
        input_rows_per_second=float(p.get("inputRowsPerSecond", 0.0) or 0.0),
        processed_rows_per_second=float(p.get("processedRowsPerSecond", 0.0) or 0.0),
        output_rows=None if rows is None else int(rows),
        upserts=upserts, deletes=deletes, bad_records=bad,
        state_rows=state_rows, state_memory_bytes=state_mem, watermark=watermark,
        latency_ms=int((p.get("durationMs") or {}).get("triggerExecution", 0) or 0),
        state_disk_bytes=state_disk,
    )


@dataclass
class QueryTotals:
    batches: int = 0
    input_rows: int = 0
    output_rows: int = 0
    upserts: int = 0
    deletes: int = 0
    bad_records: int = 0
    output_known: bool = False
    last_batch_id: int = -1
    state_rows: int = 0
    state_memory_bytes: int = 0
    state_disk_bytes: int = 0
    watermark: Optional[str] = None
    started: float = field(default_factory=time.time)

    def add(self, f: BatchFigures) -> None:
        self.batches += 1
        self.input_rows += f.input_rows
        if f.output_rows is not None:
            self.output_known = True
            self.output_rows += f.output_rows
        self.upserts += f.upserts or 0
        self.deletes += f.deletes or 0
        self.bad_records += f.bad_records
        self.last_batch_id = f.batch_id
        self.state_rows, self.state_memory_bytes, self.state_disk_bytes = (f.state_rows, f.state_memory_bytes,
                                                                           f.state_disk_bytes)
        self.watermark = f.watermark


# ------------------------------------------------------------------------ exporters

class MetricsFile:
    """``--metrics-file``: one JSON object per line — a ``batch`` line per micro-batch,
    a ``summary`` line per query at the end. Appends, so several runs share a file."""

    def __init__(self, path: str) -> None:
        import os

        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        self.path = path
        self._fh = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def batch(self, f: BatchFigures) -> None:
        self._write(f.as_json())

    def summary(self, name: str, t: QueryTotals, status: str) -> None:
        self._write({"event": "summary", "query": name, "status": status, "batches": t.batches,
                     "input_rows": t.input_rows, "output_rows": t.output_rows if t.output_known else None,
                     "upserts": t.upserts, "deletes": t.deletes, "bad_records": t.bad_records,
                     "last_batch_id": t.last_batch_id, "seconds": round(time.time() - t.started, 3)})

    def _write(self, obj: dict) -> None:
        with self._lock:
            if self._fh.closed:
                return
            self._fh.write(json.dumps(obj, sort_keys=False) + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def require_prometheus_client() -> None:
    """--metrics-port needs prometheus-client, an extra (pip install 'streamsql[metrics]')."""
    from job.errors import PipelineError

    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise PipelineError("--metrics-port needs the Python package prometheus-client, which is not installed",
                            hint="pip install 'streamsql[metrics]' where the job runs, or use --metrics-file") from None


class PrometheusExporter:
    """``--metrics-port``: Prometheus text format on http://HOST:PORT/metrics (``--metrics-host``,
    127.0.0.1 unless told: a scrape from another machine is the user's choice).

    Counters (``*_total``) add up over the run; gauges show the latest batch. Every
    series carries the query name as the ``query`` label.
    """

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        require_prometheus_client()
        from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

        self.registry = r = CollectorRegistry()
        q = ["query"]
        self.up = Gauge("streamsql_up", "1 while the pipeline runs", registry=r)
        self.batches = Counter("streamsql_batches", "Micro-batches completed", q, registry=r)
        self.input_rows = Counter("streamsql_input_rows", "Rows read", q, registry=r)
        self.output_rows = Counter("streamsql_output_rows", "Rows written to the sink", q, registry=r)
        self.upserts = Counter("streamsql_upserts", "Upserts written to the sink", q, registry=r)
        self.deletes = Counter("streamsql_deletes", "Deletes written to the sink", q, registry=r)
        self.bad_records = Counter("streamsql_bad_records", "Bad records skipped or dead-lettered", q, registry=r)
        self.batch_id = Gauge("streamsql_batch_id", "Id of the latest micro-batch", q, registry=r)
        self.batch_rows = Gauge("streamsql_batch_input_rows", "Rows read by the latest micro-batch", q, registry=r)
        self.rate = Gauge("streamsql_input_rows_per_second", "Rows processed per second in the latest micro-batch",
                          q, registry=r)
        self.state_rows = Gauge("streamsql_state_rows", "Rows held in state", q, registry=r)
        self.state_bytes = Gauge("streamsql_state_memory_bytes", "Memory used by state", q, registry=r)
        self.state_disk_bytes = Gauge("streamsql_state_disk_bytes", "Size of the state's RocksDB files", q,
                                      registry=r)
        self.latency = Gauge("streamsql_batch_duration_seconds", "Duration of the latest micro-batch", q, registry=r)
        self.watermark = Gauge("streamsql_watermark_seconds", "Event-time watermark (Unix seconds)", q, registry=r)
        self.server, self.thread = start_http_server(port, addr=host, registry=r)
        self.up.set(1)

    def batch(self, f: BatchFigures) -> None:
        q = f.query
        self.batches.labels(q).inc()
        self.input_rows.labels(q).inc(f.input_rows)
        if f.output_rows is not None:
            self.output_rows.labels(q).inc(f.output_rows)
        if f.upserts is not None:
            self.upserts.labels(q).inc(f.upserts)
        if f.deletes is not None:
            self.deletes.labels(q).inc(f.deletes)
        self.bad_records.labels(q).inc(f.bad_records)
        self.batch_id.labels(q).set(f.batch_id)
        self.batch_rows.labels(q).set(f.input_rows)
        self.rate.labels(q).set(f.processed_rows_per_second)
        self.state_rows.labels(q).set(f.state_rows)
        self.state_bytes.labels(q).set(f.state_memory_bytes)
        self.state_disk_bytes.labels(q).set(f.state_disk_bytes)
        self.latency.labels(q).set(f.latency_ms / 1000.0)
        if f.watermark:
            seconds = _iso_seconds(f.watermark)
            if seconds is not None:
                self.watermark.labels(q).set(seconds)

    def summary(self, name: str, t: QueryTotals, status: str) -> None:
        pass

    def close(self) -> None:
        self.up.set(0)
        try:
            self.server.shutdown()
            self.server.server_close()
        except Exception:  # noqa: BLE001
            pass


def _iso_seconds(text: str) -> Optional[float]:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
