"""Flink's string functions."""
from __future__ import annotations

from job.sql.flink.functions import not_supported, scalar
from job.sql.flink.translate import Typed
from job.sql.types import INT_TYPE, STRING_TYPE

CATEGORY = "string"


def _string(call, nullable=None):
    return STRING_TYPE.nullable_as(call.nullable() if nullable is None else nullable)


@scalar("UPPER", CATEGORY, "UPPER(string)", "STRING in upper case.")
def upper(call):
    s = call.args(1)[0]
    call.need(0, "string")
    return Typed(f"upper({s.sql})", s.type)


@scalar("LOWER", CATEGORY, "LOWER(string)", "STRING in lower case.")
def lower(call):
    s = call.args(1)[0]
    call.need(0, "string")
    return Typed(f"lower({s.sql})", s.type)


@scalar("CHAR_LENGTH", CATEGORY, "CHAR_LENGTH(string)", "The number of characters in STRING.",
        aliases=("CHARACTER_LENGTH",))
def char_length(call):
    s = call.args(1)[0]
    call.need(0, "string")
    return Typed(f"char_length({s.sql})", INT_TYPE.nullable_as(s.type.nullable))


@scalar("POSITION", CATEGORY, "POSITION(string1 IN string2)",
        "The 1-based position of the first occurrence of STRING1 in STRING2; 0 if not found.")
def position(call):
    needle, haystack = call.args(2)
    call.need(0, "string"), call.need(1, "string")
    return Typed(f"locate({needle.sql}, {haystack.sql})", INT_TYPE.nullable_as(call.nullable()))


@scalar("SUBSTRING", CATEGORY, "SUBSTRING(string FROM integer1 [ FOR integer2 ])",
        "The substring of STRING from position INTEGER1 (1-based), INTEGER2 characters long (default: to the end).",
        aliases=("SUBSTR",))
def substring(call):
    args = call.args(2, 3)
    call.need(0, "string"), call.need(1, "integer")
    if len(args) == 3:
        call.need(2, "integer")
        return Typed(f"substring({args[0].sql}, {args[1].sql}, {args[2].sql})", _string(call))
    return Typed(f"substring({args[0].sql}, {args[1].sql})", _string(call))


@scalar("TRIM", CATEGORY, "TRIM([ BOTH | LEADING | TRAILING ] string1 FROM string2)",
        "STRING2 without leading and/or trailing characters of STRING1 (default: blanks).")
def trim(call):
    call.arity(3)
    where = call.unit(0)
    chars, s = call.arg(1), call.arg(2)
    call.need(1, "string"), call.need(2, "string")
    keyword = {"BOTH": "BOTH", "LEADING": "LEADING", "TRAILING": "TRAILING"}[where]
    return Typed(f"trim({keyword} {chars.sql} FROM {s.sql})", _string(call, s.type.nullable or chars.type.nullable))


@scalar("LTRIM", CATEGORY, "LTRIM(string)", "STRING without leading blanks.")
def ltrim(call):
    s = call.args(1)[0]
    call.need(0, "string")
    return Typed(f"ltrim({s.sql})", _string(call))


@scalar("RTRIM", CATEGORY, "RTRIM(string)", "STRING without trailing blanks.")
def rtrim(call):
    s = call.args(1)[0]
    call.need(0, "string")
    return Typed(f"rtrim({s.sql})", _string(call))


@scalar("CONCAT", CATEGORY, "CONCAT(string1, string2, …)",
        "The concatenation of the strings; NULL if any is NULL.")
def concat(call):
    args = call.args(*range(1, 255))
    for i in range(len(args)):
        call.need(i, "string")
    return Typed(f"concat({', '.join(a.sql for a in args)})", _string(call))


@scalar("CONCAT_WS", CATEGORY, "CONCAT_WS(string1, string2, string3, …)",
        "STRING2, STRING3 … joined with the separator STRING1; NULL arguments are skipped, a NULL separator gives NULL.")
def concat_ws(call):
    args = call.args(*range(2, 255))
    for i in range(len(args)):
        call.need(i, "string")
    return Typed(f"concat_ws({', '.join(a.sql for a in args)})", _string(call, args[0].type.nullable))


@scalar("REGEXP_EXTRACT", CATEGORY, "REGEXP_EXTRACT(string1, string2[, integer])",
        "The group INTEGER (default 1) of the first match of the Java regex STRING2 in STRING1; NULL when "
        "nothing matches or the group does not exist.")
def regexp_extract(call):
    args = call.args(2, 3)
    call.need(0, "string"), call.need(1, "string")
    index = "1"
    if len(args) == 3:
        call.need(2, "integer")
        index = args[2].sql
        if _group_count(call, 1) is not None and _constant_index(call) is not None \
                and not 0 <= _constant_index(call) <= _group_count(call, 1):
            return Typed("CAST(NULL AS STRING)", _string(call, True))
    # Spark's regexp_extract gives '' where Flink gives NULL (no match); the first
    # element of all matches is NULL when there is none.
    return Typed(f"try_element_at(regexp_extract_all({args[0].sql}, {args[1].sql}, {index}), 1)",
                 _string(call, True))


def _group_count(call, i: int):
    """Groups of a constant regex (Java and Python agree on what a group is), or None."""
    import re

    node = call.raw[i]
    if not (getattr(node, "is_string", False)):
        return None
    try:
        return re.compile(node.this).groups
    except re.error:
        return None


def _constant_index(call):
    from sqlglot import exp

    node = call.raw[2]
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return int(node.this)
    return None


@scalar("SPLIT_INDEX", CATEGORY, "SPLIT_INDEX(string1, string2, integer1)",
        "The INTEGER1-th (0-based) piece of STRING1 split at the separator STRING2; NULL if there is none.")
def split_index(call):
    s, sep, index = call.args(3)
    call.need(0, "string"), call.need(1, "string"), call.need(2, "integer")
    # Flink splits at the literal separator (not a regex); a negative index is NULL.
    pieces = f"split({s.sql}, concat('\\\\Q', {sep.sql}, '\\\\E'))"
    return Typed(f"IF({index.sql} < 0, NULL, try_element_at({pieces}, {index.sql} + 1))", _string(call, True))


not_supported("REGEXP_EXTRACT_ALL", CATEGORY, "REGEXP_EXTRACT_ALL(str, regex[, extractIndex])")
