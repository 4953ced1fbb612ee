"""jdbc: a database table as a sink (append or upsert) and as a bounded source.

PostgreSQL is the tested database; MySQL/MariaDB runs through the same code with its own
SQL from :mod:`job.connectors.jdbc.dialects` (the only place dialects differ).
The database connection is in ``database``, the sink in ``sink``, the source in ``source``.

**Sink: stage, then merge in one transaction.** Each micro-batch is written by Spark's
own JDBC writer, on the executors, into a staging table (an empty copy of the target's
columns plus an operation column, ``streamsql_stage_<query>``, UNLOGGED in PostgreSQL),
in JDBC batches of 'sink.buffer-flush.max-rows' rows. The driver then moves the staged
rows into the target in ONE transaction — ``DELETE … WHERE (pk) IN (staged deletes)`` and
``INSERT … SELECT … ON CONFLICT (pk) DO UPDATE`` (``ON DUPLICATE KEY UPDATE`` on MySQL)
for upsert tables, a plain ``INSERT … SELECT`` for append tables — and commits. The
alternative, collecting each batch on the driver and inserting it through py4j, costs a
Python↔JVM round trip per value; staging keeps the data path in the JVM, scales with the
executors, and leaves the driver a handful of statements per batch. A batch whose rows
the table cannot hold (a value too long for its VARCHAR, a NULL in a NOT NULL column)
fails in the staging write or the merge: the transaction is rolled back, nothing of the
batch reaches the target, and the query stops with one paragraph naming the table.

**Exactly-once effect.** Upserts and deletes keyed by the PRIMARY KEY are idempotent, so
a replayed micro-batch (Spark re-runs the last uncommitted one after a restart) writes
the same rows again. Append tables (no PRIMARY KEY) record ``(sink id, batch id)`` in
``streamsql_sink_commits`` in the same transaction as the rows, and a batch already
recorded is skipped. The sink id is a hash of the query's checkpoint path and the query
id stored in it: a fresh checkpoint is a new query, which appends from the start again.

**Checked before the query starts** (not in ``--dry-run``, which contacts nothing): the
server answers ('url'), accepts the credentials ('username'/'password'), the table
exists ('table-name') or is created from the declared schema ('sink.create-table'), and
every declared column exists with a type that holds the declared one; an upsert table
needs a primary key or unique index on its PRIMARY KEY columns.

**Source: a bounded scan, as a stream.** The changelog engine and the join operators take
streaming inputs, so the table is read once with Spark's JDBC reader (partitioned by
'scan.partition.*', fetching 'scan.fetch-size' rows per round trip) into Parquet files
under the query's checkpoint, and those files are the stream: read entirely in the first
micro-batch, replay-safe, and never read twice by a restarted query. With a PRIMARY KEY
the table is an upsert source, and every later start of the query reads the table again
and streams only what changed since (changed rows, and deletes for vanished keys); a
table without a key is read once per checkpoint.
"""
from __future__ import annotations

from job.connectors.base import APPEND, UPSERT, Connector, Option
# The lookup join (job.plan.lookup) queries a jdbc table through its Database.
from job.connectors.jdbc.database import Database, safe_url  # noqa: F401
from job.connectors.jdbc.dialects import dialect_for
from job.connectors.jdbc.sink import JdbcSink
from job.connectors.jdbc.source import create_source
from job.options import table_error

OPTIONS = (
    Option("url", required=True, description="JDBC URL, e.g. jdbc:postgresql://host:5432/db "
           "(a password=… inside it is masked like the 'password' option)."),
    Option("table-name", required=True, description="The database table, optionally schema-qualified "
           "('public.orders'); used in SQL as written."),
    Option("username", description="Database user."),
    Option("password", secret=True, description="Database password (never shown in logs, plans or errors)."),
    Option("driver", description="JDBC driver class; by default from the URL (org.postgresql.Driver, "
           "org.mariadb.jdbc.Driver)."),
    Option("sink.buffer-flush.max-rows", "int", default=1000,
           description="Rows per JDBC batch when a micro-batch is written (all of a micro-batch is "
           "committed in one transaction, whatever its size)."),
    Option("sink.create-table", "bool", default=False,
           description="Create the table from the declared columns and PRIMARY KEY when it does not exist."),
    Option("scan.partition.column", description="Numeric, date or timestamp column that splits the scan "
           "into parallel range reads (with the three options below)."),
    Option("scan.partition.num", "int", description="Number of range reads."),
    Option("scan.partition.lower-bound", description="Smallest value of the first range."),
    Option("scan.partition.upper-bound", description="Largest value of the last range."),
    Option("scan.fetch-size", "int", default=1000, description="Rows fetched per round trip while scanning."),
)

PARTITION_OPTIONS = ("scan.partition.column", "scan.partition.num", "scan.partition.lower-bound",
                     "scan.partition.upper-bound")


# --------------------------------------------------------------------------- check

def check(table, options, role):
    url = options.get("url", "")
    if not url.lower().startswith("jdbc:"):
        raise table_error(table, f"'url' of table '{table.name}' must be a JDBC URL (jdbc:postgresql://host:5432/db), "
                                 f"got '{safe_url(url)}'", option="url")
    dialect = dialect_for(url)
    if dialect is None and not options.get("driver"):
        raise table_error(table, f"no built-in dialect for 'url' = '{safe_url(url)}' (table '{table.name}'); the jdbc "
                                 "connector knows PostgreSQL and MySQL/MariaDB", option="url")
    if dialect is None:
        raise table_error(table, f"the jdbc connector has no SQL dialect for '{safe_url(url)}' (table '{table.name}')",
                          option="url", hint="use jdbc:postgresql:, jdbc:mariadb: or jdbc:mysql:")
    if options.get("sink.buffer-flush.max-rows", 1) < 1:
        raise table_error(table, "'sink.buffer-flush.max-rows' must be at least 1", option="sink.buffer-flush.max-rows")
    if options.get("scan.fetch-size", 1) < 1:
        raise table_error(table, "'scan.fetch-size' must be at least 1", option="scan.fetch-size")
    given = [o for o in PARTITION_OPTIONS if options.get(o) is not None]
    if given and len(given) != len(PARTITION_OPTIONS):
        missing = [o for o in PARTITION_OPTIONS if o not in given]
        raise table_error(table, f"table '{table.name}' sets {', '.join(repr(o) for o in given)} but not "
                                 f"{', '.join(repr(o) for o in missing)}: a partitioned scan needs all four",
                          option=missing[0])
    if given:
        col = table.column(options["scan.partition.column"])
        if col is None or not col.is_physical:
            raise table_error(table, f"'scan.partition.column' = '{options['scan.partition.column']}' is not a column of "
                                     f"table '{table.name}'", option="scan.partition.column")
        if options["scan.partition.num"] < 1:
            raise table_error(table, "'scan.partition.num' must be at least 1", option="scan.partition.num")
    for col in table.columns:
        if col.kind == "metadata":
            raise table_error(table, f"column '{col.name}' of table '{table.name}': the jdbc connector has no METADATA columns",
                              hint="declare it as a regular column")
        if col.kind == "physical" and dialect.types(col, col.name in table.primary_key) is None:
            raise table_error(table, f"column '{col.name}' of table '{table.name}' has type {col.flink_type}, which the jdbc "
                                     "connector cannot store", hint="use a scalar type (STRING, numbers, BOOLEAN, DATE, "
                                     "TIMESTAMP, BYTES); store nested values as JSON text")


# --------------------------------------------------------------------------- hooks

def is_unreachable(text: str) -> bool:
    # What PostgreSQL's driver reports, in a failed query, when the server is not there.
    return "PSQLException: Connection" in text


CONNECTOR = Connector(
    identifier="jdbc",
    description="A database table over JDBC (PostgreSQL; MySQL/MariaDB dialect): append or upsert sink, "
                "bounded scan source.",
    options=OPTIONS,
    source_mode=APPEND,
    mode_for=lambda table: UPSERT if table.primary_key else APPEND,
    sink_modes=(APPEND, UPSERT),
    create_source=create_source,
    create_sink=JdbcSink,
    check=check,
    is_unreachable=is_unreachable,
)
