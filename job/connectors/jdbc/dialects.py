"""What differs between the databases the jdbc connector writes to: one small table.

Everything else (connecting, staging, transactions, type checks) is the same code for
every database; a dialect only says how to quote a name, how to upsert, how to create a
table and its staging copy, and which Flink types become which column types.

PostgreSQL is tested end to end. MySQL/MariaDB is the same code with its own SQL
(``ON DUPLICATE KEY UPDATE``, backquotes); it needs the MariaDB JDBC driver on the
classpath (``org.mariadb:mariadb-java-client``) and is not tested here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

# java.sql.Types, the codes DatabaseMetaData.getColumns reports.
BIT, TINYINT, SMALLINT, INTEGER, BIGINT = -7, -6, 5, 4, -5
FLOAT, REAL, DOUBLE, NUMERIC, DECIMAL = 6, 7, 8, 2, 3
CHAR, VARCHAR, LONGVARCHAR, NCHAR, NVARCHAR, LONGNVARCHAR, CLOB, NCLOB = 1, 12, -1, -15, -9, -16, 2005, 2011
DATE, TIME, TIMESTAMP, TIMESTAMP_TZ = 91, 92, 93, 2014
BINARY, VARBINARY, LONGVARBINARY, BLOB = -2, -3, -4, 2004
BOOLEAN = 16

STRING_TYPES = {CHAR, VARCHAR, LONGVARCHAR, NCHAR, NVARCHAR, LONGNVARCHAR, CLOB, NCLOB}
BINARY_TYPES = {BINARY, VARBINARY, LONGVARBINARY, BLOB}
# Integer column types by the number of bits they hold.
INTEGER_BITS = {TINYINT: 8, SMALLINT: 16, INTEGER: 32, BIGINT: 64}
SPARK_INTEGER_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
# Decimal digits an integer of that many bits needs.
INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


@dataclass(frozen=True)
class Dialect:
    name: str
    url_prefixes: tuple[str, ...]
    driver: str
    quote_char: str
    create_stage: str            # {stage} {columns} {table}: an empty copy of the table's columns
    # Connection properties that bound how long an unreachable server can keep us waiting.
    timeouts: Mapping[str, str]
    types: Callable[[object, bool], Optional[str]]   # (Column, is_key) → column type, None: cannot
    upsert_clause: Callable[["Dialect", Sequence[str], Sequence[str]], str]

    def quote(self, name: str) -> str:
        q = self.quote_char
        return q + name.replace(q, q + q) + q

    def upsert(self, pk: Sequence[str], others: Sequence[str]) -> str:
        """The clause after ``INSERT INTO t (…) SELECT …`` that turns it into an upsert."""
        return self.upsert_clause(self, pk, others)


_LENGTH = re.compile(r"^\s*(VAR)?CHAR\s*\(\s*(\d+)\s*\)", re.I)
_BINARY_LENGTH = re.compile(r"^\s*(VAR)?BINARY\s*\(\s*(\d+)\s*\)", re.I)
_TS_PRECISION = re.compile(r"^\s*TIMESTAMP(_LTZ)?\s*(?:\(\s*(\d)\s*\))?", re.I)


def declared_length(col) -> Optional[int]:
    """n of a column declared CHAR(n)/VARCHAR(n); None for STRING."""
    m = _LENGTH.match(col.flink_type)
    return int(m.group(2)) if m else None


def is_ltz(col) -> bool:
    text = col.flink_type.upper()
    return text.startswith("TIMESTAMP_LTZ") or "LOCAL TIME ZONE" in text


def _timestamp_precision(col) -> str:
    m = _TS_PRECISION.match(col.flink_type)
    return f"({m.group(2)})" if m and m.group(2) else ""


def _postgres_type(col, is_key: bool) -> Optional[str]:
    t = col.spark_type.lower()
    if t == "string":
        m = _LENGTH.match(col.flink_type)
        if col.flink_type.upper().startswith("TIME"):
            return None  # Flink TIME is a string in Spark: no column type would round-trip
        return f"{'VARCHAR' if m.group(1) else 'CHAR'}({m.group(2)})" if m else "TEXT"
    if t == "timestamp":
        return ("TIMESTAMPTZ" if is_ltz(col) else "TIMESTAMP") + _timestamp_precision(col)
    if t.startswith("decimal"):
        return "NUMERIC" + t[len("decimal"):]
    return {"boolean": "BOOLEAN", "tinyint": "SMALLINT", "smallint": "SMALLINT", "int": "INTEGER",
            "bigint": "BIGINT", "float": "REAL", "double": "DOUBLE PRECISION", "date": "DATE",
            "binary": "BYTEA"}.get(t)


def _mysql_type(col, is_key: bool) -> Optional[str]:
    t = col.spark_type.lower()
    if t == "string":
        if col.flink_type.upper().startswith("TIME"):
            return None
        m = _LENGTH.match(col.flink_type)
        if m:
            return f"{'VARCHAR' if m.group(1) else 'CHAR'}({m.group(2)})"
        return "VARCHAR(255)" if is_key else "LONGTEXT"  # a TEXT column cannot be a key
    if t == "timestamp":
        return ("TIMESTAMP" if is_ltz(col) else "DATETIME") + _timestamp_precision(col)
    if t.startswith("decimal"):
        return "DECIMAL" + t[len("decimal"):]
    if t == "binary":
        m = _BINARY_LENGTH.match(col.flink_type)
        return f"{'VARBINARY' if m.group(1) else 'BINARY'}({m.group(2)})" if m else ("VARBINARY(255)" if is_key else "LONGBLOB")
    return {"boolean": "BOOLEAN", "tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INT",
            "bigint": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "date": "DATE"}.get(t)


def _on_conflict(d: Dialect, pk: Sequence[str], others: Sequence[str]) -> str:
    keys = ", ".join(d.quote(c) for c in pk)
    if not others:
        return f" ON CONFLICT ({keys}) DO NOTHING"
    return f" ON CONFLICT ({keys}) DO UPDATE SET " + ", ".join(f"{d.quote(c)} = EXCLUDED.{d.quote(c)}" for c in others)


def _on_duplicate_key(d: Dialect, pk: Sequence[str], others: Sequence[str]) -> str:
    cols = others or pk  # a table of key columns only: a no-op update keeps the row
    return " ON DUPLICATE KEY UPDATE " + ", ".join(f"{d.quote(c)} = VALUES({d.quote(c)})" for c in cols)


POSTGRES = Dialect(
    name="PostgreSQL",
    url_prefixes=("jdbc:postgresql:",),
    driver="org.postgresql.Driver",
    quote_char='"',
    # UNLOGGED: staging rows live for one micro-batch; no WAL for them.
    create_stage="CREATE UNLOGGED TABLE {stage} AS SELECT {columns} FROM {table} WHERE 1 = 0",
    timeouts={"connectTimeout": "10", "loginTimeout": "10"},
    types=_postgres_type,
    upsert_clause=_on_conflict,
)

MYSQL = Dialect(
    name="MySQL/MariaDB",
    url_prefixes=("jdbc:mariadb:", "jdbc:mysql:"),
    driver="org.mariadb.jdbc.Driver",
    quote_char="`",
    create_stage="CREATE TABLE {stage} AS SELECT {columns} FROM {table} WHERE 1 = 0",
    timeouts={"connectTimeout": "10000"},
    types=_mysql_type,
    upsert_clause=_on_duplicate_key,
)

DIALECTS = (POSTGRES, MYSQL)


def dialect_for(url: str) -> Optional[Dialect]:
    low = (url or "").strip().lower()
    return next((d for d in DIALECTS if low.startswith(d.url_prefixes)), None)


def can_hold(col, meta: Mapping[str, object]) -> Optional[str]:
    """None if a column described by ``meta`` (DatabaseMetaData.getColumns: data_type,
    type_name, size, digits) can hold every value of the declared column ``col``;
    otherwise why not. Lengths of STRING columns are left to write time: a STRING
    declared against VARCHAR(n) is how everyone writes it, and a longer value fails its
    batch with a clear error then."""
    t = col.spark_type.lower()
    code, size, digits = int(meta["data_type"]), int(meta["size"] or 0), int(meta["digits"] or 0)
    name = str(meta["type_name"]).lower()
    if t == "string":
        if code not in STRING_TYPES:
            return "it is not a character column"
        want = declared_length(col)
        if want is not None and 0 < size < want:
            return f"it holds at most {size} characters, the declared type {want}"
        return None
    if t == "boolean":
        if code in (BOOLEAN, BIT) or (code == TINYINT and size <= 3):
            return None
        return "it is not a boolean column"
    if t in SPARK_INTEGER_BITS:
        bits = SPARK_INTEGER_BITS[t]
        if code in INTEGER_BITS:
            return None if INTEGER_BITS[code] >= bits else "its integer type is narrower"
        if code in (NUMERIC, DECIMAL):
            # PostgreSQL reports an unconstrained NUMERIC with a huge size.
            return None if size > 1000 or size - digits >= INTEGER_DIGITS[bits] else "it has too few integer digits"
        if code in (DOUBLE, FLOAT) and bits <= 32:
            return None
        return "it is not a numeric column that holds every value"
    if t in ("float", "double"):
        if code in (DOUBLE, FLOAT) or (code == REAL and t == "float"):
            return None
        return "it is not a floating-point column wide enough"
    if t.startswith("decimal"):
        precision, scale = (int(x) for x in re.findall(r"\d+", t))
        if code in (NUMERIC, DECIMAL):
            if size > 1000:
                return None
            if size - digits >= precision - scale and digits >= scale:
                return None
            return f"it is DECIMAL({size},{digits})"
        return "it is not a decimal column"
    if t == "date":
        return None if code in (DATE, TIMESTAMP, TIMESTAMP_TZ) else "it is not a date column"
    if t == "timestamp":
        return None if code in (TIMESTAMP, TIMESTAMP_TZ) or "timestamp" in name else "it is not a timestamp column"
    if t == "binary":
        return None if code in BINARY_TYPES else "it is not a binary column"
    return f"type {col.flink_type} cannot be stored by the jdbc connector"
