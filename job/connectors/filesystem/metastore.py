"""A queryable lake: a filesystem sink registered as a table of Spark's (Hive) metastore.

A filesystem table with ``'metastore.table' = 'db.name'`` (format ``parquet``) is, besides
a directory of Parquet files, an external table of the session's catalog: created on the
first run (``LOCATION`` = 'path', ``PARTITIONED BY`` the declared columns), its partitions
added after each micro-batch, its columns extended when the declaration gains a nullable
column (schema evolution: older files read the new column as NULL). ``spark-sql``, the
Thrift JDBC server or any Hive-compatible engine then queries it by name.

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

from job.connectors.filesystem.layout import data_columns, partition_columns
from job.connectors.hadoop import java_causes, qualified
from job.errors import EXIT_OTHER, EXIT_UNREACHABLE, PipelineError
from job.options import table_error

# Pipeline conf (YAML conf or SET) understood here.
DIR_KEY = "streamsql.metastore.dir"
THRIFT_PORT_KEY = "streamsql.thriftserver.port"
THRIFT_HOST_KEY = "streamsql.thriftserver.host"
# Settings that mean "a metastore of the user's own": then no embedded Derby is set up.
REMOTE_KEYS = ("hive.metastore.uris", "spark.hadoop.hive.metastore.uris")
DERBY_KEYS = ("javax.jdo.option.ConnectionURL", "spark.hadoop.javax.jdo.option.ConnectionURL")
WAREHOUSE_KEY = "spark.sql.warehouse.dir"

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
        raise table_error(table, f"'{TABLE_OPTION}' = '{raw}' of table '{table.name}' is not a table name",
                          option=TABLE_OPTION, hint="write 'database.table' or 'table' (letters, digits and '_')")
    return parts[0].lower(), parts[1].lower()


def ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --------------------------------------------------------------------------- the table

def ensure_table(spark, table, options: Mapping[str, Any]) -> list[str]:
    """Create the metastore table, or check the existing one against the declaration and
    add the declared columns it lacks. Runs before the query starts, so a conflict stops
    the job before anything is written. Returns the columns added."""
    db, name = table_name(table, options)
    full = f"{ident(db)}.{ident(name)}"
    parts = partition_columns(table)
    data = data_columns(table)
    types = {c.name: c.spark_type for c in table.physical_columns}
    if not _reach(spark, table, lambda: spark.catalog.databaseExists(db)):
        if not options.get("metastore.create-database", True):
            raise table_error(table, f"database '{db}' of '{TABLE_OPTION}' = '{options[TABLE_OPTION]}' (table '{table.name}') "
                                     "does not exist and 'metastore.create-database' is false", option="metastore.create-database",
                              hint=f"create it (CREATE DATABASE {db}) or set 'metastore.create-database' = 'true'")
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {ident(db)}")
    location = qualified(spark, options["path"])
    if not spark.catalog.tableExists(f"{db}.{name}"):
        cols = ", ".join(f"{ident(c)} {types[c]}" for c in data + parts)
        partitioned = f" PARTITIONED BY ({', '.join(ident(p) for p in parts)})" if parts else ""
        spark.sql(f"CREATE TABLE IF NOT EXISTS {full} ({cols}) USING parquet{partitioned} LOCATION {literal(location)}")
        return []
    meta = _metadata(spark, db, name)
    where = f"metastore table '{db}.{name}' (table '{table.name}', option '{TABLE_OPTION}')"
    if meta["type"] == "VIEW" or meta["provider"] != "parquet":
        raise table_error(table, f"{where} is a {'view' if meta['type'] == 'VIEW' else meta['provider'] + ' table'}; "
                                 "this sink writes Parquet files into an external parquet table", option=TABLE_OPTION,
                          hint="name another table, or drop that one")
    if qualified(spark, meta["location"]).rstrip("/") != location.rstrip("/"):
        raise table_error(table, f"{where} lives at '{meta['location']}', not at 'path' = '{options['path']}'", option="path",
                          hint="point 'path' at the table's location, or name another table")
    if [p.lower() for p in meta["partitions"]] != [p.lower() for p in parts]:
        raise table_error(table, f"{where} is partitioned by ({', '.join(meta['partitions'])}), but the table declares "
                                 f"PARTITIONED BY ({', '.join(parts)}); partitioning cannot change", option=TABLE_OPTION,
                          hint="declare the table's partitioning, or write a new table")
    existing = {f["name"].lower(): f for f in meta["columns"]}
    added = []
    for col in table.physical_columns:
        have = existing.get(col.name.lower())
        if have is None:
            if not col.nullable:
                raise table_error(table, f"column '{col.name}' is new in {where} and declared NOT NULL, but the table's "
                                         "existing files have no value for it", option=TABLE_OPTION,
                                  hint="declare the new column nullable (older rows read it as NULL)")
            added.append(col.name)
            continue
        want = _catalog_type(spark, col.spark_type)
        if want != have["type"]:
            raise table_error(table, f"column '{col.name}' of {where} holds {have['type']}, but the table declares it "
                                     f"{col.flink_type} ({want}); the metastore table cannot hold that type, and its files "
                                     "already store the old one", option=TABLE_OPTION,
                              hint=f"declare '{col.name}' as {have['type']} (CAST in the query), or write a new table")
    if added:
        spark.sql(f"ALTER TABLE {full} ADD COLUMNS ({', '.join(ident(c) + ' ' + types[c] for c in added)})")
    return added


def _reach(spark, table, first_call):
    """The first metastore call, whose failure means the metastore cannot be opened:
    embedded Derby already held by another process (a running job, a spark-sql shell) or
    an unreachable metastore service. One paragraph, exit 3, instead of Hive's traces."""
    try:
        return first_call()
    except Exception as exc:  # noqa: BLE001 - py4j/analysis errors of the Hive client
        # The Python message is Hive's outermost one; the reason (Derby's, the network's) is
        # in the Java causes: the captured JVM stack trace of an AnalysisException.
        causes = [line.strip()[len("Caused by: "):] for line in (getattr(exc, "_stackTrace", None) or "").splitlines()
                  if line.strip().startswith("Caused by: ")] or java_causes(exc, limit=30)
        text = "\n".join([str(exc), *causes])
        url = spark.sparkContext.getConf().get("spark.hadoop.javax.jdo.option.ConnectionURL", "") or ""
        uris = spark.sparkContext.getConf().get("spark.hadoop.hive.metastore.uris", "") or ""
        if "Another instance of Derby" in text or "Failed to start database" in text:
            where = re.sub(r"^jdbc:derby:;databaseName=|;.*$", "", url)
            raise table_error(table, f"cannot open the metastore of table '{table.name}' ('{TABLE_OPTION}'): its embedded Derby "
                                     f"database '{where}' is in use by another process, and Derby admits one at a time",
                              option=TABLE_OPTION, exit_code=EXIT_UNREACHABLE,
                              hint="stop that process (a running job or spark-sql), query a running job through its Thrift "
                                   f"server ('{THRIFT_PORT_KEY}'), or give this pipeline its own '{DIR_KEY}'")
        if "SessionHiveMetaStoreClient" in text or "metastore" in text.lower():
            cause = (causes or [str(exc)])[-1]  # the root cause says most
            raise table_error(table, f"cannot reach the metastore of table '{table.name}' ('{TABLE_OPTION}')"
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
