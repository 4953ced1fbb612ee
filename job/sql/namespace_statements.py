"""The catalog statements a Flink SQL file carries, parsed: CREATE CATALOG / DATABASE,
USE [CATALOG], SHOW …, DESCRIBE, DROP … and EXPLAIN [PLAN FOR] INSERT.

They only name things (job.catalogs keeps the namespace and runs them); the INSERT an
EXPLAIN wraps is parsed by job.sql.parse like any other, passed in as ``insert``.
"""
from __future__ import annotations

from typing import Callable

from job.sql.clauses import if_not_exists, optional_comment, qualified_name
from job.sql.statements import CreateCatalog, CreateDatabase, Drop, Explain, Show, StatementText, UseNamespace
from job.sql.tokens import EOF, TokenStream

# SHOW forms Flink's SQL client takes and the job prints; others are refused by name.
_SHOW = ("CATALOGS", "DATABASES", "TABLES", "VIEWS", "FUNCTIONS")
_SHOW_WHAT = "CATALOGS, DATABASES, TABLES, VIEWS, FUNCTIONS, USER FUNCTIONS, CURRENT CATALOG or CURRENT DATABASE"
_DROP_KINDS = ("TABLE", "VIEW", "DATABASE", "CATALOG", "FUNCTION")


def with_options(ts: TokenStream) -> dict[str, str]:
    """``WITH ('k' = 'v', …)``: string keys and values, no repeats."""
    ts.expect("WITH", what="WITH ('type' = '…') after the catalog's name")
    ts.expect("(", what="'(' after WITH")
    options: dict[str, str] = {}
    if ts.accept(")"):
        return options
    while True:
        key = ts.string("an option key as a 'single-quoted' string")
        if key.value in options:
            raise ts.error(f"duplicate option '{key.value}'", key)
        ts.expect("=", what=f"'=' after option '{key.value}'")
        options[key.value] = ts.string(f"a value for option '{key.value}' as a 'single-quoted' string").value
        if not ts.accept(","):
            ts.expect(")", what="',' or ')' in the WITH options")
            return options


def create_catalog(ts: TokenStream, st: StatementText) -> CreateCatalog:
    ts.expect("CATALOG")
    exists = if_not_exists(ts)
    name = ts.identifier("a catalog name")
    optional_comment(ts)
    options = with_options(ts)
    ts.expect_end("the catalog's WITH options")
    return CreateCatalog(name.value, options, exists, st)


def create_database(ts: TokenStream, st: StatementText) -> CreateDatabase:
    ts.expect("DATABASE")
    exists = if_not_exists(ts)
    name, _ = qualified_name(ts, "a database name")
    optional_comment(ts)
    if ts.at("WITH"):
        with_options(ts)  # a generic_in_memory database keeps its properties only for DESCRIBE DATABASE
    ts.expect_end("the database's name")
    return CreateDatabase(name, exists, st)


def use(ts: TokenStream, st: StatementText) -> UseNamespace:
    ts.expect("USE")
    if ts.at("CATALOG") and ts.peek(1).kind != EOF:
        ts.next()
        name = ts.identifier("a catalog name").value
        ts.expect_end("the catalog's name")
        return UseNamespace("catalog", name, st)
    if ts.at("MODULES"):
        raise ts.error("USE MODULES is not supported: the job has Flink's core module only", ts.peek())
    name, _ = qualified_name(ts, "a database name")
    ts.expect_end("the database's name")
    return UseNamespace("database", name, st)


def show(ts: TokenStream, st: StatementText) -> Show:
    token = ts.next()  # SHOW
    if ts.accept("CURRENT"):
        word = ts.identifier("CATALOG or DATABASE after SHOW CURRENT")
        what = f"CURRENT {word.value.upper()}"
        if what not in ("CURRENT CATALOG", "CURRENT DATABASE"):
            raise ts.error(f"unsupported statement 'SHOW {what}'", word, hint=f"SHOW takes {_SHOW_WHAT}")
    elif ts.accept("USER", "FUNCTIONS"):
        what = "USER FUNCTIONS"
    else:
        word = ts.identifier(f"what to show ({_SHOW_WHAT})")
        what = word.value.upper()
        if what not in _SHOW:
            raise ts.error(f"unsupported statement 'SHOW {what}'", word, hint=f"the job prints SHOW {_SHOW_WHAT}")
    if not ts.at_end():
        # SHOW TABLES FROM db, SHOW … LIKE '…': Flink has them; the job prints the plain forms only.
        extra = ts.peek()
        raise ts.error(f"'SHOW {what} {extra.text.upper()} …' is not supported", extra,
                       hint=f"write SHOW {what} after USE of the catalog or database to list")
    del token
    return Show(what, None, st)


def describe(ts: TokenStream, st: StatementText) -> Show:
    ts.next()  # DESCRIBE | DESC
    if ts.at("EXTENDED"):
        ts.next()
    if ts.at("CATALOG") or ts.at("DATABASE") or ts.at("FUNCTION") or ts.at("JOB") or ts.at("MODEL"):
        word = ts.peek()
        raise ts.error(f"unsupported statement 'DESCRIBE {word.value.upper()}'", word,
                       hint="the job describes tables and views: DESCRIBE name")
    name, _ = qualified_name(ts, "a table or view name")
    ts.expect_end("the table's name")
    return Show("DESCRIBE", name, st)


def drop(ts: TokenStream, st: StatementText) -> Drop:
    ts.next()  # DROP
    temporary = ts.accept("TEMPORARY") is not None
    if temporary and ts.at("SYSTEM"):
        ts.next()
    word = ts.identifier("TABLE, VIEW, DATABASE, CATALOG or FUNCTION after DROP")
    kind = word.value.upper()
    if kind not in _DROP_KINDS:
        raise ts.error(f"unsupported statement 'DROP {kind}'", word,
                       hint="the job drops a TABLE, VIEW, DATABASE, CATALOG or FUNCTION")
    exists = False
    if ts.at("IF", "EXISTS"):
        ts.next(), ts.next()
        exists = True
    name, _ = qualified_name(ts, f"the {kind.lower()}'s name")
    cascade = False
    if kind == "DATABASE" and (ts.at("CASCADE") or ts.at("RESTRICT")):
        cascade = ts.next().value.upper() == "CASCADE"
    ts.expect_end(f"the {kind.lower()}'s name")
    return Drop(kind, name, exists, cascade, st)


def explain(ts: TokenStream, st: StatementText, insert: Callable) -> Explain:
    """``EXPLAIN [PLAN FOR | detail, …] INSERT …``; ``insert`` parses the INSERT that follows."""
    ts.next()  # EXPLAIN
    if ts.accept("PLAN"):
        ts.expect("FOR", what="FOR after EXPLAIN PLAN")
    else:
        # Flink's detail words (ESTIMATED_COST, CHANGELOG_MODE, JSON_EXECUTION_PLAN, PLAN_ADVICE) change
        # what Flink prints about its own optimizer; the job prints its plan either way.
        while not any(ts.at(w) for w in ("INSERT", "EXECUTE", "SELECT", "WITH", "VALUES", "(")) and not ts.at_end():
            word = ts.next()
            if word.text != "," and word.value.upper() not in (
                    "ESTIMATED_COST", "CHANGELOG_MODE", "JSON_EXECUTION_PLAN", "PLAN_ADVICE"):
                raise ts.error(f"unknown EXPLAIN detail '{word.text}'", word,
                               hint="EXPLAIN [PLAN FOR] INSERT INTO … SELECT …")
    if ts.at("EXECUTE", "INSERT"):
        ts.next()
    if not ts.at("INSERT"):
        raise ts.error("EXPLAIN of a query on its own is not supported: it has no sink here", ts.peek(),
                       hint="EXPLAIN INSERT INTO <table> SELECT …, or run with --dry-run to print every INSERT's plan")
    return Explain(insert(ts, st), st)
