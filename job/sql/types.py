"""Flink's type syntax: a type as written in the DDL or a CAST (``DECIMAL(10, 2) NOT NULL``,
``ROW<a INT, b STRING>``, ``TIMESTAMP(3) WITH LOCAL TIME ZONE``) read into a
:class:`~job.sql.logical_types.LogicalType`.

``parse_flink_type("DECIMAL(10, 2) NOT NULL")`` parses a whole string; ``ddl.py`` calls
:func:`parse_type` on its own token stream so type errors point at the user's line and
column. Unknown names get a did-you-mean hint, types Flink has and Spark cannot hold are
refused by name.

The types themselves (what a type is, its family, its Spark type) live in
:mod:`job.sql.logical_types`; their names are re-exported here, where callers have
always imported them from.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Optional

from job.errors import Origin
from job.sql.logical_types import (  # noqa: F401 - re-exported
    APPROXIMATE, BIGINT_TYPE, BINARY_STRING, BOOLEAN_TYPE, BYTES_TYPE, CHARACTER, DATE_TYPE, DOUBLE_TYPE, INT_TYPE,
    INTEGRAL, INTERVALS, MAX_LENGTH, NULL_TYPE, NUMERIC, STRING_TYPE, TIMESTAMPS, LogicalType, decimal,
    spark_field_name, t, timestamp)
from job.sql.tokens import IDENT, NUMBER, STRING, Token, TokenStream


@dataclass(frozen=True)
class FlinkType:
    """A type as parsed from the DDL or a CAST: the LogicalType and the text as written."""

    type: LogicalType
    text: str

    @property
    def spark_type(self) -> str:
        return self.type.spark

    @property
    def nullable(self) -> bool:
        return self.type.nullable


# Type names, for did-you-mean hints.
KNOWN_TYPES = (
    "STRING", "CHAR", "VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER",
    "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "DEC", "NUMERIC", "DATE", "TIME", "TIMESTAMP",
    "TIMESTAMP_LTZ", "BYTES", "BINARY", "VARBINARY", "ARRAY", "MAP", "MULTISET", "ROW",
)
# Names people bring from other SQL dialects.
_ALIASES = {
    "TEXT": "STRING", "LONG": "BIGINT", "BOOL": "BOOLEAN", "DATETIME": "TIMESTAMP",
    "INT64": "BIGINT", "INT32": "INT", "SHORT": "SMALLINT", "BYTE": "TINYINT",
    "STRUCT": "ROW", "BLOB": "BYTES", "NUMBER": "DECIMAL", "TIMESTAMPTZ": "TIMESTAMP_LTZ",
}
# Flink types with no Spark counterpart.
_UNSUPPORTED = ("RAW", "INTERVAL", "NULL", "LEGACY", "STRUCTURED", "SYMBOL", "VARIANT", "DESCRIPTOR")
_SIMPLE = {
    "STRING": STRING_TYPE, "BOOLEAN": BOOLEAN_TYPE, "TINYINT": t("TINYINT"), "SMALLINT": t("SMALLINT"),
    "INT": INT_TYPE, "INTEGER": INT_TYPE, "BIGINT": BIGINT_TYPE, "FLOAT": t("FLOAT"), "DATE": DATE_TYPE,
    "BYTES": BYTES_TYPE,
}
# Nesting deeper than this is certainly a mistake; the limit keeps recursion safe.
_MAX_DEPTH = 40


def to_spark_type(flink_type: str, origin: Optional[Origin] = None) -> str:
    """The Spark DDL type string for a Flink type, e.g. ``ROW<a INT>`` → ``struct<a:int>``.

    Raises :class:`PipelineError` for unknown or unsupported types.
    """
    return parse_flink_type(flink_type, origin).spark_type


def parse_flink_type(flink_type: str, origin: Optional[Origin] = None) -> FlinkType:
    """Parse a whole type string. ``origin`` says where the string starts (for errors)."""
    ts = TokenStream(flink_type, origin or Origin("<type>"))
    parsed = parse_type(ts)
    ts.expect_end("the type")
    return parsed


def logical_type(flink_type: str, origin: Optional[Origin] = None) -> LogicalType:
    """The LogicalType of a type string (``"DECIMAL(10, 2) NOT NULL"``)."""
    return parse_flink_type(flink_type, origin).type


def parse_type(ts: TokenStream) -> FlinkType:
    """Parse a type at the stream's position, including a trailing ``NOT NULL``/``NULL``."""
    first = ts.peek()
    parsed = _type_with_nullability(ts, 0)
    return FlinkType(parsed, ts.text[first.start : ts.prev_end])


def _type_with_nullability(ts: TokenStream, depth: int) -> LogicalType:
    if depth > _MAX_DEPTH:
        raise ts.error("type is nested too deeply", ts.peek())
    parsed = _base_type(ts, depth).nullable_as(_nullability(ts))
    # Suffix forms: ``INT ARRAY``, ``STRING MULTISET`` (each may take its own NOT NULL).
    while True:
        if ts.accept("ARRAY"):
            parsed = t("ARRAY", children=(parsed,))
        elif ts.accept("MULTISET"):
            parsed = t("MULTISET", children=(parsed,))
        else:
            return parsed
        parsed = parsed.nullable_as(_nullability(ts))


def _nullability(ts: TokenStream) -> bool:
    if ts.accept("NOT"):
        ts.expect("NULL")
        return False
    ts.accept("NULL")
    return True


def _base_type(ts: TokenStream, depth: int) -> LogicalType:
    token = ts.peek()
    if token.kind != IDENT:
        raise ts.expected("a type", token)
    name = token.value.upper()
    if name in _SIMPLE:
        ts.next()
        return _SIMPLE[name]
    if name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        ts.next()
        return t(name, _length(ts, name))
    if name == "DOUBLE":
        ts.next()
        ts.accept("PRECISION")
        return t("DOUBLE")
    if name in ("DECIMAL", "DEC", "NUMERIC"):
        ts.next()
        return _decimal(ts, name)
    if name == "TIME":
        ts.next()
        precision = _precision(ts, name, 0)
        if ts.at("WITH"):
            raise ts.error("TIME WITH TIME ZONE is not a Flink type", ts.peek())
        if ts.accept("WITHOUT"):
            ts.expect("TIME", "ZONE")
        return t("TIME", precision)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        ts.next()
        precision = _precision(ts, name, 6)
        ltz = name == "TIMESTAMP_LTZ" or (name == "TIMESTAMP" and _timestamp_zone(ts))
        return timestamp(precision, ltz)
    if name in ("ARRAY", "MULTISET"):
        ts.next()
        ts.expect("<")
        element = _type_with_nullability(ts, depth + 1)
        ts.expect(">", what="'>' to close the " + name)
        return t(name, children=(element,))
    if name == "MAP":
        ts.next()
        ts.expect("<")
        key = _type_with_nullability(ts, depth + 1)
        ts.expect(",", what="',' between the MAP key and value types")
        value = _type_with_nullability(ts, depth + 1)
        ts.expect(">", what="'>' to close the MAP")
        return t("MAP", children=(key, value))
    if name == "ROW":
        ts.next()
        return _row(ts, depth)
    if name in _UNSUPPORTED:
        raise ts.error(f"Flink type {name} has no Spark equivalent and is not supported", token)
    raise ts.error(f"unknown type '{token.value}'", token, hint=_type_hint(name))


def _type_hint(name: str) -> str:
    guess = _ALIASES.get(name) or next(iter(difflib.get_close_matches(name, KNOWN_TYPES, n=1, cutoff=0.6)), None)
    if guess:
        return f"did you mean {guess}?"
    return "supported types: " + ", ".join(KNOWN_TYPES) + "."


def _timestamp_zone(ts: TokenStream) -> bool:
    """``WITHOUT TIME ZONE`` (False), ``WITH LOCAL TIME ZONE`` (True), or nothing (False)."""
    if ts.accept("WITHOUT"):
        ts.expect("TIME", "ZONE")
    elif ts.at("WITH"):
        if ts.accept("WITH", "LOCAL"):
            ts.expect("TIME", "ZONE")
            return True
        if ts.at("WITH", "TIME"):
            raise ts.error(
                "TIMESTAMP WITH TIME ZONE is not supported by Flink", ts.peek(),
                hint="use TIMESTAMP_LTZ (TIMESTAMP WITH LOCAL TIME ZONE) for instants",
            )
        ts.expect("WITH", "LOCAL", "TIME", "ZONE")
    return False


def _params(ts: TokenStream, name: str, most: int) -> list[tuple[int, Token]]:
    """Optional ``(n[, m])`` after a type name: integers with their tokens."""
    if not ts.accept("("):
        return []
    params = []
    while True:
        token = ts.peek()
        if token.kind != NUMBER or not token.text.isdigit():
            raise ts.expected(f"an integer parameter for {name}", token)
        if len(token.text) > 10:  # also keeps int() clear of its digit limit
            raise ts.error(f"{name} parameter {token.text} is too large", token)
        ts.next()
        params.append((int(token.text), token))
        if len(params) == most or not ts.accept(","):
            break
    ts.expect(")", what=f"')' to close the {name} parameters")
    return params


def _length(ts: TokenStream, name: str) -> int:
    for length, token in _params(ts, name, 1):
        if length < 1:
            raise ts.error(f"{name} length must be at least 1", token)
        return length
    return 1  # Flink: CHAR = CHAR(1), VARCHAR = VARCHAR(1)


def _precision(ts: TokenStream, name: str, default: int) -> int:
    for precision, token in _params(ts, name, 1):
        if precision > 9:
            raise ts.error(f"{name} precision must be between 0 and 9", token)
        return precision
    return default


def _decimal(ts: TokenStream, name: str) -> LogicalType:
    params = _params(ts, name, 2)
    precision, scale = 10, 0  # Flink's default: DECIMAL = DECIMAL(10, 0)
    if params:
        precision = params[0][0]
        if not 1 <= precision <= 38:
            raise ts.error(f"{name} precision must be between 1 and 38", params[0][1])
    if len(params) == 2:
        scale = params[1][0]
        if scale > precision:
            raise ts.error(f"{name} scale must be between 0 and the precision ({precision})", params[1][1])
    return decimal(precision, scale)


def _row(ts: TokenStream, depth: int) -> LogicalType:
    """``ROW<a INT, b STRING>`` or ``ROW(a INT, b STRING)``; fields may carry comments."""
    if ts.accept("<"):
        close = ">"
    elif ts.accept("("):
        close = ")"
    else:
        raise ts.expected("'<' or '(' after ROW")
    names: list[str] = []
    types: list[LogicalType] = []
    seen: set[str] = set()
    if ts.accept(close):
        return t("ROW")
    while True:
        name_token = ts.identifier("a ROW field name")
        if name_token.value.lower() in seen:
            raise ts.error(f"duplicate ROW field '{name_token.value}'", name_token)
        seen.add(name_token.value.lower())
        types.append(_type_with_nullability(ts, depth + 1))
        names.append(name_token.value)
        # Flink accepts both ``a INT COMMENT 'x'`` (SQL) and ``a INT 'x'`` (type strings).
        if ts.accept("COMMENT"):
            ts.string("a comment string after COMMENT")
        elif ts.peek().kind == STRING:
            ts.next()
        if ts.accept(","):
            continue
        ts.expect(close, what=f"',' or '{close}' in the ROW")
        return t("ROW", children=tuple(types), field_names=tuple(names))
