"""delta: a Delta Lake table as a sink ('connector' = 'delta', 'table-path' = '...'),
append-only or upsert by PRIMARY KEY, and as a source, with the option names of Delta's
Flink connector.

**The writer is delta-rs (the ``deltalake`` package), not Delta's Spark runtime**, whose
newest release on Maven Central is built for an older Spark than the one the job runs on.
Rows stream from Spark's driver as Arrow batches (job.connectors.iceberg.arrow), so no
micro-batch is held whole in memory.

**Exactly once**: every commit carries Delta's ``txn`` action (app id = the writing query,
version = the micro-batch id). Before writing, the sink reads the table's newest version
for its app id; a batch at or below it was committed already (a replay after kill -9
between Delta's commit and Spark's checkpoint) and is skipped.

**Upserts**: a micro-batch of an updating query (at most one change per key) is one Delta
MERGE on the PRIMARY KEY: '-D' deletes the key's row, '+I'/'+U' update or insert it.

**Source** (:mod:`job.connectors.delta.source`), with the read options of Delta's Flink
source: 'mode' = 'batch' (Flink's default) reads the table at one version ('versionAsOf',
'timestampAsOf', or the latest) and ends; 'mode' = 'streaming' reads the latest version
and then the files each new commit adds (or only the commits from 'startingVersion' /
'startingTimestamp'), looked for every 'updateCheckIntervalMillis', resumed from the
checkpointed version. A commit that removes data fails the stream unless 'ignoreDeletes'
/ 'ignoreChanges'. 'readChangeFeed' (Delta's own reader option; Flink's connector has no
change feed) reads a table with ``delta.enableChangeDataFeed`` as a changelog.

Only a local 'table-path' (a path or file: URI) runs; other stores are refused by name.
"""
from __future__ import annotations

from typing import Any, Mapping

from job.connectors.base import APPEND, CHANGELOG, UPSERT, Connector, Option
from job.connectors.delta.read import READ_OPTIONS, check_read, create_source, reads_change_feed, source_identity
from job.connectors.iceberg import check_columns
from job.options import table_error

OPTIONS = (
    Option("table-path", required=True, description="The Delta table's directory (a local path or file: URI); "
                                                     "created on the first write when it holds no table."),
) + READ_OPTIONS


def check(table, options: Mapping[str, Any], role) -> None:
    try:
        import deltalake  # noqa: F401 - an extra: pip install 'streamsql[delta]'
    except ImportError:
        raise table_error(table, f"the delta connector (table '{table.name}') needs the Python package deltalake, "
                                 "which is not installed", "connector",
                          "pip install 'streamsql[delta]' where the job runs") from None
    from urllib.parse import urlparse
    path = options["table-path"]
    if urlparse(path).scheme not in ("", "file"):
        raise table_error(table, f"'table-path' = '{path}' of table '{table.name}': only a local directory (a path "
                                 "or file: URI) is supported by the delta connector", option="table-path",
                          hint="object stores (s3, abfss, gs) are not configured for the delta connector yet")
    if table.partitioned_by and role != "source":  # a reader reads any table's partitions
        raise table_error(table, f"table '{table.name}': PARTITIONED BY is not supported by the delta connector "
                                 "yet (it writes unpartitioned tables)", hint="leave out PARTITIONED BY")
    check_columns(table, "delta")
    if role == "source":
        check_read(table, options)


def local_path(options: Mapping[str, Any]) -> str:
    from urllib.parse import urlparse
    path = options["table-path"]
    return urlparse(path).path if path.startswith("file:") else path


def _create_sink(ctx):
    from job.connectors.delta.sink import DeltaSink
    return DeltaSink(ctx)


CONNECTOR = Connector(
    identifier="delta",
    description="A Delta Lake table in a local directory (Delta's Flink connector options): append or upsert "
                "sink committed once per micro-batch; a bounded or streaming source (appends, or the change "
                "data feed as a changelog).",
    options=OPTIONS,
    mode_for=lambda table: (CHANGELOG if reads_change_feed(table) else UPSERT if table.primary_key else APPEND),
    # Read, a table is insert-only (Flink's source) unless its change feed is read.
    source_mode=APPEND,
    create_source=create_source,
    source_identity=source_identity,
    sink_modes=(APPEND, UPSERT),
    create_sink=_create_sink,
    check=check,
)
