"""Typed values of the Flink front end: the bottom layer every part of it shares.

:class:`Typed` is Spark SQL text and the Flink type of its value; :class:`Scope` says what
names mean where an expression is translated; :class:`Settings` are the session settings
that change an expression's meaning. Here too are the small pieces the translator, the
casts and the function library all build with (string literals, Java's integer
wrap-around, computing a value once, the untyped-NULL check) and the registry of the
translator's handlers, so that none of them imports another to get them.

Nothing here imports the rest of the front end; functions take the translator as ``tr``
(anything with ``expr``, ``cast``, ``refuse``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from sqlglot import exp

from job.errors import PipelineError
from job.sql.logical_types import LogicalType, t


@dataclass(frozen=True)
class Typed:
    """Spark SQL text and the Flink type of its value."""

    sql: str
    type: LogicalType

    def __str__(self) -> str:
        return self.sql


def spark_string(value: str) -> str:
    """A Spark SQL string literal holding exactly ``value``."""
    return exp.Literal.string(value).sql(dialect="spark")


def lit(value: str) -> Typed:
    """A CHAR(n) NOT NULL literal, as Flink types ``'text'``."""
    return Typed(spark_string(value), t("CHAR", max(1, len(value)), nullable=False))


class Scope:
    """What names mean where an expression is translated. The planner subclasses it."""

    def column(self, node: exp.Column) -> Typed:  # pragma: no cover - planner's job
        raise PipelineError(f"column '{node.sql()}' is not known here")

    def replacement(self, node: exp.Expression) -> Optional[Typed]:
        """An already computed value for ``node`` (an aggregate call, a GROUP BY
        expression, a window column), or None."""
        return None


@dataclass(frozen=True)
class Settings:
    """Session settings that change what an expression means (Flink's ``SET`` keys)."""

    local_time_zone: str = "UTC"          # table.local-time-zone
    # The pipeline's user-defined functions (CREATE FUNCTION): ``lookup(name)`` gives a
    # job.sql.flink.functions.user.UserFunction or None (job.plan.user_functions).
    functions: Optional[object] = None

    def user_function(self, name: str, builtin: bool):
        return self.functions.lookup(name, builtin) if self.functions is not None else None

    @classmethod
    def from_conf(cls, conf, functions=None) -> "Settings":
        zone = (conf or {}).get("table.local-time-zone") or system_time_zone()
        return cls(local_time_zone=zone, functions=functions)


def system_time_zone() -> str:
    """Flink's default ``table.local-time-zone`` is the JVM's zone: the machine's."""
    import os

    zone = os.environ.get("TZ", "").lstrip(":")
    if zone:
        return zone
    try:
        target = os.path.realpath("/etc/localtime")
        marker = "/zoneinfo/"
        if marker in target:
            return target.split(marker, 1)[1]
    except OSError:
        pass
    return "UTC"




# --------------------------------------------------------------------------- names and values

def field_access(tr, base: Typed, name: str, node: exp.Expression) -> Typed:
    if base.type.name != "ROW":
        tr.refuse(node, f"'{name}' is not a field: {base.type} has no fields")
    for i, field_name in enumerate(base.type.field_names):
        if field_name == name or field_name.lower() == name.lower():
            child = base.type.children[i]
            return Typed(f"{base.sql}.`{field_name.replace('`', '``')}`",
                         child.nullable_as(child.nullable or base.type.nullable))
    tr.refuse(node, f"unknown field '{name}' of {base.type}")



# Integer types narrower than BIGINT, by their bits: their arithmetic wraps around as Java's does.
NARROW_INTEGERS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32}
_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}


def wrap_integer(sql: str, type_: LogicalType) -> str:
    """Java's wrap-around of an integer result: ``sql`` (an exact number of any size:
    BIGINT, or DECIMAL(38, 0) for BIGINT results) kept to ``type_``'s low-order bits."""
    bits = _BITS[type_.name]
    half, full = 2 ** (bits - 1), 2 ** bits
    spark = type_.spark
    if bits < 64:  # the low bits as a signed number: ((x & mask) ^ half) - half, never overflowing
        return f"CAST(((CAST({sql} AS BIGINT) & {full - 1}L) ^ {half}L) - {half}L AS {spark})"
    return (f"CAST(pmod(CAST({sql} AS DECIMAL(38, 0)) + CAST({half} AS DECIMAL(38, 0)), "
            f"CAST({full} AS DECIMAL(38, 0))) - CAST({half} AS DECIMAL(38, 0)) AS BIGINT)")



_names = iter(range(1, 1 << 62))


def lambda_var(prefix: str = "v") -> str:
    """A fresh name for a Spark lambda variable (nested lambdas must not shadow each other)."""
    return f"_{prefix}{next(_names)}"


def let(sql: str, body: Callable[[str], str]) -> str:
    """``body`` of a value computed once: Spark SQL has no LET, so the value goes through a
    one-element array and ``transform`` (``body`` gets the lambda variable's name)."""
    v = lambda_var()
    return f"element_at(transform(array({sql}), {v} -> {body(v)}), 1)"


def refuse_untyped_null(tr, *operands: exp.Expression) -> None:
    """Flink (Calcite) rejects an untyped NULL literal as an operand ("Illegal use of
    'NULL'"): it has no type to work with."""
    for operand in operands:
        inner = operand
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Null):
            # sqlglot keeps no position on NULL itself: point at the nearest node that has one
            at = inner
            while at is not None and not at.meta.get("start") and at.parent is not None:
                at = at.parent
            tr.refuse(at, "Illegal use of 'NULL'", hint="give the NULL a type: CAST(NULL AS INT)")


# --------------------------------------------------------------------------- handlers

# The translator's handler for each kind of expression node (job.sql.flink.translate and
# job.sql.flink.operators register theirs with @handles).
HANDLERS: dict[type, Callable] = {}


def handles(*classes):
    def register(fn):
        for cls in classes:
            HANDLERS[cls] = fn
        return fn
    return register
