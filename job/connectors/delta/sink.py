"""Writing a Delta table: one commit per micro-batch, each carrying Delta's ``txn``
action (app id, version) so a replayed batch is skipped (see the package docstring)."""
from __future__ import annotations

from typing import Optional

from job.connectors.base import Sink, SinkError
from job.connectors.delta import local_path
from job.connectors.hadoop import sink_id
from job.connectors.iceberg.arrow import arrow_batches
from job.errors import EXIT_OTHER, PipelineError
from job.options import table_error

OP = "__op"


class DeltaSink(Sink):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.table = ctx.table
        self.path = local_path(ctx.options)
        self.pk = list(ctx.table.primary_key)
        self.cols = [c for c in ctx.table.columns if c.is_persisted]
        self._sink_id: Optional[str] = None
        if not ctx.offline:
            self._guard(self.prepare)

    def _schema(self, with_op: bool = False):
        """The Arrow schema of the declared columns, as Spark sends them."""
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StringType, StructField, StructType

        fields = [StructField(c.name, self.ctx.spark.sql(f"SELECT CAST(NULL AS {c.spark_type}) AS x").schema[0]
                              .dataType) for c in self.cols]
        if with_op:
            fields.append(StructField(OP, StringType()))
        # Delta stores TIMESTAMP as UTC instants; Spark sends them in its session zone (same instant).
        return to_arrow_schema(StructType(fields), timezone="UTC")

    def prepare(self) -> None:
        """Create the table when the directory holds none (as Flink's connector does)."""
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self.path):
            DeltaTable.create(self.path, schema=self._schema(), mode="ignore")

    def _guard(self, step, batch_id=None) -> None:
        try:
            step()
        except (SinkError, PipelineError):
            raise
        except Exception as exc:  # noqa: BLE001 - one paragraph naming the table, not a traceback
            what = ("could not be opened or created" if batch_id is None
                    else f"did not commit micro-batch {batch_id} (nothing of it was committed)")
            raise table_error(self.table, f"Delta table '{self.ctx.options['table-path']}' (table "
                                          f"'{self.table.name}') {what}: {type(exc).__name__}: {exc}",
                              option="table-path", exit_code=EXIT_OTHER, kind=SinkError,
                              hint="check that the path is a writable directory; a failed batch is retried "
                                   "from the checkpoint when the job restarts") from None

    # -- per micro-batch
    def write_append(self, batch, batch_id):
        from pyspark.sql import functions as F

        if self.pk:  # an append-only query into a keyed table: inserts are upserts
            from job.connectors.jdbc.sink import _last_per_key
            return self.write_changes(_last_per_key(batch, self.pk).withColumn(OP, F.lit("+U")), batch_id)
        rows = batch.select(*[F.col(f"`{c.name}`") for c in self.cols])
        self._guard(lambda: self._commit(rows, batch_id, merge=False), batch_id)

    def write_changes(self, batch, batch_id):
        from pyspark.sql import functions as F

        if not self.pk:
            rows = batch.where(F.col(OP).isin("+I", "+U")).select(*[F.col(f"`{c.name}`") for c in self.cols])
            return self._guard(lambda: self._commit(rows, batch_id, merge=False), batch_id)
        rows = batch.select(*[F.col(f"`{c.name}`") for c in self.cols], F.col(OP))
        self._guard(lambda: self._commit(rows, batch_id, merge=True), batch_id)

    def _commit(self, rows, batch_id: int, merge: bool) -> None:
        import pyarrow as pa
        from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

        table = DeltaTable(self.path)
        app = self.sink_id()
        done = table.transaction_version(app)
        if done is not None and done >= batch_id:
            return  # committed before a crash; Spark replays it
        target = self._schema(with_op=merge)
        batches = (b.cast(target) if b.schema != target else b for b in arrow_batches(rows))
        first = next(batches, None)
        if first is None:
            return
        reader = pa.RecordBatchReader.from_batches(target, _chain(first, batches))
        props = CommitProperties(app_transactions=[Transaction(app, int(batch_id))],
                                 custom_metadata={"streamsql.batch-id": str(int(batch_id))})
        if not merge:
            write_deltalake(table, reader, mode="append", commit_properties=props)
            return
        q = _quote
        on = " AND ".join(f"t.{q(p)} = s.{q(p)}" for p in self.pk)
        values = {q(c.name): f"s.{q(c.name)}" for c in self.cols}
        (table.merge(reader, on, source_alias="s", target_alias="t", commit_properties=props)
         .when_matched_delete(predicate=f"s.{OP} = '-D'")
         .when_matched_update(updates=values, predicate=f"s.{OP} <> '-D'")
         .when_not_matched_insert(updates=values, predicate=f"s.{OP} <> '-D'")
         .execute())

    def sink_id(self) -> str:
        if self._sink_id is None:
            self._sink_id = sink_id(self.ctx.spark, self.ctx.checkpoint)
        return self._sink_id


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _chain(first, rest):
    yield first
    yield from rest
