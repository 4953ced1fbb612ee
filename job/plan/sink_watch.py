"""What a sink counts and checks as it writes: the data path's side of the run's
progress figures and of its graceful stop.

Every sink a query plans is written through :func:`watched_sink`: it counts the rows
written (upserts and deletes of a change stream), which the run's progress reporter
(job.run.progress) reads after Spark posts the batch's progress, and passes every
``foreachBatch`` micro-batch through the :class:`StopGate` a stopping run closes
(job.run.stop). Both happen inside the sink's writes, on the data path, so they are the
plan's; the run only reads the counts and closes the gate, and plan/ imports nothing of
run/.

Output rows: Spark reports them only for some sinks (``sink.numOutputRows`` is -1 for
``foreachBatch``): a streaming observation (``streamsql_output``) on append-only writes,
computed by the write itself; for change writes, a count per ``__op`` of the cached
micro-batch (upserts = ``+I``/``+U``, deletes = ``-D``): one small extra job per batch. A
batch ``Observation`` would be free but never completes when the sink writes through
Spark's batch Kafka writer, whose execution is nested in another.
"""
from __future__ import annotations

import threading
from typing import Optional

OUTPUT_OBSERVATION = "streamsql_output"


# --------------------------------------------------------------------- output counts

class OutputCounts:
    """Rows written per (sink key, batch id), recorded inside ``foreachBatch`` and read by
    the progress listener right after (Spark posts a batch's progress after its commit)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, int], dict] = {}

    def record(self, key: str, batch_id: int, counts: dict) -> None:
        with self._lock:
            self._counts[(key, batch_id)] = counts
            if len(self._counts) > 10_000:  # a listener that never reads: keep memory bounded
                for k in list(self._counts)[:5_000]:
                    del self._counts[k]

    def pop(self, key: Optional[str], batch_id: int) -> Optional[dict]:
        if key is None:
            return None
        with self._lock:
            return self._counts.pop((key, batch_id), None)


OUTPUTS = OutputCounts()


# ------------------------------------------------------------------------ stop gate

STOP_MARKER = "[STREAMSQL_STOP]"


class StopGate:
    """Keeps micro-batches that start after a graceful stop was requested from writing.

    A stopping run closes the gate of each sink (by its key) at the batch then in flight;
    a later batch that reaches the sink raises before writing anything, which ends its
    query. Spark never committed that batch, so a restart runs it again — from the
    sink's point of view the run stopped exactly between two batches.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_allowed: dict[str, int] = {}

    def close(self, key: Optional[str], last_allowed: int) -> None:
        if key is not None:
            with self._lock:
                self._last_allowed[key] = last_allowed

    def open(self, keys) -> None:
        with self._lock:
            for key in keys:
                self._last_allowed.pop(key, None)

    def check(self, key: str, batch_id: int) -> None:
        with self._lock:
            last = self._last_allowed.get(key)
        if last is not None and batch_id > last:
            raise RuntimeError(f"{STOP_MARKER} stopping: micro-batch {batch_id} is left for the next run")


STOP_GATE = StopGate()


def watched_sink(sink, key: str, counts: OutputCounts = OUTPUTS, gate: StopGate = STOP_GATE):
    """Count what ``sink`` writes, under ``key`` (the query's checkpoint), and pass each
    micro-batch written by ``foreachBatch`` through ``gate``. Returns ``sink``.

    * ``write_stream(df)`` (append-only results), ``write_upsert_stream(df)`` and
      ``write_change_stream(df)`` (changes the sink writes as a stream): a streaming
      observation on ``df`` — rows, and for upserts the upserts and deletes; its value
      arrives in the progress' ``observedMetrics``.
    * ``write_changes(batch, id)``: the batch is cached, its ``__op`` values counted,
      then it is written (from the cache, so the query is not computed twice).
    """
    from pyspark.sql import functions as F

    write_stream, write_changes, write_append = sink.write_stream, sink.write_changes, sink.write_append
    write_upsert_stream, write_change_stream = sink.write_upsert_stream, sink.write_change_stream

    def observed_write_stream(df):
        return write_stream(df.observe(OUTPUT_OBSERVATION, F.count(F.lit(1)).alias("rows")))

    def observed_write_upsert_stream(df):
        op = F.col("__op")
        return write_upsert_stream(df.observe(OUTPUT_OBSERVATION, F.count(F.lit(1)).alias("rows"),
                                              F.count(F.when(op.isin("+I", "+U"), 1)).alias("upserts"),
                                              F.count(F.when(op == "-D", 1)).alias("deletes")))

    def observed_write_change_stream(df):
        # A signed change of n stands for n rows (inserted or retracted).
        return write_change_stream(df.observe(OUTPUT_OBSERVATION,
                                              F.coalesce(F.sum(F.abs(F.col("__sign"))), F.lit(0)).alias("rows")))

    def gated_write_append(batch, batch_id):
        gate.check(key, batch_id)
        return write_append(batch, batch_id)

    def observed_write_changes(batch, batch_id):
        gate.check(key, batch_id)
        if "__op" not in batch.columns:
            return write_changes(batch, batch_id)
        # Sinks write with Spark's batch writers (Kafka, JDBC…), whose nested executions
        # never complete an Observation; so count the cached batch, then write it.
        from pyspark import StorageLevel

        cached = batch.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            by_op = {r["__op"]: int(r["n"]) for r in cached.groupBy("__op").agg(F.count(F.lit(1)).alias("n")).collect()}
            write_changes(cached, batch_id)
        finally:
            cached.unpersist()
        counts.record(key, batch_id, {"rows": sum(by_op.values()),
                                      "upserts": by_op.get("+I", 0) + by_op.get("+U", 0),
                                      "deletes": by_op.get("-D", 0)})

    sink.write_stream = observed_write_stream
    sink.write_upsert_stream = observed_write_upsert_stream
    sink.write_change_stream = observed_write_change_stream
    sink.write_changes = observed_write_changes
    sink.write_append = gated_write_append
    return sink
