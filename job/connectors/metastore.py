"""A queryable lake: a filesystem sink registered as a table of Spark's (Hive) metastore.

A filesystem table with ``'metastore.table' = 'db.name'`` (format ``parquet``) is, besides
a directory of Parquet files, an external table of the session's catalog: created on the
first run (``LOCATION`` = 'path', ``PARTITIONED BY`` the declared columns), its partitions
added after each micro-batch, its columns extended when the declaration gains a nullable
column (schema evolution: older files read the new column as NULL). ``spark-sql``, the
Thrift JDBC server or any Hive-compatible engine then queries it by name.

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

The session needs Hive support for the table to outlive the job; :func:`session_conf`
gives the settings (embedded Derby under ``streamsql.metastore.dir`` unless the pipeline
points at a metastore of its own), and :func:`start_thrift_server` serves the running
job's catalog over JDBC, since embedded Derby admits one process at a time.
"""
from __future__ import annotations

import json
import os
import re
import socket
import sys
from typing import Any, Mapping, Optional
from urllib.parse import unquote

from job.connectors.filesystem import FileSystemSink, data_columns, partition_columns
from job.errors import EXIT_OTHER, EXIT_UNREACHABLE, PipelineError

# Pipeline conf (YAML conf or SET) understood here.
DIR_KEY = "streamsql.metastore.dir"
THRIFT_PORT_KEY = "streamsql.thriftserver.port"
THRIFT_HOST_KEY = "streamsql.thriftserver.host"
# Settings that mean "a metastore of the user's own": then no embedded Derby is set up.
REMOTE_KEYS = ("hive.metastore.uris", "spark.hadoop.hive.metastore.uris")
DERBY_KEYS = ("javax.jdo.option.ConnectionURL", "spark.hadoop.javax.jdo.option.ConnectionURL")
WAREHOUSE_KEY = "spark.sql.warehouse.dir"

STAGING_DIR = "_streamsql"
TABLE_OPTION = "metastore.table"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --------------------------------------------------------------------------- session

def uses_metastore(tables, conf: Mapping[str, str]) -> bool:
    """True when a pipeline needs a Hive-enabled session: a table names 'metastore.table'
    or the pipeline asks for the Thrift server."""
    return bool(conf.get(THRIFT_PORT_KEY)) or any(
        t.options.get(TABLE_OPTION) and t.options.get("connector") == "filesystem" for t in tables)


def session_conf(conf: Mapping[str, str]) -> dict[str, str]:
    """Static settings for a Hive-enabled session (added to the pipeline's own conf).

    By default the metastore is embedded Derby in ``<streamsql.metastore.dir>/metastore_db``
    and the warehouse (where ``CREATE DATABASE`` makes its directories) is
    ``<dir>/spark-warehouse``. The directory defaults to the working directory, the very
    places ``spark-sql`` uses when started there without settings. A pipeline that sets
    ``hive.metastore.uris`` (a metastore service) or a JDO connection URL (a Derby network
    server, MySQL, PostgreSQL…) keeps its own.
    """
    out = {"spark.sql.catalogImplementation": "hive"}
    remote = next((conf[k] for k in REMOTE_KEYS if conf.get(k)), None)
    if remote:
        # Non-'spark.' keys are dropped by spark-submit; Hive reads spark.hadoop.* too.
        out["spark.hadoop.hive.metastore.uris"] = remote
    elif not any(conf.get(k) for k in DERBY_KEYS):
        base = metastore_dir(conf)
        out["spark.hadoop.javax.jdo.option.ConnectionURL"] = f"jdbc:derby:;databaseName={base}/metastore_db;create=true"
        if not conf.get(WAREHOUSE_KEY):
            out[WAREHOUSE_KEY] = os.path.join(base, "spark-warehouse")
    for key in DERBY_KEYS:
        if conf.get(key):
            out["spark.hadoop.javax.jdo.option.ConnectionURL"] = conf[key]
    if conf.get(THRIFT_PORT_KEY):
        out["spark.hadoop.hive.server2.thrift.port"] = str(thrift_port(conf))
        out["spark.hadoop.hive.server2.thrift.bind.host"] = conf.get(THRIFT_HOST_KEY) or "127.0.0.1"
    return out


def metastore_dir(conf: Mapping[str, str]) -> str:
    return os.path.abspath(conf.get(DIR_KEY) or ".")


# Hive's and DataNucleus' loggers report a metastore that cannot be opened with pages of
# stack traces; the job reports it in one paragraph (see _reach).
METASTORE_LOGGERS = ("org.apache.hadoop.hive", "hive", "DataNucleus", "org.datanucleus", "org.apache.spark.sql.hive")


def prepare_session(spark, conf: Mapping[str, str], verbose: bool = False) -> None:
    """Before the catalog is first used: create the Derby directory, send derby.log there
    (Derby writes it to the working directory otherwise) and, unless verbose, silence the
    metastore's own error logging."""
    if spark.conf.get("spark.sql.catalogImplementation", "in-memory") != "hive":
        return
    if not verbose:
        try:
            configurator = spark._jvm.org.apache.logging.log4j.core.config.Configurator
            for name in METASTORE_LOGGERS:
                configurator.setLevel(name, spark._jvm.org.apache.logging.log4j.Level.OFF)
        except Exception:  # noqa: BLE001 - another logging backend: keep its settings
            pass
    url = spark.sparkContext.getConf().get("spark.hadoop.javax.jdo.option.ConnectionURL", "") or ""
    match = re.match(r"jdbc:derby:;databaseName=([^;]+)", url)
    if not match:
        return
    base = os.path.dirname(match.group(1))
    os.makedirs(base, exist_ok=True)
    system = spark._jvm.java.lang.System
    if system.getProperty("derby.stream.error.file") is None:
        system.setProperty("derby.stream.error.file", os.path.join(base, "derby.log"))


def thrift_port(conf: Mapping[str, str]) -> int:
    raw = str(conf.get(THRIFT_PORT_KEY)).strip()
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise PipelineError(f"'{THRIFT_PORT_KEY}' must be a TCP port number, got '{raw}'", option=THRIFT_PORT_KEY)
    return int(raw)


def start_thrift_server(spark, conf: Mapping[str, str], err=None) -> Optional[str]:
    """Serve this job's session over JDBC (HiveThriftServer2) when the pipeline sets
    ``streamsql.thriftserver.port``; returns the JDBC URL. ``beeline -u <url>`` or any
    Hive JDBC client then queries the lake tables while the job writes them."""
    if not conf.get(THRIFT_PORT_KEY):
        return None
    port = thrift_port(conf)
    host = conf.get(THRIFT_HOST_KEY) or "127.0.0.1"
    # The server binds in a background thread and only logs a failure: check first.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise PipelineError(f"cannot serve the Thrift JDBC server on {host}:{port}: {exc.strerror or exc}",
                                option=THRIFT_PORT_KEY, hint="choose a free port", exit_code=EXIT_OTHER) from None
    spark._jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2.startWithContext(
        spark._jsparkSession.sqlContext())
    url = f"jdbc:hive2://{host}:{port}"
    print(f"streamsql: Thrift JDBC server at {url} (e.g. beeline -u {url} -e 'SHOW TABLES')",
          file=err or sys.stderr, flush=True)
    return url


# --------------------------------------------------------------------------- names

def table_name(table, options: Mapping[str, Any]) -> tuple[str, str]:
    """'db.name' or 'name' (database 'default') → (database, name), lower-cased as the
    metastore keeps them."""
    raw = str(options.get(TABLE_OPTION) or "").strip()
    parts = [p.strip().strip("`") for p in raw.split(".")]
    if len(parts) == 1:
        parts = ["default"] + parts
    if len(parts) != 2 or not all(_NAME.match(p) for p in parts):
        _fail(table, f"'{TABLE_OPTION}' = '{raw}' of table '{table.name}' is not a table name",
              option=TABLE_OPTION, hint="write 'database.table' or 'table' (letters, digits and '_')")
    return parts[0].lower(), parts[1].lower()


def _fail(table, message, option=None, hint=None, exit_code=None):
    from job.connectors.filesystem import _fail as fail

    fail(table, message, option=option, hint=hint, exit_code=exit_code)


def _ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --------------------------------------------------------------------------- the table

def ensure_table(spark, table, options: Mapping[str, Any]) -> list[str]:
    """Create the metastore table, or check the existing one against the declaration and
    add the declared columns it lacks. Runs before the query starts, so a conflict stops
    the job before anything is written. Returns the columns added."""
    db, name = table_name(table, options)
    full = f"{_ident(db)}.{_ident(name)}"
    parts = partition_columns(table)
    data = data_columns(table)
    types = {c.name: c.spark_type for c in table.physical_columns}
    if not _reach(spark, table, lambda: spark.catalog.databaseExists(db)):
        if not options.get("metastore.create-database", True):
            _fail(table, f"database '{db}' of '{TABLE_OPTION}' = '{options[TABLE_OPTION]}' (table '{table.name}') "
                         "does not exist and 'metastore.create-database' is false", option="metastore.create-database",
                  hint=f"create it (CREATE DATABASE {db}) or set 'metastore.create-database' = 'true'")
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {_ident(db)}")
    location = qualified(spark, options["path"])
    if not spark.catalog.tableExists(f"{db}.{name}"):
        cols = ", ".join(f"{_ident(c)} {types[c]}" for c in data + parts)
        partitioned = f" PARTITIONED BY ({', '.join(_ident(p) for p in parts)})" if parts else ""
        spark.sql(f"CREATE TABLE IF NOT EXISTS {full} ({cols}) USING parquet{partitioned} LOCATION {_literal(location)}")
        return []
    meta = _metadata(spark, db, name)
    where = f"metastore table '{db}.{name}' (table '{table.name}', option '{TABLE_OPTION}')"
    if meta["type"] == "VIEW" or meta["provider"] != "parquet":
        _fail(table, f"{where} is a {'view' if meta['type'] == 'VIEW' else meta['provider'] + ' table'}; "
                     "this sink writes Parquet files into an external parquet table", option=TABLE_OPTION,
              hint="name another table, or drop that one")
    if qualified(spark, meta["location"]).rstrip("/") != location.rstrip("/"):
        _fail(table, f"{where} lives at '{meta['location']}', not at 'path' = '{options['path']}'", option="path",
              hint="point 'path' at the table's location, or name another table")
    if [p.lower() for p in meta["partitions"]] != [p.lower() for p in parts]:
        _fail(table, f"{where} is partitioned by ({', '.join(meta['partitions'])}), but the table declares "
                     f"PARTITIONED BY ({', '.join(parts)}); partitioning cannot change", option=TABLE_OPTION,
              hint="declare the table's partitioning, or write a new table")
    existing = {f["name"].lower(): f for f in meta["columns"]}
    added = []
    for col in table.physical_columns:
        have = existing.get(col.name.lower())
        if have is None:
            if not col.nullable:
                _fail(table, f"column '{col.name}' is new in {where} and declared NOT NULL, but the table's "
                             "existing files have no value for it", option=TABLE_OPTION,
                      hint="declare the new column nullable (older rows read it as NULL)")
            added.append(col.name)
            continue
        want = _catalog_type(spark, col.spark_type)
        if want != have["type"]:
            _fail(table, f"column '{col.name}' of {where} holds {have['type']}, but the table declares it "
                         f"{col.flink_type} ({want}); the metastore table cannot hold that type, and its files "
                         "already store the old one", option=TABLE_OPTION,
                  hint=f"declare '{col.name}' as {have['type']} (CAST in the query), or write a new table")
    if added:
        spark.sql(f"ALTER TABLE {full} ADD COLUMNS ({', '.join(_ident(c) + ' ' + types[c] for c in added)})")
    return added


def _reach(spark, table, first_call):
    """The first metastore call, whose failure means the metastore cannot be opened:
    embedded Derby already held by another process (a running job, a spark-sql shell) or
    an unreachable metastore service. One paragraph, exit 3, instead of Hive's traces."""
    try:
        return first_call()
    except Exception as exc:  # noqa: BLE001 - py4j/analysis errors of the Hive client
        from job.run.failures import java_causes

        # The Python message is Hive's outermost one; the reason (Derby's, the network's) is
        # in the Java causes: the captured JVM stack trace of an AnalysisException.
        causes = [line.strip()[len("Caused by: "):] for line in (getattr(exc, "_stackTrace", None) or "").splitlines()
                  if line.strip().startswith("Caused by: ")] or java_causes(exc, limit=30)
        text = "\n".join([str(exc), *causes])
        url = spark.sparkContext.getConf().get("spark.hadoop.javax.jdo.option.ConnectionURL", "") or ""
        uris = spark.sparkContext.getConf().get("spark.hadoop.hive.metastore.uris", "") or ""
        if "Another instance of Derby" in text or "Failed to start database" in text:
            where = re.sub(r"^jdbc:derby:;databaseName=|;.*$", "", url)
            _fail(table, f"cannot open the metastore of table '{table.name}' ('{TABLE_OPTION}'): its embedded Derby "
                         f"database '{where}' is in use by another process, and Derby admits one at a time",
                  option=TABLE_OPTION, exit_code=EXIT_UNREACHABLE,
                  hint="stop that process (a running job or spark-sql), query a running job through its Thrift "
                       f"server ('{THRIFT_PORT_KEY}'), or give this pipeline its own '{DIR_KEY}'")
        if "SessionHiveMetaStoreClient" in text or "metastore" in text.lower():
            cause = (causes or [str(exc)])[-1]  # the root cause says most
            _fail(table, f"cannot reach the metastore of table '{table.name}' ('{TABLE_OPTION}')"
                         f"{' at ' + uris if uris else ''}: {cause[:300]}", option=TABLE_OPTION,
                  exit_code=EXIT_UNREACHABLE, hint="check 'hive.metastore.uris' or the JDO connection settings")
        raise


def _metadata(spark, db: str, name: str) -> dict:
    """The catalog's own record of a table (type, provider, location, partitioning, schema)."""
    jvm = spark._jvm
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier(name, jvm.scala.Some(db))
    meta = spark._jsparkSession.sessionState().catalog().getTableMetadata(ident)
    provider = meta.provider()
    schema = json.loads(meta.schema().json())
    return {
        "type": meta.tableType().name(),
        "provider": (provider.get() if provider.isDefined() else "").lower(),
        "location": meta.location().toString(),
        "partitions": [p for p in meta.partitionColumnNames().mkString("\n").split("\n") if p],
        "columns": [{"name": f["name"], "type": _catalog_type(spark, json.dumps(f["type"]), is_json=True)}
                    for f in schema["fields"]],
    }


def _catalog_type(spark, text: str, is_json: bool = False) -> str:
    """A type in Spark's canonical spelling (``decimal(10,2)``, ``struct<a:int>``)."""
    types = spark._jvm.org.apache.spark.sql.types.DataType
    return (types.fromJson(text) if is_json else types.fromDDL(text)).catalogString()


def qualified(spark, path: str) -> str:
    """'path' as the catalog stores a location (``file:/tmp/x``, ``s3a://bucket/x``)."""
    jvm = spark._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    fs = p.getFileSystem(spark._jsc.hadoopConfiguration())
    # 'file:/x' and 'file:///x' name one directory: compare paths in one spelling.
    return fs.makeQualified(p).toUri().normalize().toString().replace(":///", ":/", 1)


# --------------------------------------------------------------------------- the sink

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
        root = jvm.org.apache.hadoop.fs.Path(self.ctx.options["path"])
        fs = root.getFileSystem(spark._jsc.hadoopConfiguration())
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
            jvm = spark._jvm
            path = jvm.org.apache.hadoop.fs.Path(self.ctx.checkpoint, "metadata")
            fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
            stream = fs.open(path)
            try:
                text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
            finally:
                stream.close()
            self._query_id = json.loads(text.splitlines()[0])["id"]
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
            specs.append("PARTITION (" + ", ".join(f"{_ident(p)} = {_literal(values[p.lower()])}" for p in parts) + ")")
        spark.sql(f"ALTER TABLE {_ident(self.db)}.{_ident(self.name)} ADD IF NOT EXISTS " + " ".join(specs))
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
