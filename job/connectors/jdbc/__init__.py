"""jdbc: a database table as a sink (append or upsert) and as a bounded source.

PostgreSQL is the tested database; MySQL/MariaDB runs through the same code with its own
SQL from :mod:`job.connectors.jdbc.dialects` (the only place dialects differ).

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

import hashlib
import json
import re
import uuid
from typing import Optional

from job.connectors.base import APPEND, UPSERT, Connector, Option, Sink, SinkError, SourceStream
from job.connectors.jdbc.dialects import Dialect, can_hold, dialect_for
from job.errors import EXIT_INVALID, EXIT_OTHER, EXIT_UNREACHABLE, PipelineError

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
COMMITS_TABLE = "streamsql_sink_commits"
OP_COLUMN = "streamsql_op"
STAGE_PREFIX = "streamsql_stage_"
# SQLSTATE classes (and codes) that mean "the server is not there" / "not let in".
_UNREACHABLE_STATES = ("08", "3D000", "57P03")
_AUTH_STATES = ("28",)


# --------------------------------------------------------------------------- errors

def _fail(table, message, option=None, hint=None, exit_code=EXIT_INVALID):
    origin = table.option_origins.get(option) if option else None
    raise PipelineError(message, origin=origin or (table.source.origin if table.source else None),
                        statement=table.source.text if table.source else None, option=option, hint=hint,
                        exit_code=exit_code)


def safe_url(url: str) -> str:
    """The URL with any password=… value masked (it may be embedded there)."""
    return re.sub(r"(?i)(password=)[^;&]*", r"\1****", url or "")


def java_chain(exc) -> list:
    """The Java throwables behind a py4j/PySpark exception, outermost first, with each
    SQLException's ``getNextException()`` (where PostgreSQL puts a batch's real error)."""
    start = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    out, seen = [], set()
    todo = [start] if start is not None else []
    try:
        while todo and len(out) < 20:
            t = todo.pop(0)
            if t is None or t.hashCode() in seen:
                continue
            seen.add(t.hashCode())
            out.append(t)
            try:
                nxt = t.getNextException()
                if nxt is not None:
                    todo.append(nxt)
            except Exception:  # noqa: BLE001 - not an SQLException
                pass
            todo.append(t.getCause())
    except Exception:  # noqa: BLE001 - the JVM is gone: the Python text will do
        pass
    return out


def sql_error(exc) -> tuple[Optional[str], str]:
    """(SQLSTATE, one-line message) of the database error inside ``exc``."""
    state, message = None, None
    # Outermost first: each SQLException found overrides the one before (it is more
    # specific), except a JDBC batch's wrapper, which quotes the whole statement.
    for t in java_chain(exc):
        try:
            s = t.getSQLState()
        except Exception:  # noqa: BLE001 - not an SQLException
            continue
        text = " ".join(str(t.getMessage() or "").split())
        if text.startswith("Batch entry") and message:
            continue
        state, message = s or state, text or message
    if message is None:
        text = str(exc)
        m = re.search(r"(ERROR: [^\n]*|FATAL: [^\n]*|Connection to [^\n]* refused[^\n]*)", text)
        message = m.group(1).strip() if m else " ".join(text.strip().splitlines()[:1])
    message = re.sub(r"\s*Call getNextException to see other errors in the batch\.?", "", message)
    return state, message[:500]


def _states(state: Optional[str], prefixes) -> bool:
    return bool(state) and any(state.startswith(p) for p in prefixes)


# --------------------------------------------------------------------------- database

def split_name(name: str) -> tuple[Optional[str], str]:
    """'schema.table' → ('schema', 'table'); quotes stay (they decide case folding)."""
    parts = re.findall(r'"[^"]*"|`[^`]*`|[^.]+', name.strip())
    if len(parts) >= 2:
        return ".".join(parts[:-1]), parts[-1]
    return None, name.strip()


def _candidates(part: Optional[str]) -> list[Optional[str]]:
    """How the database may have stored a name: as quoted, or folded."""
    if part is None:
        return [None]
    if part[:1] in '"`' and part[-1:] == part[:1]:
        return [part[1:-1]]
    return list(dict.fromkeys([part, part.lower(), part.upper()]))


class Database:
    """JDBC connections made by the driver JVM (through py4j), for the few statements the
    driver runs itself: checks, DDL, the per-batch merge. Errors become PipelineErrors
    that name the table and the option at fault; the password never appears."""

    def __init__(self, spark, table, options) -> None:
        self.spark = spark
        self.table = table
        self.options = options
        self.url = options["url"]
        self.dialect: Optional[Dialect] = dialect_for(self.url)
        self.driver_class = options.get("driver") or (self.dialect.driver if self.dialect else None)
        self._conn = None

    # -- connection properties, shared with Spark's JDBC reader and writer
    def properties(self) -> dict[str, str]:
        props = {}
        if self.options.get("username"):
            props["user"] = self.options["username"]
        if self.options.get("password") is not None:
            props["password"] = self.options["password"]
        for key, value in (self.dialect.timeouts if self.dialect else {}).items():
            if key.lower() + "=" not in self.url.lower():
                props[key] = value
        return props

    def spark_options(self) -> dict[str, str]:
        return {"url": self.url, "driver": self.driver_class, **self.properties()}

    def connect(self):
        """A live connection (reused across batches), in autocommit mode."""
        if self._conn is not None:
            try:
                if not self._conn.isClosed() and self._conn.isValid(5):
                    self._conn.setAutoCommit(True)
                    return self._conn
            except Exception:  # noqa: BLE001 - reconnect below
                pass
            self._conn = None
        jvm = self.spark._jvm
        try:
            cls = jvm.org.apache.spark.util.Utils.classForName(self.driver_class, True, False)
        except Exception:  # noqa: BLE001
            _fail(self.table, f"JDBC driver class '{self.driver_class}' of table '{self.table.name}' is not on "
                  "the classpath", option="driver",
                  hint="add its jar to jars/spark (conf/pom.xml) or --jars, or fix 'driver'")
        props = jvm.java.util.Properties()
        for key, value in self.properties().items():
            props.setProperty(key, str(value))
        try:
            conn = cls.newInstance().connect(self.url, props)
        except Exception as exc:  # noqa: BLE001
            raise self.connect_error(exc) from None
        if conn is None:  # the driver does not take this kind of URL
            _fail(self.table, f"'url' = '{safe_url(self.url)}' of table '{self.table.name}' is not a URL the "
                  f"driver {self.driver_class} accepts", option="url")
        self._conn = conn
        return conn

    def connect_error(self, exc) -> PipelineError:
        state, message = sql_error(exc)
        where = f"table '{self.table.name}': the database at '{safe_url(self.url)}'"
        origin = lambda o: self.table.option_origins.get(o) or (self.table.source.origin if self.table.source else None)  # noqa: E731
        statement = self.table.source.text if self.table.source else None
        if _states(state, _AUTH_STATES):
            return PipelineError(f"{where} rejected the credentials of 'username' = '{self.options.get('username')}': "
                                 f"{message}", origin=origin("username"), statement=statement, option="username",
                                 exit_code=EXIT_UNREACHABLE, hint="check 'username' and 'password'")
        return PipelineError(f"{where} cannot be reached: {message}", origin=origin("url"), statement=statement,
                             option="url", exit_code=EXIT_UNREACHABLE,
                             hint="check that the server is running and that 'url' (host, port, database) is right")

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001
                pass
            self._conn = None

    def execute(self, sql: str, conn=None) -> int:
        stmt = (conn or self.connect()).createStatement()
        try:
            return stmt.executeUpdate(sql)
        finally:
            stmt.close()

    def query(self, sql: str, conn=None) -> list[tuple]:
        stmt = (conn or self.connect()).createStatement()
        try:
            rs = stmt.executeQuery(sql)
            n = rs.getMetaData().getColumnCount()
            rows = []
            while rs.next():
                rows.append(tuple(rs.getString(i + 1) for i in range(n)))
            return rows
        finally:
            stmt.close()

    # -- the catalog
    def columns(self, name: str) -> Optional[dict[str, dict]]:
        """The table's columns by lower-cased name (None if there is no such table):
        name as stored, data_type (java.sql.Types), type_name, size, digits, nullable."""
        conn = self.connect()
        meta = conn.getMetaData()
        schema, table = split_name(name)
        catalog = conn.getCatalog()
        # An unqualified name is the one the server resolves: in the session's schema
        # (search_path's first in PostgreSQL), not any schema's table of that name.
        schemas = _candidates(schema) if schema is not None else [_current_schema(conn)]
        for s in schemas:
            for t in _candidates(table):
                rs = meta.getColumns(catalog, s, t, None)
                found = {}
                while rs.next():
                    if rs.getString("TABLE_NAME") != t:  # '_' is a wildcard in metadata patterns
                        continue
                    found[rs.getString("COLUMN_NAME").lower()] = {
                        "name": rs.getString("COLUMN_NAME"), "data_type": rs.getInt("DATA_TYPE"),
                        "type_name": rs.getString("TYPE_NAME"), "size": rs.getInt("COLUMN_SIZE"),
                        "digits": rs.getInt("DECIMAL_DIGITS"), "nullable": rs.getInt("NULLABLE") != 0,
                        "schema": rs.getString("TABLE_SCHEM"), "table": rs.getString("TABLE_NAME"),
                    }
                rs.close()
                if found:
                    return found
        return None

    def unique_keys(self, schema: Optional[str], table: str) -> list[set[str]]:
        """Column sets (lower-cased) of the primary key and unique indexes."""
        meta = self.connect().getMetaData()
        keys: dict[str, set[str]] = {}
        catalog = self.connect().getCatalog()
        rs = meta.getPrimaryKeys(catalog, schema, table)
        while rs.next():
            keys.setdefault("PRIMARY", set()).add(rs.getString("COLUMN_NAME").lower())
        rs.close()
        rs = meta.getIndexInfo(catalog, schema, table, True, False)
        while rs.next():
            column = rs.getString("COLUMN_NAME")
            if column is not None:
                keys.setdefault("i:" + str(rs.getString("INDEX_NAME")), set()).add(column.lower())
        rs.close()
        return list(keys.values())


def _current_schema(conn) -> Optional[str]:
    try:
        return conn.getSchema()
    except Exception:  # noqa: BLE001 - a driver without JDBC 4.1's getSchema: any schema
        return None


def qualified(name: str, sibling: str) -> str:
    """``sibling`` in the same schema as the table ``name``."""
    schema, _ = split_name(name)
    return f"{schema}.{sibling}" if schema else sibling


# --------------------------------------------------------------------------- check

def check(table, options, role):
    url = options.get("url", "")
    if not url.lower().startswith("jdbc:"):
        _fail(table, f"'url' of table '{table.name}' must be a JDBC URL (jdbc:postgresql://host:5432/db), "
                     f"got '{safe_url(url)}'", option="url")
    dialect = dialect_for(url)
    if dialect is None and not options.get("driver"):
        _fail(table, f"no built-in dialect for 'url' = '{safe_url(url)}' (table '{table.name}'); the jdbc "
                     "connector knows PostgreSQL and MySQL/MariaDB", option="url")
    if dialect is None:
        _fail(table, f"the jdbc connector has no SQL dialect for '{safe_url(url)}' (table '{table.name}')",
              option="url", hint="use jdbc:postgresql:, jdbc:mariadb: or jdbc:mysql:")
    if options.get("sink.buffer-flush.max-rows", 1) < 1:
        _fail(table, "'sink.buffer-flush.max-rows' must be at least 1", option="sink.buffer-flush.max-rows")
    if options.get("scan.fetch-size", 1) < 1:
        _fail(table, "'scan.fetch-size' must be at least 1", option="scan.fetch-size")
    given = [o for o in PARTITION_OPTIONS if options.get(o) is not None]
    if given and len(given) != len(PARTITION_OPTIONS):
        missing = [o for o in PARTITION_OPTIONS if o not in given]
        _fail(table, f"table '{table.name}' sets {', '.join(repr(o) for o in given)} but not "
                     f"{', '.join(repr(o) for o in missing)}: a partitioned scan needs all four",
              option=missing[0])
    if given:
        col = table.column(options["scan.partition.column"])
        if col is None or not col.is_physical:
            _fail(table, f"'scan.partition.column' = '{options['scan.partition.column']}' is not a column of "
                         f"table '{table.name}'", option="scan.partition.column")
        if options["scan.partition.num"] < 1:
            _fail(table, "'scan.partition.num' must be at least 1", option="scan.partition.num")
    for col in table.columns:
        if col.kind == "metadata":
            _fail(table, f"column '{col.name}' of table '{table.name}': the jdbc connector has no METADATA columns",
                  hint="declare it as a regular column")
        if col.kind == "physical" and dialect.types(col, col.name in table.primary_key) is None:
            _fail(table, f"column '{col.name}' of table '{table.name}' has type {col.flink_type}, which the jdbc "
                         "connector cannot store", hint="use a scalar type (STRING, numbers, BOOLEAN, DATE, "
                         "TIMESTAMP, BYTES); store nested values as JSON text")


# --------------------------------------------------------------------------- sink

def _verify_columns(db: Database, table, columns: dict, wanted) -> dict[str, str]:
    """Declared column → the database's spelling; every column must exist and fit."""
    actual = {}
    for col in wanted:
        meta = columns.get(col.name.lower())
        if meta is None:
            _fail(table, f"table '{db.options['table-name']}' in the database has no column '{col.name}' "
                         f"(declared in table '{table.name}')", option="table-name",
                  hint="its columns: " + ", ".join(m["name"] for m in columns.values())
                  + "; add the column or change the declaration")
        why = can_hold(col, meta)
        if why is not None:
            _fail(table, f"column '{meta['name']}' of table '{db.options['table-name']}' is {meta['type_name']}"
                         f"{'(' + str(meta['size']) + ')' if meta['size'] and 'char' in meta['type_name'].lower() else ''}"
                         f", which cannot hold the declared {col.flink_type} of '{col.name}' (table '{table.name}'): "
                         f"{why}", option="table-name",
                  hint="change the column's type in the database or the declared type")
        actual[col.name] = meta["name"]
    return actual


class JdbcSink(Sink):
    """Stage each micro-batch, then merge it into the table in one transaction."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.table = ctx.table
        self.options = ctx.options
        self.target = ctx.options["table-name"]
        self.pk = list(ctx.table.primary_key)
        self.cols = [c for c in ctx.table.columns if c.is_persisted]
        self.db = Database(ctx.spark, ctx.table, ctx.options)
        self.dialect = self.db.dialect
        key = hashlib.sha1(ctx.checkpoint.encode()).hexdigest()[:16]
        self.stage = qualified(self.target, STAGE_PREFIX + key)
        self.commits = qualified(self.target, COMMITS_TABLE)
        self.names = {c.name: c.name for c in self.cols}  # declared → database spelling
        self._sink_id: Optional[str] = None
        if not ctx.offline:
            self.prepare()

    # -- before the query starts
    def prepare(self) -> None:
        db, table = self.db, self.table
        columns = db.columns(self.target)
        if columns is None and self.options.get("sink.create-table"):
            self.create_table()
            columns = db.columns(self.target)
        if columns is None:
            _fail(table, f"table '{self.target}' does not exist in the database at '{safe_url(db.url)}' "
                         f"(table '{table.name}')", option="table-name",
                  hint="create it, fix 'table-name', or set 'sink.create-table' = 'true'")
        self.names = _verify_columns(db, table, columns, self.cols)
        if self.pk:
            some = next(iter(columns.values()))
            keys = db.unique_keys(some["schema"], some["table"])
            if {p.lower() for p in self.pk} not in keys:
                _fail(table, f"table '{self.target}' has no primary key or unique index on "
                             f"({', '.join(self.names[p] for p in self.pk)}), which the upserts of table "
                             f"'{table.name}' need", option="table-name",
                      hint=f"ALTER TABLE {self.target} ADD PRIMARY KEY ({', '.join(self.names[p] for p in self.pk)})")
        else:
            self.create_commits_table()
        self.create_stage()

    def create_table(self) -> None:
        q = self.dialect.quote
        defs = []
        for col in self.cols:
            is_key = col.name in self.pk
            null = " NOT NULL" if is_key or not col.nullable else ""
            defs.append(f"{q(col.name)} {self.dialect.types(col, is_key)}{null}")
        if self.pk:
            defs.append(f"PRIMARY KEY ({', '.join(q(p) for p in self.pk)})")
        self._ddl(f"CREATE TABLE IF NOT EXISTS {self.target} ({', '.join(defs)})", "sink.create-table")

    def create_commits_table(self) -> None:
        self._ddl(f"CREATE TABLE IF NOT EXISTS {self.commits} (sink_id VARCHAR(64) NOT NULL, batch_id BIGINT NOT NULL, "
                  "table_name VARCHAR(512), PRIMARY KEY (sink_id, batch_id))", "table-name")

    def create_stage(self) -> None:
        q = self.dialect.quote
        columns = ", ".join([q(self.names[c.name]) for c in self.cols]
                            + [f"CAST(NULL AS CHAR(1)) AS {q(OP_COLUMN)}"])
        self._ddl(f"DROP TABLE IF EXISTS {self.stage}", "table-name")
        self._ddl(self.dialect.create_stage.format(stage=self.stage, columns=columns, table=self.target), "table-name")

    def _ddl(self, sql: str, option: str) -> None:
        try:
            self.db.execute(sql)
        except PipelineError:
            raise
        except Exception as exc:  # noqa: BLE001
            _state, message = sql_error(exc)
            if "already exists" in message:  # a concurrent CREATE … IF NOT EXISTS won the race
                return
            _fail(self.table, f"table '{self.target}': {message} (while running: {sql[:200]})", option=option)

    # -- per micro-batch
    def write_append(self, batch, batch_id):
        from pyspark.sql import functions as F

        if self.pk:  # a keyed table takes inserts as upserts (the last row per key wins)
            return self._write(_last_per_key(batch, self.pk).withColumn("__op", F.lit("+U")), batch_id, append=False)
        return self._write(batch.withColumn("__op", F.lit("+I")), batch_id, append=True)

    def write_changes(self, batch, batch_id):
        self._write(batch, batch_id, append=not self.pk)

    def _write(self, batch, batch_id: int, *, append: bool) -> None:
        try:
            self._write_batch(batch, batch_id, append=append)
        except SinkError:
            raise
        except PipelineError as err:  # reconnecting failed: tell it through the runner as is
            raise SinkError(f"micro-batch {batch_id}: {err.message}", origin=err.origin, statement=err.statement,
                            option=err.option, hint=err.hint, exit_code=err.exit_code) from None

    def _write_batch(self, batch, batch_id: int, *, append: bool) -> None:
        from pyspark.sql import functions as F

        db, q = self.db, self.dialect.quote
        conn = db.connect()
        sink_id = self.sink_id() if append else None
        if append and self._committed(conn, sink_id, batch_id):
            return
        op = F.when(F.col("__op").isin("-D", "-U"), F.lit("D")).otherwise(F.lit("U"))
        staged = batch.select(*[F.col(f"`{c.name}`").alias(self.names[c.name]) for c in self.cols], op.alias(OP_COLUMN))
        db.execute(f"TRUNCATE TABLE {self.stage}", conn)
        try:
            (staged.write.format("jdbc").options(**db.spark_options()).option("dbtable", self.stage)
             .option("batchsize", str(self.options["sink.buffer-flush.max-rows"])).mode("append").save())
        except Exception as exc:  # noqa: BLE001
            raise self.write_error(exc, batch_id) from None
        cols = ", ".join(q(self.names[c.name]) for c in self.cols)
        statements = []
        if append:
            statements.append(f"INSERT INTO {self.target} ({cols}) SELECT {cols} FROM {self.stage}")
            statements.append(f"INSERT INTO {self.commits} (sink_id, batch_id, table_name) "
                              f"VALUES ('{sink_id}', {int(batch_id)}, '{self.target.replace(chr(39), chr(39) * 2)}')")
            statements.append(f"DELETE FROM {self.commits} WHERE sink_id = '{sink_id}' AND batch_id < {int(batch_id)}")
        else:
            keys = ", ".join(q(self.names[p]) for p in self.pk)
            others = [self.names[c.name] for c in self.cols if c.name not in self.pk]
            statements.append(f"DELETE FROM {self.target} WHERE ({keys}) IN "
                              f"(SELECT {keys} FROM {self.stage} WHERE {q(OP_COLUMN)} = 'D')")
            statements.append(f"INSERT INTO {self.target} ({cols}) SELECT {cols} FROM {self.stage} "
                              f"WHERE {q(OP_COLUMN)} = 'U'" + self.dialect.upsert([self.names[p] for p in self.pk], others))
        conn.setAutoCommit(False)
        try:
            for sql in statements:
                db.execute(sql, conn)
            conn.commit()
        except Exception as exc:  # noqa: BLE001
            try:
                conn.rollback()
            except Exception:  # noqa: BLE001 - the connection is gone; the server rolled back
                pass
            raise self.write_error(exc, batch_id) from None
        finally:
            try:
                conn.setAutoCommit(True)
                db.execute(f"TRUNCATE TABLE {self.stage}", conn)
            except Exception:  # noqa: BLE001 - emptied before the next batch anyway
                pass

    def _committed(self, conn, sink_id: str, batch_id: int) -> bool:
        rows = self.db.query(f"SELECT MAX(batch_id) FROM {self.commits} WHERE sink_id = '{sink_id}'", conn)
        last = rows[0][0] if rows else None
        return last is not None and int(last) >= batch_id

    def write_error(self, exc, batch_id: int) -> SinkError:
        state, message = sql_error(exc)
        if _states(state, _UNREACHABLE_STATES) or "Connection refused" in message or "I/O error" in message:
            err = self.db.connect_error(exc)
            return SinkError(f"micro-batch {batch_id}: {err.message}", origin=err.origin, statement=err.statement,
                             option=err.option, hint=err.hint, exit_code=err.exit_code)
        return SinkError(
            f"micro-batch {batch_id} could not be written to table '{self.target}' (table '{self.table.name}'), "
            f"nothing of it was committed: {message}",
            origin=self.table.option_origins.get("table-name"), statement=self.table.source.text if self.table.source else None,
            option="table-name", exit_code=EXIT_OTHER,
            hint="make the column hold the values (e.g. a longer VARCHAR) or change the query; "
                 "the batch is retried from the checkpoint when the job restarts")

    def sink_id(self) -> str:
        """Checkpoint path + the query id Spark stored in it (a new checkpoint, a new id)."""
        if self._sink_id is None:
            query_id = ""
            try:
                text = read_text(self.ctx.spark, self.ctx.checkpoint.rstrip("/") + "/metadata")
                query_id = json.loads(text.splitlines()[0]).get("id", "")
            except Exception:  # noqa: BLE001 - called outside a query (tests): the path alone
                pass
            self._sink_id = hashlib.sha1(f"{self.ctx.checkpoint}|{query_id}".encode()).hexdigest()[:32]
        return self._sink_id


def _last_per_key(batch, pk):
    """One row per key of an append-only batch: the last in the batch's order."""
    from pyspark.sql import functions as F

    cols = [c for c in batch.columns]
    numbered = batch.withColumn("__rid", F.monotonically_increasing_id())
    latest = numbered.groupBy(*[F.col(f"`{p}`") for p in pk]).agg(
        F.max_by(F.struct(*[F.col(f"`{c}`") for c in cols]), F.col("__rid")).alias("__row"))
    return latest.select(*[F.col("__row")[c].alias(c) for c in cols])


# --------------------------------------------------------------------------- files

def _fs(spark, path: str):
    jvm = spark._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p.getFileSystem(spark._jsc.hadoopConfiguration()), p


def read_text(spark, path: str) -> str:
    fs, p = _fs(spark, path)
    stream = fs.open(p)
    try:
        scanner = spark._jvm.java.util.Scanner(stream, "UTF-8").useDelimiter("\\A")
        return scanner.next() if scanner.hasNext() else ""
    finally:
        stream.close()


def _numbered_dirs(spark, path: str) -> list[int]:
    fs, p = _fs(spark, path)
    if not fs.exists(p):
        return []
    return sorted(int(s.getPath().getName()) for s in fs.listStatus(p) if s.getPath().getName().isdigit())


def _rename(spark, src: str, dst: str) -> None:
    fs, s = _fs(spark, src)
    d = spark._jvm.org.apache.hadoop.fs.Path(dst)
    fs.mkdirs(d.getParent())
    if not fs.rename(s, d):
        raise RuntimeError(f"could not rename {src} to {dst}")


def _delete(spark, path: str) -> None:
    fs, p = _fs(spark, path)
    fs.delete(p, True)


# --------------------------------------------------------------------------- source

def _stored(i: int) -> str:
    return f"c{i}"  # Parquet column names stay simple whatever the declared names are


def create_source(ctx) -> SourceStream:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

    table = ctx.table
    physical = list(table.physical_columns)
    keyed = bool(table.primary_key)
    fields = [StructField(_stored(i), _parse_datatype_string(c.spark_type), True) for i, c in enumerate(physical)]
    if keyed:
        fields += [StructField("k", StringType(), True), StructField("s", StringType(), True)]
    schema = StructType(fields)
    if ctx.offline:
        from job.connectors.filesystem import _empty_directory

        base = _empty_directory()
    else:
        base = snapshot(ctx, schema)
    df = ctx.spark.readStream.schema(schema).parquet(base + "/changes/*")
    from job.connectors.rows import table_frame

    cols = {c.name: F.col(_stored(i)) for i, c in enumerate(physical)}
    control = {"__error": F.lit(None).cast("string"), "__raw": F.lit(None).cast("string"),
               "__position": F.concat(F.lit(f"table {ctx.options['table-name']} snapshot "), F.col("_metadata.file_name"))}
    if keyed:
        control = {"__kind": F.col("k"), "__seq_major": F.col("s"), "__seq_minor": F.lit(0).cast("long"), **control}
    frame = table_frame(df, table, physical=cols, metadata={}, control=control)
    return SourceStream(frame, UPSERT if keyed else APPEND, bounded=True)


def snapshot(ctx, schema) -> str:
    """Read the table into ``<checkpoint>/sources/<table>/changes/<n>`` (see the module
    docstring); returns the source's base directory."""
    import tempfile

    spark, table = ctx.spark, ctx.table
    checkpoint = ctx.checkpoint or tempfile.mkdtemp(prefix="streamsql-jdbc-")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", table.name)
    base = f"{checkpoint.rstrip('/')}/sources/jdbc-{safe}"
    done = _numbered_dirs(spark, base + "/changes")
    keyed = bool(table.primary_key)
    if done and not keyed:
        return base  # read once per checkpoint: the stream has (or will have) all of it
    current = read_table(ctx, schema)
    n = (done[-1] + 1) if done else 0
    tmp = f"{base}/_tmp/{uuid.uuid4().hex}"
    try:
        if not keyed:
            current.write.parquet(tmp + "/changes")
            _rename(spark, tmp + "/changes", f"{base}/changes/{n:05d}")
            return base
        from pyspark.sql import functions as F

        data = [f.name for f in schema.fields if f.name not in ("k", "s")]
        current.select(*data).write.parquet(tmp + "/full")
        new = spark.read.schema(current.select(*data).schema).parquet(tmp + "/full")
        fulls = _numbered_dirs(spark, base + "/full")
        if fulls:
            old = spark.read.schema(new.schema).parquet(f"{base}/full/{fulls[-1]:05d}")
            keys = [_stored(i) for i, c in enumerate(table.physical_columns) if c.name in table.primary_key]
            changed = new.subtract(old).withColumn("k", F.lit("U"))
            gone = old.join(new.select(*keys), keys, "left_anti").select(*data).withColumn("k", F.lit("D"))
            changes = changed.unionByName(gone)
        else:
            changes = new.withColumn("k", F.lit("U"))
        changes.withColumn("s", F.lit(f"{n:010d}")).write.parquet(tmp + "/changes")
        # Changes first: a crash before the full copy moves only repeats these changes
        # (idempotent upserts) on the next start, never loses them.
        _rename(spark, tmp + "/changes", f"{base}/changes/{n:05d}")
        _rename(spark, tmp + "/full", f"{base}/full/{n:05d}")
        for old_n in fulls:
            _delete(spark, f"{base}/full/{old_n:05d}")
        return base
    finally:
        _delete(spark, tmp)


def read_table(ctx, schema):
    """The table as a batch DataFrame with the stored column names and declared types."""
    from pyspark.sql import functions as F

    table, options = ctx.table, ctx.options
    db = Database(ctx.spark, table, options)
    try:
        columns = db.columns(options["table-name"])
        if columns is None:
            _fail(table, f"table '{options['table-name']}' does not exist in the database at '{safe_url(db.url)}' "
                         f"(table '{table.name}')", option="table-name", hint="create it or fix 'table-name'")
        physical = list(table.physical_columns)
        for col in physical:
            if col.name.lower() not in columns:
                _fail(table, f"table '{options['table-name']}' in the database has no column '{col.name}' "
                             f"(declared in table '{table.name}')", option="table-name",
                      hint="its columns: " + ", ".join(m["name"] for m in columns.values()))
    finally:
        db.close()
    reader = (ctx.spark.read.format("jdbc").options(**db.spark_options())
              .option("dbtable", options["table-name"]).option("fetchsize", str(options.get("scan.fetch-size", 1000))))
    if options.get("scan.partition.column"):
        column = columns[options["scan.partition.column"].lower()]["name"]
        reader = (reader.option("partitionColumn", db.dialect.quote(column))
                  .option("numPartitions", str(options["scan.partition.num"]))
                  .option("lowerBound", options["scan.partition.lower-bound"])
                  .option("upperBound", options["scan.partition.upper-bound"]))
    try:
        df = reader.load()
        by_lower = {c.lower(): c for c in df.columns}
        out = df.select(*[F.col(f"`{by_lower[c.name.lower()]}`").cast(c.spark_type).alias(_stored(i))
                          for i, c in enumerate(physical)])
        out.schema  # noqa: B018 - resolve now, inside the try
    except PipelineError:
        raise
    except Exception as exc:  # noqa: BLE001
        state, message = sql_error(exc)
        if _states(state, _UNREACHABLE_STATES + _AUTH_STATES):
            raise db.connect_error(exc) from None
        _fail(table, f"table '{options['table-name']}' (table '{table.name}') cannot be read: {message}",
              option="table-name")
    return out


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
)
