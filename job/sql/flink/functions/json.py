"""Flink's JSON functions: reading JSON text.

Reading (IS JSON, JSON_EXISTS, JSON_VALUE, JSON_QUERY): the text is parsed with Spark's
``try_parse_json`` (a VARIANT, NULL when the text is not JSON) and the path is followed
with ``variant_get``. Flink's path semantics are Calcite's: a path without ``lax`` is
*strict*; in strict mode a path that leads nowhere is an error, in lax mode it is empty;
what an empty result or an error gives is the call's ``ON EMPTY`` / ``ON ERROR`` clause.
Paths are the plain ones — ``$``, ``.name``, ``['name']``, ``[n]`` — others (``[*]``,
``..``, filters) are refused by name.

Writing (JSON_STRING, JSON_OBJECT, JSON_ARRAY) is :mod:`job.sql.flink.functions.json_writing`.

Where Spark's JSON reading differs from Flink's and the data shows it (a number written
with an exponent, which Spark's VARIANT turns into a DOUBLE and Flink keeps as written),
the query fails with that reason instead of giving another answer.
"""
from __future__ import annotations

import re
from typing import Optional

from sqlglot import exp

from job.sql.flink.dialect import JsonClause, TypeRef
from job.sql.flink.functions import lambda_var, not_supported, scalar
from job.sql.flink.typed import Typed, spark_string
from job.sql.types import BOOLEAN_TYPE, DOUBLE_TYPE, INT_TYPE, STRING_TYPE, logical_type, t

CATEGORY = "json"

not_supported("JSON", CATEGORY, "JSON(value)", why="marks a string as raw JSON inside JSON_OBJECT / JSON_ARRAY")
not_supported("PARSE_JSON", CATEGORY, "PARSE_JSON(string)", why="the VARIANT type")
not_supported("TRY_PARSE_JSON", CATEGORY, "TRY_PARSE_JSON(string)", why="the VARIANT type")


# --------------------------------------------------------------------------- paths

_STEP = re.compile(r"\s*(?:\.\s*([A-Za-z_$][A-Za-z0-9_$]*)|\.?\[\s*'((?:[^']|'')*)'\s*\]|\.?\[\s*\"([^\"]*)\"\s*\]"
                   r"|\[\s*([0-9]+)\s*\])")


def _path(call, i: int = 1) -> tuple[bool, str]:
    """(strict, Spark variant path) of the constant Flink JSON path argument ``i``."""
    node = call.raw[i]
    if not (isinstance(node, exp.Literal) and node.is_string):
        call.refuse(f"the path of {call.name} must be a string literal", node=node)
    text = node.this
    m = re.match(r"^\s*(lax|strict)\s+", text, re.I)
    strict = True if m is None else m.group(1).lower() == "strict"
    rest = text[m.end():] if m else text.lstrip()
    if not rest.startswith("$"):
        call.refuse(f"{call.name}: '{text}' is not a JSON path (it starts with $)", node=node)
    rest, steps = rest[1:], []
    while rest.strip():
        step = _STEP.match(rest)
        if step is None:
            call.refuse(f"{call.name}: the JSON path '{text}' is not supported yet (only $, .name, ['name'] and "
                        "[n] steps are)", node=node)
        name = step.group(1) or (step.group(2).replace("''", "'") if step.group(2) is not None else step.group(3))
        if step.group(4) is not None:
            steps.append(f"[{int(step.group(4))}]")
        else:
            steps.append("['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']")
        rest = rest[step.end():]
    return strict, spark_string("$" + "".join(steps))


def json_clauses(call) -> dict:
    """The call's JSON clauses (RETURNING, ON EMPTY, ON ERROR, WRAPPER, ON NULL) by name."""
    return {c.this: c for c in call.raw if isinstance(c, JsonClause)}


def _arguments(call) -> list:
    return [a for a in call.raw if not isinstance(a, JsonClause)]


def _document(call, keep_numbers: bool = False) -> tuple[Typed, str]:
    """The JSON text argument and Spark SQL for its parsed VARIANT (NULL if it is not
    JSON). ``keep_numbers``: numbers are kept as the text they are written as (see
    :func:`number_text`), since Spark's VARIANT rewrites them (1.50 as 1.5, 1.0 as 1)."""
    value = call.arg(0)
    call.need(0, "string")
    if not keep_numbers:
        return value, f"try_parse_json({value.sql})"
    # Each number outside a string becomes the string U+0001 + its text; strings are
    # matched too, so that digits inside them stay as they are.
    marked = f"regexp_replace({value.sql}, {spark_string(_TOKENS)}, '$1\\u0002$2\\u0003')"
    marked = f"replace(replace(replace({marked}, '\\u0002\\u0003', ''), '\\u0002', '\"\\\\u0001'), '\\u0003', '\"')"
    return value, f"IF(try_parse_json({value.sql}) IS NULL, NULL, try_parse_json({marked}))"


_TOKENS = r'("(?:[^"\\]|\\.)*")|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)'
_NUMBER = "\u0001"


def number_text(text: str) -> str:
    """A JSON number's text as Flink prints it (Java's BigDecimal): as written, but a
    negative zero loses its sign and an exponent is normalized (1e2 → 1E+2)."""
    pattern = spark_string(r"^(-?)([0-9]+)(\.([0-9]+))?([eE]([-+]?[0-9]+))?$")

    def g(n: int) -> str:
        return f"regexp_extract({text}, {pattern}, {n})"

    sign, whole, fraction, exponent = g(1), g(2), g(4), f"CAST(IF({g(6)} = '', '0', {g(6)}) AS INT)"
    digits = f"regexp_replace(concat({whole}, {fraction}), '^0+(?=[0-9])', '')"
    scale = f"(length({fraction}) - {exponent})"
    adjusted = f"(length({digits}) - 1 - {scale})"
    zero = f"{digits} RLIKE '^0+$'"
    plain = (f"CASE WHEN {scale} <= 0 THEN {digits} WHEN length({digits}) > {scale} THEN concat(substring({digits}, 1, "
             f"length({digits}) - {scale}), '.', substring({digits}, length({digits}) - {scale} + 1)) "
             f"ELSE concat('0.', repeat('0', {scale} - length({digits})), {digits}) END")
    scientific = (f"concat(substring({digits}, 1, 1), IF(length({digits}) > 1, concat('.', substring({digits}, 2)), ''), "
                  f"'E', IF({adjusted} > 0, '+', ''), {adjusted})")
    body = f"CASE WHEN {scale} = 0 OR ({scale} > 0 AND {adjusted} >= -6) THEN {plain} ELSE {scientific} END"
    return (f"(CASE WHEN {g(5)} = '' THEN IF({zero}, regexp_replace({text}, '^-', ''), {text}) "
            f"ELSE concat(IF({zero}, '', {sign}), {body}) END)")


def _json_out(text: str) -> str:
    """JSON text written by Spark from a marked VARIANT, numbers put back as written."""
    unmarked = f"regexp_replace({text}, {spark_string(_MARKED)}, '$1')"
    # a number with an exponent or a negative zero would need rewriting inside the text
    odd = spark_string(r'\\u0001(-0[.0]*|[^"]*[eE][^"]*)"')
    return (f"IF({text} RLIKE {odd}, raise_error('JSON_QUERY: JSON numbers written with an exponent or as -0 are "
            f"not supported yet'), {unmarked})")


_MARKED = r'"\\u0001([^"]*)"'


def _kind(v: str) -> str:
    """The JSON kind of a VARIANT: OBJECT, ARRAY, STRING, BOOLEAN, VOID (null) or a number
    type (BIGINT, DECIMAL(p,s), DOUBLE)."""
    return f"regexp_extract(schema_of_variant({v}), '^([A-Z]+)', 1)"


# --------------------------------------------------------------------------- IS JSON

def is_json(tr, value: Typed, kind: Optional[str]) -> Typed:
    """``value IS JSON [VALUE | SCALAR | ARRAY | OBJECT]`` (FALSE for NULL)."""
    if not (value.type.is_character or value.type.is_null):
        tr.refuse(None, f"IS JSON needs a character string, not {value.type}")
    doc = f"try_parse_json({value.sql})"
    kind = (kind or "VALUE").upper()
    if kind == "VALUE":
        test = f"{doc} IS NOT NULL"
    else:
        k = _kind(doc)
        test = {"SCALAR": f"{k} NOT IN ('OBJECT', 'ARRAY')", "ARRAY": f"{k} = 'ARRAY'",
                "OBJECT": f"{k} = 'OBJECT'"}.get(kind)
        if test is None:
            tr.refuse(None, f"IS JSON {kind} is not a JSON type (VALUE, SCALAR, ARRAY or OBJECT)")
        test = f"{doc} IS NOT NULL AND {test}"
    return Typed(f"coalesce({test}, FALSE)", BOOLEAN_TYPE.nullable_as(False))


# --------------------------------------------------------------------------- reading

def _found(doc: str, path: str) -> str:
    return f"variant_get({doc}, {path})"


def _resolve(call, empty: str, error: str, present: str, strict: bool, doc: str, path: str,
             null_value: Optional[str] = None) -> str:
    """The value of a read: ``present`` (in terms of ``{F}``, the VARIANT found) where the
    path leads to a value, ``empty``/``error`` where Flink's call is empty or fails."""
    f = lambda_var("f")
    missing = error if strict else empty
    on_null = null_value if null_value is not None else (error if strict else empty)
    # Text that is not JSON is read as if the path led nowhere (Flink: empty in lax mode).
    body = (f"CASE WHEN {doc} IS NULL THEN {missing} WHEN {f} IS NULL THEN {missing} "
            f"WHEN is_variant_null({f}) THEN {on_null} ELSE {present.replace('{F}', f)} END")
    return f"element_at(transform(array({_found(doc, path)}), {f} -> {body}), 1)"


@scalar("JSON_EXISTS", CATEGORY, "JSON_EXISTS(jsonValue, path [ { TRUE | FALSE | UNKNOWN | ERROR } ON ERROR ])",
        "Whether the path leads to a non-null value of the JSON text (strict paths: an error when it does not).")
def json_exists(call):
    args = _arguments(call)
    if len(args) != 2:
        call.refuse("JSON_EXISTS takes a JSON text and a path")
    value, doc = _document(call)
    strict, path = _path(call)
    on_error = json_clauses(call).get("ON ERROR")
    behaviour = on_error.expression.name.upper() if on_error is not None else "FALSE"
    error = {"TRUE": "TRUE", "FALSE": "FALSE", "UNKNOWN": "CAST(NULL AS BOOLEAN)",
             "ERROR": "raise_error('JSON_EXISTS: the path does not exist or the text is not JSON')"}.get(behaviour)
    if error is None:
        call.refuse(f"JSON_EXISTS: {behaviour} ON ERROR is not a JSON_EXISTS behaviour")
    result = _resolve(call, "FALSE", error, "TRUE", strict, doc, path, null_value="FALSE")
    return Typed(f"IF({value.sql} IS NULL, NULL, {result})", BOOLEAN_TYPE.nullable_as(True))


def _behaviour(call, clause: Optional[JsonClause], what: str, result, allowed: tuple) -> str:
    if clause is None:
        return f"CAST(NULL AS {result.spark})"
    word = clause.expression.name.upper()
    if word not in allowed:
        call.refuse(f"{call.name}: {word} {what} is not allowed here", node=clause)
    if word == "NULL":
        return f"CAST(NULL AS {result.spark})"
    if word == "ERROR":
        return f"raise_error('{call.name}: {'no value at the path' if what == 'ON EMPTY' else 'an error'}')"
    if word == "DEFAULT":
        default = call.tr.expr(clause.args["value"])
        if not default.type.is_null and default.type.name != result.name and not (
                default.type.is_character and result.is_character):
            call.refuse(f"{call.name}: the DEFAULT value ({default.type}) must be of the returned type {result}",
                        node=clause.args["value"], hint="Flink fails such a query at run time")
        return f"CAST({default.sql} AS {result.spark})"
    if word == "EMPTY ARRAY":
        return "'[]'"
    if word == "EMPTY OBJECT":
        return "'{}'"
    call.refuse(f"{call.name}: {word} {what} is not supported", node=clause)


_RETURNING = {"STRING": STRING_TYPE, "VARCHAR": STRING_TYPE, "BOOLEAN": BOOLEAN_TYPE, "INT": INT_TYPE,
              "INTEGER": INT_TYPE, "DOUBLE": DOUBLE_TYPE}


@scalar("JSON_VALUE", CATEGORY,
        "JSON_VALUE(jsonValue, path [RETURNING <type>] [ { NULL | ERROR | DEFAULT <expr> } ON EMPTY ] "
        "[ { NULL | ERROR | DEFAULT <expr> } ON ERROR ])",
        "The scalar at the path, as text (or as RETURNING's BOOLEAN, INT or DOUBLE); an object or array there is "
        "an error in strict mode and empty in lax mode.")
def json_value(call):
    args = _arguments(call)
    if len(args) != 2:
        call.refuse("JSON_VALUE takes a JSON text and a path, then its clauses")
    value, doc = _document(call, keep_numbers=True)
    strict, path = _path(call)
    clauses = json_clauses(call)
    result = STRING_TYPE
    if "RETURNING" in clauses:
        ref = clauses["RETURNING"].expression
        written = ref.this if isinstance(ref, TypeRef) else ref.sql()
        target = logical_type(written)
        key = re.sub(r"\(.*", "", written.strip().upper())
        if key not in _RETURNING:
            call.refuse(f"Unsupported type '{target.summary(False)}' for RETURNING in JSON_VALUE().", node=ref,
                        hint="Flink's JSON_VALUE returns STRING, BOOLEAN, INT or DOUBLE")
        result = _RETURNING[key]
    empty = _behaviour(call, clauses.get("ON EMPTY"), "ON EMPTY", result, ("NULL", "ERROR", "DEFAULT"))
    error = _behaviour(call, clauses.get("ON ERROR"), "ON ERROR", result, ("NULL", "ERROR", "DEFAULT"))
    kind = _kind("{F}")
    text = "variant_get({F}, '$', 'string')"
    is_number = f"({kind} = 'STRING' AND {text} LIKE '{_NUMBER}%')"
    number = f"substring({text}, 2)"
    not_scalar = f"{kind} IN ('OBJECT', 'ARRAY')"
    if result.name == "VARCHAR":
        scalar_value = f"IF({is_number}, {number_text(number)}, {text})"
    else:
        # Flink hands the JSON value over as it is: a JSON integer to INT, a JSON decimal
        # to DOUBLE, a JSON boolean to BOOLEAN; any other pairing fails its query.
        wanted = {"INT": f"{is_number} AND {number} RLIKE '^-?[0-9]+$' AND try_cast({number} AS INT) IS NOT NULL",
                  "DOUBLE": f"{is_number} AND NOT ({number} RLIKE '^-?[0-9]+$')",
                  "BOOLEAN": f"{kind} = 'BOOLEAN'"}[result.name]
        typed = f"CAST({number} AS {result.spark})" if result.name != "BOOLEAN" else \
            "variant_get({F}, '$', 'boolean')"
        scalar_value = (f"IF({wanted}, {typed}, raise_error('JSON_VALUE: the JSON value is not a "
                        f"{result.summary(False)} (Flink fails the query too)'))")
    present = f"IF({not_scalar}, {error if strict else empty}, {scalar_value})"
    lax_null = None if strict else empty
    resolved = _resolve(call, empty, error, present, strict, doc, path, null_value=lax_null)
    return Typed(f"IF({value.sql} IS NULL, NULL, {resolved})", result.nullable_as(True))


@scalar("JSON_QUERY", CATEGORY,
        "JSON_QUERY(jsonValue, path [RETURNING STRING | ARRAY<STRING>] [ { WITHOUT | WITH CONDITIONAL | WITH "
        "UNCONDITIONAL } [ ARRAY ] WRAPPER ] [ { NULL | EMPTY ARRAY | EMPTY OBJECT | ERROR } ON EMPTY ] "
        "[ { NULL | EMPTY ARRAY | EMPTY OBJECT | ERROR } ON ERROR ])",
        "The JSON text of the object or array at the path (a scalar only inside an array WRAPPER); keys sorted.")
def json_query(call):
    args = _arguments(call)
    if len(args) != 2:
        call.refuse("JSON_QUERY takes a JSON text and a path, then its clauses")
    value, doc = _document(call, keep_numbers=True)
    strict, path = _path(call)
    clauses = json_clauses(call)
    as_array = False
    if "RETURNING" in clauses:
        ref = clauses["RETURNING"].expression
        written = re.sub(r"\s+", "", (ref.this if isinstance(ref, TypeRef) else ref.sql()).upper())
        if written in ("ARRAY<STRING>", "ARRAY<VARCHAR>"):
            as_array = True
        elif written not in ("STRING", "VARCHAR"):
            call.refuse(f"JSON_QUERY returns STRING or ARRAY<STRING>, not {written}", node=ref)
    wrapper = "WITHOUT"
    if "WRAPPER" in clauses:
        words = clauses["WRAPPER"].expression.name.upper()
        wrapper = "WITHOUT" if words.startswith("WITHOUT") else "CONDITIONAL" if "CONDITIONAL" in words.split() \
            else "UNCONDITIONAL"
    allowed = ("NULL", "ERROR", "EMPTY ARRAY", "EMPTY OBJECT")
    empty = _behaviour(call, clauses.get("ON EMPTY"), "ON EMPTY", STRING_TYPE, allowed)
    error = _behaviour(call, clauses.get("ON ERROR"), "ON ERROR", STRING_TYPE, allowed)
    kind = _kind("{F}")
    text = _json_out("to_json({F})")
    if wrapper == "UNCONDITIONAL":
        wrapped, scalar = f"concat('[', {text}, ']')", False
    elif wrapper == "CONDITIONAL":
        wrapped, scalar = f"IF({kind} = 'ARRAY', {text}, concat('[', {text}, ']'))", False
    else:
        wrapped, scalar = text, True
    present = (f"IF({kind} NOT IN ('OBJECT', 'ARRAY'), {error if strict else empty}, {wrapped})" if scalar
               else wrapped)
    # A JSON null at the path is no value: empty (lax) or an error (strict).
    resolved = _resolve(call, empty, error, present, strict, doc, path)
    result = f"IF({value.sql} IS NULL, NULL, {resolved})"
    if as_array:
        v = lambda_var()
        elements = (f"transform(CAST(parse_json({result}) AS ARRAY<VARIANT>), {v} -> IF({_kind(v)} IN "
                    f"('OBJECT', 'ARRAY'), to_json({v}), variant_get({v}, '$', 'string')))")
        return Typed(f"IF({result} IS NULL OR NOT ({result} LIKE '[%'), NULL, {elements})",
                     t("ARRAY", children=(STRING_TYPE,), nullable=True))
    return Typed(result, STRING_TYPE.nullable_as(True))
