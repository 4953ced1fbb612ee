"""Parse one statement's text into a :data:`Statement`. No SparkSession is needed.

:func:`parse_statement` looks at the leading keywords and picks a grammar:

* ``CREATE [TEMPORARY] TABLE …``: see :mod:`job.sql.ddl`.
* ``CREATE [TEMPORARY] VIEW [IF NOT EXISTS] name [(c, …)] [COMMENT '…'] AS query``
* ``SET 'key' = 'value'``, or the older SQL-client form ``SET key = value``, where the
  key is unquoted and the value runs to the end of the statement.
* ``INSERT INTO|OVERWRITE [TABLE] name [(c, …)] query``
* ``CREATE [TEMPORARY [SYSTEM]] FUNCTION [IF NOT EXISTS] name AS 'class' [LANGUAGE JAVA|SCALA]
  [USING JAR 'path' [, JAR 'path']*]`` and ``ADD JAR 'path'``: Flink user-defined functions
  (the class is found and typed when the pipeline is planned, job.plan.user_functions).
* Statement-set markers: ``BEGIN STATEMENT SET``, ``EXECUTE STATEMENT SET BEGIN`` and
  ``END``. The job runs all INSERTs as one statement set anyway, so these are no-ops
  and return ``None``. The statement splitter cuts at ``;``, so in
  ``EXECUTE STATEMENT SET BEGIN INSERT …;`` the first INSERT arrives glued to the
  marker. In that case the INSERT is parsed and returned.

Queries (after ``AS`` or the INSERT target) are parsed here, once, as Flink SQL
(:func:`job.sql.flink.query.parse_query`): the statement carries the :class:`Query`
(``parsed``) next to its text and the exact origin of its first character.

Every error is a :class:`PipelineError` with the origin of the offending token and the
statement text.
"""
from __future__ import annotations

import difflib
from typing import Optional

from job.errors import Origin, PipelineError
from job.sql.flink.hints import parse as parse_hints
from job.sql.flink.hints import synthetic_name
from job.sql.flink.query import parse_query
from job.sql.clauses import if_not_exists, name_list, optional_comment, qualified_name, short_name
from job.sql.ddl import parse_create_table
from job.sql import namespace_statements as namespace
from job.sql.statements import AddJar, CreateFunction, CreateView, Insert, SetOption, Statement, StatementText
from job.sql.tokens import EOF, IDENT, STRING, Token, TokenStream, describe

SUPPORTED = (
    "CREATE TABLE, CREATE VIEW, CREATE FUNCTION, CREATE CATALOG, CREATE DATABASE, USE [CATALOG], SHOW, DESCRIBE, "
    "DROP, EXPLAIN, ADD JAR, SET 'key' = 'value', INSERT INTO / INSERT OVERWRITE, "
    "and the statement-set markers BEGIN STATEMENT SET / EXECUTE STATEMENT SET BEGIN … END"
)
_LEADING = ("CREATE", "INSERT", "SET", "BEGIN", "EXECUTE", "END", "ADD", "USE", "SHOW", "DESCRIBE", "DROP", "EXPLAIN")
# Real Flink statements we do not run; no did-you-mean for these (RESET is not a typo of SET).
_KNOWN_OTHERS = {
    "RESET", "DROP", "ALTER", "USE", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "LOAD", "UNLOAD",
    "ADD", "REMOVE", "DELETE", "UPDATE", "TRUNCATE", "ANALYZE", "CALL", "QUIT", "EXIT", "HELP",
}
_QUERY_START = ("SELECT", "WITH", "VALUES", "(")
_QUERY_WHAT = "a query (SELECT, WITH, VALUES or '(')"
_SET_HINT = "write SET 'key' = 'value'."


def parse_statement(st: StatementText) -> Optional[Statement]:
    """Parse one statement (text without the trailing ``;``).

    Returns ``None`` for no-ops: statement-set markers and text that is empty or only
    comments. Raises :class:`PipelineError` for anything else it cannot accept.
    """
    ts = TokenStream(st.text, st.origin)
    try:
        return _dispatch(ts, st)
    except PipelineError as error:
        raise error.located(st.origin, st.text)


def _dispatch(ts: TokenStream, st: StatementText) -> Optional[Statement]:
    token = ts.peek()
    if token.kind == EOF:
        return None
    if token.is_keyword("CREATE"):
        return _create(ts, st)
    if token.is_keyword("INSERT"):
        return _insert(ts, st)
    if token.is_keyword("SET"):
        return _set(ts, st)
    if token.is_keyword("USE"):
        return namespace.use(ts, st)
    if token.is_keyword("SHOW"):
        return namespace.show(ts, st)
    if token.is_keyword("DESCRIBE") or token.is_keyword("DESC"):
        return namespace.describe(ts, st)
    if token.is_keyword("DROP"):
        return namespace.drop(ts, st)
    if token.is_keyword("EXPLAIN"):
        return namespace.explain(ts, st, _insert)
    if ts.at("ADD", "JAR"):
        ts.next(), ts.next()
        path = ts.string("the jar's path as a string literal ('/path/functions.jar')")
        ts.expect_end("ADD JAR's path")
        return AddJar(path.value, st)
    if ts.accept("BEGIN", "STATEMENT", "SET") or ts.accept("EXECUTE", "STATEMENT", "SET", "BEGIN"):
        if ts.at_end():
            return None
        if ts.at("INSERT"):
            return _insert(ts, st)
        raise ts.error(
            f"only INSERT statements may follow a statement-set BEGIN, found {describe(ts.peek())}",
            ts.peek(),
        )
    if ts.accept("END"):
        ts.expect_end("END")
        return None
    if ts.at("EXECUTE", "INSERT"):  # Flink's EXECUTE INSERT … is a plain INSERT here
        ts.next()
        return _insert(ts, st)
    raise _unsupported(ts, token)


def _unsupported(ts: TokenStream, token: Token, keyword: Optional[str] = None) -> PipelineError:
    if keyword is None:
        keyword = token.value.upper() if token.kind == IDENT else token.text
    hint = f"supported statements: {SUPPORTED}."
    if keyword in ("SELECT", "WITH", "VALUES"):
        hint = "a query on its own has no sink here: write INSERT INTO <table> SELECT …"
    elif token.kind == IDENT and keyword not in _KNOWN_OTHERS:
        guess = difflib.get_close_matches(keyword, _LEADING, n=1, cutoff=0.75)
        if guess:
            hint = f"did you mean {guess[0]}? {hint}"
    return ts.error(f"unsupported statement '{keyword}'", token, hint=hint)


# --------------------------------------------------------------------------- CREATE


def _create(ts: TokenStream, st: StatementText) -> Statement:
    create = ts.next()
    temporary = ts.accept("TEMPORARY") is not None
    if ts.at("TABLE"):
        return parse_create_table(ts, st, temporary)
    if ts.at("VIEW"):
        return _create_view(ts, st, temporary)
    if ts.at("FUNCTION") or ts.at("SYSTEM", "FUNCTION"):
        return _create_function(ts, st, temporary, create)
    if ts.at("CATALOG") and not temporary:
        return namespace.create_catalog(ts, st)
    if ts.at("DATABASE") and not temporary:
        return namespace.create_database(ts, st)
    kind = ts.peek()
    if kind.kind == IDENT:
        raise _unsupported(ts, create, f"CREATE {kind.value.upper()}")
    raise ts.expected("TABLE or VIEW after CREATE", kind)


def _create_function(ts: TokenStream, st: StatementText, temporary: bool, create: Token) -> CreateFunction:
    system = ts.accept("SYSTEM") is not None
    if system and not temporary:
        raise ts.error("a SYSTEM function must be TEMPORARY: CREATE TEMPORARY SYSTEM FUNCTION …", create)
    ts.expect("FUNCTION")
    exists = if_not_exists(ts)
    name, _ = qualified_name(ts, "a function name")
    ts.expect("AS", what="AS and the function's class name")
    class_name = ts.string("the function's class name as a string literal ('com.example.MyFunction')").value
    language = "JAVA"
    if ts.accept("LANGUAGE"):
        word = ts.identifier("JAVA, SCALA or PYTHON after LANGUAGE")
        language = word.value.upper()
        if language == "PYTHON":
            raise ts.error("Python user-defined functions (LANGUAGE PYTHON) are not supported yet", word,
                           hint="a Java or Scala class extending Flink's ScalarFunction runs on the job")
        if language not in ("JAVA", "SCALA"):
            raise ts.error(f"unknown function language '{word.value}'", word, hint="LANGUAGE JAVA, SCALA or PYTHON")
    jars: list[str] = []
    if ts.accept("USING"):
        while True:
            ts.expect("JAR", what="JAR 'path' after USING")
            jars.append(ts.string("the jar's path as a string literal").value)
            if not ts.accept(","):
                break
    ts.expect_end("the function's declaration")
    return CreateFunction(short_name(name), class_name, language, tuple(jars), temporary, system, exists, st)


def _create_view(ts: TokenStream, st: StatementText, temporary: bool) -> CreateView:
    ts.expect("VIEW")
    if_not_exists(ts)  # CreateView has no field for it; views are always (re)created
    name, _ = qualified_name(ts, "a view name")
    columns: tuple[str, ...] = ()
    if ts.at("("):
        columns = tuple(t.value for t in name_list(ts, "a view column name"))
    optional_comment(ts)
    ts.expect("AS", what="'AS' and the view's query")
    query, origin = _query(ts, st)
    return CreateView(name, query, origin, columns, temporary, st, parse_query(query, origin, st.text))


def _query(ts: TokenStream, st: StatementText) -> tuple[str, Origin]:
    """The rest of the statement, verbatim, once it looks like a query."""
    token = ts.peek()
    if not any(token.matches(w) for w in _QUERY_START):
        raise ts.expected(_QUERY_WHAT, token)
    return st.text[token.start :].rstrip(), ts.origin_at(token.start)


# --------------------------------------------------------------------------- INSERT


def _insert(ts: TokenStream, st: StatementText) -> Insert:
    ts.next()  # INSERT
    if ts.accept("INTO"):
        overwrite = False
    elif ts.accept("OVERWRITE"):
        overwrite = True
    else:
        raise ts.expected("INTO or OVERWRITE after INSERT")
    ts.accept("TABLE")
    table, _ = qualified_name(ts, "a table name")
    if ts.at("PARTITION"):
        raise ts.error(
            "INSERT … PARTITION (…) is not supported", ts.peek(),
            hint="select the partition values as columns instead.",
        )
    sink_hint = _sink_hint(ts, st, table)
    columns: tuple[str, ...] = ()
    # "(" starts either a column list or a parenthesised query.
    if ts.at("(") and not any(ts.peek(1).matches(w) for w in _QUERY_START):
        columns = tuple(t.value for t in name_list(ts, "a column name"))
    query, origin = _query(ts, st)
    return Insert(table, query, origin, columns, overwrite, st, parse_query(query, origin, st.text),
                  sink_hint=sink_hint)


def _sink_hint(ts: TokenStream, st: StatementText, table: str):
    """``INSERT INTO t /*+ OPTIONS(…) */``: the tokenizer skips the hint as a comment; it is read here."""
    gap = st.text[ts.prev_end : ts.peek().start]
    at = gap.find("/*+")
    if at < 0:
        return None
    start = ts.prev_end + at
    end = st.text.find("*/", start)
    if end < 0:
        raise ts.error_at(start, "the hint /*+ … is not closed with */")
    hints = parse_hints(st.text, start, end + 2, True, st.origin, st.text)
    return synthetic_name(short_name(table), hints[0]), hints[0]


# --------------------------------------------------------------------------- SET


def _set(ts: TokenStream, st: StatementText) -> SetOption:
    set_token = ts.next()
    if ts.at_end():
        raise ts.error(
            "SET without a key (listing all options) is not supported", set_token, hint=_SET_HINT,
        )
    key_token = ts.peek()
    if key_token.kind == STRING:
        ts.next()
        key = key_token.value
        if not key.strip():
            raise ts.error("the option key is empty", key_token, hint=_SET_HINT)
        ts.expect("=", what=f"'=' after the key '{key}'", hint=_SET_HINT)
        value_at = ts.prev_end
    else:
        # Old SQL-client form: the key is the raw text before the first '='.
        equals = st.text.find("=", key_token.start)
        if equals < 0:
            raise ts.error("expected '=' after the option key", key_token, hint=_SET_HINT)
        key = st.text[key_token.start : equals].strip()
        if not key:
            raise ts.error("missing option key before '='", key_token, hint=_SET_HINT)
        if any(c.isspace() or c in "'\"`;" for c in key):
            raise ts.error(f"invalid option key '{key}'", key_token, hint=_SET_HINT)
        value_at = equals + 1
    rest = st.text[value_at:]
    if rest.lstrip().startswith("'"):
        ts.reset(value_at)
        value = ts.string("a value string").value
        ts.expect_end("the value")
    else:
        # Unquoted: the rest of the statement, verbatim apart from surrounding blanks.
        value = rest.strip()
        if not value:
            raise ts.error_at(value_at, f"missing value for option '{key}'", hint=_SET_HINT)
    return SetOption(key, value, st)
