"""Flink's regular-expression string functions (REGEXP, REGEXP_REPLACE, REGEXP_EXTRACT …).

Both engines use ``java.util.regex``, so a pattern means the same in both. What differs
is what happens around the match, and those differences are spelled out here:

* an invalid pattern makes Flink's function return NULL (REGEXP: FALSE); Spark fails
  the query. Every call checks the pattern first (:func:`valid`), with Java's own
  ``Pattern.compile`` through ``try_reflect``;
* Flink's REGEXP_REPLACE takes the replacement literally (``Matcher.quoteReplacement``);
  Spark's reads ``$1`` and ``\\`` in it;
* a group that took no part in the match is NULL in Flink, ``''`` in Spark:
  ``regexp_instr(s, r, g)`` is 0 exactly when group ``g`` did not match;
* REGEXP_EXTRACT_ALL and REGEXP_SUBSTR are NULL where Spark gives ``[]`` or drops an
  empty match.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from job.sql.flink.functions import scalar
from job.sql.flink.typed import Typed, spark_string
from job.sql.types import BOOLEAN_TYPE, INT_TYPE, STRING_TYPE, t

CATEGORY = "string"
_META = set("\\^$.|?*+()[]{}")


def valid(pattern: str) -> str:
    """Spark SQL: is ``pattern`` a valid Java regex (NULL for a NULL pattern)?"""
    return f"(try_reflect('java.util.regex.Pattern', 'compile', {pattern}) IS NOT NULL)"


def quote(call, i: int) -> str:
    """Argument ``i`` (a string) as a Java regex matching exactly that text."""
    node = call.raw[i]
    if isinstance(node, exp.Literal) and node.is_string:
        return spark_string("".join("\\" + c if c in _META else c for c in node.this))
    return f"regexp_replace({call.arg(i).sql}, '([\\\\\\\\^$.|?*+()\\\\[\\\\]{{}}])', '\\\\\\\\$1')"


def groups(pattern: str) -> Optional[tuple[int, frozenset]]:
    """The capturing groups of the Java regex ``pattern``: how many there are, and which
    of them may take no part in a match (inside an alternative, or under a quantifier
    that allows zero repetitions). None if the pattern could not be read."""
    count, i, n = 0, 0, len(pattern)
    stack: list[list] = [[0, [], False]]  # per open group: number (0: not capturing), descendants, has '|'
    optional: set = set()
    while i < n:
        c = pattern[i]
        if c == "\\":
            if pattern.startswith("\\Q", i):
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
            else:
                i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i)
            if i < 0:
                return None
            continue
        if c == "(":
            number = 0
            if not pattern.startswith("(?", i) or (pattern.startswith("(?<", i) and i + 3 < n
                                                   and pattern[i + 3] not in "=!"):
                count += 1
                number = count
                for frame in stack:
                    frame[1].append(number)
            stack.append([number, [], False])
        elif c == ")":
            if len(stack) == 1:
                return None
            closed = stack.pop()
            if closed[2]:
                optional.update(closed[1])
            if i + 1 < n and (pattern[i + 1] in "?*" or pattern.startswith("{0", i + 1)):
                optional.update(closed[1])
                if closed[0]:
                    optional.add(closed[0])
        elif c == "|":
            stack[-1][2] = True
        i += 1
    if len(stack) != 1:
        return None
    if stack[0][2]:
        optional.update(stack[0][1])
    return count, frozenset(optional)


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class that starts at ``i`` (-1 if it never ends)."""
    depth, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            depth += 1
            i += 1
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):   # a ']' right after '[' or '[^' is a character
                i += 1
            continue
        if c == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def group_count(pattern: str) -> Optional[int]:
    found = groups(pattern)
    return None if found is None else found[0]


def _literal(call, i: int) -> Optional[str]:
    node = call.raw[i]
    return node.this if isinstance(node, exp.Literal) and node.is_string else None


def _index(call, i: int) -> Optional[int]:
    node = call.raw[i]
    negative = isinstance(node, exp.Neg)
    node = node.this if negative else node
    if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
        return -int(node.this) if negative else int(node.this)
    return None


def _strings(call, *counts: int) -> list:
    args = call.args(*counts)
    for i in range(2):
        call.need(i, "string")
    return args


def _guarded(call, s: str, r: str, value: str, invalid: str = "NULL") -> str:
    """``value`` where the pattern is valid, ``invalid`` where it is not; NULL for NULLs."""
    return f"(CASE WHEN {s} IS NULL OR {r} IS NULL THEN NULL WHEN NOT {valid(r)} THEN {invalid} ELSE {value} END)"


@scalar("REGEXP", CATEGORY, "REGEXP(string1, string2)",
        "Whether any substring of STRING1 matches the Java regex STRING2 (FALSE for an invalid regex).")
def regexp(call):
    s, r = _strings(call, 2)
    # Flink: an empty pattern matches nothing.
    value = f"(CASE WHEN {r.sql} = '' THEN FALSE ELSE regexp({s.sql}, {r.sql}) END)"
    return Typed(_guarded(call, s.sql, r.sql, value, "FALSE"), BOOLEAN_TYPE.nullable_as(call.nullable()))


@scalar("REGEXP_REPLACE", CATEGORY, "REGEXP_REPLACE(string1, string2, string3)",
        "STRING1 with every match of the Java regex STRING2 replaced by STRING3, taken literally "
        "(NULL for an invalid regex).")
def regexp_replace(call):
    s, r, rep = call.args(3)
    for i in range(3):
        call.need(i, "string")
    literal = f"regexp_replace({rep.sql}, '([\\\\\\\\$])', '\\\\\\\\$1')"
    value = f"CASE WHEN {rep.sql} IS NULL THEN NULL ELSE regexp_replace({s.sql}, {r.sql}, {literal}) END"
    return Typed(_guarded(call, s.sql, r.sql, value), STRING_TYPE.nullable_as(True))


def _constant_group(call, name: str, default: int):
    """(group index, exists) of a call with a constant pattern and group index (``default``
    when the call gives none). Spark fails on a group the pattern lacks, and gives '' for a
    group that took no part in a match where Flink gives NULL: with constants both are
    settled here."""
    pattern = _literal(call, 1)
    index = _index(call, 2) if len(call) > 2 else default
    if pattern is None or index is None:
        call.refuse(f"{name} needs a constant pattern and group index here",
                    hint="Spark fails on a group the pattern does not have; with constants the job checks first")
    found = groups(pattern)
    if found is None:  # unbalanced: Java cannot compile it either (checked at run time)
        return index, None
    count, optional = found
    if not 0 <= index <= count:
        return index, False
    if index in optional:
        call.refuse(f"{name} of a group that may take no part in a match (inside an alternative or an optional "
                    "part) is not supported yet", node=call.raw[1],
                    hint="Spark cannot tell such a group's NULL from an empty match")
    return index, True


def _unreadable(call, s: Typed, r: Typed) -> str:
    """A pattern whose parentheses or brackets do not balance: NULL as Flink gives for an
    invalid pattern (should Java read it after all, the query fails rather than guess)."""
    return _guarded(call, s.sql, r.sql, f"raise_error('{call.name}: the pattern could not be read')")


@scalar("REGEXP_EXTRACT", CATEGORY, "REGEXP_EXTRACT(string1, string2[, integer])",
        "The group INTEGER (default 0: the whole match) of the first match of the Java regex STRING2 in "
        "STRING1; NULL when nothing matches, the group does not exist, or the regex is invalid.")
def regexp_extract(call):
    args = _strings(call, 2, 3)
    if len(args) == 3:
        call.need(2, "integer")
    s, r = args[0], args[1]
    index, exists = _constant_group(call, "REGEXP_EXTRACT", 0)  # Flink: regexpExtract(str, regex, 0)
    if not exists:
        return Typed(_unreadable(call, s, r) if exists is None else "CAST(NULL AS STRING)",
                     STRING_TYPE.nullable_as(True))
    value = f"IF(regexp_instr({s.sql}, {r.sql}, 0) = 0, NULL, regexp_extract({s.sql}, {r.sql}, {index}))"
    return Typed(_guarded(call, s.sql, r.sql, value), STRING_TYPE.nullable_as(True))


@scalar("REGEXP_EXTRACT_ALL", CATEGORY, "REGEXP_EXTRACT_ALL(str, regex[, extractIndex])",
        "Group EXTRACTINDEX (default 1; 0: the whole match) of every match of the Java regex REGEX in STR, an "
        "ARRAY<STRING>; NULL when the group does not exist or the regex is invalid.")
def regexp_extract_all(call):
    args = _strings(call, 2, 3)
    if len(args) == 3:
        call.need(2, "integer")
    s, r = args[0], args[1]
    result = t("ARRAY", children=(STRING_TYPE,), nullable=True)
    index, exists = _constant_group(call, "REGEXP_EXTRACT_ALL", 1)
    if not exists:
        return Typed(_unreadable(call, s, r) if exists is None else "CAST(NULL AS ARRAY<STRING>)", result)
    return Typed(_guarded(call, s.sql, r.sql, f"regexp_extract_all({s.sql}, {r.sql}, {index})"), result)


@scalar("REGEXP_COUNT", CATEGORY, "REGEXP_COUNT(str, regex)",
        "The number of matches of the Java regex REGEX in STR (NULL for an invalid regex).")
def regexp_count(call):
    s, r = _strings(call, 2)
    return Typed(_guarded(call, s.sql, r.sql, f"regexp_count({s.sql}, {r.sql})"), INT_TYPE.nullable_as(True))


@scalar("REGEXP_INSTR", CATEGORY, "REGEXP_INSTR(str, regex)",
        "The 1-based position of the first match of the Java regex REGEX in STR; 0 if none (NULL for an "
        "invalid regex).")
def regexp_instr(call):
    s, r = _strings(call, 2)
    return Typed(_guarded(call, s.sql, r.sql, f"regexp_instr({s.sql}, {r.sql}, 0)"), INT_TYPE.nullable_as(True))


@scalar("REGEXP_SUBSTR", CATEGORY, "REGEXP_SUBSTR(str, regex)",
        "The first match of the Java regex REGEX in STR (an empty match is ''); NULL if none.")
def regexp_substr(call):
    s, r = _strings(call, 2)
    value = f"IF(regexp_instr({s.sql}, {r.sql}, 0) = 0, NULL, regexp_extract({s.sql}, {r.sql}, 0))"
    return Typed(_guarded(call, s.sql, r.sql, value), STRING_TYPE.nullable_as(True))


@scalar("SPLIT_INDEX", CATEGORY, "SPLIT_INDEX(string1, string2, integer1)",
        "The INTEGER1-th (0-based) piece of STRING1 split at the text STRING2 (an empty STRING2 splits at "
        "whitespace); NULL if there is none.")
def split_index(call):
    s, sep, index = call.args(3)
    call.need(0, "string"), call.need(1, "string"), call.need(2, "integer")
    # commons-lang's splitByWholeSeparatorPreserveAllTokens: every piece kept, an empty
    # string has none, an empty separator means whitespace.
    pieces = (f"(CASE WHEN {s.sql} = '' THEN array() WHEN {sep.sql} = '' THEN split({s.sql}, "
              f"'\\\\p{{javaWhitespace}}', -1) ELSE split({s.sql}, {quote(call, 1)}, -1) END)")
    return Typed(f"IF({index.sql} < 0 OR {sep.sql} IS NULL, NULL, try_element_at({pieces}, {index.sql} + 1))",
                 STRING_TYPE.nullable_as(True))
