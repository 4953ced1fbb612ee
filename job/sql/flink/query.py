"""A SELECT, parsed once: :class:`Query`.

Every INSERT's and every view's query is parsed here, with the Flink dialect, when the
statement is parsed; the planner and every check take the :class:`Query` (its tree, the
tables it names, where each node is in the user's file) instead of parsing the text
again. Nothing here needs Spark.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from job.errors import Origin, PipelineError
from job.sql.flink.dialect import DIALECT, WindowTVF
from job.sql.flink.hints import attach as attach_hints
from job.sql.flink.hints import extract as extract_hints
from job.sql.flink.normalize import normalize

# Flink SQL the job does not run; refused by name where it is written, before parsing
# (sqlglot's own grammar for some of these differs from Flink's, so its parse error would
# not say what is wrong).
REFUSED_KEYWORDS = {
    "MATCH_RECOGNIZE": "MATCH_RECOGNIZE (pattern recognition) is not supported yet",
}


@dataclass(frozen=True)
class Query:
    """One query as parsed: ``tree`` is the Flink dialect's tree (read-only: copy before
    changing it), ``tables`` the table and view names it reads directly (lower case, CTE
    names excluded), ``origin`` where ``text`` starts in the user's file."""

    text: str
    origin: Origin
    tree: exp.Expression = field(compare=False, repr=False)
    tables: tuple[str, ...] = ()
    statement: Optional[str] = field(default=None, compare=False, repr=False)
    # OPTIONS hints: ((the hinted scan's table name, the table as written, Hint), …) (job.sql.flink.hints)
    table_hints: tuple = field(default=(), compare=False, repr=False)

    # ------------------------------------------------------------------ positions
    def origin_of(self, node: Optional[exp.Expression]) -> Origin:
        """Where ``node`` starts in the user's file (its first token that has a position)."""
        index = start_index(node)
        return self.origin if index is None else self.origin.offset(self.text, index)

    def error(self, node: Optional[exp.Expression], message: str, hint: Optional[str] = None) -> PipelineError:
        return PipelineError(message, origin=self.origin_of(node), statement=self.statement, hint=hint)

    def flink_sql(self, node: Optional[exp.Expression] = None) -> str:
        """A node (default: the whole query) printed back as Flink SQL."""
        node = node if node is not None else self.tree
        return node.sql(dialect=DIALECT) if isinstance(node, exp.Expression) else str(node)


def start_index(node: Optional[exp.Expression]) -> Optional[int]:
    """The smallest source position recorded on ``node`` or below it."""
    if node is None:
        return None
    best = None
    for n in node.walk():
        start = n.meta.get("start") if n.meta else None
        if start is not None and (best is None or start < best):
            best = start
    return best


def parse_query(text: str, origin: Origin, statement: Optional[str] = None) -> Query:
    """Parse a query (SELECT, WITH, VALUES, UNION …) as Flink SQL.

    Raises PipelineError at the user's line and column for text Flink would not accept
    and for constructs refused by name (:data:`REFUSED_KEYWORDS`)."""

    def fail(index: int, message: str, hint: Optional[str] = None) -> PipelineError:
        return PipelineError(message, origin=origin.offset(text, max(0, min(index, len(text)))),
                             statement=statement, hint=hint)

    text_with_hints = text
    text, hints = extract_hints(text, origin, statement)  # blanked out: positions stay the user's
    try:
        tokens = DIALECT.tokenize(text)
    except TokenError as exc:
        index = _token_error_index(text, exc)
        what = "an unterminated string literal" if text[index:index + 1] == "'" or "'" in str(exc) else str(exc)
        raise fail(index, f"SQL parse failed: {what}") from None
    for token in tokens:
        word = token.text.upper()
        if word in REFUSED_KEYWORDS and token.token_type != TokenType.IDENTIFIER:
            raise fail(token.start, REFUSED_KEYWORDS[word])
    try:
        trees = DIALECT.parser().parse(tokens, text)
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise fail(_parse_error_index(text, first), "SQL parse failed: " + _describe(first, exc),
                   hint=_parse_hint(first)) from None
    if len(trees) != 1 or trees[0] is None:
        raise fail(0, "expected exactly one query")
    tree = normalize(trees[0])
    table_hints = attach_hints(tree, hints, origin, text, statement)
    query = Query(text_with_hints, origin, tree, tables_named(tree), statement, table_hints)
    null = untyped_null_column(tree)
    if null is not None:
        raise query.error(null, "Illegal use of 'NULL'", hint="give the NULL a type: CAST(NULL AS INT)")
    return query


def untyped_null_column(tree: exp.Expression) -> Optional[exp.Null]:
    """The first NULL that is a whole column of a SELECT list or of a VALUES row: Flink
    (Calcite) has no type for it there and refuses the query ("Illegal use of 'NULL'");
    a NULL whose type follows from its place (CASE, COALESCE, a comparison) is fine."""
    def bare(node: exp.Expression) -> exp.Expression:
        while isinstance(node, (exp.Paren, exp.Alias)):
            node = node.this
        return node

    found = []
    for node in tree.walk():
        if isinstance(node, exp.Select):
            items = node.expressions
        elif isinstance(node, exp.Values):
            items = [i for row in node.expressions
                     for i in (row.expressions if isinstance(row, exp.Tuple) else [row])]
        else:
            continue
        found += [bare(item) for item in items if isinstance(bare(item), exp.Null)]
    return min(found, key=lambda n: n.meta.get("start", 0), default=None)


def tables_named(tree: exp.Expression) -> tuple[str, ...]:
    """Table and view names a query reads (FROM, JOIN, window TVF and subquery inputs),
    lower-cased last name parts, CTE names left out, in first-appearance order."""
    ctes = {cte.alias.lower() for cte in tree.find_all(exp.CTE)}
    out: list[str] = []
    for node in tree.find_all(exp.Table):
        name = node.name.lower()
        if name and name not in ctes and name not in out:
            out.append(name)
    return tuple(out)


def window_tvfs(tree: exp.Expression) -> Iterator[WindowTVF]:
    return tree.find_all(WindowTVF)


def _describe(error: dict, exc: Exception) -> str:
    description = error.get("description") or str(exc).split("\n")[0]
    highlight = (error.get("highlight") or "").strip()
    if description.startswith("Invalid expression / Unexpected token") and highlight:
        return f"unexpected '{highlight}'"
    if description.startswith("Required keyword"):
        return f"unexpected '{highlight}'" if highlight else description
    return description + (f" (near '{highlight}')" if highlight else "")


def _parse_hint(error: dict) -> Optional[str]:
    highlight = (error.get("highlight") or "").strip()
    if highlight.startswith('"'):
        return ("Flink quotes names with backticks (`name`) and strings with single quotes ('text'); "
                "double quotes are neither")
    return None


def _parse_error_index(text: str, error: dict) -> int:
    """sqlglot reports the line and the column of the offending token's last character."""
    line, col = error.get("line"), error.get("col")
    if not line or not col:
        return 0
    lines = text.split("\n")
    index = sum(len(l) + 1 for l in lines[: line - 1]) + col
    highlight = error.get("highlight") or ""
    return max(0, index - len(highlight))


def _token_error_index(text: str, exc: Exception) -> int:
    import re

    m = re.search(r"line (\d+), col (\d+)", str(exc), re.I)
    if not m:
        return 0
    lines = text.split("\n")
    return sum(len(l) + 1 for l in lines[: int(m.group(1)) - 1]) + int(m.group(2)) - 1


def is_proctime_call(node: Optional[exp.Expression]) -> bool:
    """``PROCTIME()``: a select item computing it is a processing-time attribute (Flink
    keeps ``SELECT *, PROCTIME() AS p FROM t``'s ``p`` one)."""
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Anonymous) and node.name.upper() == "PROCTIME" and not node.expressions
