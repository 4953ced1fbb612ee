"""The CREATE TABLE grammar (Flink dialect), parsed into a :class:`CreateTable`.

::

    CREATE [TEMPORARY] TABLE [IF NOT EXISTS] [catalog.db.]name (
        column_def | [CONSTRAINT n] PRIMARY KEY (a, …) NOT ENFORCED
                   | WATERMARK FOR ts AS expr , …
    ) [COMMENT '…'] [PARTITIONED BY (c, …)] WITH ('key' = 'value', …)
      [LIKE base [( {INCLUDING | EXCLUDING | OVERWRITING} feature … )]]   -- see job.sql.like

    column_def:  name type [[CONSTRAINT n] PRIMARY KEY NOT ENFORCED] [COMMENT '…']
              |  name AS expr [COMMENT '…']                     -- computed
              |  name type METADATA [FROM 'key'] [VIRTUAL] [COMMENT '…']

Computed-column and watermark expressions are kept verbatim. Translating them into
Spark SQL is the planner's job. A computed column's ``spark_type`` and ``flink_type`` are
``""`` because its type is only known once Spark analyses the expression.

Column names are matched without case, as Spark does by default. So ``a`` and ``A``
count as duplicates, and ``PRIMARY KEY (UID)`` finds the column ``uid``. Key, watermark
and partition columns are stored as the column's declared spelling.
"""
from __future__ import annotations

import dataclasses
import difflib
from typing import Optional

from job.errors import Origin
from job.sql.clauses import (expression, if_not_exists, name_list, optional_comment,  # noqa: F401 - re-exported
                             qualified_name, span)
from job.sql.statements import Column, CreateTable, LikeClause, StatementText, Watermark
from job.sql.like import like_clause, merge_base
from job.sql.tokens import DSTRING, IDENT, NUMBER, QUOTED, STRING, Token, TokenStream, describe
from job.sql.types import parse_type
from job.sql.watermarks import watermark_delay

WITH_HINT = "Flink requires a connector: add WITH ('connector' = '…', …) after the column list."
NOT_ENFORCED_HINT = (
    "Flink does not own the data, so it cannot enforce keys and only accepts "
    "PRIMARY KEY (…) NOT ENFORCED."
)
OPTION_HINT = "write options as quoted strings: 'connector' = 'kafka'."


# --------------------------------------------------------------------------- CREATE TABLE


class _Table:
    """What the element list has declared so far, with tokens for error positions."""

    def __init__(self) -> None:
        self.columns: list[Column] = []
        self.column_tokens: dict[str, Token] = {}         # lower-case name → name token
        self.primary_key: Optional[list[Token]] = None
        self.watermark: Optional[tuple[Watermark, Token]] = None
        self.options: dict[str, str] = {}
        self.option_origins: dict[str, Origin] = {}
        self.option_tokens: dict[str, Token] = {}
        # What a LIKE clause takes from the base table, already checked there.
        self.base_primary_key: tuple[str, ...] = ()
        self.base_watermark: Optional[Watermark] = None
        self.partitions: tuple[str, ...] = ()


def parse_create_table(ts: TokenStream, st: StatementText, temporary: bool) -> CreateTable:
    """Parse from the ``TABLE`` keyword (``CREATE [TEMPORARY]`` already taken)."""
    ts.expect("TABLE")
    exists = if_not_exists(ts)
    name, _ = qualified_name(ts, "a table name")
    after_name = ts.peek()
    table = declared = _Table()
    if ts.accept("("):
        while True:
            _element(ts, table)
            if ts.accept(","):
                continue
            ts.expect(")", what="',' or ')'")
            break
    elif not any(ts.at(word) for word in ("WITH", "LIKE", "PARTITIONED", "COMMENT")):
        raise _no_column_list(ts, after_name)
    optional_comment(ts)  # a table comment has nowhere to go in Spark; accepted and dropped
    partitioned_by: list[Token] = []
    if ts.accept("PARTITIONED"):
        ts.expect("BY")
        partitioned_by = name_list(ts, "a partition column")
    missing_with = None
    if ts.accept("WITH"):
        _options(ts, table)
    elif not ts.at("LIKE"):
        if ts.at_end():  # raised when the table is declared, unless its catalog is Iceberg's (job.catalog)
            missing_with = ts.error("missing WITH clause", ts.peek(), hint=WITH_HINT).located(st.origin, st.text)
        else:
            ts.expect("WITH", hint=WITH_HINT)
    like_token = ts.accept("LIKE")
    if not like_token and not table.columns:  # only a derived table may leave the columns out
        raise _no_column_list(ts, after_name)
    base_token, base_name, strategies = like_clause(ts) if like_token else (None, "", {})
    ts.expect_end("the LIKE clause" if like_token else "the WITH clause")

    def finish(base: Optional[CreateTable] = None) -> CreateTable:
        table = merge_base(ts, declared, base, strategies, partitioned_by) if base is not None else declared
        primary_key = _check_primary_key(ts, table)
        watermark = _check_watermark(ts, table)
        partitions = table.partitions or tuple(_resolve(ts, table, t, "PARTITIONED BY").name for t in partitioned_by)
        return CreateTable(name=name, columns=tuple(table.columns), options=table.options, primary_key=primary_key,
                           watermark=watermark, partitioned_by=partitions, temporary=temporary, if_not_exists=exists,
                           source=st, option_origins=table.option_origins, missing_with=missing_with)

    if base_token is None:
        return finish()

    def merge(base) -> CreateTable:
        """``base``: what the catalog holds under the LIKE clause's name, or None."""
        if not isinstance(base, CreateTable):
            problem = "can not be a VIEW" if base is not None else "was not found: declare it before this statement"
            raise ts.error(f"source table '{base_name}' of the LIKE clause {problem}", base_token)
        return finish(base)

    # Incomplete until merged: the columns, options and keys declared here only.
    return CreateTable(name=name, columns=tuple(table.columns), options=table.options, temporary=temporary,
                       if_not_exists=exists, source=st, option_origins=table.option_origins,
                       like=LikeClause(base_name, ts.origin_at(base_token.start), strategies, merge))


def _no_column_list(ts: TokenStream, token: Token):
    return ts.expected("'(' and the column list", token,
                       hint="CREATE TABLE … AS SELECT is not supported: declare the columns, then INSERT INTO.")


def _element(ts: TokenStream, table: _Table) -> None:
    if ts.at("PRIMARY", "KEY") or (ts.at("CONSTRAINT") and ts.peek(2).is_keyword("PRIMARY", "UNIQUE")):
        _table_constraint(ts, table)
    elif ts.at("UNIQUE", "("):
        raise ts.error("UNIQUE constraints are not supported", ts.peek(), hint=NOT_ENFORCED_HINT)
    elif ts.at("WATERMARK", "FOR"):
        _watermark(ts, table)
    else:
        _column(ts, table)


def _column(ts: TokenStream, table: _Table) -> None:
    name_token = ts.identifier("a column definition")
    name = name_token.value
    first = table.column_tokens.get(name.lower())
    if first is not None:
        where = ts.origin_at(first.start)
        raise ts.error(
            f"duplicate column '{name}' (first defined at line {where.line}, column {where.column})",
            name_token,
        )
    if ts.accept("AS"):
        tokens = expression(ts, f"an expression for computed column '{name}'")
        column = Column(
            name, "", "", kind="computed", expression=span(ts, tokens),
            comment=optional_comment(ts),
        )
    else:
        if ts.peek().kind != IDENT:
            raise ts.expected(f"a type for column '{name}'")
        flink = parse_type(ts)
        if ts.accept("METADATA"):
            key = ts.string("a metadata key string after FROM").value if ts.accept("FROM") else name
            virtual = ts.accept("VIRTUAL") is not None
            column = Column(
                name, flink.spark_type, flink.text, flink.nullable, kind="metadata",
                metadata_key=key, virtual=virtual, comment=optional_comment(ts),
            )
        else:
            if ts.at("PRIMARY") or ts.at("CONSTRAINT"):
                start = ts.peek()
                if ts.accept("CONSTRAINT"):
                    ts.identifier("a constraint name")
                ts.expect("PRIMARY", "KEY")
                _not_enforced(ts)
                _set_primary_key(ts, table, [name_token], start)
            column = Column(
                name, flink.spark_type, flink.text, flink.nullable, comment=optional_comment(ts),
            )
    table.columns.append(column)
    table.column_tokens[name.lower()] = name_token




def _table_constraint(ts: TokenStream, table: _Table) -> None:
    start = ts.peek()
    if ts.accept("CONSTRAINT"):
        ts.identifier("a constraint name")
    if ts.at("UNIQUE"):
        raise ts.error("UNIQUE constraints are not supported", ts.peek(), hint=NOT_ENFORCED_HINT)
    ts.expect("PRIMARY", "KEY")
    names = name_list(ts, "a primary key column")
    _not_enforced(ts)
    _set_primary_key(ts, table, names, start)


def _not_enforced(ts: TokenStream) -> None:
    if ts.at("NOT"):
        ts.expect("NOT", "ENFORCED", hint=NOT_ENFORCED_HINT)
        return
    raise ts.error(
        f"PRIMARY KEY must be declared NOT ENFORCED, found {describe(ts.peek())}",
        ts.peek(), hint=NOT_ENFORCED_HINT,
    )


def _set_primary_key(ts: TokenStream, table: _Table, names: list[Token], start: Token) -> None:
    if table.primary_key is not None:
        raise ts.error("a table can have only one PRIMARY KEY", start)
    table.primary_key = names


def _watermark(ts: TokenStream, table: _Table) -> None:
    start = ts.next()  # WATERMARK
    ts.next()          # FOR
    column = ts.identifier("the watermark column")
    if ts.at("."):
        raise ts.error("a watermark on a nested field is not supported", ts.peek(), hint="use a computed column.")
    ts.expect("AS")
    tokens = expression(ts, "a watermark expression")
    if table.watermark is not None:
        raise ts.error("a table can have only one WATERMARK", start)
    delay = watermark_delay(ts, column, tokens)
    table.watermark = (Watermark(column.value, span(ts, tokens), delay), column)




def _options(ts: TokenStream, table: _Table) -> None:
    ts.expect("(", what="'(' after WITH")
    if ts.accept(")"):
        return
    while True:
        key = _literal(ts, "an option key", "option keys")
        if key.value in table.options:
            where = table.option_origins[key.value]
            error = ts.error(
                f"duplicate option '{key.value}' (first set at line {where.line}, column {where.column})", key,
            )
            error.option = key.value
            raise error
        ts.expect("=", what=f"'=' after option '{key.value}'")
        value = _literal(ts, f"a value for option '{key.value}'", "option values", option=key.value)
        table.options[key.value] = value.value
        table.option_origins[key.value] = ts.origin_at(key.start)
        table.option_tokens[key.value] = key
        if not ts.accept(","):
            ts.expect(")", what="',' or ')' in the WITH options")
            return


def _literal(ts: TokenStream, what: str, plural: str, option: Optional[str] = None) -> Token:
    token = ts.peek()
    if token.kind == STRING:
        return ts.next()
    if token.kind in (IDENT, QUOTED, NUMBER, DSTRING):
        error = ts.error(f"{plural} must be 'single-quoted' string literals, found {describe(token)}", token, OPTION_HINT)
    else:
        error = ts.expected(what, token, hint=OPTION_HINT)
    error.option = option
    raise error


# --------------------------------------------------------------------------- validation


def _resolve(ts: TokenStream, table: _Table, token: Token, role: str) -> Column:
    """The declared column a key/watermark/partition name refers to, or an error at the name."""
    for column in table.columns:
        if column.name.lower() == token.value.lower():
            return column
    names = [c.name for c in table.columns]
    guess = difflib.get_close_matches(token.value, names, n=1)
    hint = f"did you mean '{guess[0]}'?" if guess else "columns: " + ", ".join(names) + "."
    raise ts.error(f"{role} column '{token.value}' is not a column of the table", token, hint=hint)


def _check_primary_key(ts: TokenStream, table: _Table) -> tuple[str, ...]:
    """Resolve the key. Key columns must be physical, and Flink makes them NOT NULL."""
    if table.primary_key is None:
        return table.base_primary_key
    names = []
    for token in table.primary_key:
        column = _resolve(ts, table, token, "PRIMARY KEY")
        if not column.is_physical:
            raise ts.error(
                f"PRIMARY KEY column '{column.name}' is a {column.kind} column; "
                "a key must be declared on physical columns", token,
            )
        table.columns[table.columns.index(column)] = dataclasses.replace(column, nullable=False)
        names.append(column.name)
    return tuple(names)


def _check_watermark(ts: TokenStream, table: _Table) -> Optional[Watermark]:
    if table.watermark is None:
        return table.base_watermark
    watermark, token = table.watermark
    column = _resolve(ts, table, token, "WATERMARK")
    # A computed column's type is unknown until Spark analyses it; the planner checks it.
    if column.kind != "computed" and column.spark_type != "timestamp":
        raise ts.error(
            f"watermark column '{column.name}' has type {column.flink_type}; "
            "it must be TIMESTAMP(3) or TIMESTAMP_LTZ(3)", token,
        )
    return dataclasses.replace(watermark, column=column.name)
