"""postgres-cdc: a PostgreSQL table as a changelog, from logical replication (Flink CDC's
'postgres-cdc' connector, with its option names).

On its first start a query creates the replication slot 'slot.name' (decoding plugin
wal2json), reads the whole table (the snapshot, unless 'scan.startup.mode' =
'latest-offset'), then streams every insert, update and delete committed after the
slot's creation. The stream's offset is the replication position (LSN): Spark keeps it
in the query's checkpoint, and the slot is acknowledged (``pg_replication_slot_advance``)
only after Spark has committed the micro-batch, so a query that crashes or is stopped
resumes where its checkpoint says and loses nothing. See ``replication`` for how
batches are cut (whole transactions) and read.

Why an upsert stream: the snapshot is an ordinary query run some time after the slot was
created, so changes committed in between appear in the snapshot *and* in the stream.
Rather than pin the snapshot to the slot's exported snapshot (which only lives as long as
the replication connection that created it, so a replayed snapshot batch could not use
it), the source declares itself keyed by the table's PRIMARY KEY: every row is "the
key's latest row" ('U') or "the key is gone" ('D'), ordered by commit LSN, with the
snapshot's rows ordered before every streamed change. The planner keeps the latest row
per key (Flink's ChangelogNormalize), so a change seen twice converges to the table's
state and a delete of a key it never saw is a no-op — the same reason Flink CDC's
incremental snapshot works. A replayed snapshot batch reads the table again, which is
just as correct. Downstream operators see proper +I/-U/+U/-D retractions.

Before any query starts (never under --dry-run) the connector checks, and reports as one
paragraph naming the table and the option: that the server answers ('hostname', 'port',
exit code 3), the credentials ('username'/'password'; the password is never shown),
'database-name', wal_level = logical, that the table exists ('schema-name',
'table-name'), that the declared PRIMARY KEY is the table's, that every declared column
exists and its type can hold the PostgreSQL column's values, and that 'slot.name' is not
already taken by someone else. Whether an existing slot is this query's own is recorded
in the query's checkpoint (``postgres-cdc/<slot>.json``), written when the slot is
created.

Known limits: TRUNCATE is not replicated (wal2json reports it without rows); an UPDATE
that leaves a large TOASTed value unchanged does not carry it, so it reads as NULL unless
the table has REPLICA IDENTITY FULL; one slot serves one reading query, so a table read
by two INSERTs (or joined with itself) needs a second CREATE TABLE with its own slot.
"""
from __future__ import annotations

import difflib
import json
import re
from datetime import datetime, timezone
from typing import Any, Mapping, Optional

from job.connectors import hadoop
from job.connectors.postgres_cdc import replication as pg
from job.connectors.postgres_cdc.column_types import base_type, suggested_type, type_problem, typed_value
from job.connectors.base import UPSERT, Connector, Option, SourceStream
from job.errors import EXIT_UNREACHABLE, PipelineError
from job.options import table_error

OPTIONS = (
    Option("hostname", required=True, description="Host name or IP address of the PostgreSQL server."),
    Option("port", "int", default=5432, description="Port of the PostgreSQL server."),
    Option("username", required=True, description="User to connect as; needs the REPLICATION attribute "
                                                   "(or superuser) and SELECT on the table."),
    Option("password", default="", secret=True, description="The user's password."),
    Option("database-name", required=True, description="Database that holds the table."),
    Option("schema-name", default="public", description="Schema of the table."),
    Option("table-name", required=True, description="The table to capture."),
    Option("slot.name", required=True, description="Logical replication slot the query creates and owns "
                                                   "(lower-case letters, digits and '_'); one per reading query."),
    Option("decoding.plugin.name", "enum", default="wal2json", choices=("wal2json",),
           description="Logical decoding output plugin (the server needs it installed)."),
    Option("scan.startup.mode", "enum", default="initial", choices=("initial", "latest-offset"),
           description="'initial': read the table, then its changes; 'latest-offset': only changes made "
                       "after the query's first start."),
    Option("scan.max-changes-per-trigger", "int",
           description="Upper bound of changes per micro-batch (whole transactions; at least one)."),
    Option("connect.timeout", "duration", description="How long to wait for a connection (default 10 s)."),
)

METADATA_KEYS = ("database_name", "schema_name", "table_name")
SLOT_NAME = re.compile(r"^[a-z0-9_]{1,63}$")
MARKER_DIR = "postgres-cdc"

# --------------------------------------------------------------------------- static checks

def check(table, options, role) -> None:
    """What can be checked without the server: the client library, slot name, column kinds
    and types."""
    try:
        import psycopg  # noqa: F401 - an extra: pip install 'streamsql[postgres]'
    except ImportError:
        raise table_error(table, f"the postgres-cdc connector (table '{table.name}') needs the Python package "
                                 "psycopg, which is not installed", "connector",
                          "pip install 'streamsql[postgres]' (psycopg 3) where the job runs") from None
    slot = options.get("slot.name", "")
    if not SLOT_NAME.match(slot):
        raise table_error(table, f"'slot.name' = '{slot}' is not a valid replication slot name (table '{table.name}')",
                          "slot.name", "use 1 to 63 lower-case letters, digits and '_', e.g. 'streamsql_users'")
    for col in table.columns:
        if col.kind == "metadata" and (col.metadata_key or col.name) not in METADATA_KEYS:
            raise table_error(table, f"unknown postgres-cdc metadata key '{col.metadata_key or col.name}' for column "
                                     f"'{col.name}' of table '{table.name}'",
                              hint="available keys: " + ", ".join(METADATA_KEYS))
        if col.kind == "physical" and base_type(col.spark_type) in ("array", "map", "struct"):
            raise table_error(table, f"column '{col.name}' of table '{table.name}' is {col.flink_type}; postgres-cdc "
                                     "reads arrays and composite values as their PostgreSQL text form",
                              hint=f"declare '{col.name}' as STRING")


# --------------------------------------------------------------------------- connection

def connection_info(options: Mapping[str, Any]) -> dict:
    return {"host": options["hostname"], "port": int(options["port"]), "dbname": options["database-name"],
            "user": options["username"], "password": options.get("password") or "",
            "connect_timeout": max(2, int(options.get("connect.timeout") or 10000) // 1000)}


def connect_error(table, options, exc: Exception) -> PipelineError:
    """A psycopg connection failure as one paragraph naming the option at fault."""
    text = str(exc).strip()
    where = f"PostgreSQL at {options['hostname']}:{options['port']}"
    first = text.splitlines()[-1] if text else type(exc).__name__
    low = text.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        return table_error(table, f"{where} refused the login of user '{options['username']}' for table '{table.name}': "
                                  "wrong user name or password", "username",
                           "check 'username' and 'password' (the password is not shown)")
    if "no pg_hba.conf entry" in low:
        return table_error(table, f"{where} does not accept connections from this host for user "
                                  f"'{options['username']}' (table '{table.name}')", "username",
                           "allow the host in the server's pg_hba.conf")
    m = re.search(r'database "([^"]*)" does not exist', text)
    if m:
        return table_error(table, f"database '{m.group(1)}' does not exist on {where} (table '{table.name}')",
                           "database-name", "check 'database-name'")
    m = re.search(r'role "([^"]*)" does not exist', text)
    if m:
        return table_error(table, f"user '{m.group(1)}' does not exist on {where} (table '{table.name}')", "username")
    return table_error(table, f"{where} cannot be reached for table '{table.name}' ({first})", "hostname",
                       "check 'hostname' and 'port', and that the server is running", exit_code=EXIT_UNREACHABLE)


# --------------------------------------------------------------------------- slot marker
# Written in the query's checkpoint through Hadoop's FileSystem, so it lives wherever the
# checkpoint does (local disk, HDFS, S3).

def _marker_path(checkpoint: str, slot: str) -> str:
    return f"{checkpoint.rstrip('/')}/{MARKER_DIR}/{slot}.json"


def read_marker(spark, checkpoint: Optional[str], slot: str) -> Optional[dict]:
    if not checkpoint or not hadoop.exists(spark, _marker_path(checkpoint, slot)):
        return None
    return json.loads(hadoop.read_text(spark, _marker_path(checkpoint, slot)))


def write_marker(spark, checkpoint: Optional[str], slot: str, content: dict) -> None:
    if checkpoint:
        hadoop.write_text(spark, _marker_path(checkpoint, slot), json.dumps(content))


# --------------------------------------------------------------------------- preflight

def preflight(ctx) -> dict:
    """Check the server, table and slot (see the module docstring); create the slot on
    the query's first start. Returns the reader's spec."""
    import psycopg

    table, options = ctx.table, ctx.options
    schema, name, slot = options["schema-name"], options["table-name"], options["slot.name"]
    where = f"{schema}.{name}"
    try:
        c = pg.connect(connection_info(options))
    except psycopg.Error as exc:
        raise connect_error(table, options, exc) from None
    with c:
        wal_level = c.execute("SHOW wal_level").fetchone()[0]
        if wal_level != "logical":
            raise table_error(table, f"PostgreSQL at {options['hostname']}:{options['port']} has wal_level = "
                                     f"'{wal_level}'; postgres-cdc (table '{table.name}') needs logical replication",
                              "hostname", "set wal_level = logical in postgresql.conf and restart the server")
        row = c.execute("SELECT c.oid, c.relreplident FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p')", (schema, name)).fetchone()
        if row is None:
            if c.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is None:
                raise table_error(table, f"schema '{schema}' does not exist in database '{options['database-name']}' "
                                         f"(table '{table.name}')", "schema-name", "check 'schema-name'")
            names = [r[0] for r in c.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'p')", (schema,))]
            close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
            raise table_error(table, f"PostgreSQL table {where} does not exist in database '{options['database-name']}' "
                                     f"(table '{table.name}').{f' Did you mean {close[0]!r}?' if close else ''}",
                              "table-name", "check 'table-name' and 'schema-name'")
        oid = row[0]
        columns = c.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), "
            "       (SELECT typname FROM pg_type WHERE oid = COALESCE(NULLIF(t.typbasetype, 0), t.oid)) "
            "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", (oid,)).fetchall()
        pk = [r[0] for r in c.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s AND i.indisprimary ORDER BY a.attnum", (oid,))]
        if not c.execute("SELECT has_table_privilege(%s::oid, 'SELECT')", (oid,)).fetchone()[0]:
            raise table_error(table, f"user '{options['username']}' may not read PostgreSQL table {where} "
                                     f"(table '{table.name}')", "username", f"GRANT SELECT ON {where} TO {options['username']}")
        spec = table_spec(table, options, columns, pk)
        spec["start_lsn"] = claim_slot(ctx, c, slot)
    return spec


def table_spec(table, options, columns, pk) -> dict:
    """Match the declared columns and key to PostgreSQL's; the reader's spec."""
    schema, name = options["schema-name"], options["table-name"]
    where = f"{schema}.{name}"
    by_name = {r[0]: r for r in columns}
    by_lower: dict[str, list] = {}
    for r in columns:
        by_lower.setdefault(r[0].lower(), []).append(r)

    def find(col_name: str):
        if col_name in by_name:
            return by_name[col_name]
        found = by_lower.get(col_name.lower(), [])
        return found[0] if len(found) == 1 else None

    pg_names, hex_cols, types = [], [], []
    for col in table.physical_columns:
        found = find(col.name)
        if found is None:
            raise table_error(table, f"column '{col.name}' of table '{table.name}' is not a column of PostgreSQL table "
                                     f"{where}", "table-name", "its columns are: " + ", ".join(r[0] for r in columns))
        pg_name, formatted, base = found
        problem = type_problem(base, formatted, col.spark_type)
        if problem:
            raise table_error(table, f"column '{col.name}' of table '{table.name}' is {col.flink_type}, which cannot hold "
                                     f"the values of PostgreSQL column {where}.{pg_name} ({formatted})", "table-name",
                              f"declare it as {suggested_type(base, formatted)} (or STRING)")
        pg_names.append(pg_name)
        types.append(base)
        if base == "bytea":
            hex_cols.append(pg_name)
    if not pk:
        raise table_error(table, f"PostgreSQL table {where} has no primary key; postgres-cdc (table '{table.name}') needs "
                                 "one to apply updates and deletes", "table-name",
                          f"ALTER TABLE {where} ADD PRIMARY KEY (…)")
    declared = [find(k) for k in table.primary_key]
    if None in declared or sorted(r[0] for r in declared) != sorted(pk):
        raise table_error(table, f"the PRIMARY KEY ({', '.join(table.primary_key)}) of table '{table.name}' is not the "
                                 f"primary key ({', '.join(pk)}) of PostgreSQL table {where}", "table-name",
                          f"declare PRIMARY KEY ({', '.join(pk)}) NOT ENFORCED")
    return {"schema": schema, "table": name, "slot": options["slot.name"], "columns": pg_names,
            "key": pk, "hex": hex_cols, "types": types, "startup": options["scan.startup.mode"],
            "max_changes": options.get("scan.max-changes-per-trigger")}


def claim_slot(ctx, c, slot: str) -> int:
    """The LSN the stream starts after: the slot's creation point. Creates the slot on the
    query's first start; an existing slot must be the one this checkpoint created."""
    import psycopg

    table, options = ctx.table, ctx.options
    marker = read_marker(ctx.spark, ctx.checkpoint, slot)
    state = pg.slot_state(c, slot)
    if state is not None:
        if marker is None:
            raise table_error(table, f"replication slot '{slot}' already exists, and this query did not create it "
                                     f"(table '{table.name}')", "slot.name",
                              f"give the table its own 'slot.name'; if nothing uses the slot any more, drop it with "
                              f"SELECT pg_drop_replication_slot('{slot}')")
        if state["plugin"] != pg.PLUGIN or state["database"] != options["database-name"]:
            raise table_error(table, f"replication slot '{slot}' decodes database '{state['database']}' with "
                                     f"'{state['plugin']}', not '{options['database-name']}' with '{pg.PLUGIN}' "
                                     f"(table '{table.name}')", "slot.name", "use another 'slot.name'")
        return int(marker["lsn"])
    if marker is not None:
        raise table_error(table, f"replication slot '{slot}' that this query created at LSN "
                                 f"{pg.lsn_text(int(marker['lsn']))} no longer exists, so the changes made since its "
                                 f"checkpoint are lost (table '{table.name}')", "slot.name",
                          f"to start afresh with a new snapshot, delete the checkpoint directory {ctx.checkpoint}")
    try:
        lsn = int(c.execute("SELECT (lsn - '0/0'::pg_lsn)::bigint FROM pg_create_logical_replication_slot(%s, %s)",
                            (slot, pg.PLUGIN)).fetchone()[0])
    except psycopg.errors.InsufficientPrivilege:
        raise table_error(table, f"user '{options['username']}' may not create replication slots (table '{table.name}')",
                          "username", f"ALTER ROLE {options['username']} REPLICATION, or use a user that has it") from None
    except psycopg.errors.DuplicateObject:
        raise table_error(table, f"replication slot '{slot}' already exists, and this query did not create it "
                                 f"(table '{table.name}')", "slot.name", "give the table its own 'slot.name'") from None
    except psycopg.Error as exc:
        message = str(exc).strip().splitlines()[0]
        hint = ("install the wal2json decoding plugin on the server (Debian: postgresql-<version>-wal2json)"
                if "wal2json" in message else "see the server's log")
        raise table_error(table, f"could not create replication slot '{slot}' for table '{table.name}': {message}",
                          "slot.name", hint) from None
    write_marker(ctx.spark, ctx.checkpoint, slot, {
        "slot": slot, "lsn": lsn, "lsn_text": pg.lsn_text(lsn), "database": options["database-name"],
        "table": f"{options['schema-name']}.{options['table-name']}",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    return lsn


# --------------------------------------------------------------------------- source

def create_source(ctx) -> SourceStream:
    from pyspark.sql import functions as F

    from job.connectors.change_stream import change_stream

    table, options = ctx.table, ctx.options
    physical_cols = list(table.physical_columns)
    if ctx.offline:
        spec = {"schema": options["schema-name"], "table": options["table-name"], "slot": options["slot.name"],
                "columns": [c.name for c in physical_cols], "key": list(table.primary_key), "hex": [],
                "types": [None] * len(physical_cols), "startup": options["scan.startup.mode"], "start_lsn": 0,
                "max_changes": options.get("scan.max-changes-per-trigger")}
    else:
        spec = preflight(ctx)
    metadata = {c.name: F.lit({"database_name": options["database-name"], "schema_name": options["schema-name"],
                               "table_name": options["table-name"]}[c.metadata_key or c.name]).cast(c.spark_type)
                for c in table.columns if c.kind == "metadata"}
    return change_stream(ctx, pg.CLASSES["CdcDataSource"], pg.DATA_SOURCE_NAME, pg.VALUE_PREFIX, spec,
                         connection_info(options), server="PostgreSQL", metadata=metadata,
                         typed=lambda i, col, text: typed_value(text, col.spark_type, spec["types"][i]))


CONNECTOR = Connector(
    identifier="postgres-cdc",
    description="A PostgreSQL table as a changelog: a snapshot, then its changes from logical replication (wal2json).",
    options=OPTIONS,
    source_mode=UPSERT,
    requires_primary_key=True,
    create_source=create_source,
    check=check,
)
