"""A connector that lives outside job/: found only through the ``streamsql.connectors``
entry point declared in ``../streamsql_test_plugin-0.1.dist-info/entry_points.txt``.

'collect' is a sink that keeps every row it receives in :data:`ROWS` (per 'bucket'), in
the driver's memory, with its change kind: ``ROWS['b'] == [('+I', (1, 'a')), …]``.
"""
from __future__ import annotations

from job.connectors.base import APPEND, CHANGELOG, UPSERT, Connector, Option, Sink
from job.errors import PipelineError

ROWS: dict[str, list[tuple[str, tuple]]] = {}

OPTIONS = (
    Option("bucket", required=True, description="Name of the in-memory list that receives the rows."),
    Option("max-rows", "int", default=1000, description="Fail the query when a bucket would hold more rows."),
)


class CollectSink(Sink):
    def _add(self, kind_rows) -> None:
        bucket = ROWS.setdefault(self.ctx.options["bucket"], [])
        bucket.extend(kind_rows)
        if len(bucket) > self.ctx.options["max-rows"]:
            raise RuntimeError(f"bucket '{self.ctx.options['bucket']}' holds more than {self.ctx.options['max-rows']} rows")

    def _columns(self, batch) -> list[str]:
        return [c.name for c in self.ctx.table.columns if c.is_persisted]

    def write_append(self, batch, batch_id) -> None:
        cols = self._columns(batch)
        self._add([("+I", tuple(r)) for r in batch.select(*cols).collect()])

    def write_changes(self, batch, batch_id) -> None:
        cols = self._columns(batch)
        self._add([(r["__op"], tuple(r[c] for c in cols)) for r in batch.select(*cols, "__op").collect()])


def check(table, options, role) -> None:
    if not options["bucket"].isidentifier():
        raise PipelineError(f"'bucket' must be a simple name, got '{options['bucket']}'", option="bucket",
                            origin=table.option_origins.get("bucket"))


CONNECTOR = Connector(
    identifier="collect",
    description="Test plugin: keeps every row written to it in memory.",
    options=OPTIONS,
    sink_modes=(APPEND, UPSERT, CHANGELOG),
    create_sink=CollectSink,
    check=check,
    accepts_retractions=True,
)
