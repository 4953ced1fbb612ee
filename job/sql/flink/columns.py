"""A CREATE TABLE's computed columns and time attributes, through the Flink front end.

``ts AS TO_TIMESTAMP(ts_text)`` and ``proc AS PROCTIME()`` are Flink expressions over
the table's physical and metadata columns: they are translated like any other
expression (:func:`computed_column`), and their Flink type becomes the column's type.
"""
from __future__ import annotations

import contextlib
import contextvars
from functools import lru_cache
from typing import Optional

from sqlglot import exp

from job.errors import Origin
from job.sql.flink.query import parse_query
from job.sql.flink.translate import Scope, Settings, Translator, Typed, field_access
from job.sql.types import LogicalType, logical_type, timestamp


class _TableScope(Scope):
    """Names in a computed column: the table's physical and metadata columns, and fields
    of its ROW columns (``person.dateTime`` is field ``dateTime`` of column ``person``)."""

    def __init__(self, table) -> None:
        self.table = table
        self.translator = None

    def column(self, node: exp.Column) -> Typed:
        parts = [p.name for p in node.parts]
        col = self.table.column(parts[0])
        if col is None or col.kind == "computed":
            what = "another computed column" if col is not None else "not a column of the table"
            raise PipelineError_(node, f"'{parts[0]}' in a computed column of '{self.table.name}' is {what}")
        value = Typed(f"`{col.name}`", logical_type(col.flink_type))
        for name in parts[1:]:
            value = field_access(self.translator, value, name, node)
        return value


class PipelineError_(Exception):
    def __init__(self, node, message):
        super().__init__(message)
        self.node = node
        self.message = message


def is_proctime(column) -> bool:
    """``name AS PROCTIME()``: Flink's processing-time attribute."""
    text = (column.expression or "").strip().rstrip(";").upper().replace(" ", "")
    return column.kind == "computed" and text == "PROCTIME()"


# The translation settings of the query whose sources are being opened (its pipeline's
# functions among them): a connector evaluates the computed columns of the table it reads
# (job.connectors.rows.table_frame) without a planner at hand, and a computed column may
# call a user's function as any query may.
_OPENING: contextvars.ContextVar[Optional[Settings]] = contextvars.ContextVar("opening_settings", default=None)


@contextlib.contextmanager
def opening_sources(settings: Optional[Settings]):
    """While a query's sources are opened, computed columns translate with ``settings``."""
    token = _OPENING.set(settings)
    try:
        yield
    finally:
        _OPENING.reset(token)


def computed_column(table, column, settings: Optional[Settings] = None) -> Typed:
    """Spark SQL computing a computed column, and its Flink type."""
    return _computed(table, column.name, settings or _OPENING.get() or Settings())


@lru_cache(maxsize=512)
def _computed(table, name: str, settings: Settings) -> Typed:
    column = table.column(name)
    if is_proctime(column):
        # The time the micro-batch runs: Flink's processing time, a TIMESTAMP_LTZ(3).
        return Typed("current_timestamp()", timestamp(3, ltz=True, nullable=False))
    origin = table.source.origin if table.source else Origin("<table>")
    text = f"SELECT {column.expression} FROM t"
    query = parse_query(text, origin, table.source.text if table.source else None)
    item = query.tree.expressions[0]
    scope = _TableScope(table)
    translator = Translator(query, scope, settings)
    scope.translator = translator
    try:
        return translator.expr(item)
    except PipelineError_ as err:
        raise query.error(err.node, err.message) from None


def column_type(table, column, settings: Optional[Settings] = None) -> LogicalType:
    """The Flink type of any column of a CREATE TABLE."""
    if column.kind == "computed":
        return computed_column(table, column, settings).type
    return logical_type(column.flink_type)
