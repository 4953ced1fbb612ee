"""Reading an Iceberg table as Iceberg's Flink source does: a bounded scan of one snapshot,
or a stream of the files that append snapshots add (see the package docstring).

The stream's offset is a position in the table's history, ``{"after": S, "scan": B}``:
everything up to and including snapshot ``S`` has been read (``None``: nothing yet), and
``B`` says that the next range starts with a scan of the whole table (Flink's
TABLE_SCAN_THEN_INCREMENTAL, and a bounded read) rather than with the snapshots after
``S``. A micro-batch from position ``a`` to ``b`` reads either the table at ``b`` (a scan)
or the data files added by the append snapshots on the ancestry of ``b`` after ``a``, the
files Flink's ``IncrementalAppendScan`` plans, so a restarted query resumes from Spark's
checkpointed offset and never reads a file twice. Overwrite, delete and replace snapshots
add no rows to the stream, as in Flink (its streaming source reads appends only).

Planning runs where Spark plans a Python source's batches and reads only metadata; each
partition carries a few files' scan tasks, and Spark's Python workers read them with
pyiceberg's Arrow reader, one record batch at a time.
"""
from __future__ import annotations

import time
from typing import Optional

from job.connectors.python_source import LazyClasses

DATA_SOURCE_NAME = "streamsql_iceberg"

# Flink's starting strategies (StreamingStartingStrategy) for a streaming read.
TABLE_SCAN_THEN_INCREMENTAL = "TABLE_SCAN_THEN_INCREMENTAL"
FROM_LATEST = "INCREMENTAL_FROM_LATEST_SNAPSHOT"
FROM_LATEST_EXCLUSIVE = "INCREMENTAL_FROM_LATEST_SNAPSHOT_EXCLUSIVE"
FROM_EARLIEST = "INCREMENTAL_FROM_EARLIEST_SNAPSHOT"
FROM_SNAPSHOT_ID = "INCREMENTAL_FROM_SNAPSHOT_ID"
FROM_SNAPSHOT_TIMESTAMP = "INCREMENTAL_FROM_SNAPSHOT_TIMESTAMP"
STRATEGIES = (TABLE_SCAN_THEN_INCREMENTAL, FROM_LATEST, FROM_LATEST_EXCLUSIVE, FROM_EARLIEST, FROM_SNAPSHOT_ID,
              FROM_SNAPSHOT_TIMESTAMP)


class ReadError(ValueError):
    """A position the table's history does not have (an expired snapshot, a rollback)."""


def load_table(spec: dict):
    from job.connectors.iceberg.catalog import HadoopCatalog

    return HadoopCatalog(spec["catalog"], warehouse=spec["warehouse"]).load_table((spec["database"], spec["table"]))


# --------------------------------------------------------------------------- positions

def _parent(table, snapshot_id: Optional[int]) -> Optional[int]:
    snapshot = table.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
    return snapshot.parent_snapshot_id if snapshot is not None else None


def _ancestors(table, snapshot_id: Optional[int]):
    """The snapshots from ``snapshot_id`` back to the oldest, newest first."""
    while snapshot_id is not None:
        snapshot = table.snapshot_by_id(snapshot_id)
        if snapshot is None:  # expired: the history ends here
            return
        yield snapshot
        snapshot_id = snapshot.parent_snapshot_id


def _snapshot(table, snapshot_id: int, option: str):
    if table.snapshot_by_id(snapshot_id) is None:
        raise ReadError(f"'{option}' = '{snapshot_id}': the table has no snapshot with that id")
    return snapshot_id


def bounded_snapshot(table, spec: dict) -> Optional[int]:
    """The snapshot a bounded read ends at: 'snapshot-id', the last one at 'as-of-timestamp',
    'end-snapshot-id', or the current one (None: the table has none, nothing to read)."""
    if spec.get("snapshot_id") is not None:
        return _snapshot(table, spec["snapshot_id"], "snapshot-id")
    if spec.get("as_of") is not None:
        current = table.current_snapshot()
        found = next((s for s in _ancestors(table, current.snapshot_id if current else None)
                      if s.timestamp_ms <= spec["as_of"]), None)
        if found is None:
            raise ReadError(f"'as-of-timestamp' = '{spec['as_of']}': the table has no snapshot as old as that")
        return found.snapshot_id
    if spec.get("end_id") is not None:
        return _snapshot(table, spec["end_id"], "end-snapshot-id")
    current = table.current_snapshot()
    return current.snapshot_id if current else None


def initial_position(table, spec: dict) -> dict:
    """Where a new query starts reading (Flink's starting strategy, or a bounded read's)."""
    current = table.current_snapshot()
    current_id = current.snapshot_id if current else None
    if not spec["streaming"]:
        if spec.get("start_id") is not None:  # a bounded incremental read: appends after it
            return {"after": _snapshot(table, spec["start_id"], "start-snapshot-id"), "scan": False}
        return {"after": None, "scan": True}
    strategy = spec["strategy"]
    if strategy == TABLE_SCAN_THEN_INCREMENTAL:
        return {"after": None, "scan": True}
    if strategy == FROM_LATEST:
        return {"after": _parent(table, current_id), "scan": False}
    if strategy == FROM_LATEST_EXCLUSIVE:
        return {"after": current_id, "scan": False}
    if strategy == FROM_EARLIEST:
        return {"after": None, "scan": False}
    if strategy == FROM_SNAPSHOT_ID:
        return {"after": _parent(table, _snapshot(table, spec["start_id"], "start-snapshot-id")), "scan": False}
    # FROM_SNAPSHOT_TIMESTAMP: the oldest snapshot at or after the timestamp, inclusive.
    after = [s for s in _ancestors(table, current_id) if s.timestamp_ms >= spec["start_ts"]]
    if not after:
        raise ReadError(f"'start-snapshot-timestamp' = '{spec['start_ts']}': the table has no snapshot at or "
                        "after that time")
    return {"after": after[-1].parent_snapshot_id, "scan": False}


def next_position(table, spec: dict, start: dict, target: Optional[int]) -> dict:
    """The end of the next range from ``start`` towards snapshot ``target`` (the newest to
    read), at most 'max-planning-snapshot-count' snapshots ahead."""
    if target is None or (start["after"] == target and not start["scan"]):
        return start
    if start["scan"]:
        return {"after": target, "scan": False}
    newer = []
    for snapshot in _ancestors(table, target):
        if snapshot.snapshot_id == start["after"]:
            break
        newer.append(snapshot.snapshot_id)
    limit = spec.get("max_snapshots")
    if limit and len(newer) > limit:
        return {"after": newer[-limit], "scan": False}
    return {"after": target, "scan": False}


def scan_tasks(table, spec: dict, start: dict, end: dict) -> list:
    """pyiceberg's FileScanTasks of the rows from ``start`` to ``end``."""
    from pyiceberg.manifest import DataFileContent, ManifestContent, ManifestEntryStatus
    from pyiceberg.table import FileScanTask

    if end["after"] is None or (start["after"] == end["after"] and not start["scan"]):
        return []
    if start["scan"]:
        return list(table.scan(snapshot_id=end["after"], case_sensitive=spec["case_sensitive"]).plan_files())
    appends = []
    for snapshot in _ancestors(table, end["after"]):
        if snapshot.snapshot_id == start["after"]:
            break
        if snapshot.summary is not None and snapshot.summary.operation.value == "append":
            appends.append(snapshot)
    else:
        if start["after"] is not None:
            raise ReadError(f"snapshot {start['after']}, where the query's checkpoint stopped reading, is not an "
                            f"ancestor of snapshot {end['after']} (expired, or the table was rolled back)")
    tasks = []
    for snapshot in reversed(appends):  # oldest first
        for manifest in snapshot.manifests(table.io):
            if manifest.content != ManifestContent.DATA or manifest.added_snapshot_id != snapshot.snapshot_id:
                continue
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                if (entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id == snapshot.snapshot_id
                        and entry.data_file.content == DataFileContent.DATA):
                    tasks.append(FileScanTask(entry.data_file))
    return tasks


def read_batches(metadata_location: str, tasks: list, names: list[str], case_sensitive: bool):
    """The rows of ``tasks`` as Arrow record batches of the columns ``names``."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io import load_file_io
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.serializers import FromInputFile

    io = load_file_io({}, metadata_location)
    metadata = FromInputFile.table_metadata(io.new_input(metadata_location))
    projected = metadata.schema().select(*names, case_sensitive=case_sensitive)
    yield from ArrowScan(metadata, io, projected, AlwaysTrue(), case_sensitive).to_record_batches(tasks)


def conform(batch, names: list[str], target):
    """A batch in the declared columns' Arrow types (by name, case-insensitively)."""
    import pyarrow as pa

    by_lower = {n.lower(): i for i, n in enumerate(batch.schema.names)}
    arrays = [batch.column(by_lower[n.lower()]).cast(field.type) for n, field in zip(names, target)]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


# --------------------------------------------------------------------------- data source
# Made on first use (job.connectors.python_source): importing the connector must not
# import pyspark.

def _define() -> tuple[type, ...]:
    import json

    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

    class IcebergPartition(InputPartition):
        def __init__(self, metadata_location: str, tasks: list) -> None:
            super().__init__(metadata_location)
            self.metadata_location, self.tasks = metadata_location, tasks

    class IcebergStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def __init__(self, spec: dict, schema) -> None:
            self.spec, self.schema = spec, schema
            self._until: Optional[int] = None     # --once: the snapshot current when it began
            self._pinned = False
            self._checked = 0.0                   # when the table was last looked at
            self._latest: Optional[int] = None

        def initialOffset(self) -> dict:
            return initial_position(load_table(self.spec), self.spec)

        def _target(self, table) -> Optional[int]:
            if self._pinned:
                return self._until
            if not self.spec["streaming"]:
                return bounded_snapshot(table, self.spec)
            current = table.current_snapshot()
            return current.snapshot_id if current else None

        def latestOffset(self, start: dict, limit) -> dict:
            # A streaming read looks for new snapshots every 'monitor-interval', as Flink's does.
            now = time.monotonic()
            table = None
            if self.spec["streaming"] and not self._pinned and self._checked \
                    and now - self._checked < self.spec["monitor_s"]:
                target = self._latest
            else:
                table = load_table(self.spec)
                target = self._latest = self._target(table)
                self._checked = now
            if target is None or (start["after"] == target and not start["scan"]):
                return start
            return next_position(table or load_table(self.spec), self.spec, start, target)

        def prepareForTriggerAvailableNow(self) -> None:
            table = load_table(self.spec)
            self._until, self._pinned = self._target(table), True

        def partitions(self, start: dict, end: dict):
            table = load_table(self.spec)
            tasks = scan_tasks(table, self.spec, start, end)
            count = max(1, min(self.spec["partitions"], len(tasks)))
            groups = [tasks[i::count] for i in range(count)] if tasks else []
            return [IcebergPartition(table.metadata_location, g) for g in groups]

        def read(self, partition):
            from pyspark.sql.pandas.types import to_arrow_schema

            target = to_arrow_schema(self.schema, timezone="UTC")
            names = list(self.schema.names)
            for batch in read_batches(partition.metadata_location, partition.tasks, names,
                                      self.spec["case_sensitive"]):
                if batch.num_rows:
                    yield conform(batch, names, target)

        def commit(self, end: dict) -> None:
            pass

    class IcebergDataSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return DATA_SOURCE_NAME

        def schema(self):
            raise ValueError("the iceberg data source needs an explicit schema")

        def streamReader(self, schema):
            return IcebergStreamReader(json.loads(self.options["spec"]), schema)

    return IcebergPartition, IcebergStreamReader, IcebergDataSource


CLASSES = LazyClasses(__name__, ("IcebergPartition", "IcebergStreamReader", "IcebergDataSource"), _define)
__getattr__ = CLASSES.module_getattr


def data_source() -> type:
    """The data source class to register with a session."""
    return CLASSES["IcebergDataSource"]
