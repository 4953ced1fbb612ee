"""Flink's arithmetic and comparison as Spark SQL, shared by the operators
(job.sql.flink.operators) and the functions that compute the same way (MOD, POWER …,
GREATEST, OVERLAPS …): Java's integer arithmetic, Flink's DECIMAL results, IEEE division,
time ± interval, and which values compare.
"""
from __future__ import annotations

from typing import Optional

from job.sql.flink import rules
from job.sql.flink.typed import NARROW_INTEGERS, Typed, wrap_integer
from job.sql.logical_types import BOOLEAN_TYPE, LogicalType, t


_TRY = {"+": "try_add", "-": "try_subtract", "*": "try_multiply"}


def arithmetic_sql(tr, op: str, a: Typed, b: Typed, result: LogicalType, node) -> Typed:
    """``a op b`` computed as Flink computes it (Java arithmetic): integers wrap around on
    overflow, DECIMAL overflow is NULL, DOUBLE division by zero is an infinity or NaN.
    Division of exact numbers by zero fails the query, in Flink and here."""
    if result.is_null:
        return Typed("NULL", result)
    if result.name in NARROW_INTEGERS:
        if op == "/":  # Integer.MIN_VALUE / -1 wraps
            return Typed(wrap_integer(f"({a.sql}) div ({b.sql})", result), result)
        if op == "%":
            return Typed(f"CAST(({a.sql}) % ({b.sql}) AS {result.spark})", result)
        return Typed(wrap_integer(f"CAST({a.sql} AS BIGINT) {op} CAST({b.sql} AS BIGINT)", result), result)
    if result.name == "BIGINT":
        la, lb = f"CAST({a.sql} AS BIGINT)", f"CAST({b.sql} AS BIGINT)"
        if op == "/":  # Long.MIN_VALUE / -1 wraps to itself
            return Typed(f"(CASE WHEN {lb} = -1 THEN {negate_long(la)} ELSE {la} div {lb} END)", result)
        if op == "%":
            return Typed(f"(CASE WHEN {lb} = -1 THEN 0L * {la} ELSE {la} % {lb} END)", result)
        exact = f"CAST({a.sql} AS DECIMAL(38, 0)) {op} CAST({b.sql} AS DECIMAL(38, 0))"
        return Typed(f"coalesce({_TRY[op]}({la}, {lb}), {wrap_integer(exact, result)})", result)
    if result.name == "DECIMAL":
        da = a if a.type.name == "DECIMAL" else tr.cast(a, rules.as_decimal(a.type), node)
        db = b if b.type.name == "DECIMAL" else tr.cast(b, rules.as_decimal(b.type), node)
        if op == "/":  # by zero: Spark's own division fails the query, as Flink's does
            value = f"IF(({db.sql}) = 0, ({da.sql}) / ({db.sql}), try_divide({da.sql}, {db.sql}))"
        elif op == "%":
            value = f"({da.sql}) % ({db.sql})"
        else:
            value = f"{_TRY[op]}({da.sql}, {db.sql})"
        # A value beyond DECIMAL(38) or the result's precision is NULL in Flink.
        return Typed(f"try_cast({value} AS {result.spark})", result)
    x, y = f"CAST({a.sql} AS {result.spark})", f"CAST({b.sql} AS {result.spark})"
    if op == "/":
        return Typed(ieee_divide(x, y, result.spark), result)
    return Typed(f"CAST({x} {op} {y} AS {result.spark})", result)


def negate_long(sql: str) -> str:
    return f"IF({sql} = -9223372036854775808L, {sql}, -{sql})"


def ieee_divide(x: str, y: str, spark_type: str = "DOUBLE") -> str:
    """Java's floating-point division: by zero it is ±Infinity, or NaN for 0/0 (Spark's
    ANSI division fails instead)."""
    inf = f"CAST('Infinity' AS {spark_type})"
    return (f"(CASE WHEN {x} IS NULL OR {y} IS NULL THEN CAST(NULL AS {spark_type}) "
            f"WHEN {y} <> 0 OR isnan({y}) THEN CAST({x} / {y} AS {spark_type}) "
            f"WHEN {x} = 0 OR isnan({x}) THEN CAST('NaN' AS {spark_type}) "
            f"WHEN ({x} > 0) = (CAST({y} AS STRING) NOT LIKE '-%') THEN {inf} ELSE -{inf} END)")


def temporal_arithmetic(tr, op: str, a: Typed, b: Typed, node) -> Optional[Typed]:
    """DATE/TIMESTAMP ± INTERVAL, INTERVAL ± INTERVAL, INTERVAL * number."""
    names = (a.type.name, b.type.name)
    if not (a.type.is_interval or b.type.is_interval):
        if a.type.name in ("DATE", "TIMESTAMP", "TIMESTAMP_LTZ") or b.type.name in ("DATE", "TIMESTAMP", "TIMESTAMP_LTZ"):
            tr.refuse(node, f"cannot apply '{op}' to {a.type} and {b.type}",
                      hint="TIMESTAMPDIFF(unit, a, b) gives the difference of two times")
        return None
    nullable = rules.any_nullable(a.type, b.type)
    if op in ("+", "-") and a.type.name in ("DATE", "TIMESTAMP", "TIMESTAMP_LTZ") and b.type.is_interval:
        if a.type.name == "DATE" and b.type.name == "INTERVAL_DAY_TIME":
            # Flink: DATE + INTERVAL DAY TO SECOND stays a DATE (whole days)
            return Typed(f"CAST(CAST({a.sql} AS TIMESTAMP) {op} {b.sql} AS DATE)", a.type.nullable_as(nullable))
        return Typed(f"({a.sql} {op} {b.sql})", a.type.nullable_as(nullable))
    if op == "+" and b.type.name in ("DATE", "TIMESTAMP", "TIMESTAMP_LTZ") and a.type.is_interval:
        return temporal_arithmetic(tr, op, b, a, node)
    if op in ("+", "-") and a.type.name == b.type.name and a.type.is_interval:
        return Typed(f"({a.sql} {op} {b.sql})", a.type.nullable_as(nullable))
    if op in ("*", "/") and a.type.is_interval and b.type.is_numeric:
        return Typed(f"({a.sql} {op} {b.sql})", a.type.nullable_as(nullable))
    if op == "*" and b.type.is_interval and a.type.is_numeric:
        return Typed(f"({b.sql} * {a.sql})", b.type.nullable_as(nullable))
    tr.refuse(node, f"cannot apply '{op}' to {a.type} and {b.type}")



def comparison(tr, op: str, a: Typed, b: Typed, node) -> Typed:
    if not rules.comparable(a.type, b.type):
        if {a.type.name, b.type.name} <= {"DATE", "TIMESTAMP", "TIMESTAMP_LTZ"}:
            tr.refuse(node, f"Cannot apply '{op}' to arguments of type '<{a.type.summary(False)}> {op} "
                            f"<{b.type.summary(False)}>'", hint="CAST the DATE to a TIMESTAMP, or the TIMESTAMP to a DATE")
        tr.refuse(node, f"implicit type conversion between {a.type.summary(False)} and {b.type.summary(False)} "
                        "is not supported", hint="CAST one side to the other's type")
    a, b = comparable_pair(tr, a, b, node)
    nullable = op != "<=>" and rules.any_nullable(a.type, b.type)
    return Typed(f"({a.sql} {op} {b.sql})", BOOLEAN_TYPE.nullable_as(nullable))


def comparable_pair(tr, a: Typed, b: Typed, node) -> tuple[Typed, Typed]:
    """Values Spark compares the way Flink does: a TIMESTAMP meets a TIMESTAMP_LTZ as a
    TIMESTAMP_LTZ (its wall-clock time read in the local time zone)."""
    if {a.type.name, b.type.name} == {"TIMESTAMP", "TIMESTAMP_LTZ"}:
        if a.type.name == "TIMESTAMP":
            a = tr.cast(a, t("TIMESTAMP_LTZ", a.type.precision, nullable=a.type.nullable), node)
        else:
            b = tr.cast(b, t("TIMESTAMP_LTZ", b.type.precision, nullable=b.type.nullable), node)
    return a, b

