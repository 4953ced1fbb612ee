"""Clauses the statement parsers share (CREATE TABLE in ``ddl.py``, CREATE VIEW and
INSERT in ``parse.py``): ``IF NOT EXISTS``, a ``[catalog.db.]name``, a parenthesized
name list, ``COMMENT '…'``, and the tokens of an expression kept verbatim.
"""
from __future__ import annotations

from typing import Optional

from job.sql.tokens import EOF, STRING, Token, TokenStream

def if_not_exists(ts: TokenStream) -> bool:
    """``IF NOT EXISTS``. ``IF`` followed by ``(``, ``.`` or ``AS`` is a name, not this clause."""
    if ts.at("IF") and not (ts.peek(1).matches("(") or ts.peek(1).matches(".") or ts.at("IF", "AS")):
        ts.expect("IF", "NOT", "EXISTS")
        return True
    return False


def qualified_name(ts: TokenStream, what: str) -> tuple[str, Token]:
    """``name``, ``db.name`` or ``cat.db.name``; returns the dotted name and first token.

    Parts are unquoted. A part that itself contains ``.`` or a backquote is kept in
    backquotes, so splitting the result at unquoted dots is unambiguous. The registry
    registers the last part as the Spark view name.
    """
    first = ts.identifier(what)
    parts = [first.value]
    while ts.accept("."):
        parts.append(ts.identifier("a name after '.'").value)
    return ".".join(_name_part(p) for p in parts), first


def short_name(name: str) -> str:
    """'cat.db.users' → 'users': tables and functions are registered under their last name part."""
    return name.replace("`", "").split(".")[-1]


def _name_part(part: str) -> str:
    return "`" + part.replace("`", "``") + "`" if ("." in part or "`" in part) else part


def name_list(ts: TokenStream, what: str) -> list[Token]:
    """``(a, b, …)``: at least one identifier, no repeats (compared without case)."""
    ts.expect("(")
    names: list[Token] = []
    while True:
        token = ts.identifier(what)
        if any(t.value.lower() == token.value.lower() for t in names):
            raise ts.error(f"column '{token.value}' is listed twice", token)
        names.append(token)
        if not ts.accept(","):
            ts.expect(")", what="',' or ')'")
            return names


def optional_comment(ts: TokenStream) -> Optional[str]:
    if ts.accept("COMMENT"):
        return ts.string("a comment string after COMMENT").value
    return None


def expression(ts: TokenStream, what: str) -> list[Token]:
    """Tokens of an expression, up to a top-level ``,`` or ``)`` or ``COMMENT '…'``.

    Brackets count as nesting so that ``MAP['a', 1]`` is not cut at its comma.
    """
    tokens: list[Token] = []
    depth = 0
    while True:
        token = ts.peek()
        if token.kind == EOF:
            break
        if depth == 0 and (token.matches(",") or token.matches(")")):
            break
        if depth == 0 and token.is_keyword("COMMENT") and ts.peek(1).kind == STRING:
            break
        if token.matches("(") or token.matches("["):
            depth += 1
        elif token.matches(")") or token.matches("]"):
            depth = max(0, depth - 1)
        tokens.append(ts.next())
    if not tokens:
        raise ts.expected(what)
    return tokens


def span(ts: TokenStream, tokens: list[Token]) -> str:
    return ts.text[tokens[0].start : tokens[-1].end]
