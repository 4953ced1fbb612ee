"""Flink's type rules: what type an expression has, as Flink's planner derives it.

The translator keeps the Flink type of every expression (a :class:`LogicalType`) next to
its Spark form, because Flink's answer often depends on it: ``5 / 2`` is ``2`` for two
INTs, ``AVG`` of an INT column is an INT, ``SUM`` of DECIMAL(10, 2) is DECIMAL(38, 2),
and a TIMESTAMP_LTZ is shown in the session's time zone where a TIMESTAMP is not.
The rules follow Flink's ``LogicalTypeMerging`` and ``LogicalTypeCasts``.
"""
from __future__ import annotations

from typing import Iterable, Optional

from job.sql.types import (BIGINT_TYPE, DOUBLE_TYPE, MAX_LENGTH, NULL_TYPE, LogicalType, decimal, t)

MAX_PRECISION = 38
MIN_ADJUSTED_SCALE = 6
# An integer type as a DECIMAL, when it meets one.
INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_INTEGER_ORDER = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def any_nullable(*types: LogicalType) -> bool:
    return any(x.nullable for x in types)


def as_decimal(x: LogicalType) -> LogicalType:
    if x.name == "DECIMAL":
        return x
    return decimal(INTEGER_DIGITS[x.name], 0, x.nullable)


def adjust_precision_scale(precision: int, scale: int) -> tuple[int, int]:
    """Flink's LogicalTypeMerging.adjustPrecisionScale (as SQL Server's): keep the integer
    digits, give up fraction digits down to 6 when the precision exceeds 38."""
    if precision <= MAX_PRECISION:
        return precision, scale
    int_digits = precision - scale
    min_scale = min(scale, MIN_ADJUSTED_SCALE)
    return MAX_PRECISION, max(MAX_PRECISION - int_digits, min_scale)


def _decimal_result(p: int, s: int, nullable: bool) -> LogicalType:
    p, s = adjust_precision_scale(p, s)
    return decimal(p, s, nullable)


def arithmetic(op: str, a: LogicalType, b: LogicalType) -> Optional[LogicalType]:
    """Result type of ``a op b`` for op in + - * / %, or None if Flink refuses it."""
    nullable = any_nullable(a, b)
    if a.is_null and b.is_null:
        return NULL_TYPE
    if a.is_null:
        a = b
    if b.is_null:
        b = a
    if not (a.is_numeric and b.is_numeric):
        return None
    if op == "%" and not (a.is_exact and b.is_exact):
        return None  # Flink's MOD takes exact numbers only
    if a.name in ("FLOAT", "DOUBLE") or b.name in ("FLOAT", "DOUBLE"):
        if "DECIMAL" in (a.name, b.name):
            return t("DOUBLE", nullable=nullable)
        # Calcite ranks FLOAT and DOUBLE alike: the first approximate operand's type wins
        # (FLOAT + DOUBLE is a FLOAT, DOUBLE + FLOAT a DOUBLE).
        first = a if a.name in ("FLOAT", "DOUBLE") else b
        return t(first.name, nullable=nullable)
    if a.name == "DECIMAL" or b.name == "DECIMAL":
        da, db = as_decimal(a), as_decimal(b)
        p1, s1, p2, s2 = da.precision, da.scale, db.precision, db.scale
        if op in ("+", "-"):
            scale = max(s1, s2)
            return _decimal_result(max(p1 - s1, p2 - s2) + scale + 1, scale, nullable)
        if op == "*":
            return _decimal_result(p1 + p2 + 1, s1 + s2, nullable)
        if op == "/":
            scale = max(MIN_ADJUSTED_SCALE, s1 + p2 + 1)
            return _decimal_result(p1 - s1 + s2 + scale, scale, nullable)
        # %: Flink's MOD keeps the integer digits of the smaller operand
        scale = max(s1, s2)
        return _decimal_result(min(p1 - s1, p2 - s2) + scale, scale, nullable)
    # two integer types: the wider one (Flink does not widen INT + INT to BIGINT)
    if op == "%":
        name = b.name  # MOD's result has the divisor's type
        return t(name, nullable=nullable)
    name = max(a.name, b.name, key=_INTEGER_ORDER.index)
    return t(name, nullable=nullable)


def least_restrictive(types: Iterable[LogicalType]) -> Optional[LogicalType]:
    """The type every one of ``types`` converts to (CASE branches, COALESCE, UNION, IN
    lists, ARRAY elements), or None if there is none."""
    types = list(types)
    if not types:
        return None
    nullable = any(x.nullable for x in types)
    known = [x for x in types if not x.is_null]
    if not known:
        return NULL_TYPE
    first = known[0]
    if all(x == first.nullable_as(x.nullable) for x in known):
        return first.nullable_as(nullable)
    names = {x.name for x in known}
    if all(x.is_numeric for x in known):
        if names & {"DOUBLE", "FLOAT"}:
            return t("DOUBLE" if "DOUBLE" in names or names - {"FLOAT"} else "FLOAT", nullable=nullable)
        if "DECIMAL" in names:
            ds = [as_decimal(x) for x in known]
            scale = max(d.scale for d in ds)
            int_digits = max(d.precision - d.scale for d in ds)
            p, s = adjust_precision_scale(int_digits + scale, scale)
            return decimal(p, s, nullable)
        return t(max(names, key=_INTEGER_ORDER.index), nullable=nullable)
    if all(x.is_character for x in known):
        if names == {"CHAR"} and len({x.precision for x in known}) == 1:
            return first.nullable_as(nullable)
        length = max(x.precision or 1 for x in known)
        if "VARCHAR" in names or names == {"CHAR"}:
            # Flink: CHAR(n) and CHAR(m) with n != m meet as VARCHAR(max(n, m))
            return t("VARCHAR", min(length, MAX_LENGTH), nullable=nullable)
    if all(x.is_binary for x in known):
        return t("VARBINARY", max(x.precision or 1 for x in known), nullable=nullable)
    if all(x.is_timestamp for x in known):
        name = "TIMESTAMP_LTZ" if names == {"TIMESTAMP_LTZ"} else "TIMESTAMP"
        if len(names) > 1:
            return None
        return t(name, max(x.precision or 0 for x in known), nullable=nullable)
    if names == {"ARRAY"}:
        element = least_restrictive(x.children[0] for x in known)
        return None if element is None else t("ARRAY", children=(element,), nullable=nullable)
    if names == {"MAP"}:
        key = least_restrictive(x.children[0] for x in known)
        value = least_restrictive(x.children[1] for x in known)
        return None if key is None or value is None else t("MAP", children=(key, value), nullable=nullable)
    if names == {"ROW"} and len({len(x.children) for x in known}) == 1:
        fields = [least_restrictive(x.children[i] for x in known) for i in range(len(first.children))]
        if any(f is None for f in fields):
            return None
        return t("ROW", children=tuple(fields), field_names=first.field_names, nullable=nullable)
    if len(names) == 1:
        return first.nullable_as(nullable)
    return None


def comparable(a: LogicalType, b: LogicalType) -> bool:
    """Can Flink compare values of these types with = < > (no implicit cast between
    families, except numbers with numbers and DATE with TIMESTAMP)?"""
    if a.is_null or b.is_null:
        return True
    if a.is_numeric and b.is_numeric:
        return True
    if a.is_character and b.is_character:
        return True
    if a.is_binary and b.is_binary:
        return True
    if a.is_timestamp and b.is_timestamp:
        return True   # a TIMESTAMP meets a TIMESTAMP_LTZ as one (Flink's implicit cast)
    if a.name == b.name:
        return True
    return False


def sum_type(x: LogicalType) -> LogicalType:
    """SUM's result: the argument's type for integers and approximate numbers,
    DECIMAL(38, s) for DECIMAL(p, s); always nullable."""
    if x.name == "DECIMAL":
        return decimal(MAX_PRECISION, x.scale)
    return x.nullable_as(True)


def avg_type(x: LogicalType) -> LogicalType:
    """AVG's result: the argument's type (an INT column averages to an INT, truncated),
    DECIMAL(38, max(6, s)) for DECIMAL(p, s)... as Flink's AvgAggFunction."""
    if x.name == "DECIMAL":
        return decimal(MAX_PRECISION, max(MIN_ADJUSTED_SCALE, x.scale))
    return x.nullable_as(True)


COUNT_TYPE = BIGINT_TYPE.nullable_as(False)
