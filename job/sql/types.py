"""Flink SQL types → Spark DDL type strings, plus the tokenizer the statement parsers share.

``to_spark_type("DECIMAL(10, 2) NOT NULL")`` gives ``"decimal(10,2)"``;
:func:`parse_flink_type` also returns the nullability. ``ddl.py`` calls :func:`parse_type`
on its own token stream so type errors point at the user's line and column.

The tokenizer lives here, not in ``parse.py``, because this is the lowest module of the
SQL front end: ``ddl.py`` and ``parse.py`` build on it, and :func:`to_spark_type` needs it
too. Keeping it here avoids an import cycle.

Mapping notes (Flink → Spark):

* ``TIME[(p)]`` becomes ``string``: Spark has no time-of-day type.
* ``TIMESTAMP[(p)] [WITHOUT TIME ZONE]`` becomes ``timestamp``, not ``timestamp_ntz``.
  Spark's event-time watermarks only accept ``timestamp`` columns, and the job pins
  the session time zone to UTC, so a wall-clock value round-trips unchanged.
* ``TIMESTAMP_LTZ`` / ``TIMESTAMP WITH LOCAL TIME ZONE`` also become ``timestamp``:
  both are instants.
* ``MULTISET<T>`` becomes ``map<T,int>``, an element-to-count map, the same shape
  Flink uses when it converts multisets.
* Spark DDL cannot mark array elements or map values NOT NULL, so that nullability is
  dropped. Only the outermost NOT NULL is returned. Field comments are dropped too.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Optional

from job.errors import Origin, PipelineError

# --------------------------------------------------------------------------- tokens

IDENT = "ident"      # unquoted identifier or keyword; ``value`` is the text as written
QUOTED = "quoted"    # `backquoted identifier`; ``value`` is unescaped
STRING = "string"    # 'string literal'; ``value`` is unescaped ('' → ')
DSTRING = "dstring"  # "double quoted"; only occurs inside verbatim expressions
NUMBER = "number"
PUNCT = "punct"      # a single character: ( ) , . < > = - + * ; …
EOF = "eof"

_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class Token:
    """One token. ``start``/``end`` are indexes into the statement text.

    An EOF token starts where the last real token ends, so an error for a truncated
    statement points just after the last token rather than at trailing comments.
    """

    kind: str
    text: str
    value: str
    start: int
    end: int

    def is_keyword(self, *words: str) -> bool:
        return self.kind == IDENT and self.value.upper() in words

    def matches(self, word: str) -> bool:
        """``word`` is a keyword (letters, compared without case) or one punctuation char."""
        if word[:1].isalpha():
            return self.kind == IDENT and self.value.upper() == word
        return self.kind == PUNCT and self.value == word


def describe(token: Token) -> str:
    """How an error message names a token it found."""
    if token.kind == EOF:
        return "end of statement"
    text = token.text.replace("\n", " ")
    if len(text) > 30:
        text = text[:29] + "…"
    return f"string {text}" if token.kind == STRING else f"'{text}'"


def _quote_word(word: str) -> str:
    return f"'{word}'"


class TokenStream:
    """Tokens of one statement, scanned lazily.

    Parsers only tokenize what they need. For ``INSERT … SELECT`` the query is kept
    verbatim for Spark, and its syntax is never put through this tokenizer (for
    example, Spark-style backslash escapes in strings would confuse it).
    Comments (``-- …`` and ``/* … */``) are skipped.
    """

    def __init__(self, text: str, origin: Origin, statement: Optional[str] = None) -> None:
        self.text = text
        self.origin = origin
        self.statement = text if statement is None else statement
        self._scan_pos = 0
        self._scan_last_end = 0
        self._buffer: list[Token] = []
        self.prev_end = 0  # end index of the last token taken with next()

    # -- scanning ------------------------------------------------------------------

    def _scan(self) -> Token:
        text, i, n = self.text, self._scan_pos, len(self.text)
        while i < n:
            if text[i].isspace() or text[i] == "\ufeff":  # a BOM is blank, as in the splitter
                i += 1
            elif text.startswith("--", i):
                j = text.find("\n", i)
                i = n if j < 0 else j + 1
            elif text.startswith("/*", i):
                j = text.find("*/", i + 2)
                if j < 0:
                    raise self.error_at(i, "unterminated comment: '/*' without '*/'")
                i = j + 2
            else:
                break
        if i >= n:
            self._scan_pos = n
            return Token(EOF, "", "", self._scan_last_end, self._scan_last_end)
        c = text[i]
        if c == "'":
            value, end = self._quoted(i, "'", "string literal")
            kind = STRING
        elif c == "`":
            value, end = self._quoted(i, "`", "backquoted identifier")
            kind = QUOTED
        elif c == '"':
            value, end = self._quoted(i, '"', "double-quoted text")
            kind = DSTRING
        elif c == "_" or c.isalpha():
            end = i + 1
            while end < n and (text[end].isalnum() or text[end] in "_$"):
                end += 1
            value, kind = text[i:end], IDENT
        elif (m := _NUMBER.match(text, i)) is not None:
            end = m.end()
            value, kind = text[i:end], NUMBER
        else:
            end = i + 1
            value, kind = c, PUNCT
        self._scan_pos = self._scan_last_end = end
        return Token(kind, text[i:end], value, i, end)

    def _quoted(self, start: int, quote: str, what: str) -> tuple[str, int]:
        """Scan a quoted token whose quote is escaped by doubling it ('it''s')."""
        parts, j = [], start + 1
        while True:
            k = self.text.find(quote, j)
            if k < 0:
                raise self.error_at(start, f"unterminated {what}: missing closing {quote}")
            if self.text.startswith(quote * 2, k):
                parts.append(self.text[j : k + 1])
                j = k + 2
                continue
            parts.append(self.text[j:k])
            return "".join(parts), k + 1

    # -- navigation ----------------------------------------------------------------

    def peek(self, k: int = 0) -> Token:
        while len(self._buffer) <= k:
            if self._buffer and self._buffer[-1].kind == EOF:
                return self._buffer[-1]
            self._buffer.append(self._scan())
        return self._buffer[k]

    def next(self) -> Token:
        token = self.peek()
        if token.kind != EOF:
            self._buffer.pop(0)
            self.prev_end = token.end
        return token

    def at(self, *words: str) -> bool:
        """Whether the next tokens are ``words`` (keywords upper-case, or punctuation)."""
        return all(self.peek(i).matches(w) for i, w in enumerate(words))

    def accept(self, *words: str) -> Optional[Token]:
        """Take ``words`` if they come next; return the first one's token, else None."""
        if not self.at(*words):
            return None
        first = self.peek()
        for _ in words:
            self.next()
        return first

    def expect(self, *words: str, what: Optional[str] = None, hint: Optional[str] = None) -> Token:
        """Take ``words`` or fail at the first token that differs."""
        for i, word in enumerate(words):
            if not self.peek(i).matches(word):
                wanted = what or _quote_word(" ".join(words[i:]))
                raise self.expected(wanted, self.peek(i), hint=hint)
        return self.accept(*words)  # type: ignore[return-value]

    def identifier(self, what: str) -> Token:
        """An unquoted or backquoted identifier; its name is ``token.value``."""
        token = self.peek()
        if token.kind == IDENT or (token.kind == QUOTED and token.value):
            return self.next()
        if token.kind == QUOTED:
            raise self.error("empty backquoted identifier", token)
        raise self.expected(what, token)

    def string(self, what: str, hint: Optional[str] = None) -> Token:
        token = self.peek()
        if token.kind != STRING:
            raise self.expected(what, token, hint=hint)
        return self.next()

    def at_end(self) -> bool:
        return self.peek().kind == EOF

    def expect_end(self, after: str) -> None:
        token = self.peek()
        if token.kind != EOF:
            raise self.error(f"unexpected {describe(token)} after {after}", token)

    def reset(self, index: int) -> None:
        """Continue scanning at character ``index`` (used by the raw ``SET k = v`` form)."""
        self._buffer.clear()
        self._scan_pos = self._scan_last_end = self.prev_end = index

    # -- errors --------------------------------------------------------------------

    def origin_at(self, index: int) -> Origin:
        return self.origin.offset(self.text, index)

    def error_at(self, index: int, message: str, hint: Optional[str] = None) -> PipelineError:
        return PipelineError(
            message, origin=self.origin_at(index), statement=self.statement, hint=hint
        )

    def error(self, message: str, token: Token, hint: Optional[str] = None) -> PipelineError:
        return self.error_at(token.start, message, hint)

    def expected(self, what: str, token: Optional[Token] = None, hint: Optional[str] = None) -> PipelineError:
        token = self.peek() if token is None else token
        return self.error(f"expected {what} but found {describe(token)}", token, hint)


# --------------------------------------------------------------------------- types


@dataclass(frozen=True)
class FlinkType:
    """A parsed Flink type: its Spark DDL string, outer nullability and text as written."""

    spark_type: str
    nullable: bool
    text: str


# Type names, for did-you-mean hints.
KNOWN_TYPES = (
    "STRING", "CHAR", "VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER",
    "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "DEC", "NUMERIC", "DATE", "TIME", "TIMESTAMP",
    "TIMESTAMP_LTZ", "BYTES", "BINARY", "VARBINARY", "ARRAY", "MAP", "MULTISET", "ROW",
)
# Names people bring from other SQL dialects.
_ALIASES = {
    "TEXT": "STRING", "LONG": "BIGINT", "BOOL": "BOOLEAN", "DATETIME": "TIMESTAMP",
    "INT64": "BIGINT", "INT32": "INT", "SHORT": "SMALLINT", "BYTE": "TINYINT",
    "STRUCT": "ROW", "BLOB": "BYTES", "NUMBER": "DECIMAL", "TIMESTAMPTZ": "TIMESTAMP_LTZ",
}
# Flink types with no Spark counterpart.
_UNSUPPORTED = ("RAW", "INTERVAL", "NULL", "LEGACY", "STRUCTURED", "SYMBOL", "VARIANT", "DESCRIPTOR")
_SIMPLE = {
    "STRING": "string", "BOOLEAN": "boolean", "TINYINT": "tinyint",
    "SMALLINT": "smallint", "INT": "int", "INTEGER": "int", "BIGINT": "bigint",
    "FLOAT": "float", "DATE": "date", "BYTES": "binary",
}
# Nesting deeper than this is certainly a mistake; the limit keeps recursion safe.
_MAX_DEPTH = 40
_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def to_spark_type(flink_type: str, origin: Optional[Origin] = None) -> str:
    """The Spark DDL type string for a Flink type, e.g. ``ROW<a INT>`` → ``struct<a:int>``.

    Raises :class:`PipelineError` for unknown or unsupported types.
    """
    return parse_flink_type(flink_type, origin).spark_type


def parse_flink_type(flink_type: str, origin: Optional[Origin] = None) -> FlinkType:
    """Parse a whole type string. ``origin`` says where the string starts (for errors)."""
    ts = TokenStream(flink_type, origin or Origin("<type>"))
    parsed = parse_type(ts)
    ts.expect_end("the type")
    return parsed


def parse_type(ts: TokenStream) -> FlinkType:
    """Parse a type at the stream's position, including a trailing ``NOT NULL``/``NULL``."""
    first = ts.peek()
    spark, nullable = _type_with_nullability(ts, 0)
    return FlinkType(spark, nullable, ts.text[first.start : ts.prev_end])


def _type_with_nullability(ts: TokenStream, depth: int) -> tuple[str, bool]:
    if depth > _MAX_DEPTH:
        raise ts.error("type is nested too deeply", ts.peek())
    spark = _base_type(ts, depth)
    nullable = _nullability(ts)
    # Suffix forms: ``INT ARRAY``, ``STRING MULTISET`` (each may take its own NOT NULL).
    while True:
        if ts.accept("ARRAY"):
            spark = f"array<{spark}>"
        elif ts.accept("MULTISET"):
            spark = f"map<{spark},int>"
        else:
            return spark, nullable
        nullable = _nullability(ts)


def _nullability(ts: TokenStream) -> bool:
    if ts.accept("NOT"):
        ts.expect("NULL")
        return False
    ts.accept("NULL")
    return True


def _base_type(ts: TokenStream, depth: int) -> str:
    token = ts.peek()
    if token.kind != IDENT:
        raise ts.expected("a type", token)
    name = token.value.upper()
    if name in _SIMPLE:
        ts.next()
        return _SIMPLE[name]
    if name in ("CHAR", "VARCHAR"):
        ts.next()
        _length(ts, name)
        return "string"
    if name in ("BINARY", "VARBINARY"):
        ts.next()
        _length(ts, name)
        return "binary"
    if name == "DOUBLE":
        ts.next()
        ts.accept("PRECISION")
        return "double"
    if name in ("DECIMAL", "DEC", "NUMERIC"):
        ts.next()
        return _decimal(ts, name)
    if name == "TIME":
        ts.next()
        _precision(ts, name)
        if ts.at("WITH"):
            raise ts.error("TIME WITH TIME ZONE is not a Flink type", ts.peek())
        if ts.accept("WITHOUT"):
            ts.expect("TIME", "ZONE")
        return "string"  # Spark has no time-of-day type
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        ts.next()
        _precision(ts, name)
        if name == "TIMESTAMP":
            _timestamp_zone(ts)
        return "timestamp"
    if name in ("ARRAY", "MULTISET"):
        ts.next()
        ts.expect("<")
        element, _ = _type_with_nullability(ts, depth + 1)
        ts.expect(">", what="'>' to close the " + name)
        return f"array<{element}>" if name == "ARRAY" else f"map<{element},int>"
    if name == "MAP":
        ts.next()
        ts.expect("<")
        key, _ = _type_with_nullability(ts, depth + 1)
        ts.expect(",", what="',' between the MAP key and value types")
        value, _ = _type_with_nullability(ts, depth + 1)
        ts.expect(">", what="'>' to close the MAP")
        return f"map<{key},{value}>"
    if name == "ROW":
        ts.next()
        return _row(ts, depth)
    if name in _UNSUPPORTED:
        raise ts.error(f"Flink type {name} has no Spark equivalent and is not supported", token)
    raise ts.error(f"unknown type '{token.value}'", token, hint=_type_hint(name))


def _type_hint(name: str) -> str:
    guess = _ALIASES.get(name) or next(iter(difflib.get_close_matches(name, KNOWN_TYPES, n=1, cutoff=0.6)), None)
    if guess:
        return f"did you mean {guess}?"
    return "supported types: " + ", ".join(KNOWN_TYPES) + "."


def _timestamp_zone(ts: TokenStream) -> None:
    if ts.accept("WITHOUT"):
        ts.expect("TIME", "ZONE")
    elif ts.at("WITH"):
        if ts.accept("WITH", "LOCAL"):
            ts.expect("TIME", "ZONE")
        elif ts.at("WITH", "TIME"):
            raise ts.error(
                "TIMESTAMP WITH TIME ZONE is not supported by Flink", ts.peek(),
                hint="use TIMESTAMP_LTZ (TIMESTAMP WITH LOCAL TIME ZONE) for instants",
            )
        else:
            ts.expect("WITH", "LOCAL", "TIME", "ZONE")


def _params(ts: TokenStream, name: str, most: int) -> list[tuple[int, Token]]:
    """Optional ``(n[, m])`` after a type name: integers with their tokens."""
    if not ts.accept("("):
        return []
    params = []
    while True:
        token = ts.peek()
        if token.kind != NUMBER or not token.text.isdigit():
            raise ts.expected(f"an integer parameter for {name}", token)
        if len(token.text) > 10:  # also keeps int() clear of its digit limit
            raise ts.error(f"{name} parameter {token.text} is too large", token)
        ts.next()
        params.append((int(token.text), token))
        if len(params) == most or not ts.accept(","):
            break
    ts.expect(")", what=f"')' to close the {name} parameters")
    return params


def _length(ts: TokenStream, name: str) -> None:
    for length, token in _params(ts, name, 1):
        if length < 1:
            raise ts.error(f"{name} length must be at least 1", token)


def _precision(ts: TokenStream, name: str) -> None:
    for precision, token in _params(ts, name, 1):
        if precision > 9:
            raise ts.error(f"{name} precision must be between 0 and 9", token)


def _decimal(ts: TokenStream, name: str) -> str:
    params = _params(ts, name, 2)
    precision, scale = 10, 0  # Flink's default: DECIMAL = DECIMAL(10, 0)
    if params:
        precision = params[0][0]
        if not 1 <= precision <= 38:
            raise ts.error(f"{name} precision must be between 1 and 38", params[0][1])
    if len(params) == 2:
        scale = params[1][0]
        if scale > precision:
            raise ts.error(f"{name} scale must be between 0 and the precision ({precision})", params[1][1])
    return f"decimal({precision},{scale})"


def _row(ts: TokenStream, depth: int) -> str:
    """``ROW<a INT, b STRING>`` or ``ROW(a INT, b STRING)``; fields may carry comments."""
    if ts.accept("<"):
        close = ">"
    elif ts.accept("("):
        close = ")"
    else:
        raise ts.expected("'<' or '(' after ROW")
    fields: list[str] = []
    seen: set[str] = set()
    if ts.accept(close):
        return "struct<>"
    while True:
        name_token = ts.identifier("a ROW field name")
        if name_token.value.lower() in seen:
            raise ts.error(f"duplicate ROW field '{name_token.value}'", name_token)
        seen.add(name_token.value.lower())
        field_type, _ = _type_with_nullability(ts, depth + 1)
        # Flink accepts both ``a INT COMMENT 'x'`` (SQL) and ``a INT 'x'`` (type strings).
        if ts.accept("COMMENT"):
            ts.string("a comment string after COMMENT")
        elif ts.peek().kind == STRING:
            ts.next()
        fields.append(f"{spark_field_name(name_token.value)}:{field_type}")
        if ts.accept(","):
            continue
        ts.expect(close, what=f"',' or '{close}' in the ROW")
        return "struct<" + ",".join(fields) + ">"


def spark_field_name(name: str) -> str:
    """A struct field name for a Spark DDL string, backquoted unless it is a plain word."""
    if _SIMPLE_NAME.fullmatch(name):
        return name
    return "`" + name.replace("`", "``") + "`"
