"""The tokenizer the statement parsers (``parse.py``, ``ddl.py``) and the type parser share.

Comments (``-- …`` and ``/* … */``) are skipped; every token knows where it starts, so
errors point at the user's line and column.
"""
from __future__ import annotations

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
