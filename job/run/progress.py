"""Progress a user can see: one line per micro-batch per query, and a summary on exit.

    [orders-1-totals] batch 7 | in 1,200 rows (3,950 rows/s) | out 40 rows (38 upserts, 2 deletes)
      | state 1,024 rows / 2.1 MB | watermark 2024-01-31T10:00:00.000Z | latency 310 ms | bad records 3

The same figures go to ``--metrics-file`` (JSON lines) and ``--metrics-port``
(Prometheus); see :mod:`job.run.metrics`.
"""
from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable, Optional

from job.plan.sink_watch import OUTPUTS, OutputCounts
from job.run.metrics import BatchFigures, QueryTotals, figures


def format_figures(f: BatchFigures, real_time: bool = False) -> str:
    """One line per batch. A real-time query's batch is its checkpoint interval, and its
    records are written as they come: its length is not a latency, so it is not called one."""
    out = "?" if f.output_rows is None else f"{f.output_rows:,}"
    changes = ""
    if f.upserts is not None:
        changes = f" ({f.upserts:,} upserts, {f.deletes or 0:,} deletes)"
    parts = [f"[{f.query}] batch {f.batch_id}",
             f"in {f.input_rows:,} rows ({_rate(f.processed_rows_per_second)} rows/s)",
             f"out {out} rows{changes}",
             f"state {f.state_rows:,} rows / {f.state_memory_bytes / 1e6:.1f} MB"
             + (f" in memory, {f.state_disk_bytes / 1e6:.1f} MB on disk" if f.state_disk_bytes else ""),
             f"watermark {f.watermark or '-'}",
             f"checkpoint interval {f.latency_ms / 1000:,.1f} s" if real_time else f"latency {f.latency_ms:,} ms"]
    if f.bad_records:
        parts.append(f"bad records {f.bad_records:,}")
    return " | ".join(parts)


def _rate(value: float) -> str:
    return f"{value:,.1f}" if value < 10 else f"{value:,.0f}"


def format_progress(p: dict) -> str:
    """One readable line from a StreamingQueryProgress JSON dict."""
    return format_figures(figures(p))


@dataclass
class ProgressReporter:
    """Listens to the session's streaming queries and reports each finished batch.

    ``queries``: names of the queries this run started (others in the same session are
    ignored); ``sink_keys``: query name → the key its sink's output counts are recorded
    under (its checkpoint); ``exporters``: objects with ``batch(figures)``,
    ``summary(name, totals, status)`` and ``close()``.
    """

    out: object = sys.stderr
    queries: Optional[set] = None
    sink_keys: dict = field(default_factory=dict)
    exporters: list = field(default_factory=list)
    outputs: OutputCounts = OUTPUTS
    totals: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    listener: object = None
    on_batch: Optional[Callable[[BatchFigures], None]] = None
    names_by_id: dict = field(default_factory=dict)
    terminated: set = field(default_factory=set)
    changed: threading.Condition = field(default_factory=threading.Condition)
    closing: threading.Event = field(default_factory=threading.Event)
    taker: Optional[threading.Thread] = None
    real_time: set = field(default_factory=set)   # names of the queries that run in real-time mode

    @classmethod
    def attach(cls, spark, out, **kwargs) -> "ProgressReporter":
        """Report the session's streaming queries from now on. Spark's events are queued in
        the JVM (the engine's ProgressQueue: a Python listener costs dozens of py4j calls per
        batch) and taken, in order, by a thread of this reporter, each a typed
        job.changelog.replies.QueryEvent. Registering passes the session only: no spec."""
        from job.changelog.jvm import static_call

        reporter = cls(out, **kwargs)
        reporter.listener = static_call(spark, "streamsql.engine.ProgressQueue", "register",
                                        ("org.apache.spark.sql.SparkSession", spark._jsparkSession))
        reporter.taker = threading.Thread(target=reporter._take_events, name="streamsql-progress", daemon=True)
        reporter.taker.start()
        return reporter

    def _take_events(self) -> None:
        from job.changelog.replies import QueryEvent, from_json

        queue = self.listener
        while not self.closing.is_set():
            try:
                text = queue.poll(500)
            except Exception:  # noqa: BLE001 - the session is gone: nothing more will come
                return
            if text is None:
                continue
            event = from_json(QueryEvent, text)
            if event.kind == "closed":  # detach() unregistered the listener: nothing more will come
                return
            if event.kind == "started":
                self.names_by_id[event.id] = event.name
            elif event.kind == "progress":
                try:
                    self.on_progress(json.loads(event.progress))
                except Exception as exc:  # noqa: BLE001 - a report must never stop the job
                    print(f"streamsql: could not report progress: {exc}", file=self.out, flush=True)
            elif event.kind == "terminated":
                with self.changed:
                    self.terminated.add(self.names_by_id.get(event.id, event.id))
                    self.changed.notify_all()

    def watch(self, names, sink_keys: Optional[dict] = None) -> None:
        """Report these queries too (names as given to ``queryName``)."""
        with self.lock:
            self.queries = set(self.queries or ()) | set(names)
            self.sink_keys.update(sink_keys or {})

    def on_progress(self, p: dict) -> None:
        """One finished batch: ``p`` is Spark's StreamingQueryProgress as a JSON dict."""
        name = p.get("name") or p.get("id")
        if self.queries is not None and name not in self.queries:
            return
        f = figures(p, self.outputs.pop(self.sink_keys.get(name), int(p.get("batchId", -1))))
        with self.lock:
            self.totals.setdefault(name, QueryTotals()).add(f)
            for exporter in self.exporters:
                exporter.batch(f)
            # A batch that read nothing and keeps no state (e.g. the last one of
            # --once) is not worth a line.
            if f.input_rows or f.state_rows or f.output_rows or p.get("stateOperators"):
                print(format_figures(f, f.query in self.real_time), file=self.out, flush=True)
        if self.on_batch is not None:
            self.on_batch(f)

    def drain(self, names, timeout: float = 10.0) -> bool:
        """Wait until Spark has told this listener that every query in ``names`` ended;
        the listener bus delivers a query's events in order, so every batch it ran has
        been reported by then. False on timeout."""
        import time

        deadline = time.monotonic() + timeout
        with self.changed:
            while not set(names) <= self.terminated:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(min(left, 0.2))
        return True

    def summary(self, status: str = "ok") -> None:
        with self.lock:
            for name, t in self.totals.items():
                out = f"{t.output_rows:,}" if t.output_known else "?"
                changes = f" ({t.upserts:,} upserts, {t.deletes:,} deletes)" if (t.upserts or t.deletes) else ""
                bad = f", {t.bad_records:,} bad records" if t.bad_records else ""
                print(f"[{name}] {status}: {t.batches} batches, {t.input_rows:,} rows in, {out} rows out{changes}{bad}",
                      file=self.out, flush=True)
                for exporter in self.exporters:
                    exporter.summary(name, t, status)
            if status != "ok":
                return
            # A query that ran to its end without a batch found nothing new in its sources
            # (a --once run after another): say so, and which checkpoint holds its position,
            # rather than end in silence.
            for name in sorted(set(self.queries or ()) - set(self.totals)):
                checkpoint = self.sink_keys.get(name)
                print(f"[{name}] ok: up to date, nothing new to read"
                      + (f" (checkpoint {checkpoint})" if checkpoint else ""), file=self.out, flush=True)
                for exporter in self.exporters:
                    exporter.summary(name, QueryTotals(output_known=True), status)

    def detach(self) -> None:
        self.closing.set()
        if self.listener is not None:
            try:
                self.listener.unregister()
            except Exception:  # noqa: BLE001 - the session may already be gone
                pass
            self.listener = None
        if self.taker is not None:
            self.taker.join(2.0)
            self.taker = None
        for exporter in self.exporters:
            try:
                exporter.close()
            except Exception:  # noqa: BLE001
                pass
