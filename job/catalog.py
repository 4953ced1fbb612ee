"""The pipeline's tables, views and functions, by name (case-insensitive, like Flink's
default), and the jars it adds."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from job.errors import PipelineError
from job.sql.clauses import short_name  # noqa: F401 - the catalog's keys, imported from here
from job.sql.statements import AddJar, CreateFunction, CreateTable, CreateView


@dataclass
class Catalog:
    tables: dict[str, CreateTable] = field(default_factory=dict)
    views: dict[str, CreateView] = field(default_factory=dict)
    functions: dict[str, CreateFunction] = field(default_factory=dict)
    jars: list[AddJar] = field(default_factory=list)

    def add_function(self, function: CreateFunction) -> None:
        key = function.name.lower()
        existing = self.functions.get(key)
        if existing is not None:
            if function.if_not_exists:
                return
            where = existing.source.origin if existing.source else None
            raise PipelineError(f"function '{function.name}' is already defined{f' at {where}' if where else ''}",
                                origin=function.source.origin if function.source else None,
                                statement=function.source.text if function.source else None,
                                hint="CREATE FUNCTION IF NOT EXISTS keeps the first one")
        self.functions[key] = function

    def add_table(self, table: CreateTable) -> None:
        self._check_free(table.name, table.source, table.if_not_exists)
        if table.if_not_exists and self.lookup(table.name):
            return
        self.tables[short_name(table.name).lower()] = table

    def add_view(self, view: CreateView) -> None:
        self._check_free(view.name, view.source, False)
        self.views[short_name(view.name).lower()] = view

    def _check_free(self, name: str, source, if_not_exists: bool) -> None:
        existing = self.lookup(name)
        if existing is not None and not if_not_exists:
            where = existing.source.origin if existing.source else None
            raise PipelineError(f"'{name}' is already defined{f' at {where}' if where else ''}",
                                origin=source.origin if source else None, statement=source.text if source else None,
                                hint="table and view names must be unique in a pipeline")

    def lookup(self, name: str):
        key = short_name(name).lower()
        return self.tables.get(key) or self.views.get(key)

    def table(self, name: str) -> Optional[CreateTable]:
        return self.tables.get(short_name(name).lower())

    def view(self, name: str) -> Optional[CreateView]:
        return self.views.get(short_name(name).lower())


def table_mode(table: CreateTable) -> str:
    """append / upsert / changelog: the changelog mode the table's connector and value
    format give it (see job.connectors.registry.changelog_mode)."""
    from job.connectors.registry import bind

    return bind(table).mode
