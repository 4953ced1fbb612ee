"""Reading a Delta table as Delta's Flink source does: a bounded read of one version, or a
stream of the files each new commit adds (see the package docstring).

The stream's offset is a position in the table's history, ``{"version": V, "scan": B}``:
every commit up to and including version ``V`` has been read (``None``: none yet), and
``B`` says that the next range starts with a read of the whole table at its end version
(Flink's default for a continuous source: the snapshot, then the changes after it; and
a bounded read) rather than with the commits after ``V``. A micro-batch from ``a`` to
``b`` reads either the table at version ``b`` or the data files that the commits
``a+1 … b`` add (their ``add`` actions with ``dataChange``), so a restarted query resumes
from Spark's checkpointed offset and never reads a file twice.

A commit that removes data (a DELETE, or a MERGE/UPDATE that rewrites files) fails the
read unless 'ignoreDeletes' / 'ignoreChanges' allow it, in the words of Delta's Flink
source; with 'ignoreChanges' a rewritten file's rows are read again, as there. With
'readChangeFeed' the commits are read from the table's change data feed (delta-rs's
``load_cdf``) as a changelog: insert → +I, update_preimage → -U, update_postimage → +U,
delete → -D.

Planning reads only the Delta log (the commit's JSON, or the snapshot's file list); each
partition carries a few files (or a range of versions of the change feed) and Spark's
Python workers read them with Arrow, one record batch at a time.
"""
from __future__ import annotations

import json
import os
import time
from typing import Optional
from urllib.parse import unquote

from job.connectors.python_source import LazyClasses

DATA_SOURCE_NAME = "streamsql_delta"
KIND, SEQ_MAJOR, SEQ_MINOR = "__kind", "__seq_major", "__seq_minor"
CDF_KINDS = {"insert": "+I", "update_preimage": "-U", "update_postimage": "+U", "delete": "-D"}


class ReadError(ValueError):
    """What the table's history cannot give (a version it no longer has, a commit the
    options do not allow), in one sentence."""


# --------------------------------------------------------------------------- history

def open_table(spec: dict, version: Optional[int] = None):
    from deltalake import DeltaTable

    return DeltaTable(spec["path"], version=version)


def _commits(table) -> list[tuple[int, int]]:
    """(version, commit timestamp in epoch ms) of every commit the log still has, oldest first."""
    return sorted((int(h["version"]), int(h["timestamp"])) for h in table.history() if "version" in h)


def bounded_version(table, spec: dict) -> int:
    """The version a bounded read reads: 'versionAsOf', the last one at or before
    'timestampAsOf', or the latest."""
    latest = table.version()
    if spec.get("version_as_of") is not None:
        wanted = spec["version_as_of"]
        if wanted > latest:
            raise ReadError(f"'versionAsOf' = '{wanted}': the table's latest version is {latest}")
        return wanted
    if spec.get("timestamp_as_of") is not None:
        older = [v for v, ts in _commits(table) if ts <= spec["timestamp_as_of"]]
        if not older:
            raise ReadError(f"'timestampAsOf' = '{spec['timestamp_as_of_text']}' is before the table's first "
                            "commit")
        return older[-1]
    return latest


def initial_position(table, spec: dict) -> dict:
    """Where a new query starts (Delta's Flink source: the latest snapshot then its changes,
    or only the changes from 'startingVersion' / 'startingTimestamp', inclusive)."""
    if not spec["streaming"]:
        return {"version": None, "scan": True}
    start = spec.get("starting_version")
    if start is not None:
        first = table.version() if start == "latest" else int(start)
        if first > table.version():
            raise ReadError(f"'startingVersion' = '{start}': the table's latest version is {table.version()}")
        return {"version": first - 1, "scan": False}
    if spec.get("starting_ts") is not None:
        later = [v for v, ts in _commits(table) if ts >= spec["starting_ts"]]
        if not later:
            raise ReadError(f"'startingTimestamp' = '{spec['starting_ts_text']}' is after the table's latest "
                            "commit")
        return {"version": later[0] - 1, "scan": False}
    return {"version": None, "scan": True}


def next_position(start: dict, target: Optional[int], streaming: bool) -> dict:
    """The end of the next range from ``start`` towards version ``target`` (the newest to read)."""
    if target is None or target < 0:
        return start
    if start["scan"]:
        return {"version": target, "scan": False}
    if not streaming or (start["version"] is not None and start["version"] >= target):
        return start  # a bounded read ends after its one scan
    return {"version": target, "scan": False}


def commit_actions(spec: dict, version: int) -> list[dict]:
    """The actions of one commit, from its JSON in the Delta log."""
    log = os.path.join(spec["path"], "_delta_log", f"{version:020d}.json")
    try:
        with open(log, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        raise ReadError(f"version {version} is no longer in the table's log (removed by log retention), "
                        "so the commits after where the query's checkpoint stopped cannot be read") from None


def added_files(spec: dict, version: int) -> list[dict]:
    """The data files commit ``version`` adds, checked as Delta's Flink source checks a
    commit: removed data fails the read unless 'ignoreDeletes' / 'ignoreChanges' allow it."""
    adds, removed = [], False
    for action in commit_actions(spec, version):
        if "add" in action and action["add"].get("dataChange", True):
            adds.append(_file(action["add"], version))
        elif "remove" in action and action["remove"].get("dataChange", True):
            removed = True
        elif "metaData" in action and version > 0 and not same_schema(
                action["metaData"].get("schemaString") or "{}", spec["schema"]):
            raise ReadError(f"the table's schema changed at version {version}; a stream reads one schema "
                            "(restart the query with a new checkpoint to read the new one)")
    if removed and adds and not (spec["ignore_changes"]):
        raise ReadError(f"Detected a data update in the source table at version {version}. This is currently not "
                        "supported. If you'd like to ignore updates, set the option 'ignoreChanges' to 'true'.")
    if removed and not adds and not (spec["ignore_deletes"] or spec["ignore_changes"]):
        raise ReadError(f"Detected deleted data from streaming source at version {version}. This is currently "
                        "not supported. If you'd like to ignore deletes set the option 'ignoreDeletes' to 'true'.")
    return adds


def _file(add: dict, version: int) -> dict:
    if add.get("deletionVector"):
        raise ReadError(f"data file '{add['path']}' (version {version}) has a deletion vector, which the delta "
                        "connector does not read yet")
    return {"path": unquote(add["path"]), "partition": add.get("partitionValues") or {}}


def snapshot_files(spec: dict, version: int) -> list[dict]:
    """The data files of the table at ``version`` (from the log; no data file is opened)."""
    import pyarrow as pa

    actions = pa.table(open_table(spec, version).get_add_actions(flatten=False))
    out = []
    for row in actions.to_pylist():
        if row.get("deletion_vector"):
            raise ReadError(f"data file '{row['path']}' (version {version}) has a deletion vector, which the "
                            "delta connector does not read yet")
        out.append({"path": row["path"], "partition": dict(row.get("partition") or {})})
    return out


def same_schema(schema_string: str, columns: list) -> bool:
    """Does a metaData action's schema have these (name, type) columns?"""
    return [(f["name"], f["type"]) for f in json.loads(schema_string).get("fields", [])] == \
        [tuple(c) for c in columns]


def plan(spec: dict, start: dict, end: dict) -> list[dict]:
    """What the range from ``start`` to ``end`` reads: files ({"path", "partition"}) or,
    for a change feed after its first scan, ``{"cdf": [first, last]}`` version ranges."""
    if end["version"] is None or end["version"] < 0 or (start == end):
        return []
    if start["scan"]:
        return snapshot_files(spec, end["version"])
    first, last = (start["version"] if start["version"] is not None else -1) + 1, end["version"]
    if spec["cdf"]:
        return [{"cdf": [first, last]}]
    files = []
    for version in range(first, last + 1):
        files += added_files(spec, version)
    return files


# --------------------------------------------------------------------------- reading

def read_file(spec: dict, item: dict, target):
    """A data file's rows as record batches in ``target``'s columns (its partition values
    filled in, a column the file lacks as NULL)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(os.path.join(spec["path"], item["path"]))
    in_file = {n.lower(): n for n in parquet.schema_arrow.names}
    wanted = [in_file[f.name.lower()] for f in target if f.name.lower() in in_file]
    partition = {k.lower(): v for k, v in item["partition"].items()}
    for batch in parquet.iter_batches(columns=wanted, batch_size=max(1, spec.get("batch_size") or 2048)):
        if not batch.num_rows:
            continue
        arrays = []
        for field in target:
            key = field.name.lower()
            if key in in_file:
                arrays.append(batch.column(in_file[key]).cast(field.type))
            elif key in partition and partition[key] is not None:
                arrays.append(pa.array([partition[key]] * batch.num_rows).cast(field.type))
            else:
                arrays.append(pa.nulls(batch.num_rows, field.type))
        yield pa.RecordBatch.from_arrays(arrays, schema=target)


def read_changes(spec: dict, first: int, last: int, target):
    """The change feed of versions ``first`` … ``last`` as changelog rows: the declared
    columns, then __kind, __seq_major (the version) and __seq_minor (retractions of a
    version before its additions, so a key's -U precedes its +U)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    data = [f for f in target if not f.name.startswith("__")]
    # Only the declared columns, spelled as the table spells them.
    names = {name.lower(): name for name, _ in spec["schema"]}
    columns = [names.get(f.name.lower(), f.name) for f in data] + ["_change_type", "_commit_version"]
    reader = pa.RecordBatchReader.from_stream(
        open_table(spec).load_cdf(starting_version=first, ending_version=last, columns=columns))
    counter = 0
    for batch in reader:
        if not batch.num_rows:
            continue
        by_lower = {n.lower(): i for i, n in enumerate(batch.schema.names)}
        kinds = batch.column(by_lower["_change_type"]).to_pylist()
        versions = batch.column(by_lower["_commit_version"]).cast(pa.int64()).to_pylist()
        arrays = [batch.column(by_lower[f.name.lower()]).cast(f.type) for f in data]
        labels = [CDF_KINDS.get(k) for k in kinds]
        retract = [k in ("-U", "-D") for k in labels]
        minor = [(0 if r else 1 << 40) + counter + i for i, r in enumerate(retract)]
        counter += batch.num_rows
        arrays += [pa.array(labels, pa.string()), pa.array([f"{v:020d}" for v in versions], pa.string()),
                   pa.array(minor, pa.int64())]
        out = pa.RecordBatch.from_arrays(arrays, schema=target)
        keep = pc.is_valid(out.column(len(data)))  # change types other than the four: none known
        yield out.filter(keep)


def _scan_as_inserts(spec: dict, item: dict, target, version: int):
    """A snapshot file read for a change feed: its rows as +I at the snapshot's version."""
    import pyarrow as pa

    data = pa.schema([f for f in target if not f.name.startswith("__")])
    for batch in read_file(spec, item, data):
        n = batch.num_rows
        yield pa.RecordBatch.from_arrays(
            list(batch.columns) + [pa.array(["+I"] * n, pa.string()), pa.array([f"{version:020d}"] * n, pa.string()),
                                   pa.array(range(n), pa.int64())], schema=target)


# --------------------------------------------------------------------------- data source
# Made on first use (job.connectors.python_source): importing the connector must not
# import pyspark.

def _define() -> tuple[type, ...]:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

    from job.connectors.base import SinkError
    from job.errors import EXIT_OTHER

    def failed(spec: dict, exc: Exception) -> Exception:
        # Told as a connector's own one-paragraph account (job.run.queries.query_failure).
        return SinkError(f"table '{spec['table']}' (Delta table '{spec['path']}'): {exc}", option="table-path",
                         exit_code=EXIT_OTHER)

    class DeltaPartition(InputPartition):
        def __init__(self, items: list, version: int) -> None:
            super().__init__(version)
            self.items, self.version = items, version

    class DeltaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def __init__(self, spec: dict, schema) -> None:
            self.spec, self.schema = spec, schema
            self._until: Optional[int] = None   # --once: the version current when it began
            self._pinned = False
            self._checked = 0.0                 # when the table was last looked at
            self._latest: Optional[int] = None

        def _guard(self, step):
            try:
                return step()
            except ReadError as exc:
                raise failed(self.spec, exc) from None
            except Exception as exc:  # noqa: BLE001 - delta-rs failing on the log: one paragraph, not a traceback
                raise failed(self.spec, f"reading the Delta log failed: {type(exc).__name__}: {exc}") from None

        def initialOffset(self) -> dict:
            return self._guard(lambda: initial_position(open_table(self.spec), self.spec))

        def _target(self) -> int:
            if self._pinned:
                return self._until
            table = open_table(self.spec)
            return table.version() if self.spec["streaming"] else bounded_version(table, self.spec)

        def latestOffset(self, start: dict, limit) -> dict:
            # A stream looks for new commits every 'updateCheckIntervalMillis', as Flink's does.
            now = time.monotonic()
            if self.spec["streaming"] and not self._pinned and self._checked \
                    and now - self._checked < self.spec["check_s"]:
                target = self._latest
            else:
                target = self._latest = self._guard(self._target)
                self._checked = now
            return next_position(start, target, self.spec["streaming"])

        def prepareForTriggerAvailableNow(self) -> None:
            self._until = self._guard(self._target)
            self._pinned = True

        def partitions(self, start: dict, end: dict):
            items = self._guard(lambda: plan(self.spec, start, end))
            if items and "cdf" in items[0]:
                first, last = items[0]["cdf"]
                count = max(1, min(self.spec["partitions"], last - first + 1))
                bounds = [first + (last - first + 1) * i // count for i in range(count + 1)]
                return [DeltaPartition([{"cdf": [a, b - 1]}], end["version"]) for a, b in zip(bounds, bounds[1:])
                        if b > a]
            count = max(1, min(self.spec["partitions"], len(items)))
            return [DeltaPartition(items[i::count], end["version"]) for i in range(count)] if items else []

        def read(self, partition):
            from pyspark.sql.pandas.types import to_arrow_schema

            target = to_arrow_schema(self.schema, timezone="UTC")
            for item in partition.items:
                if "cdf" in item:
                    yield from read_changes(self.spec, item["cdf"][0], item["cdf"][1], target)
                elif self.spec["cdf"]:
                    yield from _scan_as_inserts(self.spec, item, target, partition.version)
                else:
                    yield from read_file(self.spec, item, target)

        def commit(self, end: dict) -> None:
            pass

    class DeltaDataSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return DATA_SOURCE_NAME

        def schema(self):
            raise ValueError("the delta data source needs an explicit schema")

        def streamReader(self, schema):
            return DeltaStreamReader(json.loads(self.options["spec"]), schema)

    return DeltaPartition, DeltaStreamReader, DeltaDataSource


CLASSES = LazyClasses(__name__, ("DeltaPartition", "DeltaStreamReader", "DeltaDataSource"), _define)
__getattr__ = CLASSES.module_getattr


def data_source() -> type:
    """The data source class to register with a session."""
    return CLASSES["DeltaDataSource"]
