"""Flink's string functions: case, length, search, substrings, padding, trimming,
replacing. (Regular expressions are in :mod:`.regexp`; encodings, URLs and formatting in
:mod:`.encoding`.)

Spark's function of the same name is used only where it computes what Flink computes;
elsewhere Flink's Java implementation is spelled out (SUBSTRING's negative start,
LOCATE's start below 1, LPAD's NULL for an empty pad, OVERLAY's bounds, INITCAP's ASCII
words, ASCII's first UTF-8 byte).
"""
from __future__ import annotations

from job.sql.flink.functions import let, scalar
from job.sql.flink.typed import Typed
from job.sql.types import BOOLEAN_TYPE, INT_TYPE, MAX_LENGTH, STRING_TYPE, t

CATEGORY = "string"


def _string(call, nullable=None):
    return STRING_TYPE.nullable_as(call.nullable() if nullable is None else nullable)


def _strings(call, n: int) -> list:
    args = call.args(n)
    for i in range(n):
        call.need(i, "string")
    return args


@scalar("UPPER", CATEGORY, "UPPER(string)", "STRING in upper case.")
def upper(call):
    s = _strings(call, 1)[0]
    return Typed(f"upper({s.sql})", s.type)


@scalar("LOWER", CATEGORY, "LOWER(string)", "STRING in lower case.")
def lower(call):
    s = _strings(call, 1)[0]
    return Typed(f"lower({s.sql})", s.type)


@scalar("CHAR_LENGTH", CATEGORY, "CHAR_LENGTH(string)", "The number of characters in STRING.",
        aliases=("CHARACTER_LENGTH",))
def char_length(call):
    s = _strings(call, 1)[0]
    return Typed(f"char_length({s.sql})", INT_TYPE.nullable_as(s.type.nullable))


@scalar("INITCAP", CATEGORY, "INITCAP(string)",
        "Each word's first letter in upper case, its other letters in lower case; a word is a run of ASCII "
        "letters and digits, other characters are kept as they are.")
def initcap(call):
    s = _strings(call, 1)[0]

    def body(v: str) -> str:
        i = "_i"
        ch = f"substring({v}, {i}, 1)"
        prev = f"substring({v}, {i} - 1, 1)"
        per_char = (f"CASE WHEN {ch} RLIKE '^[a-zA-Z]$' THEN IF({i} = 1 OR NOT ({prev} RLIKE '^[a-zA-Z0-9]$'), "
                    f"upper({ch}), lower({ch})) ELSE {ch} END")
        return (f"IF(char_length({v}) = 0, {v}, array_join(transform(sequence(1, char_length({v})), {i} -> "
                f"{per_char}), ''))")

    return Typed(let(s.sql, body), s.type)


@scalar("REVERSE", CATEGORY, "REVERSE(string)", "STRING reversed.")
def reverse(call):
    s = _strings(call, 1)[0]
    return Typed(f"reverse({s.sql})", _string(call, True))


@scalar("CONCAT", CATEGORY, "CONCAT(string1, string2, …)", "The concatenation of the strings; NULL if any is NULL.")
def concat(call):
    args = call.args(*range(1, 255))
    for i in range(len(args)):
        call.need(i, "string")
    return Typed(f"concat({', '.join(a.sql for a in args)})", _string(call))


@scalar("CONCAT_WS", CATEGORY, "CONCAT_WS(string1, string2, string3, …)",
        "STRING2, STRING3 … joined with the separator STRING1; NULL arguments are skipped, a NULL separator gives "
        "NULL.")
def concat_ws(call):
    args = call.args(*range(2, 255))
    for i in range(len(args)):
        call.need(i, "string")
    return Typed(f"concat_ws({', '.join(a.sql for a in args)})", _string(call))


# --------------------------------------------------------------------------- search

def _locate(needle: str, haystack: str, start: str = "1") -> str:
    """Flink's position: BinaryStringData.indexOf(needle, start - 1) + 1 — an empty needle
    is found at 1, a start below 1 searches from the beginning."""
    return (f"(CASE WHEN {needle} IS NULL OR {haystack} IS NULL OR {start} IS NULL THEN NULL "
            f"WHEN {needle} = '' THEN 1 ELSE locate({needle}, {haystack}, greatest({start}, 1)) END)")


@scalar("POSITION", CATEGORY, "POSITION(string1 IN string2)",
        "The 1-based position of the first occurrence of STRING1 in STRING2; 0 if not found.")
def position(call):
    needle, haystack = _strings(call, 2)
    return Typed(_locate(needle.sql, haystack.sql), INT_TYPE.nullable_as(call.nullable()))


@scalar("LOCATE", CATEGORY, "LOCATE(string1, string2[, integer])",
        "The 1-based position of STRING1 in STRING2 from position INTEGER (default 1); 0 if absent.")
def locate(call):
    args = call.args(2, 3)
    call.need(0, "string"), call.need(1, "string")
    start = call.need(2, "integer").sql if len(args) == 3 else "1"
    return Typed(_locate(args[0].sql, args[1].sql, start), INT_TYPE.nullable_as(call.nullable()))


@scalar("INSTR", CATEGORY, "INSTR(string1, string2)", "The 1-based position of STRING2 in STRING1; 0 if absent.")
def instr(call):
    s, needle = _strings(call, 2)
    return Typed(_locate(needle.sql, s.sql), INT_TYPE.nullable_as(call.nullable()))


@scalar("STARTSWITH", CATEGORY, "STARTSWITH(expr, startExpr)",
        "Whether EXPR starts with STARTEXPR (both strings or both binary strings); TRUE for an empty STARTEXPR.")
def startswith(call):
    return _affix(call, "startswith")


@scalar("ENDSWITH", CATEGORY, "ENDSWITH(expr, endExpr)",
        "Whether EXPR ends with ENDEXPR (both strings or both binary strings); TRUE for an empty ENDEXPR.")
def endswith(call):
    return _affix(call, "endswith")


def _affix(call, fn: str):
    a, b = call.args(2)
    call.need(0, "string", "binary"), call.need(1, "string", "binary")
    if not a.type.is_null and not b.type.is_null and a.type.is_character != b.type.is_character:
        call.refuse(f"{call.name} needs two character strings or two binary strings, not {a.type} and {b.type}")
    return Typed(f"{fn}({a.sql}, {b.sql})", BOOLEAN_TYPE.nullable_as(call.nullable()))


# --------------------------------------------------------------------------- substrings

@scalar("SUBSTRING", CATEGORY, "SUBSTRING(string FROM integer1 [ FOR integer2 ])",
        "The substring of STRING from position INTEGER1 (1-based; negative: from the end), INTEGER2 characters long "
        "(default: to the end); NULL for a negative length.", aliases=("SUBSTR",))
def substring(call):
    args = call.args(2, 3)
    call.need(0, "string"), call.need(1, "integer")
    length = call.need(2, "integer").sql if len(args) == 3 else "2147483647"

    def body(v: str) -> str:
        pos = args[1].sql
        # Flink's subString: a start past the end or before the beginning gives ''.
        start = (f"(CASE WHEN {pos} > 0 THEN {pos} - 1 WHEN {pos} < 0 THEN char_length({v}) + {pos} ELSE 0 END)")
        return (f"(CASE WHEN {v} IS NULL OR {pos} IS NULL OR {length} IS NULL THEN NULL WHEN {length} < 0 THEN NULL "
                f"WHEN {start} < 0 OR {start} >= char_length({v}) THEN '' "
                f"ELSE substring({v}, {start} + 1, {length}) END)")

    return Typed(let(args[0].sql, body), _same_length(args[0], True))


@scalar("LEFT", CATEGORY, "LEFT(string, integer)", "The leftmost INTEGER characters ('' for a negative INTEGER).")
def left(call):
    s, n = call.args(2)
    call.need(0, "string"), call.need(1, "integer")
    return Typed(f"left({s.sql}, {n.sql})", _char_result(s, call))


@scalar("RIGHT", CATEGORY, "RIGHT(string, integer)", "The rightmost INTEGER characters ('' for a negative INTEGER).")
def right(call):
    s, n = call.args(2)
    call.need(0, "string"), call.need(1, "integer")
    return Typed(f"IF({n.sql} <= 0, '', right({s.sql}, {n.sql}))", _char_result(s, call))


def _char_result(s: Typed, call):
    """LEFT/RIGHT keep the argument's length as a VARCHAR."""
    length = s.type.precision if s.type.is_character and s.type.precision else MAX_LENGTH
    return t("VARCHAR", length, nullable=call.nullable())


@scalar("OVERLAY", CATEGORY, "OVERLAY(string1 PLACING string2 FROM integer1 [ FOR integer2 ])",
        "STRING1 with INTEGER2 characters (default: STRING2's length) from INTEGER1 replaced by STRING2; STRING1 "
        "as it is for a start outside it; the rest is dropped for a length below 1 or past the end.")
def overlay(call):
    args = call.args(3, 4)
    call.need(0, "string"), call.need(1, "string"), call.need(2, "integer")
    s, r, start = args[0].sql, args[1].sql, args[2].sql
    length = call.need(3, "integer").sql if len(args) == 4 else f"char_length({r})"
    value = (f"(CASE WHEN {s} IS NULL OR {r} IS NULL OR {start} IS NULL OR {length} IS NULL THEN NULL "
             f"WHEN {start} <= 0 OR {start} > char_length({s}) THEN {s} "
             f"ELSE concat(substring({s}, 1, {start} - 1), {r}, IF({length} > 0 AND {start} + {length} <= "
             f"char_length({s}), substring({s}, {start} + {length}), '')) END)")
    a, b = args[0].type, args[1].type
    if a.is_character and b.is_character and a.precision and b.precision:
        result = t("VARCHAR", min(a.precision + b.precision, MAX_LENGTH), nullable=call.nullable())
    else:
        result = _string(call)
    return Typed(value, result)


# --------------------------------------------------------------------------- trimming and padding

@scalar("TRIM", CATEGORY, "TRIM([ BOTH | LEADING | TRAILING ] string1 FROM string2)",
        "STRING2 without leading and/or trailing characters of STRING1 (default: blanks).")
def trim(call):
    call.arity(3)
    where = call.unit(0)
    chars, s = call.arg(1), call.arg(2)
    call.need(1, "string"), call.need(2, "string")
    keyword = {"BOTH": "BOTH", "LEADING": "LEADING", "TRAILING": "TRAILING"}[where]
    return Typed(f"trim({keyword} {chars.sql} FROM {s.sql})", _same_length(s, call.nullable(s, chars)))


def _trim(call, keyword: str):
    args = call.args(1, 2)
    call.need(0, "string")
    chars = call.need(1, "string").sql if len(args) == 2 else "' '"
    return Typed(f"trim({keyword} {chars} FROM {args[0].sql})", _same_length(args[0], call.nullable()))


def _same_length(s: Typed, nullable: bool):
    """A VARCHAR as long as the argument (what Flink types a trimmed or cut string as)."""
    length = s.type.precision if s.type.is_character and s.type.precision else MAX_LENGTH
    return t("VARCHAR", length, nullable=nullable)


@scalar("LTRIM", CATEGORY, "LTRIM(str[, trimStr])", "STR without leading characters of TRIMSTR (default: blanks).")
def ltrim(call):
    return _trim(call, "LEADING")


@scalar("RTRIM", CATEGORY, "RTRIM(str[, trimStr])", "STR without trailing characters of TRIMSTR (default: blanks).")
def rtrim(call):
    return _trim(call, "TRAILING")


@scalar("BTRIM", CATEGORY, "BTRIM(str[, trimStr])",
        "STR without leading and trailing characters of TRIMSTR (default: blanks).")
def btrim(call):
    return _trim(call, "BOTH")


def _pad(call, fn: str):
    s, n, pad = call.args(3)
    call.need(0, "string"), call.need(1, "integer"), call.need(2, "string")
    # Flink: a negative length or an empty pad gives NULL, whatever STRING1 is.
    return Typed(f"CASE WHEN {n.sql} < 0 OR {pad.sql} = '' THEN NULL ELSE {fn}({s.sql}, {n.sql}, {pad.sql}) END",
                 _string(call))


@scalar("LPAD", CATEGORY, "LPAD(string1, integer, string2)",
        "STRING1 left-padded with STRING2 to INTEGER characters (cut if longer); NULL for a negative INTEGER or an "
        "empty STRING2.")
def lpad(call):
    return _pad(call, "lpad")


@scalar("RPAD", CATEGORY, "RPAD(string1, integer, string2)",
        "STRING1 right-padded with STRING2 to INTEGER characters (cut if longer); NULL for a negative INTEGER or an "
        "empty STRING2.")
def rpad(call):
    return _pad(call, "rpad")


@scalar("REPEAT", CATEGORY, "REPEAT(string, integer)", "STRING repeated INTEGER times ('' for INTEGER < 1).")
def repeat(call):
    s, n = call.args(2)
    call.need(0, "string"), call.need(1, "integer")
    return Typed(f"repeat({s.sql}, {n.sql})", _string(call))


# --------------------------------------------------------------------------- replacing

@scalar("REPLACE", CATEGORY, "REPLACE(string1, string2, string3)",
        "STRING1 with every STRING2 replaced by STRING3 (an empty STRING2 matches between every character).")
def replace(call):
    s, old, new = _strings(call, 3)
    # Java's String.replace("", x) puts x around every character; Spark's replace leaves
    # the string as it is.
    value = (f"(CASE WHEN {old.sql} = '' AND {new.sql} IS NOT NULL THEN concat({new.sql}, "
             f"array_join(split({s.sql}, ''), {new.sql}), IF({s.sql} = '', '', {new.sql})) "
             f"ELSE replace({s.sql}, {old.sql}, {new.sql}) END)")
    return Typed(value, _string(call))


@scalar("TRANSLATE", CATEGORY, "TRANSLATE(expr, fromStr, toStr)",
        "EXPR with every character of FROMSTR replaced by the character at the same place in TOSTR (removed if "
        "TOSTR is shorter).")
def translate(call):
    s, a, b = _strings(call, 3)
    return Typed(f"translate({s.sql}, {a.sql}, {b.sql})", _string(call, s.type.nullable))


# --------------------------------------------------------------------------- characters

@scalar("ASCII", CATEGORY, "ASCII(string)",
        "The first byte of STRING's UTF-8 encoding as a signed number (the character code for ASCII text); 0 for "
        "an empty string.")
def ascii_(call):
    s = _strings(call, 1)[0]
    byte = f"CAST(conv(hex(substring(encode({s.sql}, 'UTF-8'), 1, 1)), 16, 10) AS INT)"
    return Typed(f"(CASE WHEN {s.sql} = '' THEN 0 WHEN {byte} > 127 THEN {byte} - 256 ELSE {byte} END)",
                 INT_TYPE.nullable_as(s.type.nullable))


@scalar("CHR", CATEGORY, "CHR(integer)",
        "The character whose code is INTEGER modulo 256; '' for a negative INTEGER.")
def chr_(call):
    n = call.args(1)[0]
    call.need(0, "integer")
    # Spark's chr is Flink's: (char) (n & 0xFF), '' below 0.
    return Typed(f"chr({n.sql})", STRING_TYPE.nullable_as(True))


@scalar("ELT", CATEGORY, "ELT(index, expr[, exprs]*)",
        "The INDEX-th (1-based) of the expressions; NULL when INDEX is out of range.")
def elt(call):
    args = call.args(*range(2, 255))
    call.need(0, "integer")
    for i in range(1, len(args)):
        call.need(i, "string", "binary")
    index = call.raw[0]
    from sqlglot import exp

    if isinstance(index, exp.Neg) and isinstance(index.this, exp.Literal):
        call.refuse(f"Index must be an integer starting from '0', but was '-{index.this.this}'", node=index)
    values, common = call.tr.coerce(args[1:], call.node, "ELT")
    array = f"array({', '.join(v.sql for v in values)})"
    return Typed(f"IF({args[0].sql} >= 1, try_element_at({array}, CAST({args[0].sql} AS INT)), NULL)",
                 common.nullable_as(True))


# --------------------------------------------------------------------------- predicates

def _is(call, regex: str):
    s = _strings(call, 1)[0]
    return Typed(f"coalesce({s.sql} RLIKE '{regex}', FALSE)", BOOLEAN_TYPE.nullable_as(False))


@scalar("IS_ALPHA", "conditional", "IS_ALPHA(string)",
        "Whether STRING is not empty and all its characters are letters (Java's Character.isLetter); FALSE for "
        "NULL.")
def is_alpha(call):
    return _is(call, "^\\\\p{javaLetter}+$")


@scalar("IS_DIGIT", "conditional", "IS_DIGIT(string)",
        "Whether STRING is not empty and all its characters are digits (Java's Character.isDigit); FALSE for "
        "NULL.")
def is_digit(call):
    return _is(call, "^\\\\p{javaDigit}+$")


# Java's Double.parseDouble after String.trim(), or Integer/Long.parseInt (which also
# takes Unicode digits).
_JAVA_NUMBER = ("^[\\\\x00-\\\\x20]*[+-]?(NaN|Infinity|((\\\\d+\\\\.?\\\\d*|\\\\.\\\\d+)([eE][+-]?\\\\d+)?)|"
                "(0[xX](\\\\p{XDigit}+\\\\.?|\\\\p{XDigit}*\\\\.\\\\p{XDigit}+)[pP][+-]?\\\\d+))[fFdD]?"
                "[\\\\x00-\\\\x20]*$|^[+-]?\\\\p{javaDigit}+$")


@scalar("IS_DECIMAL", "conditional", "IS_DECIMAL(string)",
        "Whether STRING reads as a number (Java's Integer, Long or Double parsing); FALSE for NULL.")
def is_decimal(call):
    return _is(call, _JAVA_NUMBER)

