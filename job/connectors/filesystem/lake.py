"""The lake table's sink: Parquet files published per micro-batch into a table of Spark's
metastore (the table itself, and the session it needs: :mod:`job.connectors.filesystem.metastore`).

Why not Spark's streaming file sink here: it makes a batch visible by listing its files
in ``_spark_metadata``, a log only Spark's own path-based readers consult. A reader going
through the metastore lists the partition directories instead, so it would see the files
of a micro-batch that crashed before its commit, and the replayed batch's files as well.
:class:`LakeSink` therefore writes each micro-batch in ``foreachBatch`` with a protocol
that is idempotent per batch id:

1. Write the batch to ``<path>/_streamsql/<query id>/batch-<id>/`` (a ``_``-directory:
   Spark, Hive and the filesystem source ignore it). Spark's committer marks a complete
   write with ``_SUCCESS``; an incomplete one left by a crash is deleted and rewritten.
2. Move (rename) each staged file into its partition directory of the table.
3. Register the batch's new partitions (``ALTER TABLE … ADD IF NOT EXISTS PARTITION``).
4. Record ``committed-<id>`` and drop the staging directory.

A replay of a batch whose staging is complete rolls forward (moves what is left, never
writes again); a replay of a recorded batch does nothing. So every record reaches the
table exactly once. Renames are atomic per file, not per batch: after a crash in step 2,
the files moved so far are visible until the restarted job moves the rest. The query id
is the checkpoint's own (``<checkpoint>/metadata``), so a fresh checkpoint starts afresh.
"""
from __future__ import annotations

import re
import sys
from typing import Optional
from urllib.parse import unquote

from job.connectors.filesystem.layout import partition_columns
from job.connectors.filesystem.metastore import TABLE_OPTION, ensure_table, ident, literal, table_name
from job.connectors.filesystem.sink import FileSystemSink
from job.connectors.hadoop import checkpoint_query_id, filesystem

STAGING_DIR = "_streamsql"


class LakeSink(FileSystemSink):
    """Parquet files published per micro-batch into a metastore table (see the module
    docstring for the protocol)."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.added_columns: list[str] = []
        self._query_id: Optional[str] = None
        self._known_partitions: set[str] = set()
        self.db, self.name = table_name(ctx.table, ctx.options)
        if not ctx.offline:
            if ctx.spark.conf.get("spark.sql.catalogImplementation", "in-memory") != "hive":
                # A caller's own session (a library call) decided the catalog already.
                print(f"streamsql: warning: the Spark session has no Hive support, so '{TABLE_OPTION}' = "
                      f"'{self.db}.{self.name}' lives in this session's in-memory catalog only", file=sys.stderr)
            self.added_columns = ensure_table(ctx.spark, ctx.table, ctx.options)

    def write_stream(self, df):
        return df.writeStream.foreachBatch(lambda batch, batch_id: self.write_append(batch, batch_id))

    def write_append(self, batch, batch_id):
        spark = batch.sparkSession
        jvm = spark._jvm
        fs, root = filesystem(spark, self.ctx.options["path"])
        root = fs.makeQualified(root)  # listings return qualified paths
        work = jvm.org.apache.hadoop.fs.Path(root, f"{STAGING_DIR}/{self.query_id(spark)}")
        staged = jvm.org.apache.hadoop.fs.Path(work, f"batch-{batch_id}")
        committed = self._last_committed(fs, work)
        if committed is not None and batch_id <= committed:
            fs.delete(staged, True)  # a replay of a published batch (the crash came after step 4)
            return
        if not fs.exists(jvm.org.apache.hadoop.fs.Path(staged, "_SUCCESS")):
            self._stage(batch, staged.toString())
        partitions = self._publish(fs, root, staged, batch_id)
        self._register(spark, partitions)
        # This session (and the Thrift server's, which share its caches) lists files anew.
        spark.catalog.refreshTable(f"{self.db}.{self.name}")
        fs.create(jvm.org.apache.hadoop.fs.Path(work, f"committed-{batch_id}"), True).close()
        if committed is not None:
            fs.delete(jvm.org.apache.hadoop.fs.Path(work, f"committed-{committed}"), False)
        fs.delete(staged, True)

    def query_id(self, spark) -> str:
        """The streaming query's id, stable across restarts of one checkpoint."""
        if self._query_id is None:
            self._query_id = checkpoint_query_id(spark, self.ctx.checkpoint)
        return self._query_id

    @staticmethod
    def _last_committed(fs, work) -> Optional[int]:
        if not fs.exists(work):
            return None
        ids = [int(m.group(1)) for s in fs.listStatus(work)
               if (m := re.fullmatch(r"committed-(\d+)", s.getPath().getName()))]
        return max(ids) if ids else None

    def _stage(self, batch, target: str) -> None:
        """Step 1: the whole batch into its staging directory (overwriting a partial one)."""
        from pyspark.sql import functions as F

        frame, spark_format, opts = self._prepared(batch)
        parts = partition_columns(self.ctx.table)
        if parts:  # one file per partition and batch, not one per task and partition
            frame = frame.repartition(*[F.col(f"`{p}`") for p in parts])
        frame.write.format(spark_format).options(**opts).partitionBy(*parts).mode("overwrite").save(target)

    def _publish(self, fs, root, staged, batch_id) -> set[str]:
        """Step 2: move the staged files into the table; returns the batch's partition
        directories. Files an earlier attempt moved are no longer staged; the staged
        directories stay until step 4, so the partitions are still known."""
        prefix = staged.toUri().getPath().rstrip("/") + "/"
        moves = []
        files = fs.listFiles(staged, True)
        while files.hasNext():
            path = files.next().getPath()
            if not path.getName().startswith(("_", ".")):  # _SUCCESS, checksums
                moves.append((path, path.toUri().getPath()[len(prefix):]))
        for path, rel in moves:
            directory, _, name = rel.rpartition("/")
            target_dir = _child(root, directory)
            fs.mkdirs(target_dir)
            # The batch id in the name says where a file came from; Spark's own name
            # (a per-write UUID) keeps it unique.
            target = _child(target_dir, f"b{batch_id}-{name}")
            if not fs.rename(path, target) and not fs.exists(target):
                raise RuntimeError(f"could not move {path.toString()} to {target.toString()}")
        return set(_leaf_dirs(fs, staged, prefix)) if partition_columns(self.ctx.table) else set()

    def _register(self, spark, partitions: set[str]) -> None:
        """Step 3: add the batch's partitions the table does not have yet."""
        new = sorted(p for p in partitions if p not in self._known_partitions)
        if not new:
            return
        parts = partition_columns(self.ctx.table)
        specs = []
        for directory in new:
            values = dict(piece.split("=", 1) for piece in directory.split("/"))
            values = {k.lower(): unquote(v) for k, v in values.items()}
            specs.append("PARTITION (" + ", ".join(f"{ident(p)} = {literal(values[p.lower()])}" for p in parts) + ")")
        spark.sql(f"ALTER TABLE {ident(self.db)}.{ident(self.name)} ADD IF NOT EXISTS " + " ".join(specs))
        self._known_partitions.update(new)


def _child(parent, rel: str):
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    return jvm.org.apache.hadoop.fs.Path(parent, rel) if rel else parent


def _leaf_dirs(fs, staged, prefix: str) -> list[str]:
    """Leaf directories under ``staged`` (relative): the partitions of the batch."""
    out = []
    pending = [staged]
    while pending:
        current = pending.pop()
        children = [s for s in fs.listStatus(current) if s.isDirectory()]
        if not children and current != staged:
            out.append(current.toUri().getPath()[len(prefix):])
        pending.extend(s.getPath() for s in children)
    return out
