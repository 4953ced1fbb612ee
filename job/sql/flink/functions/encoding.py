"""Flink's string functions that encode, decode, format and parse text: base64, ENCODE /
DECODE, URL_ENCODE / URL_DECODE, PARSE_URL, PRINTF, STR_TO_MAP, JSON_QUOTE / JSON_UNQUOTE.

Flink implements these with Java's library (``Base64``, ``String.getBytes``,
``URLEncoder``, ``java.net.URL``, ``java.util.Formatter``, ``String.split``); the
translations reproduce what those do, including what they do with bad input: Flink
returns NULL where the Java call fails and its function catches the failure, and
characters a charset cannot hold become ``?``.
"""
from __future__ import annotations

import re

from sqlglot import exp

from job.sql.flink.functions import let, scalar
from job.sql.flink.typed import Typed, spark_string
from job.sql.types import BYTES_TYPE, STRING_TYPE, t

CATEGORY = "string"
CHARSETS = ("US-ASCII", "ISO-8859-1", "UTF-8", "UTF-16BE", "UTF-16LE", "UTF-16")


def _string(call, nullable=None):
    return STRING_TYPE.nullable_as(call.nullable() if nullable is None else nullable)


@scalar("TO_BASE64", CATEGORY, "TO_BASE64(string)", "STRING's UTF-8 bytes in base64.")
def to_base64(call):
    s = call.args(1)[0]
    call.need(0, "string", "binary")
    return Typed(f"base64({s.sql})", _string(call))


@scalar("FROM_BASE64", CATEGORY, "FROM_BASE64(string)",
        "The base64 STRING decoded as UTF-8 text (invalid base64 fails the query, as in Flink).")
def from_base64(call):
    s = call.args(1)[0]
    call.need(0, "string", "binary")
    return Typed(f"make_valid_utf8(CAST(unbase64({s.sql}) AS STRING))", _string(call))


# --------------------------------------------------------------------------- charsets

def _charset(call, i: int) -> str:
    node = call.raw[i]
    if not (isinstance(node, exp.Literal) and node.is_string):
        call.refuse(f"the charset of {call.name} must be a string literal", node=node)
    name = node.this.upper()
    if name not in CHARSETS:
        call.refuse(f"{call.name}: unsupported charset '{node.this}'", node=node,
                    hint="Flink's charsets: " + ", ".join(CHARSETS))
    return name


@scalar("ENCODE", CATEGORY, "ENCODE(string1, string2)",
        "STRING1 as bytes in the charset STRING2 ('US-ASCII', 'ISO-8859-1', 'UTF-8', 'UTF-16BE', 'UTF-16LE', "
        "'UTF-16'); a character the charset cannot hold becomes '?'.")
def encode(call):
    call.arity(2)
    s = call.need(0, "string")
    charset = _charset(call, 1)
    text = s.sql
    if charset == "US-ASCII":
        text = f"regexp_replace({text}, '[^\\\\x{{00}}-\\\\x{{7F}}]', '?')"
    elif charset == "ISO-8859-1":
        text = f"regexp_replace({text}, '[^\\\\x{{00}}-\\\\x{{FF}}]', '?')"
    return Typed(f"encode({text}, '{charset}')", BYTES_TYPE.nullable_as(s.type.nullable))


@scalar("DECODE", CATEGORY, "DECODE(binary, string)",
        "The bytes BINARY read as text in the charset STRING; bytes that are not a character become U+FFFD.")
def decode(call):
    call.arity(2)
    b = call.need(0, "binary")
    charset = _charset(call, 1)
    if charset == "UTF-8":
        value = f"make_valid_utf8(CAST({b.sql} AS STRING))"
    elif charset == "US-ASCII":
        value = f"regexp_replace(decode({b.sql}, 'ISO-8859-1'), '[\\\\x{{80}}-\\\\x{{FF}}]', '\\uFFFD')"
    else:
        value = f"decode({b.sql}, '{charset}')"
    return Typed(value, STRING_TYPE.nullable_as(b.type.nullable))


# --------------------------------------------------------------------------- URLs

@scalar("URL_ENCODE", CATEGORY, "URL_ENCODE(string)",
        "STRING in application/x-www-form-urlencoded form (UTF-8).")
def url_encode(call):
    s = call.args(1)[0]
    call.need(0, "string")
    return Typed(f"url_encode({s.sql})", _string(call, True))


@scalar("URL_DECODE", CATEGORY, "URL_DECODE(string)",
        "STRING decoded from application/x-www-form-urlencoded form (UTF-8); NULL if it is not valid.")
def url_decode(call):
    s = call.args(1)[0]
    call.need(0, "string")
    return Typed(f"try_url_decode({s.sql})", _string(call, True))


# java.net.URL's reading of a URL: protocol ':' ['//' authority] path ['?' query] ['#' ref].
_URL = r"(?s)^([a-zA-Z][a-zA-Z0-9+.\-]*):(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?$"
_PARTS = {"PROTOCOL": 1, "AUTHORITY": 3, "PATH": 4, "QUERY": 6, "REF": 8}
_JAVA_PROTOCOLS = ("http", "https", "ftp", "file")


@scalar("PARSE_URL", CATEGORY, "PARSE_URL(string1, string2[, string3])",
        "The part STRING2 (HOST, PATH, QUERY, REF, PROTOCOL, AUTHORITY, FILE, USERINFO) of the URL STRING1, or the "
        "value of the QUERY parameter STRING3; NULL when the URL or the part is not there.")
def parse_url(call):
    args = call.args(2, 3)
    for i in range(len(args)):
        call.need(i, "string")
    node = call.raw[1]
    if not (isinstance(node, exp.Literal) and node.is_string):
        call.refuse("the part of PARSE_URL must be a string literal (HOST, PATH, QUERY …)", node=node)
    part = node.this
    # java.net.URL trims the text (characters up to U+0020) and skips a leading "url:".
    url = f"regexp_replace({args[0].sql}, '^[\\\\x00-\\\\x20]*((?i)url:)?|[\\\\x00-\\\\x20]*$', '')"
    pattern = spark_string(_URL)

    def body(u: str) -> str:
        def group(n: int) -> str:
            return f"regexp_extract({u}, {pattern}, {n})"

        def present(n: int) -> str:  # whether an optional group matched (Spark gives '' either way)
            return f"regexp_instr({u}, {pattern}, {n}) > 0"

        authority = f"IF({present(2)}, {group(3)}, NULL)"
        host_port = f"regexp_replace({group(3)}, '^.*@', '')"
        host = f"IF({present(2)}, regexp_replace({host_port}, ':[0-9]*$', ''), '')"
        query = f"IF({present(5)}, {group(6)}, NULL)"
        values = {
            "PROTOCOL": group(1), "AUTHORITY": authority, "PATH": group(4), "QUERY": query,
            "REF": f"IF({present(7)}, {group(8)}, NULL)", "HOST": host,
            "FILE": f"concat({group(4)}, IF({present(5)}, concat('?', {group(6)}), ''))",
            "USERINFO": f"IF({present(2)} AND {group(3)} LIKE '%@%', regexp_extract({group(3)}, '^(.*)@', 1), NULL)",
        }
        if len(args) == 3:
            key = args[2].sql
            regex = f"concat('(&|^)', {_quote(key)}, '=([^&]*)')"
            value = (f"IF({part == 'QUERY'} AND {query} IS NOT NULL AND regexp_instr({query}, {regex}, 0) > 0, "
                     f"regexp_extract({query}, {regex}, 2), NULL)")
        else:
            value = values.get(part, "NULL")
        protocol = f"lower({group(1)})"
        # A port that is not a number makes java.net.URL fail: NULL.
        bad_port = (f"({present(2)} AND {host_port} NOT LIKE '[%' AND {host_port} LIKE '%:%' "
                    f"AND NOT (substring_index({host_port}, ':', -1) RLIKE '^[0-9]*$'))")
        valid = (f"regexp_instr({u}, {pattern}, 0) > 0 AND {protocol} IN ({', '.join(repr(p) for p in _JAVA_PROTOCOLS)})"
                 f" AND NOT {bad_port}")
        unsupported = f"{protocol} IN ('jar', 'mailto', 'jrt', 'jmod')"
        return (f"(CASE WHEN {u} IS NULL THEN NULL WHEN {valid} THEN {value} WHEN regexp_instr({u}, {pattern}, 0) > 0 "
                f"AND {unsupported} THEN raise_error(concat('PARSE_URL of a ', {protocol}, ': URL is not supported "
                f"yet')) ELSE NULL END)")

    return Typed(let(url, body), _string(call, True))


def _quote(sql: str) -> str:
    """A Java regex matching the text ``sql`` evaluates to (Pattern.quote)."""
    return f"regexp_replace({sql}, '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\$1')"


# --------------------------------------------------------------------------- maps from text

@scalar("STR_TO_MAP", CATEGORY, "STR_TO_MAP(string1[, string2, string3])",
        "STRING1 split into pairs at the regex STRING2 (default ','), each pair into key and value at the first "
        "match of the regex STRING3 (default '='); a pair without it maps to NULL, a later key wins.")
def str_to_map(call):
    args = call.args(1, 3)
    for i in range(len(args)):
        call.need(i, "string")
    pairs_re = args[1].sql if len(args) == 3 else "','"
    kv_re = args[2].sql if len(args) == 3 else "'='"

    def body(s: str) -> str:
        # Java's String.split drops trailing empty pieces (Spark's split keeps them).
        pieces = f"split({s}, {pairs_re}, -1)"
        trailing = f"array_position(transform(reverse({pieces}), _p -> _p <> ''), true)"
        kept = f"IF({trailing} = 0, array(), slice({pieces}, 1, size({pieces}) - {trailing} + 1))"
        entry = (f"transform({kept}, _p -> IF(size(split(_p, {kv_re}, 2)) < 2, struct(_p AS k, CAST(NULL AS STRING) "
                 f"AS v), struct(split(_p, {kv_re}, 2)[0] AS k, split(_p, {kv_re}, 2)[1] AS v)))")
        return (f"(CASE WHEN {s} IS NULL THEN NULL WHEN {s} = '' THEN CAST(map() AS MAP<STRING, STRING>) "
                f"ELSE map_from_entries({entry}) END)")

    null_delimiters = " OR ".join(f"{a.sql} IS NULL" for a in args[1:]) or "FALSE"
    value = f"IF({null_delimiters}, NULL, {let(args[0].sql, body)})"
    return Typed(value, t("MAP", children=(STRING_TYPE, STRING_TYPE), nullable=True))


# --------------------------------------------------------------------------- JSON text

@scalar("JSON_QUOTE", CATEGORY, "JSON_QUOTE(string)",
        "STRING as a JSON string literal: in double quotes, with '\"', '\\', '/' and control characters escaped "
        "and non-ASCII characters as \\uXXXX.")
def json_quote(call):
    s = call.args(1)[0]
    call.need(0, "string")
    escapes = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t"}
    cases = " ".join(f"WHEN {spark_string(k)} THEN {spark_string(v)}" for k, v in escapes.items())
    code = "ascii(_c)"
    # Flink writes a character beyond U+FFFF as \u + its code point's hex digits, then
    # its low surrogate (\udXXX): reproduced as it is.
    hex4 = f"lower(IF({code} > 65535, hex({code}), lpad(hex({code}), 4, '0')))"
    low = f"lower(hex(56320 + pmod({code} - 65536, 1024)))"
    per_char = (f"CASE _c {cases} ELSE CASE WHEN {code} < 32 OR {code} > 126 THEN IF({code} > 65535, "
                f"concat('\\\\u', {hex4}, '\\\\u', {low}), concat('\\\\u', {hex4})) ELSE _c END END")
    body = f"concat('\"', array_join(transform(regexp_extract_all({s.sql}, '(?s)(.)', 1), _c -> {per_char}), ''), '\"')"
    return Typed(f"IF({s.sql} IS NULL, NULL, {body})", _string(call))


_JSON_STRING = r'^"([^"\\\x00-\x1F]|\\(["\\/bfnrt]|u[0-9a-fA-F]{4}))*"$'


@scalar("JSON_UNQUOTE", CATEGORY, "JSON_UNQUOTE(string)",
        "The text of the JSON string literal STRING (escapes undone); STRING as it is if it is not one.")
def json_unquote(call):
    s = call.args(1)[0]
    call.need(0, "string")
    value = (f"IF({s.sql} RLIKE {spark_string(_JSON_STRING)}, "
             f"get_json_object(concat('{{\"v\":', {s.sql}, '}}'), '$.v'), {s.sql})")
    return Typed(value, _string(call))


# --------------------------------------------------------------------------- PRINTF

_SPEC = re.compile(r"%(\d+\$)?([-#+ 0,(<]*)(\d+)?(\.\d+)?([a-zA-Z%])")
_GENERAL, _INTEGRAL, _FLOATING = set("sSbB"), set("doxX"), set("eEfgG")
_JAVA_CONVERSIONS = set("bBhHsScCdoxXeEfgGaAtT%n")


@scalar("PRINTF", CATEGORY, "PRINTF(format[, obj]*)",
        "FORMAT filled in with the values, as Java's String.format (Locale.US); a NULL value prints as 'null'; "
        "NULL when a value does not suit its conversion.")
def printf(call):
    args = call.args(*range(1, 255))
    fmt_node = call.raw[0]
    if not (isinstance(fmt_node, exp.Literal) and fmt_node.is_string):
        call.refuse("the format of PRINTF must be a string literal here", node=fmt_node)
    fmt = fmt_node.this
    values = args[1:]
    kinds = [_printf_kind(call, v, i + 1) for i, v in enumerate(values)]
    uses: list[tuple[int, str]] = []        # (argument index, conversion)
    ordinary = 0
    pos = 0
    for m in _SPEC.finditer(fmt):
        if "%" in fmt[pos:m.start()]:
            return _null_string()   # a '%' that starts no valid specifier: Java fails, Flink gives NULL
        pos = m.end()
        index, flags, _width, precision, conversion = m.groups()
        if conversion in "%n":
            continue
        if conversion not in _JAVA_CONVERSIONS:
            return _null_string()   # UnknownFormatConversionException
        if conversion not in _GENERAL | _INTEGRAL | _FLOATING | set("cC") or "<" in flags or "#" in flags:
            call.refuse(f"PRINTF: the conversion '{m.group(0)}' is not supported yet", node=fmt_node)
        if index:
            arg = int(index[:-1]) - 1
        else:
            arg, ordinary = ordinary, ordinary + 1
        if arg >= len(values):
            return _null_string()   # MissingFormatArgumentException
        uses.append((arg, conversion))
    if "%" in fmt[pos:]:
        return _null_string()
    mismatched = {arg for arg, conversion in uses if not _suits(kinds[arg], conversion)}
    spark_args = [_printf_value(v, k) for v, k in zip(values, kinds)]
    value = f"printf({', '.join([spark_string(fmt)] + spark_args)})"
    if mismatched:
        guard = " OR ".join(f"{values[a].sql} IS NOT NULL" for a in sorted(mismatched))
        value = f"(CASE WHEN {guard} THEN NULL ELSE {value} END)"
    return Typed(value, STRING_TYPE.nullable_as(True))


def _null_string() -> Typed:
    return Typed("CAST(NULL AS STRING)", STRING_TYPE.nullable_as(True))


def _printf_kind(call, v: Typed, i: int) -> str:
    x = v.type
    if x.is_null or x.is_character:
        return "string"
    if x.name in ("TINYINT", "SMALLINT", "INT", "DATE"):
        return "int"
    if x.name == "BIGINT":
        return "long"
    if x.name in ("FLOAT", "DOUBLE"):
        return "float"
    if x.name in ("BOOLEAN", "DECIMAL", "TIMESTAMP", "TIMESTAMP_LTZ"):
        return x.name.lower()
    call.refuse(f"PRINTF of a {x} value is not supported (Flink prints an object's identity)", node=call.raw[i])


def _suits(kind: str, conversion: str) -> bool:
    if conversion in _GENERAL:
        return True
    if conversion in _INTEGRAL:
        return kind in ("int", "long")
    if conversion in _FLOATING:
        return kind == "float"
    return kind == "int"    # %c: a Byte, Short or Integer code point


def _printf_value(v: Typed, kind: str) -> str:
    """The value Spark should hand to java.util.Formatter for Flink's internal object."""
    x = v.type
    if x.name == "DATE":   # Flink passes a DATE as its day number
        return f"datediff({v.sql}, DATE'1970-01-01')"
    if kind == "decimal":
        return f"CAST({v.sql} AS STRING)"
    if kind in ("timestamp", "timestamp_ltz"):   # TimestampData.toString: LocalDateTime's ISO text
        ts = v.sql
        return (f"IF({ts} IS NULL, NULL, concat(date_format({ts}, \"yyyy-MM-dd'T'HH:mm\"), "
                f"CASE WHEN unix_micros({ts}) % 60000000 = 0 THEN '' "
                f"WHEN unix_micros({ts}) % 1000000 = 0 THEN date_format({ts}, ':ss') "
                f"WHEN unix_micros({ts}) % 1000 = 0 THEN date_format({ts}, ':ss.SSS') "
                f"ELSE date_format({ts}, ':ss.SSSSSS') END))")
    return v.sql
