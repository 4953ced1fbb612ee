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

The layers below it: :mod:`~job.sql.flink.typed` (Typed, Scope, Settings, the handler
registry), :mod:`~job.sql.flink.semantics` (arithmetic and comparison),
:mod:`~job.sql.flink.casts`, the function library, :mod:`~job.sql.flink.operators` (the
operators' handlers). This module holds the :class:`Translator` and the handlers of
literals, names, CAST, collections and calls; it re-exports the names callers import
from it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import NoReturn, Optional

from sqlglot import exp

from job.sql.flink import operators  # noqa: F401 - registers the operators' handlers
from job.sql.flink import rules
from job.sql.flink.casts import cast
from job.sql.flink.dialect import TypeRef
from job.sql.flink.functions import call
from job.sql.flink.functions.temporal import overlaps
from job.sql.flink.query import Query
from job.sql.flink.typed import HANDLERS, Scope, Settings, Typed, field_access, handles, lit, spark_string
from job.sql.flink.typed import refuse_untyped_null, system_time_zone, wrap_integer  # noqa: F401 - re-exported
from job.sql.flink.semantics import arithmetic_sql, comparison, ieee_divide  # noqa: F401 - re-exported
from job.sql.types import BOOLEAN_TYPE, NULL_TYPE, LogicalType, decimal, logical_type, t

__all__ = ["Translator", "Typed", "Scope", "Settings", "field_access", "lit", "spark_string", "wrap_integer",
           "refuse_untyped_null", "system_time_zone", "arithmetic_sql", "comparison", "ieee_divide"]


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
        handler = HANDLERS.get(type(node))
        if handler is None:
            for cls, h in HANDLERS.items():
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
        return cast(self, value, to, node, safe)

    def coerce(self, values: list[Typed], node: exp.Expression, what: str) -> tuple[list[Typed], LogicalType]:
        """Bring values to their least restrictive common type (CASE, COALESCE, IN)."""
        common = rules.least_restrictive([v.type for v in values])
        if common is None:
            self.refuse(node, f"the values of {what} have no common type: "
                              + ", ".join(str(v.type) for v in values))
        return [v if v.type.nullable_as(common.nullable) == common else self.cast(v, common, node) for v in values], common


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
    return overlaps(tr, node)


@handles(exp.Tuple)
def _tuple(tr: Translator, node: exp.Tuple) -> Typed:
    """Flink's implicit row constructor ``(a, b)``: ROW(a, b)."""
    if len(node.expressions) < 2:
        tr.refuse(node, "a row value needs at least two fields: (a, b)")
    row = exp.Anonymous(this="ROW", expressions=[e.copy() for e in node.expressions])
    row.meta.update(node.meta)
    return tr.expr(row)

