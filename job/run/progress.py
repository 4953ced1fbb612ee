"""Progress a user can see: one line per micro-batch per query, and a summary on exit."""
from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field


def _state(progress) -> tuple[int, int]:
    rows = sum(op.get("numRowsTotal", 0) for op in progress.get("stateOperators", []) or [])
    mem = sum(op.get("memoryUsedBytes", 0) for op in progress.get("stateOperators", []) or [])
    return rows, mem


def format_progress(p: dict) -> str:
    """One readable line from a StreamingQueryProgress JSON dict."""
    rows_in = p.get("numInputRows", 0)
    rate = p.get("processedRowsPerSecond", 0.0) or 0.0
    sink_rows = (p.get("sink") or {}).get("numOutputRows", -1)
    state_rows, state_mem = _state(p)
    latency = (p.get("durationMs") or {}).get("triggerExecution", 0)
    watermark = (p.get("eventTime") or {}).get("watermark", "-")
    observed = p.get("observedMetrics") or {}
    bad = sum(int(v.get("bad_records", 0) or 0) for v in observed.values())
    parts = [f"[{p.get('name') or p.get('id')}] batch {p.get('batchId')}", f"in {rows_in} rows ({rate:,.0f} rows/s)",
             f"out {sink_rows if sink_rows >= 0 else '?'} rows", f"state {state_rows} rows / {state_mem / 1e6:.1f} MB",
             f"latency {latency} ms", f"watermark {watermark}"]
    if bad:
        parts.append(f"bad records {bad}")
    return " | ".join(parts)


@dataclass
class ProgressReporter:
    out: object = sys.stderr
    totals: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def attach(cls, spark, out) -> "ProgressReporter":
        from pyspark.sql.streaming import StreamingQueryListener

        reporter = cls(out)

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event):
                pass

            def onQueryProgress(self, event):
                reporter.on_progress(event.progress)

            def onQueryIdle(self, event):
                pass

            def onQueryTerminated(self, event):
                pass

        spark.streams.addListener(Listener())
        return reporter

    def on_progress(self, progress) -> None:
        import json

        p = json.loads(progress.json)
        if p.get("numInputRows", 0) == 0 and not p.get("stateOperators"):
            return
        with self.lock:
            t = self.totals.setdefault(p.get("name") or p.get("id"), {"batches": 0, "rows_in": 0, "rows_out": 0})
            t["batches"] += 1
            t["rows_in"] += p.get("numInputRows", 0)
            t["rows_out"] += max((p.get("sink") or {}).get("numOutputRows", 0), 0)
            print(format_progress(p), file=self.out, flush=True)

    def summary(self) -> None:
        with self.lock:
            for name, t in self.totals.items():
                print(f"[{name}] done: {t['batches']} batches, {t['rows_in']} rows in, {t['rows_out']} rows out",
                      file=self.out, flush=True)
