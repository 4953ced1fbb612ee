"""The translator's handlers for Flink's operators: arithmetic (+ - * / %, negation),
``||``, comparisons, AND / OR / NOT, IS …, BETWEEN, IN, LIKE and CASE — each with Flink's
types and its three-valued logic. Registered with :func:`job.sql.flink.typed.handles`;
the translator (job.sql.flink.translate) imports this module to have them.
"""
from __future__ import annotations

from sqlglot import exp

from job.sql.flink import rules
from job.sql.flink.casts import interval_literal
from job.sql.flink.functions.json import is_json
from job.sql.flink.semantics import arithmetic_sql, comparison, negate_long, temporal_arithmetic
from job.sql.flink.typed import NARROW_INTEGERS, Typed, handles, refuse_untyped_null, wrap_integer
from job.sql.types import BOOLEAN_TYPE, NULL_TYPE, t

_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}


@handles(*_ARITH)
def _arithmetic(tr, node: exp.Binary) -> Typed:
    op = _ARITH[type(node)]
    refuse_untyped_null(tr, node.this, node.expression)
    a, b = tr.expr(node.this), tr.expr(node.expression)
    temporal = temporal_arithmetic(tr, op, a, b, node)
    if temporal is not None:
        return temporal
    result = rules.arithmetic(op, a.type, b.type)
    if result is None:
        if op == "%" and a.type.is_numeric and b.type.is_numeric:
            tr.refuse(node, f"cannot apply '%' (MOD) to {a.type} and {b.type}: Flink's MOD takes exact numbers",
                      hint="CAST the values to an integer or DECIMAL type")
        tr.refuse(node, f"cannot apply '{op}' to {a.type} and {b.type}")
    return arithmetic_sql(tr, op, a, b, result, node)


@handles(exp.Neg)
def _neg(tr, node: exp.Neg) -> Typed:
    refuse_untyped_null(tr, node.this)
    value = tr.expr(node.this)
    if value.type.name in NARROW_INTEGERS:
        return Typed(wrap_integer(f"-CAST({value.sql} AS BIGINT)", value.type), value.type)
    if value.type.name == "BIGINT":
        return Typed(f"({negate_long(value.sql)})", value.type)
    if not (value.type.is_numeric or value.type.is_interval or value.type.is_null):
        tr.refuse(node, f"cannot negate {value.type}")
    return Typed(f"(-{value.sql})", value.type)


@handles(exp.Interval)
def _interval(tr, node: exp.Interval) -> Typed:
    return interval_literal(tr, node)


@handles(exp.DPipe)
def _concat(tr, node: exp.DPipe) -> Typed:
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


@handles(*_COMPARE)
def _compare(tr, node: exp.Binary) -> Typed:
    if not isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
        refuse_untyped_null(tr, node.this, node.expression)
    a, b = tr.expr(node.this), tr.expr(node.expression)
    out = comparison(tr, _COMPARE[type(node)], a, b, node)
    if isinstance(node, exp.NullSafeNEQ):
        return Typed(f"(NOT {out.sql})", out.type)
    return out


@handles(exp.And, exp.Or)
def _logic(tr, node: exp.Binary) -> Typed:
    word = "AND" if isinstance(node, exp.And) else "OR"
    a, b = tr.condition(node.this, word), tr.condition(node.expression, word)
    return Typed(f"({a.sql} {word} {b.sql})", BOOLEAN_TYPE.nullable_as(rules.any_nullable(a.type, b.type)))


@handles(exp.Not)
def _not(tr, node: exp.Not) -> Typed:
    refuse_untyped_null(tr, node.this)
    a = tr.condition(node.this, "NOT")
    return Typed(f"(NOT {a.sql})", a.type)


@handles(exp.Is)
def _is(tr, node: exp.Is) -> Typed:
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
        kind = target.this if isinstance(target.this, str) else None
        if target.args.get("unique"):
            tr.refuse(node, "IS JSON … WITH UNIQUE KEYS is not supported yet")
        return is_json(tr, value, kind)
    tr.refuse(node, f"'{tr.query.flink_sql(node)}' is not supported yet")


@handles(exp.Between)
def _between(tr, node: exp.Between) -> Typed:
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
def _in(tr, node: exp.In) -> Typed:
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
def _like(tr, node: exp.Like) -> Typed:
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
def _escape(tr, node: exp.Escape) -> Typed:
    like = node.this
    if not isinstance(like, exp.Like):
        tr.refuse(node, "ESCAPE is only supported with LIKE")
    value, pattern, esc = tr.expr(like.this), tr.expr(like.expression), tr.expr(node.expression)
    negate = "NOT " if like.args.get("negate") else ""
    return Typed(f"({negate}{value.sql} LIKE {pattern.sql} ESCAPE {esc.sql})",
                 BOOLEAN_TYPE.nullable_as(rules.any_nullable(value.type, pattern.type)))


# ---------------------------------------------------------------- CASE

@handles(exp.Case)
def _case(tr, node: exp.Case) -> Typed:
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

