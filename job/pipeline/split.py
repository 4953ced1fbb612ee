"""Split a SQL script into statements at top-level ``;``.

Why our own small lexer rather than ``sqlparse.split``: sqlparse was tried first and
gets realistic Flink scripts wrong in ways that matter here:

* ``BEGIN STATEMENT SET; INSERT …; INSERT …; END;`` (Flink's own syntax) comes back
  as ONE statement, because sqlparse treats BEGIN/END as a compound block;
* it treats a backslash as an escape inside ``'…'`` (``'C:\\dir\\'; SELECT 2`` is
  swallowed), whereas Flink (Calcite) only knows the SQL-standard ``''`` escape;
* it treats ``$$`` as dollar quoting, which Flink does not have;
* it never reports an unterminated literal or comment — it just runs to the end of the
  script, silently merging every following statement;
* it returns stripped strings, so exact line/column origins would have to be
  re-discovered afterwards.

The only thing a splitter has to understand is where ``;`` is *not* a separator:
inside ``'strings'``, ``"double-quoted"`` and ```backtick``` quoted names (each
escaping its quote by doubling it), ``-- line comments`` and ``/* block comments */``
(not nested, as in Flink). That is what this module lexes, and nothing more.
"""
from __future__ import annotations

import re

from job.errors import Origin, PipelineError, preview
from job.sql.statements import StatementText

# The characters that can change lexer state; everything between them is plain text.
_SPECIAL = re.compile(r"""['"`;]|--|/\*""")
# Non-blank text. A BOM counts as blank: editors may leave one at the start of a file.
_NON_BLANK = re.compile(r"[^\s\ufeff]")

_QUOTE_NAMES = {
    "'": ("string literal", "write '' for a quote inside a string"),
    '"': ('double-quoted identifier', 'write "" for a double quote inside it'),
    "`": ("backtick-quoted identifier", "write `` for a backtick inside it"),
}


def split_statements(text: str, origin: Origin, *, indent: int = 0) -> list[StatementText]:
    """Split ``text`` (which starts at ``origin``) into statements.

    Each returned :class:`StatementText` holds one statement without its ``;`` and with
    leading/trailing whitespace and comments removed (comments *inside* a statement are
    kept verbatim, so optimizer hints survive); its ``origin`` is the exact 1-based
    line/column of the statement's first character. Empty statements (``;;``,
    comment-only parts) are dropped. An unterminated string, quoted identifier or
    block comment raises :class:`PipelineError` located where it starts.

    ``indent`` is for text whose lines after the first are indented by that many
    columns in the source but not in ``text`` — a YAML block scalar (``|``), whose
    indentation YAML strips. It is added to the column of origins on those lines.
    """
    statements: list[StatementText] = []
    # [first, last_end) is the significant (non-blank, non-comment) extent of the
    # statement being read; first is None while nothing significant has been seen.
    first: int | None = None
    last_end = 0
    # Origins are computed incrementally (origin of index `here`) so that a long script
    # costs linear time rather than re-counting lines from the top for each statement.
    here, here_origin = 0, origin

    def origin_at(index: int) -> Origin:
        nonlocal here, here_origin
        here_origin = here_origin.advance(text[here:index])
        here = index
        if indent and here_origin.line != origin.line:
            return Origin(here_origin.source, here_origin.line, here_origin.column + indent, indent)
        # The statement's own later lines are indented too: its origin carries the indent.
        return Origin(here_origin.source, here_origin.line, here_origin.column, indent) if indent else here_origin

    def mark(start: int, end: int) -> None:
        """Record that text[start:end] is significant."""
        nonlocal first, last_end
        if first is None:
            first = start
        last_end = end

    i = 0
    n = len(text)
    while i < n:
        m = _SPECIAL.search(text, i)
        stop = m.start() if m else n
        # Plain text before the next special token: significant if not blank.
        blank = _NON_BLANK.search(text, i, stop)
        if blank is not None:
            end = stop
            while end > i and not _NON_BLANK.match(text, end - 1):
                end -= 1
            mark(blank.start(), end)
        if m is None:
            break
        token = m.group()
        if token == ";":
            if first is not None:
                statements.append(StatementText(text[first:last_end], origin_at(first)))
            first = None
            i = m.end()
        elif token == "--":
            newline = text.find("\n", m.end())
            i = n if newline < 0 else newline + 1
        elif token == "/*":
            close = text.find("*/", m.end())
            if close < 0:
                raise PipelineError(
                    "unterminated block comment",
                    origin=origin_at(m.start()),
                    statement=_partial(text, first, m.start()),
                    hint="close the comment with */.",
                )
            i = close + 2
            if text.startswith("+", m.end()):  # a hint (/*+ … */) is part of the statement, even at its end
                mark(m.start(), i)
        else:
            i = _end_of_quoted(text, m.start())
            if i < 0:
                what, how = _QUOTE_NAMES[token]
                raise PipelineError(
                    f"unterminated {what} (opened with {token} here)",
                    origin=origin_at(m.start()),
                    statement=_partial(text, first, m.start()),
                    hint=f"add the closing {token} ({how}).",
                )
            mark(m.start(), i)
    if first is not None:
        # The last statement needs no ';'.
        statements.append(StatementText(text[first:last_end], origin_at(first)))
    return statements


def _end_of_quoted(text: str, start: int) -> int:
    """Index just past the quoted token opened at ``text[start]``, or -1 if unclosed.

    The quote character escapes itself by doubling (``'it''s'``); a backslash is an
    ordinary character, as in Flink SQL.
    """
    quote = text[start]
    i = start + 1
    while True:
        close = text.find(quote, i)
        if close < 0:
            return -1
        if text.startswith(quote, close + 1):
            i = close + 2       # doubled quote: still inside
            continue
        return close + 1


def _partial(text: str, first: int | None, at: int) -> str | None:
    """A preview of the statement an error occurred in (from its start, else at)."""
    start = at if first is None else first
    return preview(text[start:]) or None
