"""Flink expression → Spark SQL with Flink's meaning.

:class:`Translator` walks a Flink expression tree (from :mod:`job.sql.flink.query`) and
returns :class:`Typed`: Spark SQL text that computes what Flink computes, and the Flink
type of the result. Names are resolved by a :class:`Scope` (the planner's relation: user
names → internal columns and their Flink types). Function calls go to the function
library (:mod:`job.sql.flink.functions`), which maps each Flink function with Flink's
semantics or refuses it by name.

Anything the translator does not know is refused with the user's line and column —
Spark never sees Flink SQL it would read differently.

Semantics handled here, for every expression:

* literals: strings have no escapes (already so in the dialect), ``'abc'`` is CHAR(3),
  integer literals are INT or BIGINT, ``1.50`` is DECIMAL(3, 2), ``1e3`` is DOUBLE;
* arithmetic with Flink's result types: INT / INT is an INT (truncated), INT + INT
  wraps around on overflow as in Java, DECIMAL precision and scale by Flink's rules;
* comparisons only between comparable families (Flink has no implicit string ↔ number
  cast); ``IS [NOT] DISTINCT FROM`` is null-safe;
* ``arr[i]`` is 1-based and NULL out of range, ``map[k]`` NULL for a missing key;
* CAST follows Flink's conversions (see :mod:`job.sql.flink.casts`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Callable, NoReturn, Optional

from sqlglot import exp

from job.errors import PipelineError
from job.sql.flink import rules
from job.sql.flink.dialect import TypeRef
from job.sql.flink.query import Query
from job.sql.types import (BOOLEAN_TYPE, NULL_TYPE, STRING_TYPE, LogicalType, decimal, logical_type, t)


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

    @classmethod
    def from_conf(cls, conf) -> "Settings":
        zone = (conf or {}).get("table.local-time-zone") or system_time_zone()
        return cls(local_time_zone=zone)


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


@dataclass
class Translator:
    query: Query
    scope: Scope
    settings: Settings = field(default_factory=Settings)

    # ------------------------------------------------------------------ errors
    def refuse(self, node: Optional[exp.Expression], message: str, hint: Optional[str] = None) -> NoReturn:
        raise self.query.error(node, message, hint)

    # ------------------------------------------------------------------ entry
    def expr(self, node: exp.Expression) -> Typed:
        replaced = self.scope.replacement(node)
        if replaced is not None:
            return replaced
        handler = _HANDLERS.get(type(node))
        if handler is None:
            for cls, h in _HANDLERS.items():
                if isinstance(node, cls):
                    handler = h
                    break
        if handler is None:
            self.refuse(node, f"'{self.query.flink_sql(node)}' is not supported yet")
        return handler(self, node)

    def condition(self, node: exp.Expression, where: str) -> Typed:
        """A boolean expression (WHERE, HAVING, ON, CASE WHEN)."""
        out = self.expr(node)
        if out.type.name not in ("BOOLEAN", "NULL"):
            self.refuse(node, f"{where} must be a boolean expression, not {out.type}")
        if out.type.is_null:  # WHERE NULL: an unknown condition, which keeps no row
            return Typed("CAST(NULL AS BOOLEAN)", BOOLEAN_TYPE)
        return out

    # ------------------------------------------------------------------ helpers
    def cast(self, value: Typed, to: LogicalType, node: Optional[exp.Expression] = None, safe: bool = False) -> Typed:
        from job.sql.flink.casts import cast

        return cast(self, value, to, node, safe)

    def coerce(self, values: list[Typed], node: exp.Expression, what: str) -> tuple[list[Typed], LogicalType]:
        """Bring values to their least restrictive common type (CASE, COALESCE, IN)."""
        common = rules.least_restrictive([v.type for v in values])
        if common is None:
            self.refuse(node, f"the values of {what} have no common type: "
                              + ", ".join(str(v.type) for v in values))
        return [v if v.type.nullable_as(common.nullable) == common else self.cast(v, common, node) for v in values], common


# --------------------------------------------------------------------------- handlers

_HANDLERS: dict[type, Callable[[Translator, exp.Expression], Typed]] = {}


def handles(*classes):
    def register(fn):
        for cls in classes:
            _HANDLERS[cls] = fn
        return fn
    return register


@handles(exp.Paren)
def _paren(tr: Translator, node: exp.Paren) -> Typed:
    inner = tr.expr(node.this)
    return Typed(f"({inner.sql})", inner.type)


@handles(exp.Literal)
def _literal(tr: Translator, node: exp.Literal) -> Typed:
    """Literals typed as Flink (Calcite) types them: ``1.50`` is DECIMAL(3, 2) (every digit
    written counts, leading zeros too), ``1.`` an INT, ``1e3`` a DOUBLE; an exact literal
    has at most 19 digits and an integer must fit a BIGINT."""
    if node.is_string:
        return lit(node.this)
    text = _written(tr, node)
    lowered = text.lower()
    if "e" in lowered:
        if abs(float(text)) == float("inf"):
            tr.refuse(node, f"Numeric literal '{text}' out of range")
        return Typed(f"CAST({text} AS DOUBLE)", t("DOUBLE", nullable=False))
    whole, dot, fraction = text.partition(".")
    if dot and fraction:
        precision, scale = len(whole) + len(fraction), len(fraction)
        if precision > MAX_LITERAL_DIGITS:
            tr.refuse(node, f"Numeric literal '{text}' out of range")
        value = Decimal(text)
        return Typed(f"CAST({value} AS DECIMAL({precision},{scale}))", decimal(precision, scale, nullable=False))
    number = int(whole or "0")
    if -2**31 <= number < 2**31:
        return Typed(str(number), t("INT", nullable=False))
    if -2**63 <= number < 2**63:
        return Typed(f"{number}L", t("BIGINT", nullable=False))
    tr.refuse(node, f"Numeric literal '{text}' out of range")


MAX_LITERAL_DIGITS = 19


def _written(tr: Translator, node: exp.Literal) -> str:
    """The literal as the user wrote it (sqlglot normalizes ``.5`` to ``0.5``)."""
    start, end = node.meta.get("start"), node.meta.get("end")
    if start is not None and end is not None:
        written = tr.query.text[start:end + 1]
        if written.replace(".", "").replace("+", "").replace("-", "").isalnum():
            return written
    return node.this


@handles(exp.Null)
def _null(tr: Translator, node) -> Typed:
    return Typed("NULL", NULL_TYPE)


@handles(exp.Boolean)
def _boolean(tr: Translator, node: exp.Boolean) -> Typed:
    return Typed("TRUE" if node.this else "FALSE", BOOLEAN_TYPE.nullable_as(False))


@handles(exp.Column)
def _column(tr: Translator, node: exp.Column) -> Typed:
    return tr.scope.column(node)


@handles(exp.Dot)
def _dot(tr: Translator, node: exp.Dot) -> Typed:
    """``row_expression.field``."""
    base = tr.expr(node.this)
    return field_access(tr, base, node.expression.name, node)


def field_access(tr: Translator, base: Typed, name: str, node: exp.Expression) -> Typed:
    if base.type.name != "ROW":
        tr.refuse(node, f"'{name}' is not a field: {base.type} has no fields")
    for i, field_name in enumerate(base.type.field_names):
        if field_name == name or field_name.lower() == name.lower():
            child = base.type.children[i]
            return Typed(f"{base.sql}.`{field_name.replace('`', '``')}`",
                         child.nullable_as(child.nullable or base.type.nullable))
    tr.refuse(node, f"unknown field '{name}' of {base.type}")


# ---------------------------------------------------------------- arithmetic

_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
_INT_RANGE = {"TINYINT": 8, "SMALLINT": 16, "INT": 32}
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


@handles(*_ARITH)
def _arithmetic(tr: Translator, node: exp.Binary) -> Typed:
    op = _ARITH[type(node)]
    refuse_untyped_null(tr, node.this, node.expression)
    a, b = tr.expr(node.this), tr.expr(node.expression)
    temporal = _temporal_arithmetic(tr, op, a, b, node)
    if temporal is not None:
        return temporal
    result = rules.arithmetic(op, a.type, b.type)
    if result is None:
        if op == "%" and a.type.is_numeric and b.type.is_numeric:
            tr.refuse(node, f"cannot apply '%' (MOD) to {a.type} and {b.type}: Flink's MOD takes exact numbers",
                      hint="CAST the values to an integer or DECIMAL type")
        tr.refuse(node, f"cannot apply '{op}' to {a.type} and {b.type}")
    return arithmetic_sql(tr, op, a, b, result, node)


_TRY = {"+": "try_add", "-": "try_subtract", "*": "try_multiply"}


def arithmetic_sql(tr: Translator, op: str, a: Typed, b: Typed, result: LogicalType, node) -> Typed:
    """``a op b`` computed as Flink computes it (Java arithmetic): integers wrap around on
    overflow, DECIMAL overflow is NULL, DOUBLE division by zero is an infinity or NaN.
    Division of exact numbers by zero fails the query, in Flink and here."""
    if result.is_null:
        return Typed("NULL", result)
    if result.name in _INT_RANGE:
        if op == "/":  # Integer.MIN_VALUE / -1 wraps
            return Typed(wrap_integer(f"({a.sql}) div ({b.sql})", result), result)
        if op == "%":
            return Typed(f"CAST(({a.sql}) % ({b.sql}) AS {result.spark})", result)
        return Typed(wrap_integer(f"CAST({a.sql} AS BIGINT) {op} CAST({b.sql} AS BIGINT)", result), result)
    if result.name == "BIGINT":
        la, lb = f"CAST({a.sql} AS BIGINT)", f"CAST({b.sql} AS BIGINT)"
        if op == "/":  # Long.MIN_VALUE / -1 wraps to itself
            return Typed(f"(CASE WHEN {lb} = -1 THEN {_negate_long(la)} ELSE {la} div {lb} END)", result)
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


def _negate_long(sql: str) -> str:
    return f"IF({sql} = -9223372036854775808L, {sql}, -{sql})"


def ieee_divide(x: str, y: str, spark_type: str = "DOUBLE") -> str:
    """Java's floating-point division: by zero it is ±Infinity, or NaN for 0/0 (Spark's
    ANSI division fails instead)."""
    inf = f"CAST('Infinity' AS {spark_type})"
    return (f"(CASE WHEN {x} IS NULL OR {y} IS NULL THEN CAST(NULL AS {spark_type}) "
            f"WHEN {y} <> 0 OR isnan({y}) THEN CAST({x} / {y} AS {spark_type}) "
            f"WHEN {x} = 0 OR isnan({x}) THEN CAST('NaN' AS {spark_type}) "
            f"WHEN ({x} > 0) = (CAST({y} AS STRING) NOT LIKE '-%') THEN {inf} ELSE -{inf} END)")


def _temporal_arithmetic(tr: Translator, op: str, a: Typed, b: Typed, node) -> Optional[Typed]:
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
        return _temporal_arithmetic(tr, op, b, a, node)
    if op in ("+", "-") and a.type.name == b.type.name and a.type.is_interval:
        return Typed(f"({a.sql} {op} {b.sql})", a.type.nullable_as(nullable))
    if op in ("*", "/") and a.type.is_interval and b.type.is_numeric:
        return Typed(f"({a.sql} {op} {b.sql})", a.type.nullable_as(nullable))
    if op == "*" and b.type.is_interval and a.type.is_numeric:
        return Typed(f"({b.sql} * {a.sql})", b.type.nullable_as(nullable))
    tr.refuse(node, f"cannot apply '{op}' to {a.type} and {b.type}")


@handles(exp.Neg)
def _neg(tr: Translator, node: exp.Neg) -> Typed:
    refuse_untyped_null(tr, node.this)
    value = tr.expr(node.this)
    if value.type.name in _INT_RANGE:
        return Typed(wrap_integer(f"-CAST({value.sql} AS BIGINT)", value.type), value.type)
    if value.type.name == "BIGINT":
        return Typed(f"({_negate_long(value.sql)})", value.type)
    if not (value.type.is_numeric or value.type.is_interval or value.type.is_null):
        tr.refuse(node, f"cannot negate {value.type}")
    return Typed(f"(-{value.sql})", value.type)


@handles(exp.Interval)
def _interval(tr: Translator, node: exp.Interval) -> Typed:
    from job.sql.flink.casts import interval_literal

    return interval_literal(tr, node)


@handles(exp.DPipe)
def _concat(tr: Translator, node: exp.DPipe) -> Typed:
    refuse_untyped_null(tr, node.this, node.expression)
    a, b = tr.expr(node.this), tr.expr(node.expression)
    for v, n in ((a, node.this), (b, node.expression)):
        if not (v.type.is_character or v.type.is_null):
            tr.refuse(n, f"'||' concatenates character strings, not {v.type}",
                      hint="CAST the value to STRING first")
    length = min((a.type.precision or 0) + (b.type.precision or 0), 2147483647)
    name = "CHAR" if a.type.name == b.type.name == "CHAR" else "VARCHAR"
    return Typed(f"concat({a.sql}, {b.sql})", t(name, max(length, 1), nullable=rules.any_nullable(a.type, b.type)))


# ---------------------------------------------------------------- comparison and logic

_COMPARE = {exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=",
            exp.NullSafeEQ: "<=>", exp.NullSafeNEQ: "<=>"}


def comparison(tr: Translator, op: str, a: Typed, b: Typed, node) -> Typed:
    if not rules.comparable(a.type, b.type):
        if {a.type.name, b.type.name} <= {"DATE", "TIMESTAMP", "TIMESTAMP_LTZ"}:
            tr.refuse(node, f"Cannot apply '{op}' to arguments of type '<{a.type.summary(False)}> {op} "
                            f"<{b.type.summary(False)}>'", hint="CAST the DATE to a TIMESTAMP, or the TIMESTAMP to a DATE")
        tr.refuse(node, f"implicit type conversion between {a.type.summary(False)} and {b.type.summary(False)} "
                        "is not supported", hint="CAST one side to the other's type")
    a, b = comparable_pair(tr, a, b, node)
    nullable = op != "<=>" and rules.any_nullable(a.type, b.type)
    return Typed(f"({a.sql} {op} {b.sql})", BOOLEAN_TYPE.nullable_as(nullable))


def comparable_pair(tr: Translator, a: Typed, b: Typed, node) -> tuple[Typed, Typed]:
    """Values Spark compares the way Flink does: a TIMESTAMP meets a TIMESTAMP_LTZ as a
    TIMESTAMP_LTZ (its wall-clock time read in the local time zone)."""
    if {a.type.name, b.type.name} == {"TIMESTAMP", "TIMESTAMP_LTZ"}:
        if a.type.name == "TIMESTAMP":
            a = tr.cast(a, t("TIMESTAMP_LTZ", a.type.precision, nullable=a.type.nullable), node)
        else:
            b = tr.cast(b, t("TIMESTAMP_LTZ", b.type.precision, nullable=b.type.nullable), node)
    return a, b


@handles(*_COMPARE)
def _compare(tr: Translator, node: exp.Binary) -> Typed:
    if not isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
        refuse_untyped_null(tr, node.this, node.expression)
    a, b = tr.expr(node.this), tr.expr(node.expression)
    out = comparison(tr, _COMPARE[type(node)], a, b, node)
    if isinstance(node, exp.NullSafeNEQ):
        return Typed(f"(NOT {out.sql})", out.type)
    return out


@handles(exp.And, exp.Or)
def _logic(tr: Translator, node: exp.Binary) -> Typed:
    word = "AND" if isinstance(node, exp.And) else "OR"
    a, b = tr.condition(node.this, word), tr.condition(node.expression, word)
    return Typed(f"({a.sql} {word} {b.sql})", BOOLEAN_TYPE.nullable_as(rules.any_nullable(a.type, b.type)))


@handles(exp.Not)
def _not(tr: Translator, node: exp.Not) -> Typed:
    refuse_untyped_null(tr, node.this)
    a = tr.condition(node.this, "NOT")
    return Typed(f"(NOT {a.sql})", a.type)


@handles(exp.Is)
def _is(tr: Translator, node: exp.Is) -> Typed:
    if node.args.get("negate"):
        positive = node.copy()
        positive.set("negate", None)
        inner = _is(tr, positive)
        return Typed(f"(NOT {inner.sql})", inner.type)
    value = tr.expr(node.this)
    target = node.expression
    if isinstance(target, exp.Null):
        return Typed(f"({value.sql} IS NULL)", BOOLEAN_TYPE.nullable_as(False))
    if isinstance(target, exp.Boolean):
        refuse_untyped_null(tr, node.this)
        if value.type.name not in ("BOOLEAN", "NULL"):
            tr.refuse(node, f"IS {'TRUE' if target.this else 'FALSE'} needs a BOOLEAN, not {value.type}")
        return Typed(f"(({value.sql}) <=> {'TRUE' if target.this else 'FALSE'})", BOOLEAN_TYPE.nullable_as(False))
    if isinstance(target, exp.Var) and target.name.upper() == "UNKNOWN":
        return Typed(f"({value.sql} IS NULL)", BOOLEAN_TYPE.nullable_as(False))
    if isinstance(target, exp.JSON):
        from job.sql.flink.functions.json import is_json

        kind = target.this if isinstance(target.this, str) else None
        if target.args.get("unique"):
            tr.refuse(node, "IS JSON … WITH UNIQUE KEYS is not supported yet")
        return is_json(tr, value, kind)
    tr.refuse(node, f"'{tr.query.flink_sql(node)}' is not supported yet")


@handles(exp.Between)
def _between(tr: Translator, node: exp.Between) -> Typed:
    value, low, high = tr.expr(node.this), tr.expr(node.args["low"]), tr.expr(node.args["high"])
    ge = comparison(tr, ">=", value, low, node)
    le = comparison(tr, "<=", value, high, node)
    nullable = ge.type.nullable or le.type.nullable
    out = f"({ge.sql} AND {le.sql})"
    if node.args.get("symmetric"):  # either way round: (v BETWEEN a AND b) OR (v BETWEEN b AND a)
        ge2, le2 = comparison(tr, ">=", value, high, node), comparison(tr, "<=", value, low, node)
        out = f"({out} OR ({ge2.sql} AND {le2.sql}))"
    return Typed(out, BOOLEAN_TYPE.nullable_as(nullable))


@handles(exp.In)
def _in(tr: Translator, node: exp.In) -> Typed:
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        tr.refuse(node, "IN (subquery) is only supported as a condition of WHERE",
                  hint="write it as a JOIN")
    value = tr.expr(node.this)
    items = [tr.expr(e) for e in node.expressions]
    for item, n in zip(items, node.expressions):
        if not rules.comparable(value.type, item.type):
            tr.refuse(n, f"cannot compare {value.type} with {item.type} in IN (…)")
    (value, *items), _ = tr.coerce([value] + items, node, "IN (…)")
    nullable = any(v.type.nullable for v in [value] + items)
    return Typed(f"({value.sql} IN ({', '.join(i.sql for i in items)}))", BOOLEAN_TYPE.nullable_as(nullable))


@handles(exp.Like, exp.ILike)
def _like(tr: Translator, node: exp.Like) -> Typed:
    refuse_untyped_null(tr, node.this, node.expression)
    value, pattern = tr.expr(node.this), tr.expr(node.expression)
    for v, n in ((value, node.this), (pattern, node.expression)):
        if not (v.type.is_character or v.type.is_null):
            tr.refuse(n, f"LIKE needs character strings, not {v.type}")
    escape = node.args.get("escape")
    suffix = ""
    if escape is not None:
        esc = tr.expr(escape)
        suffix = f" ESCAPE {esc.sql}"
    negate = "NOT " if node.args.get("negate") else ""
    return Typed(f"({negate}{value.sql} LIKE {pattern.sql}{suffix})",
                 BOOLEAN_TYPE.nullable_as(rules.any_nullable(value.type, pattern.type)))


@handles(exp.Escape)
def _escape(tr: Translator, node: exp.Escape) -> Typed:
    like = node.this
    if not isinstance(like, exp.Like):
        tr.refuse(node, "ESCAPE is only supported with LIKE")
    value, pattern, esc = tr.expr(like.this), tr.expr(like.expression), tr.expr(node.expression)
    negate = "NOT " if like.args.get("negate") else ""
    return Typed(f"({negate}{value.sql} LIKE {pattern.sql} ESCAPE {esc.sql})",
                 BOOLEAN_TYPE.nullable_as(rules.any_nullable(value.type, pattern.type)))


# ---------------------------------------------------------------- CASE

@handles(exp.Case)
def _case(tr: Translator, node: exp.Case) -> Typed:
    subject = tr.expr(node.this) if node.this is not None else None
    conditions, results = [], []
    for branch in node.args.get("ifs") or []:
        if subject is not None and isinstance(branch.this, exp.Tuple):  # WHEN v1, v2: any of them
            parts = [comparison(tr, "=", subject, tr.expr(v), branch) for v in branch.this.expressions]
            cond = Typed("(" + " OR ".join(p.sql for p in parts) + ")",
                         BOOLEAN_TYPE.nullable_as(any(p.type.nullable for p in parts)))
        elif subject is not None:
            cond = comparison(tr, "=", subject, tr.expr(branch.this), branch)
        else:
            cond = tr.condition(branch.this, "CASE WHEN")
        conditions.append(cond)
        results.append(tr.expr(branch.args["true"]))
    default = node.args.get("default")
    otherwise = tr.expr(default) if default is not None else Typed("NULL", NULL_TYPE)
    values, common = tr.coerce(results + [otherwise], node, "CASE")
    parts = " ".join(f"WHEN {c.sql} THEN {v.sql}" for c, v in zip(conditions, values))
    return Typed(f"(CASE {parts} ELSE {values[-1].sql} END)", common)


# ---------------------------------------------------------------- CAST

@handles(exp.Cast, exp.TryCast)
def _cast(tr: Translator, node: exp.Cast) -> Typed:
    to = node.args["to"]
    if isinstance(to, TypeRef):
        target = logical_type(to.this, tr.query.origin_of(to))
    elif isinstance(to, exp.DataType):  # DATE '…' / TIMESTAMP '…' literals
        target = logical_type(to.sql(dialect="spark").upper().replace("TIMESTAMPLTZ", "TIMESTAMP_LTZ"))
    else:
        tr.refuse(node, "unsupported CAST target")
    value = tr.expr(node.this)
    safe = isinstance(node, exp.TryCast)
    return tr.cast(value, target.nullable_as(target.nullable and (value.type.nullable or safe)), node, safe=safe)


# ---------------------------------------------------------------- collections

@handles(exp.Bracket)
def _bracket(tr: Translator, node: exp.Bracket) -> Typed:
    base = tr.expr(node.this)
    if len(node.expressions) != 1:
        tr.refuse(node, "one index per [ ] access")
    index = tr.expr(node.expressions[0])
    if base.type.name == "ARRAY":
        if not (index.type.is_integral or index.type.is_null):
            tr.refuse(node.expressions[0], f"an array index must be an integer, not {index.type}")
        constant = node.expressions[0]
        if isinstance(constant, exp.Neg) or (isinstance(constant, exp.Literal) and constant.this == "0"):
            shown = tr.query.flink_sql(constant)
            tr.refuse(constant, f"Array element access needs an index starting at 1 but was {shown}.")
        element = base.type.children[0].nullable_as(True)
        # Flink arrays are 1-based; any index outside 1..size is NULL (Spark's element_at
        # would count a negative index from the end).
        return Typed(f"IF(({index.sql}) >= 1, try_element_at({base.sql}, CAST({index.sql} AS INT)), NULL)", element)
    if base.type.name == "MAP":
        key = base.type.children[0]
        if not rules.comparable(key, index.type):
            tr.refuse(node.expressions[0], f"a key of {base.type} cannot be {index.type}")
        if index.type != key.nullable_as(index.type.nullable) and not index.type.is_null:
            index = tr.cast(index, key.nullable_as(index.type.nullable), node)
        return Typed(f"try_element_at({base.sql}, {index.sql})", base.type.children[1].nullable_as(True))
    if base.type.name == "ROW":
        if isinstance(node.expressions[0], exp.Literal) and node.expressions[0].is_string:
            return field_access(tr, base, node.expressions[0].this, node)
        if isinstance(node.expressions[0], exp.Literal):
            i = int(node.expressions[0].this)
            if 1 <= i <= len(base.type.field_names):
                return field_access(tr, base, base.type.field_names[i - 1], node)
        tr.refuse(node, "a ROW field is accessed with a constant name or 1-based position")
    tr.refuse(node, f"{base.type} cannot be indexed with [ ]")


@handles(exp.Array)
def _array(tr: Translator, node: exp.Array) -> Typed:
    items = [tr.expr(e) for e in node.expressions]
    if not items:
        tr.refuse(node, "ARRAY[] needs at least one element")
    values, common = tr.coerce(items, node, "ARRAY[…]")
    return Typed(f"array({', '.join(v.sql for v in values)})", t("ARRAY", children=(common,), nullable=False))


@handles(exp.Anonymous)
def _call(tr: Translator, node: exp.Anonymous) -> Typed:
    from job.sql.flink.functions import call

    return call(tr, node)


@handles(exp.Window)
def _window(tr: Translator, node: exp.Window) -> Typed:
    tr.refuse(node, f"the OVER window '{tr.query.flink_sql(node)}' is not supported here")


@handles(exp.Subquery, exp.Exists, exp.Select)
def _subquery(tr: Translator, node: exp.Expression) -> Typed:
    tr.refuse(node, "a subquery is not supported in this position yet",
              hint="IN / EXISTS subqueries are supported as conditions of WHERE")


@handles(exp.Star)
def _star(tr: Translator, node: exp.Star) -> Typed:
    tr.refuse(node, "'*' is only allowed in the select list and COUNT(*)")


@handles(exp.Distinct)
def _distinct(tr: Translator, node: exp.Distinct) -> Typed:
    tr.refuse(node, "DISTINCT is only allowed in aggregate calls")


@handles(exp.Filter)
def _filter(tr: Translator, node: exp.Filter) -> Typed:
    tr.refuse(node, "FILTER (WHERE …) is only allowed after an aggregate call")


@handles(exp.SimilarTo)
def _similar(tr: Translator, node) -> Typed:
    tr.refuse(node, "SIMILAR TO is not supported yet", hint="use REGEXP(string, regex) or LIKE")


@handles(exp.Overlaps)
def _overlaps(tr: Translator, node: exp.Overlaps) -> Typed:
    from job.sql.flink.functions.temporal import overlaps

    return overlaps(tr, node)


@handles(exp.Tuple)
def _tuple(tr: Translator, node: exp.Tuple) -> Typed:
    """Flink's implicit row constructor ``(a, b)``: ROW(a, b)."""
    if len(node.expressions) < 2:
        tr.refuse(node, "a row value needs at least two fields: (a, b)")
    row = exp.Anonymous(this="ROW", expressions=[e.copy() for e in node.expressions])
    row.meta.update(node.meta)
    return tr.expr(row)


def refuse_untyped_null(tr: Translator, *operands: exp.Expression) -> None:
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


STRING = STRING_TYPE
