"""The database behind a jdbc table, as the driver reaches it: JDBC connections made by
the driver JVM (through py4j), the database's errors in one line, and its catalog
(columns, keys) for the checks made before a query starts.
"""
from __future__ import annotations

import re
from typing import Optional

from job.connectors.hadoop import java_chain
from job.connectors.jdbc.dialects import Dialect, dialect_for
from job.errors import EXIT_UNREACHABLE, PipelineError
from job.options import MASK, SECRET_PLAIN_PAIR, table_error

# SQLSTATE classes (and codes) that mean "the server is not there" / "not let in".
UNREACHABLE_STATES = ("08", "3D000", "57P03")
AUTH_STATES = ("28",)


def safe_url(url: str) -> str:
    """The URL with any password=… (token=…) value masked (it may be embedded there)."""
    return SECRET_PLAIN_PAIR.sub(lambda m: f"{m.group(1)}={MASK}", url or "")


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


def states(state: Optional[str], prefixes) -> bool:
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
            raise table_error(self.table, f"JDBC driver class '{self.driver_class}' of table '{self.table.name}' is not on "
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
            raise table_error(self.table, f"'url' = '{safe_url(self.url)}' of table '{self.table.name}' is not a URL the "
                              f"driver {self.driver_class} accepts", option="url")
        self._conn = conn
        return conn

    def connect_error(self, exc) -> PipelineError:
        state, message = sql_error(exc)
        where = f"table '{self.table.name}': the database at '{safe_url(self.url)}'"
        if states(state, AUTH_STATES):
            return table_error(self.table, f"{where} rejected the credentials of 'username' = "
                                           f"'{self.options.get('username')}': {message}", option="username",
                               exit_code=EXIT_UNREACHABLE, hint="check 'username' and 'password'")
        return table_error(self.table, f"{where} cannot be reached: {message}", option="url", exit_code=EXIT_UNREACHABLE,
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
