"""mysql-cdc: MySQL (or MariaDB) tables as a changelog, from the binary log (Flink CDC's
'mysql-cdc' connector, with its option names and defaults).

On its first start a query notes the binary log's current position, reads the tables that
'database-name' and 'table-name' match (the snapshot, unless 'scan.startup.mode' =
'latest-offset'), then streams every insert, update and delete committed after that
position. The stream's offset is a binlog position (file and offset, after a whole
transaction): Spark keeps it in the query's checkpoint, so a query that crashes or is
killed resumes exactly there and loses nothing; a replayed batch reads the same
transactions again (the binary log is the server's, kept for binlog_expire_logs_seconds).
See ``binlog`` for how batches are cut and read.

Why an upsert stream (as postgres-cdc): the snapshot is one consistent read made a little
after the position was noted, so a change committed in between is in the snapshot *and*
in the stream. The source declares itself keyed by the PRIMARY KEY: every row is "the
key's latest row" ('U') or "the key is gone" ('D'), ordered by commit position, snapshot
rows first. The planner keeps the latest row per key (Flink's ChangelogNormalize), so a
change seen twice converges to the table's state, and downstream operators see proper
+I/-U/+U/-D retractions; an upsert sink receives each committed batch exactly once.

Why the pure-Python binlog client (``mysql-replication`` on PyMySQL) and not Debezium's
embedded MySQL connector: the job's sources are Python data sources that Spark checkpoints
by offset; the binlog client reads exactly the range (start, end] of a micro-batch, again
on a replay, with no state of its own, where Debezium's engine owns its offsets and
schema history (a second store to keep in step with Spark's checkpoint, and a JVM
service beside each query). Values are compared with Flink CDC's mapping in
``column_types``; what that mapping cannot carry exactly is refused before the query
starts.

Before any query starts (never under --dry-run) the connector checks, and reports as one
paragraph naming the table and the option: that the server answers ('hostname', 'port',
exit code 3), the credentials ('username'/'password'; the password is never shown), that
the binary log is on with binlog_format = ROW, binlog_row_image = FULL and
binlog_row_metadata = FULL (which Flink CDC does not need: it reads the column types over
JDBC; the binlog client here reads them from the log), that
'database-name' and 'table-name' match at least one table, that each has the declared
PRIMARY KEY, and that every declared column exists with a type that can hold its values.

Known limits: a schema change (ALTER TABLE) of a captured table stops the query with an
error (Flink CDC follows some); TRUNCATE is not seen (the binlog logs it as a statement);
tables matched by the regexes are fixed when the query starts.
"""
from __future__ import annotations

import random
import re
from typing import Any, Mapping

from job.connectors.base import UPSERT, Connector, Option, SourceStream
from job.connectors.mysql_cdc import binlog
from job.connectors.mysql_cdc.column_types import (INT_BITS, flink_cdc_type, type_problem,
                                                   typed_value)
from job.errors import EXIT_UNREACHABLE, PipelineError
from job.options import table_error

STARTUP_MODES = ("initial", "latest-offset")
# Flink CDC's other startup modes, refused by name.
OTHER_STARTUP_MODES = ("earliest-offset", "specific-offset", "timestamp", "snapshot")

OPTIONS = (
    Option("hostname", required=True, description="Host name or IP address of the MySQL server."),
    Option("port", "int", default=3306, description="Port of the MySQL server."),
    Option("username", required=True, description="User to connect as; needs SELECT, REPLICATION SLAVE and "
                                                   "REPLICATION CLIENT."),
    Option("password", required=True, secret=True, description="The user's password."),
    Option("database-name", required=True, description="Database name (a regular expression) of the tables."),
    Option("table-name", required=True, description="Table name (a regular expression) of the tables."),
    Option("server-id", description="The replica id the binlog reader uses: a number, or a range like "
                                     "'5400-5408' (its first id is used); default: a random one in 5400-6400."),
    Option("server-time-zone", description="The server's session time zone, e.g. 'Asia/Shanghai': the wall clock "
                                           "a MySQL TIMESTAMP shows in a TIMESTAMP column; default: the machine's."),
    Option("scan.startup.mode", description="'initial': read the tables, then their changes; 'latest-offset': "
                                            "only changes made after the query's first start.", default="initial"),
    Option("scan.snapshot.fetch.size", "int", default=1024, description="Rows fetched at a time by the snapshot."),
    Option("connect.timeout", "duration", default=30000, description="How long to wait for a connection."),
    Option("scan.max-changes-per-trigger", "int",
           description="Upper bound of changes per micro-batch (whole transactions; at least one)."),
)

# Flink CDC options this job does not run; refused by name, before anything runs.
REFUSED = (
    "scan.startup.specific-offset.file", "scan.startup.specific-offset.pos",
    "scan.startup.specific-offset.gtid-set", "scan.startup.specific-offset.skip-events",
    "scan.startup.specific-offset.skip-rows", "scan.startup.timestamp-millis",
    "scan.incremental.snapshot.enabled", "scan.incremental.snapshot.chunk.size",
    "scan.incremental.snapshot.chunk.key-column", "scan.incremental.close-idle-reader.enabled",
    "scan.incremental.snapshot.backfill.skip", "scan.incremental.snapshot.unbounded-chunk-first.enabled",
    "scan.newly-added-table.enabled", "scan.binlog.newly-added-table.enabled",
    "scan.parse.online.schema.changes.enabled", "scan.read-changelog-as-append-only.enabled",
    "connect.max-retries", "connection.pool.size", "heartbeat.interval", "chunk-meta.group.size",
    "chunk-key.even-distribution.factor.upper-bound", "chunk-key.even-distribution.factor.lower-bound",
    "debezium.min.row.count.to.stream.result", "use.legacy.json.format", "jdbc.properties.*", "debezium.*",
)
METADATA_KEYS = ("database_name", "table_name", "op_ts", "row_kind")

# --------------------------------------------------------------------------- static checks


def check(table, options, role) -> None:
    """What can be checked without the server: the client library, the options' values,
    the column kinds."""
    try:
        import pymysqlreplication  # noqa: F401 - an extra: pip install 'streamsql[mysql]'
    except ImportError:
        raise table_error(table, f"the mysql-cdc connector (table '{table.name}') needs the Python package "
                                 "mysql-replication, which is not installed", "connector",
                          "pip install 'streamsql[mysql]' where the job runs") from None
    for key in table.options:
        if any(Option(name).matches(key) for name in REFUSED):
            raise table_error(table, f"option '{key}' of table '{table.name}' is a Flink CDC mysql-cdc option this "
                                     "job does not support yet", key,
                              "remove it; supported: " + ", ".join(o.name for o in OPTIONS))
    mode = options.get("scan.startup.mode")
    if mode not in STARTUP_MODES:
        what = ("a Flink CDC startup mode this job does not support yet" if mode in OTHER_STARTUP_MODES
                else "not a startup mode of mysql-cdc")
        raise table_error(table, f"'scan.startup.mode' = '{mode}' of table '{table.name}' is {what}",
                          "scan.startup.mode", "use 'initial' or 'latest-offset'")
    for name in ("database-name", "table-name"):
        try:
            re.compile(options[name])
        except re.error as exc:
            raise table_error(table, f"'{name}' = '{options[name]}' of table '{table.name}' is not a valid regular "
                                     f"expression ({exc})", name) from None
    server_id(table, options)
    zone(table, options)
    for col in table.columns:
        if col.kind == "metadata" and (col.metadata_key or col.name) not in METADATA_KEYS[:2]:
            raise table_error(table, f"mysql-cdc metadata key '{col.metadata_key or col.name}' of column '{col.name}' "
                                     f"(table '{table.name}') is not supported",
                              hint="available keys: " + ", ".join(METADATA_KEYS[:2]))


def server_id(table, options) -> int:
    text = (options.get("server-id") or "").strip()
    if not text:
        return 0
    m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", text)
    if not m or int(m.group(1)) < 1 or (m.group(2) and int(m.group(2)) < int(m.group(1))):
        raise table_error(table, f"'server-id' = '{text}' of table '{table.name}' is not a server id or a range of "
                                 "them", "server-id", "use a number like '5400' or a range like '5400-5408'")
    return int(m.group(1))


def zone(table, options) -> str:
    from zoneinfo import ZoneInfo

    name = options.get("server-time-zone")
    if not name:
        from job.sql.flink.typed import system_time_zone
        return system_time_zone()
    try:
        ZoneInfo(name)
    except Exception:  # noqa: BLE001 - ZoneInfoNotFoundError, ValueError
        raise table_error(table, f"'server-time-zone' = '{name}' of table '{table.name}' is not a time zone",
                          "server-time-zone", "use a region name like 'UTC' or 'Asia/Shanghai'") from None
    return name


# --------------------------------------------------------------------------- connection

def connection_info(options: Mapping[str, Any]) -> dict:
    return {"host": options["hostname"], "port": int(options["port"]), "user": options["username"],
            "password": options.get("password") or "",
            "connect_timeout": max(2, int(options.get("connect.timeout") or 30000) // 1000)}


def connect_error(table, options, exc: Exception) -> PipelineError:
    """A PyMySQL connection failure as one paragraph naming the option at fault."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    where = f"MySQL at {options['hostname']}:{options['port']}"
    if code == 1045:
        return table_error(table, f"{where} refused the login of user '{options['username']}' for table "
                                  f"'{table.name}': wrong user name or password", "username",
                           "check 'username' and 'password' (the password is not shown)")
    text = str(exc.args[1]) if len(exc.args) > 1 else type(exc).__name__
    text = text.replace(options.get("password") or "\0", "***")
    return table_error(table, f"{where} cannot be reached for table '{table.name}' ({text})", "hostname",
                       "check 'hostname' and 'port', and that the server is running", exit_code=EXIT_UNREACHABLE)


# --------------------------------------------------------------------------- preflight

def preflight(ctx) -> dict:
    """Check the server and the tables (see the module docstring). Returns the reader's spec."""
    import pymysql

    table, options = ctx.table, ctx.options
    try:
        c = binlog.connect(connection_info(options))
    except pymysql.Error as exc:
        raise connect_error(table, options, exc) from None
    where = f"MySQL at {options['hostname']}:{options['port']}"
    with c, c.cursor() as cur:
        cur.execute("SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@version")
        log_bin, fmt, image, version = cur.fetchone()
        try:
            cur.execute("SELECT @@binlog_row_metadata")
            metadata = cur.fetchone()[0]
        except pymysql.Error:
            metadata = "(none: the server predates it)"
        # binlog_row_metadata = FULL: the log carries each column's character set and
        # signedness, so the binlog client decodes text, bytes and unsigned integers as
        # they are stored (without it, it would guess UTF-8).
        for ok, setting in ((int(log_bin) == 1, "log_bin = ON"), (fmt == "ROW", "binlog_format = ROW"),
                            (image == "FULL", "binlog_row_image = FULL"),
                            (metadata == "FULL", "binlog_row_metadata = FULL")):
            if not ok:
                raise table_error(table, f"{where} does not have {setting} (it has log_bin = {log_bin}, binlog_format "
                                         f"= {fmt}, binlog_row_image = {image}, binlog_row_metadata = {metadata}); "
                                         f"mysql-cdc (table '{table.name}') needs a row-based binary log with full "
                                         "row images and column metadata (MySQL 8.0.1+ or MariaDB 10.5+)", "hostname",
                                  f"set {setting} in the server's configuration and restart it")
        pattern = re.compile(f"{options['database-name']}\\.{options['table-name']}")
        cur.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                    "AND table_schema NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')")
        matched = sorted((db, name) for db, name in cur.fetchall() if pattern.fullmatch(f"{db}.{name}"))
        if not matched:
            raise table_error(table, f"no table of {where} matches 'database-name' = '{options['database-name']}' and "
                                     f"'table-name' = '{options['table-name']}' (table '{table.name}')", "table-name",
                              "check 'database-name' and 'table-name' (regular expressions matched against "
                              "database.table) and the user's SELECT privilege")
        tables = [table_spec(table, cur, db, name) for db, name in matched]
    kinds = [c["data_type"] for c in tables[0]["columns"]]
    for t in tables[1:]:
        if [c["data_type"] for c in t["columns"]] != kinds:
            raise table_error(table, f"the MySQL tables that 'database-name' and 'table-name' match for table "
                                     f"'{table.name}' differ in their columns' types ({tables[0]['database']}."
                                     f"{tables[0]['table']} and {t['database']}.{t['table']})", "table-name",
                              "match tables of one shape only")
    sid = server_id(table, options) or random.randint(5400, 6400)
    return {"tables": tables, "startup": options["scan.startup.mode"], "server_id": sid,
            "mariadb": "mariadb" in version.lower(), "fetch_size": options["scan.snapshot.fetch.size"],
            "max_changes": options.get("scan.max-changes-per-trigger")}


def table_spec(table, cur, db: str, name: str) -> dict:
    """Match the declared columns and key to one MySQL table's; that table's part of the spec."""
    where = f"{db}.{name}"
    cur.execute("SELECT column_name, data_type, column_type, numeric_precision, numeric_scale, datetime_precision, "
                "character_octet_length, column_key FROM information_schema.columns "
                "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position", (db, name))
    rows = cur.fetchall()
    by_lower = {r[0].lower(): (i, r) for i, r in enumerate(rows)}
    pk = [r[0] for r in rows if r[7] == "PRI"]
    positions, columns = [], []
    for col in table.physical_columns:
        found = by_lower.get(col.name.lower())
        if found is None:
            raise table_error(table, f"column '{col.name}' of table '{table.name}' is not a column of MySQL table "
                                     f"{where}", "table-name", "its columns are: " + ", ".join(r[0] for r in rows))
        i, (cname, data_type, column_type, precision, scale, fsp, octets, _key) = found
        data_type, column_type = data_type.lower(), column_type.lower()
        if type_problem(data_type, column_type, precision, scale, col.spark_type, col.flink_type):
            raise table_error(table, f"column '{col.name}' of table '{table.name}' is {col.flink_type}, which cannot "
                                     f"hold the values of MySQL column {where}.{cname} ({column_type.upper()})",
                              "table-name", f"declare it as {flink_cdc_type(data_type, column_type, precision, scale, fsp)}")
        positions.append(i)
        columns.append({"name": cname, "data_type": data_type, "unsigned": "unsigned" in column_type,
                        "bits": INT_BITS.get(data_type, 0), "length": octets if data_type == "binary" else None})
    if not pk:
        raise table_error(table, f"MySQL table {where} has no primary key; mysql-cdc (table '{table.name}') needs one "
                                 "to apply updates and deletes", "table-name", f"ALTER TABLE {where} ADD PRIMARY KEY (…)")
    declared = sorted(k.lower() for k in table.primary_key)
    if declared != sorted(k.lower() for k in pk):
        raise table_error(table, f"the PRIMARY KEY ({', '.join(table.primary_key)}) of table '{table.name}' is not the "
                                 f"primary key ({', '.join(pk)}) of MySQL table {where}", "table-name",
                          f"declare PRIMARY KEY ({', '.join(pk)}) NOT ENFORCED")
    names = [c.name.lower() for c in table.physical_columns]
    return {"database": db, "table": name, "width": len(rows), "positions": positions, "columns": columns,
            "key_indexes": [names.index(k) for k in declared]}


# --------------------------------------------------------------------------- source

def create_source(ctx) -> SourceStream:
    from pyspark.sql import functions as F

    from job.connectors.change_stream import change_stream

    table, options = ctx.table, ctx.options
    physical_cols = list(table.physical_columns)
    if ctx.offline:
        spec = {"tables": [], "startup": options["scan.startup.mode"], "server_id": 1, "mariadb": False,
                "fetch_size": 1024, "max_changes": None}
        kinds = ["varchar"] * len(physical_cols)
    else:
        spec = preflight(ctx)
        kinds = [c["data_type"] for c in spec["tables"][0]["columns"]]
    server_zone = zone(table, options)
    # database_name / table_name: the matched table a row came from, from its position text.
    origin = F.split(F.col("__position"), " ").getItem(0)
    metadata = {c.name: (F.split(origin, r"\.").getItem(0) if (c.metadata_key or c.name) == "database_name"
                         else F.split(origin, r"\.").getItem(1)).cast(c.spark_type)
                for c in table.columns if c.kind == "metadata"}
    return change_stream(ctx, binlog.CLASSES["CdcDataSource"], binlog.DATA_SOURCE_NAME, binlog.VALUE_PREFIX, spec,
                         connection_info(options), server="MySQL", metadata=metadata,
                         typed=lambda i, col, text: typed_value(text, col.spark_type, col.flink_type, kinds[i],
                                                                server_zone))


CONNECTOR = Connector(
    identifier="mysql-cdc",
    description="MySQL or MariaDB tables as a changelog: a snapshot, then their changes from the binary log.",
    options=OPTIONS + tuple(Option(name, description="Flink CDC option, not supported (refused).") for name in REFUSED),
    source_mode=UPSERT,
    requires_primary_key=True,
    create_source=create_source,
    check=check,
)
