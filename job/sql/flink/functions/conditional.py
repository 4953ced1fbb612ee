"""Flink's conditional functions (CASE is in the translator)."""
from __future__ import annotations

from job.sql.flink import rules
from job.sql.flink.functions import scalar
from job.sql.flink.semantics import comparison
from job.sql.flink.typed import Typed

CATEGORY = "conditional"


@scalar("COALESCE", CATEGORY, "COALESCE(value1 [, value2]*)", "The first argument that is not NULL.")
def coalesce(call):
    args = call.args(*range(1, 255))
    values, common = call.tr.coerce(args, call.node, "COALESCE")
    nullable = all(v.type.nullable for v in args)
    return Typed(f"coalesce({', '.join(v.sql for v in values)})", common.nullable_as(nullable))


@scalar("IFNULL", CATEGORY, "IFNULL(input, null_replacement)", "INPUT, or NULL_REPLACEMENT when INPUT is NULL.")
def ifnull(call):
    value, replacement = call.args(2)
    values, common = call.tr.coerce([value, replacement], call.node, "IFNULL")
    return Typed(f"coalesce({values[0].sql}, {values[1].sql})", common.nullable_as(replacement.type.nullable))


@scalar("NULLIF", CATEGORY, "NULLIF(value1, value2)", "NULL if VALUE1 equals VALUE2, else VALUE1.")
def nullif(call):
    a, b = call.args(2)
    equal = comparison(call.tr, "=", a, b, call.node)
    return Typed(f"(CASE WHEN {equal.sql} THEN NULL ELSE {a.sql} END)", a.type.nullable_as(True))


@scalar("IF", CATEGORY, "IF(condition, true_value, false_value)",
        "TRUE_VALUE if CONDITION is TRUE, else FALSE_VALUE (also when CONDITION is NULL).")
def if_(call):
    call.arity(3)
    cond = call.tr.condition(call.raw[0], "IF")
    values, common = call.tr.coerce([call.arg(1), call.arg(2)], call.node, "IF")
    # Flink's IF is nullable when any of its arguments is, the condition too.
    return Typed(f"(CASE WHEN {cond.sql} THEN {values[0].sql} ELSE {values[1].sql} END)",
                 common.nullable_as(common.nullable or cond.type.nullable))


def _extreme(call, word: str):
    args = call.args(*range(1, 255))
    values, common = call.tr.coerce(args, call.node, word)
    for i, v in enumerate(args):
        if not rules.comparable(v.type, common):
            call.refuse(f"{word}: argument {i + 1} cannot be compared")
    # Flink: NULL if any argument is NULL (Spark's greatest/least skip NULLs).
    nulls = " OR ".join(f"{v.sql} IS NULL" for v in values)
    fn = word.lower()
    return Typed(f"(CASE WHEN {nulls} THEN NULL ELSE {fn}({', '.join(v.sql for v in values)}) END)",
                 common.nullable_as(any(v.type.nullable for v in args)))


@scalar("GREATEST", CATEGORY, "GREATEST(value1[, value2]*)", "The greatest value; NULL if any argument is NULL.")
def greatest(call):
    return _extreme(call, "GREATEST")


@scalar("LEAST", CATEGORY, "LEAST(value1[, value2]*)", "The least value; NULL if any argument is NULL.")
def least(call):
    return _extreme(call, "LEAST")
