"""The parsed statement kinds, as frozen dataclasses.

A pipeline is an ordered list of these. They carry no Spark objects: parsing needs no
SparkSession, so ``--dry-run`` errors come fast and tests run without a JVM.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Union

from job.errors import Origin

if TYPE_CHECKING:
    from job.sql.flink.query import Query


@dataclass(frozen=True)
class StatementText:
    """One statement's raw text (no trailing ``;``) and where its first character is."""

    text: str
    origin: Origin


@dataclass(frozen=True)
class Column:
    """A column of a CREATE TABLE.

    ``kind`` is ``physical`` (read from the payload), ``computed`` (``c AS expr``) or
    ``metadata`` (``METADATA [FROM 'key'] [VIRTUAL]``). ``spark_type`` is a Spark DDL
    type string ("bigint", "decimal(10,2)", "struct<a:int>"); ``flink_type`` is the type
    as the user wrote it.
    """

    name: str
    spark_type: str
    flink_type: str
    nullable: bool = True
    kind: str = "physical"              # physical | computed | metadata
    expression: Optional[str] = None    # computed columns: a Spark SQL expression
    metadata_key: Optional[str] = None  # metadata columns: FROM 'key', else the name
    virtual: bool = False               # metadata VIRTUAL: read-only, never written
    comment: Optional[str] = None

    @property
    def is_physical(self) -> bool:
        return self.kind == "physical"

    @property
    def is_persisted(self) -> bool:
        """Written by a sink: physical columns and non-virtual metadata."""
        return self.kind == "physical" or (self.kind == "metadata" and not self.virtual)


@dataclass(frozen=True)
class Watermark:
    """``WATERMARK FOR column AS expression``; ``delay`` is Spark's withWatermark delay
    ("5 seconds") when the expression has the usual ``column - INTERVAL …`` shape."""

    column: str
    expression: str
    delay: str


@dataclass(frozen=True)
class CreateTable:
    name: str
    columns: tuple[Column, ...]
    options: Mapping[str, str] = field(default_factory=dict, compare=False)
    primary_key: tuple[str, ...] = ()
    watermark: Optional[Watermark] = None
    partitioned_by: tuple[str, ...] = ()
    temporary: bool = False
    if_not_exists: bool = False
    source: Optional[StatementText] = None
    # Where each option's key was written, for errors that name an option.
    option_origins: Mapping[str, Origin] = field(default_factory=dict, compare=False)
    # ``LIKE base (…)``: the table is only complete once merged with its base table.
    like: Optional["LikeClause"] = field(default=None, compare=False, repr=False)
    # No WITH clause: the error to raise unless the table is created in a catalog that
    # says where its tables live (Iceberg's; job.catalog), as Flink allows there.
    missing_with: Optional[Exception] = field(default=None, compare=False, repr=False)

    def column(self, name: str) -> Optional[Column]:
        for c in self.columns:
            if c.name.lower() == name.lower():
                return c
        return None

    @property
    def physical_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.is_physical)


@dataclass(frozen=True)
class LikeClause:
    """``CREATE TABLE … LIKE base (INCLUDING ALL …)``, waiting for its base table.

    Parsing needs no catalog, so the statement is parsed on its own and the merge is left
    to the one who knows the tables declared before it: ``merge(base)`` returns the
    complete table (or raises at the user's line:column, as Flink's merge would).
    """

    table: str                                        # the base table's name as written
    origin: Origin                                    # where the base table's name is
    strategies: Mapping[str, str]                     # feature → INCLUDING/EXCLUDING/OVERWRITING
    merge: Callable[["CreateTable"], "CreateTable"] = field(compare=False, repr=False)


@dataclass(frozen=True)
class CreateView:
    name: str
    query: str                      # the SELECT, verbatim
    query_origin: Origin            # where the SELECT's first character is
    column_names: tuple[str, ...] = ()
    temporary: bool = False
    source: Optional[StatementText] = None
    parsed: Optional["Query"] = field(default=None, compare=False, repr=False)  # the query, parsed once


@dataclass(frozen=True)
class SetOption:
    key: str
    value: str
    source: Optional[StatementText] = None


@dataclass(frozen=True)
class Insert:
    table: str
    query: str                      # the SELECT, verbatim
    query_origin: Origin
    column_names: tuple[str, ...] = ()
    overwrite: bool = False
    source: Optional[StatementText] = None
    parsed: Optional["Query"] = field(default=None, compare=False, repr=False)  # the query, parsed once
    explain_only: bool = False      # EXPLAIN INSERT …: planned and printed, not run
    # INSERT INTO t /*+ OPTIONS(…) */: (the name the sink is bound under, the Hint) (job.sql.flink.hints)
    sink_hint: Optional[tuple] = field(default=None, compare=False, repr=False)

    @property
    def sink_table(self) -> str:
        """The table the INSERT writes, as bound: its OPTIONS hint's table if it has one."""
        return self.sink_hint[0] if self.sink_hint else self.table


@dataclass(frozen=True)
class CreateFunction:
    """``CREATE [TEMPORARY [SYSTEM]] FUNCTION name AS 'class' [LANGUAGE JAVA] [USING JAR '…']``:
    a Flink user-defined function, a Java class in a jar (see job.plan.user_functions)."""

    name: str
    class_name: str
    language: str = "JAVA"
    jars: tuple[str, ...] = ()      # USING JAR paths
    temporary: bool = False
    system: bool = False            # TEMPORARY SYSTEM: it shadows a built-in function of its name
    if_not_exists: bool = False
    source: Optional[StatementText] = None


@dataclass(frozen=True)
class AddJar:
    """``ADD JAR 'path'``: a jar whose classes the pipeline's functions may use."""

    path: str
    source: Optional[StatementText] = None


@dataclass(frozen=True)
class CreateCatalog:
    """``CREATE CATALOG [IF NOT EXISTS] name WITH ('type' = '…', …)``: job.catalogs maps the type."""

    name: str
    options: Mapping[str, str] = field(default_factory=dict, compare=False)
    if_not_exists: bool = False
    source: Optional[StatementText] = None


@dataclass(frozen=True)
class UseNamespace:
    """``USE CATALOG name`` (``kind`` 'catalog') or ``USE [catalog.]database`` ('database')."""

    kind: str
    name: str
    source: Optional[StatementText] = None


@dataclass(frozen=True)
class CreateDatabase:
    """``CREATE DATABASE [IF NOT EXISTS] [catalog.]name [COMMENT '…'] [WITH (…)]``."""

    name: str
    if_not_exists: bool = False
    source: Optional[StatementText] = None


@dataclass(frozen=True)
class Drop:
    """``DROP [TEMPORARY] TABLE|VIEW|DATABASE|CATALOG|FUNCTION [IF EXISTS] name [RESTRICT|CASCADE]``."""

    kind: str                       # TABLE | VIEW | DATABASE | CATALOG | FUNCTION
    name: str
    if_exists: bool = False
    cascade: bool = False
    source: Optional[StatementText] = None


@dataclass(frozen=True)
class Show:
    """``SHOW CATALOGS|DATABASES|TABLES|VIEWS|FUNCTIONS|USER FUNCTIONS|CURRENT CATALOG|CURRENT DATABASE``
    and ``DESCRIBE name`` (``what`` 'DESCRIBE', ``name`` the table): printed as Flink's SQL client prints
    them, with the catalog as it is at this point of the file."""

    what: str
    name: Optional[str] = None
    source: Optional[StatementText] = None


@dataclass(frozen=True)
class Explain:
    """``EXPLAIN [PLAN FOR] INSERT …``: the INSERT's plan is printed (as --explain prints it);
    the INSERT does not run, as in Flink."""

    insert: "Insert"
    source: Optional[StatementText] = None


Statement = Union[CreateTable, CreateView, SetOption, Insert, CreateFunction, AddJar, CreateCatalog, UseNamespace,
                  CreateDatabase, Drop, Show, Explain]
