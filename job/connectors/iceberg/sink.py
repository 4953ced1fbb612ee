"""Writing an Iceberg table: one transaction per micro-batch (see the package docstring).

A micro-batch of an updating query carries at most one change per key ('+U' replaces the
key's row, '-D' deletes it). It is committed as one Iceberg transaction: delete the rows
of every key in the batch (pyiceberg rewrites the data files that hold them:
copy-on-write, so every reader sees plain data files and no delete files), then append
the '+U' rows, streamed from Spark in Arrow batches. Both snapshots carry the sink's id and
the batch id in their summaries; before writing, the sink looks for its own newest
snapshot, and a batch id at or below it was committed already (a replay after a crash
between Iceberg's commit and Spark's) and is skipped.
"""
from __future__ import annotations

from typing import Optional

from job.connectors.base import Sink, SinkError
from job.connectors.hadoop import sink_id
from job.connectors.iceberg import table_identifier, upsert_enabled
from job.connectors.iceberg.arrow import arrow_batches
from job.connectors.iceberg.schema import arrow_schema, conform, iceberg_schema, verify
from job.errors import EXIT_OTHER, PipelineError
from job.options import table_error

SINK_ID = "streamsql.sink-id"
BATCH_ID = "streamsql.batch-id"


def open_catalog(options):
    from job.connectors.iceberg.catalog import HadoopCatalog
    return HadoopCatalog(options["catalog-name"], warehouse=options["warehouse"])


class IcebergSink(Sink):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.table = ctx.table
        self.options = ctx.options
        self.database, self.name = table_identifier(ctx.table, ctx.options)
        self.pk = list(ctx.table.primary_key)
        self.cols = [c for c in ctx.table.columns if c.is_persisted]
        self._sink_id: Optional[str] = None
        self.catalog = None
        if not ctx.offline:
            self.catalog = open_catalog(ctx.options)
            self.prepare()

    @property
    def qualified(self) -> str:
        return f"{self.database}.{self.name}"

    # -- before the query starts
    def prepare(self) -> None:
        """Create the database and table when they do not exist (as Flink's connector
        does); check that an existing table holds the declared columns."""
        ensure_table(self.catalog, self.table, self.options, self.cols)
        current = self.catalog.load_table((self.database, self.name))
        snapshot = current.current_snapshot()
        summary = snapshot.summary.additional_properties if snapshot and snapshot.summary else {}
        if self.pk and int(summary.get("total-equality-deletes", "0") or 0) > 0:
            # Flink's upsert writer leaves equality deletes; pyiceberg cannot read them, and
            # an upsert batch must read the files it rewrites.
            raise table_error(self.table, f"Iceberg table '{self.qualified}' in '{self.options['warehouse']}' holds "
                                          "equality delete files (written by Flink's upsert sink), which the iceberg "
                                          f"connector cannot read, so it cannot upsert into it (table "
                                          f"'{self.table.name}')", option="catalog-table",
                              hint="compact the table first (rewrite_data_files in Spark or Flink) or write "
                                   "to another table")
        problem = verify(current.schema(), self.table, self.cols)
        if problem:
            raise table_error(self.table, f"Iceberg table '{self.qualified}' in '{self.options['warehouse']}' "
                                          f"cannot take the rows of table '{self.table.name}': {problem}",
                              option="catalog-table", hint="change the declared columns or write to another table")

    # -- per micro-batch
    def write_append(self, batch, batch_id):
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        if not self.pk:
            return self._write(batch, None, batch_id)
        # An append-only query into a keyed table: inserts are upserts, the last per key wins.
        from job.connectors.jdbc.sink import _last_per_key
        cached = _last_per_key(batch, self.pk).withColumn("__op", F.lit("+U")).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            self.write_changes(cached, batch_id)
        finally:
            cached.unpersist()

    def write_changes(self, batch, batch_id):
        from pyspark.sql import functions as F

        names = [c.name for c in self.cols]
        rows = batch.where(F.col("__op").isin("+I", "+U")).select(*[F.col(f"`{n}`") for n in names])
        keys = batch.select(*[F.col(f"`{p}`") for p in self.pk]) if self.pk else None
        self._write(rows, keys, batch_id)

    def _write(self, rows, keys, batch_id: int) -> None:
        try:
            self._commit(rows, keys, batch_id)
        except (SinkError, PipelineError):
            raise
        except Exception as exc:  # noqa: BLE001 - one paragraph naming the table, not a traceback
            raise table_error(self.table, f"micro-batch {batch_id} could not be committed to Iceberg table "
                                          f"'{self.qualified}' (table '{self.table.name}'), nothing of it was "
                                          f"committed: {type(exc).__name__}: {exc}", option="catalog-table",
                              exit_code=EXIT_OTHER, kind=SinkError,
                              hint="the batch is retried from the checkpoint when the job restarts") from None

    def _commit(self, rows, keys, batch_id: int) -> None:
        import pyarrow as pa

        table = self.catalog.load_table((self.database, self.name))
        if self.committed(table, batch_id):
            return
        props = {SINK_ID: self.sink_id(), BATCH_ID: str(int(batch_id))}
        target = arrow_schema(table.schema(), [c.name for c in self.cols])
        tx = table.transaction()
        changed = False
        if keys is not None and table.current_snapshot() is not None:
            condition = key_filter(self.pk, arrow_batches(keys))
            if condition is not None:
                tx.delete(condition, snapshot_properties=props)
                changed = True
        batches = (conform(b, target) for b in arrow_batches(rows))
        first = next(batches, None)
        if first is not None:
            reader = pa.RecordBatchReader.from_batches(target, _chain(first, batches))
            tx.append(reader, snapshot_properties=props)
            changed = True
        if changed:
            tx.commit_transaction()

    def committed(self, table, batch_id: int) -> bool:
        """Is ``batch_id`` at or below the newest batch this sink committed to ``table``?"""
        sink_id = self.sink_id()
        for snapshot in sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or 0, reverse=True):
            summary = snapshot.summary.additional_properties if snapshot.summary else {}
            if summary.get(SINK_ID) == sink_id:
                return int(summary.get(BATCH_ID, -1)) >= batch_id
        return False

    def sink_id(self) -> str:
        """The query writing this sink (job.connectors.hadoop.sink_id)."""
        if self._sink_id is None:
            self._sink_id = sink_id(self.ctx.spark, self.ctx.checkpoint)
        return self._sink_id


def ensure_table(catalog, table, options, cols) -> None:
    """Create the table's database and the table in ``catalog`` when they do not exist, as
    Flink's connector does for a table it reads or writes: the declared columns, the
    PRIMARY KEY as identifier fields, 'format-version' and 'write.upsert.enabled'."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError, TableAlreadyExistsError

    database, name = table_identifier(table, options)
    try:
        catalog.create_namespace(database)
    except NamespaceAlreadyExistsError:
        pass
    if not catalog.table_exists((database, name)):
        properties = {"format-version": str(options["format-version"])}
        if upsert_enabled(options):
            properties["write.upsert.enabled"] = "true"
        try:
            catalog.create_table((database, name), iceberg_schema(table, cols), properties=properties)
        except TableAlreadyExistsError:  # another job created it first
            pass


def _chain(first, rest):
    yield first
    yield from rest


def key_filter(pk: list[str], batches):
    """An Iceberg expression matching the rows of the keys in ``batches`` (None: no keys).
    One key column is an ``IN``; several are an OR of ANDs of equalities."""
    from pyiceberg.expressions import And, EqualTo, In, IsNull, Or

    def equal(name, value):
        return IsNull(name) if value is None else EqualTo(name, value)

    if len(pk) == 1:
        values = {v for b in batches for v in b.column(0).to_pylist()}
        nulls = None in values
        values.discard(None)
        condition = In(pk[0], values) if values else None
        if nulls:
            condition = IsNull(pk[0]) if condition is None else Or(condition, IsNull(pk[0]))
        return condition
    condition = None
    seen = set()
    for b in batches:
        for key in zip(*(b.column(i).to_pylist() for i in range(len(pk)))):
            if key in seen:
                continue
            seen.add(key)
            term = equal(pk[0], key[0])
            for name, value in zip(pk[1:], key[1:]):
                term = And(term, equal(name, value))
            condition = term if condition is None else Or(condition, term)
    return condition
