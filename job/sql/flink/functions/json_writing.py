"""Flink's JSON functions: writing JSON text (JSON_STRING, JSON_OBJECT, JSON_ARRAY).

The JSON text is built here, as Flink's Jackson writes it: object keys sorted, numbers as
Java's BigDecimal prints them (``1.0E+20``, ``0.000010``), strings with Jackson's escapes,
a nested JSON_OBJECT / JSON_ARRAY call inserted as JSON rather than as a string.
Reading JSON is :mod:`job.sql.flink.functions.json`.
"""
from __future__ import annotations

from sqlglot import exp

from job.sql.flink.dialect import JsonClause
from job.sql.flink.functions import lambda_var, scalar
from job.sql.flink.functions.json import CATEGORY, json_clauses
from job.sql.flink.typed import Typed, spark_string
from job.sql.types import STRING_TYPE


def json_text_of_string(sql: str) -> str:
    """A string as a JSON string literal, escaped as Jackson escapes it ('"', '\\' and
    control characters; '/' and non-ASCII characters as they are)."""
    c = lambda_var("c")
    named = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    cases = " ".join(f"WHEN {spark_string(k)} THEN {spark_string(v)}" for k, v in named.items())
    per_char = (f"CASE {c} {cases} ELSE IF(ascii({c}) < 32, concat('\\\\u', lpad(hex(ascii({c})), 4, '0')), {c}) "
                f"END")
    escaped = f"array_join(transform(regexp_extract_all({sql}, '(?s)(.)', 1), {c} -> {per_char}), '')"
    # Most strings need no escape: those go through as they are.
    return (f"concat('\"', IF({sql} RLIKE '[\"\\\\\\\\\\\\x00-\\\\x1F]', {escaped}, {sql}), '\"')")


def _double_text(sql: str) -> str:
    """A DOUBLE as Java's BigDecimal.valueOf(d).toString(): Double.toString's digits,
    written plain unless the exponent is above the digits or below -6 (1.0E+20, 0.000010,
    12345678)."""
    text = f"CAST({sql} AS STRING)"
    pattern = "'^(-?)([0-9])\\\\.([0-9]+)E(-?[0-9]+)$'"

    def g(n: int) -> str:
        return f"regexp_extract({text}, {pattern}, {n})"

    sign, lead, fraction, exponent = g(1), g(2), g(3), f"CAST({g(4)} AS INT)"
    digits = f"concat({lead}, {fraction})"
    scale = f"(length({fraction}) - {exponent})"
    plain_negative = f"concat({sign}, '0.', repeat('0', -{exponent} - 1), {digits})"
    plain_positive = (f"concat({sign}, substring({digits}, 1, {exponent} + 1), IF({scale} > 0, "
                      f"concat('.', substring({digits}, {exponent} + 2)), ''))")
    scientific = (f"concat({sign}, {lead}, IF(length({fraction}) > 0, concat('.', {fraction}), ''), 'E', "
                  f"IF({exponent} > 0, '+', ''), {exponent})")
    return (f"(CASE WHEN isnan({sql}) OR abs({sql}) = CAST('Infinity' AS DOUBLE) THEN "
            f"raise_error('JSON cannot hold NaN or Infinity') "
            f"WHEN {sql} = 0 THEN '0.0' WHEN NOT ({text} RLIKE {pattern}) THEN {text} "
            f"WHEN {exponent} < 0 AND {exponent} >= -6 THEN {plain_negative} "
            f"WHEN {exponent} >= 0 AND {scale} >= 0 THEN {plain_positive} ELSE {scientific} END)")


def _is_json_call(node) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.upper() in ("JSON_OBJECT", "JSON_ARRAY")


def render(call, value: Typed, node=None) -> str:
    """Spark SQL for the JSON text of ``value`` (NULL stays NULL)."""
    if node is not None and _is_json_call(node):
        return value.sql
    x = value.type
    sql = value.sql
    if x.is_null:
        return "CAST(NULL AS STRING)"
    if x.is_character:
        return f"IF({sql} IS NULL, NULL, {json_text_of_string(sql)})"
    if x.name == "BOOLEAN":
        return f"lower(CAST({sql} AS STRING))"
    if x.is_integral or x.name == "DECIMAL":
        return f"CAST({sql} AS STRING)"
    if x.name in ("DOUBLE", "FLOAT"):
        return f"IF({sql} IS NULL, NULL, {_double_text(f'CAST({sql} AS DOUBLE)')})"
    if x.is_binary:
        return f"IF({sql} IS NULL, NULL, concat('\"', base64({sql}), '\"'))"
    if x.name == "ARRAY":
        v = lambda_var()
        inner = render(call, Typed(v, x.children[0]))
        return f"IF({sql} IS NULL, NULL, concat('[', array_join(transform({sql}, {v} -> coalesce({inner}, " \
               f"'null')), ','), ']'))"
    if x.name == "MAP":
        if not (x.children[0].is_character):
            call.refuse(f"{call.name}: a MAP with {x.children[0]} keys cannot be written as JSON")
        e = lambda_var()
        key = json_text_of_string(f"{e}.key")
        inner = render(call, Typed(f"{e}.value", x.children[1]))
        return (f"IF({sql} IS NULL, NULL, concat('{{', array_join(transform(array_sort(map_entries({sql})), {e} -> "
                f"concat({key}, ':', coalesce({inner}, 'null'))), ','), '}}'))")
    if x.name == "ROW":
        fields = sorted(zip(x.field_names, x.children))
        parts = []
        for name, child in fields:
            inner = render(call, Typed(f"{sql}.`{name.replace('`', '``')}`", child))
            parts.append(f"concat({spark_string(_json_key(name))}, coalesce({inner}, 'null'))")
        return f"IF({sql} IS NULL, NULL, concat('{{', concat_ws(',', {', '.join(parts) or repr('')}), '}}'))"
    if x.name == "TIMESTAMP":
        iso = (f"concat(date_format({sql}, \"yyyy-MM-dd'T'HH:mm\"), CASE WHEN unix_micros({sql}) % 60000000 = 0 "
               f"THEN '' ELSE concat(':', date_format({sql}, 'ss'), regexp_replace(regexp_replace(date_format("
               f"{sql}, '.SSSSSS'), '0+$', ''), '^\\\\.$', '')) END)")
        return f"IF({sql} IS NULL, NULL, concat('\"', {iso}, '\"'))"
    call.refuse(f"Type '{x}' is not scalar or cannot be converted into JSON.")


def _json_key(name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}":'


@scalar("JSON_STRING", CATEGORY, "JSON_STRING(value)", "VALUE as JSON text; NULL for NULL.")
def json_string(call):
    x = call.args(1)[0]
    if x.type.name in ("DATE", "TIME", "TIMESTAMP_LTZ"):
        call.refuse(f"Unsupported argument type. Expected type of family 'CHARACTER_STRING' but actual type was "
                    f"'{x.type}'.")
    return Typed(render(call, x), STRING_TYPE.nullable_as(x.type.nullable))


@scalar("JSON_OBJECT", CATEGORY, "JSON_OBJECT([[KEY] key VALUE value]* [ { NULL | ABSENT } ON NULL ])",
        "A JSON object of the key/value pairs, keys sorted (NULL ON NULL: a NULL value is written as null, the "
        "default; ABSENT ON NULL: left out).")
def json_object(call):
    pairs = [a for a in call.raw if not isinstance(a, JsonClause)]
    on_null = json_clauses(call).get("ON NULL")
    absent = on_null is not None and on_null.expression.name.upper() == "ABSENT"
    entries = {}
    for pair in pairs:
        if not isinstance(pair, exp.Tuple) or len(pair.expressions) != 2:
            call.refuse("JSON_OBJECT takes KEY 'key' VALUE value pairs", node=pair)
        key_node, value_node = pair.expressions
        if not (isinstance(key_node, exp.Literal) and key_node.is_string):
            call.refuse("the keys of JSON_OBJECT must be string literals here", node=key_node)
        if key_node.this in entries:
            call.refuse(f"JSON_OBJECT: the key '{key_node.this}' appears twice", node=key_node)
        entries[key_node.this] = (call.tr.expr(value_node), value_node)
    parts = []
    for key in sorted(entries):
        value, node = entries[key]
        text = render(call, value, node)
        prefix = spark_string(_json_key(key))
        parts.append(f"IF({text} IS NULL, NULL, concat({prefix}, {text}))" if absent
                     else f"concat({prefix}, coalesce({text}, 'null'))")
    body = f"concat_ws(',', {', '.join(parts)})" if parts else "''"
    return Typed(f"concat('{{', {body}, '}}')", STRING_TYPE.nullable_as(False))


@scalar("JSON_ARRAY", CATEGORY, "JSON_ARRAY([value]* [ { NULL | ABSENT } ON NULL ])",
        "A JSON array of the values (ABSENT ON NULL: NULLs left out, the default; NULL ON NULL: written as null).")
def json_array(call):
    values = [a for a in call.raw if not isinstance(a, JsonClause)]
    on_null = json_clauses(call).get("ON NULL")
    absent = on_null is None or on_null.expression.name.upper() == "ABSENT"
    parts = []
    for node in values:
        text = render(call, call.tr.expr(node), node)
        parts.append(text if absent else f"coalesce({text}, 'null')")
    body = f"concat_ws(',', {', '.join(parts)})" if parts else "''"
    return Typed(f"concat('[', {body}, ']')", STRING_TYPE.nullable_as(False))

