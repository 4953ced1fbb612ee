"""The pipeline's tables, views and functions, by name (case-insensitive, like Flink's
default), and the jars it adds. Each table is bound to its connector once
(job.connectors.registry.bind: options checked and typed), and everything after that reads
the catalog's :class:`~job.connectors.base.BoundTable`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from job.catalogs import Namespace
from job.errors import PipelineError
from job.sql.clauses import short_name  # noqa: F401 - the catalog's keys, imported from here
from job.sql.statements import AddJar, CreateFunction, CreateTable, CreateView


@dataclass
class Catalog:
    tables: dict[str, CreateTable] = field(default_factory=dict)
    views: dict[str, CreateView] = field(default_factory=dict)
    functions: dict[str, CreateFunction] = field(default_factory=dict)
    jars: list[AddJar] = field(default_factory=list)
    # Each table bound to its connector: when the program is checked, for the roles it
    # plays (job.plan.program.bind_tables); a table that plays none, when first asked for.
    bound: dict = field(default_factory=dict)
    bound_roles: dict = field(default_factory=dict)   # table key → the roles it was bound for
    # Catalogs and databases (CREATE CATALOG / DATABASE, USE), each table's and view's
    # (catalog, database), and what SHOW / DESCRIBE printed, in order.
    namespace: Namespace = field(default_factory=Namespace)
    paths: dict = field(default_factory=dict)
    printed: list = field(default_factory=list)
    # Tables of OPTIONS hints (add_hinted): key → (the table as written, the hint's keys, its statement).
    hinted: dict = field(default_factory=dict)

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
        path = self.namespace.path(table.name)
        if table.missing_with is not None and path[0] not in self.namespace.external:
            raise table.missing_with
        if path[0] in self.namespace.external:
            table = self._in_external(table, path)
        self.paths[short_name(table.name).lower()] = path[:2]
        self.tables[short_name(table.name).lower()] = table

    def _in_external(self, table: CreateTable, path) -> CreateTable:
        """A CREATE TABLE in an Iceberg catalog, as the ``iceberg`` connector table it is
        (its WITH options are the table's properties, as in Flink). With IF NOT EXISTS and
        the table in the warehouse already, the warehouse's table, as Flink keeps it."""
        from dataclasses import replace

        from job.connectors.iceberg import catalog_table_options, warehouse_columns, warehouse_table_exists

        located = dict(origin=table.source.origin if table.source else None,
                       statement=table.source.text if table.source else None)
        if "connector" in table.options:
            raise PipelineError(
                "Cannot create the table with 'connector'='iceberg' table property in an iceberg catalog, Please "
                "create table with 'connector'='iceberg' property in a non-iceberg catalog or create table "
                "without 'connector'='iceberg' related properties in an iceberg table.", option="connector",
                hint="leave out 'connector' (and the catalog options): the catalog says where the table lives",
                **located)
        catalog, database, name = path
        options = catalog_table_options(catalog, self.namespace.external[catalog], database, name)
        if warehouse_table_exists(options):
            if table.if_not_exists:
                try:
                    columns, key = warehouse_columns(options)
                except ValueError as exc:
                    raise PipelineError(f"Iceberg table {database}.{name} of catalog {catalog}: {exc}",
                                        **located) from None
                return replace(table, columns=columns, primary_key=key, options=options, watermark=None,
                               partitioned_by=(), option_origins={})
            raise PipelineError(f"Could not execute CreateTable in path `{catalog}`.`{database}`.`{name}`: "
                                f"Table (or view) {database}.{name} already exists in Catalog {catalog}.",
                                hint="CREATE TABLE IF NOT EXISTS keeps the existing table", **located)
        return replace(table, options={**options, **table.options})

    def add_view(self, view: CreateView) -> None:
        self._check_free(view.name, view.source, False)
        self.paths[short_name(view.name).lower()] = self.namespace.path(view.name)[:2]
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

    def add_hinted(self, synthetic: str, written: str, hint, source) -> None:
        """A table read or written with an ``OPTIONS`` hint: the table ``written`` names, its
        options overridden by the hint's, under the name the query gives that scan or sink.
        Its connector checks it like any table, at the hint's options where they are at fault."""
        from dataclasses import replace

        base = self.table(written)
        located = dict(origin=hint.option_origins.get(next(iter(hint.options), None)),
                       statement=source.text if source else None)
        if base is None:
            if self.view(written) is not None:
                raise PipelineError(f"View '{written}' cannot be enriched with new options. Hints can only be "
                                    "applied to tables.", **located)
            raise PipelineError(f"Object '{written}' not found", hint="define it with CREATE TABLE first", **located)
        hinted = replace(base, name=synthetic, options={**base.options, **hint.options},
                         option_origins={**base.option_origins, **hint.option_origins})
        self.tables[synthetic.lower()] = hinted
        self.paths[synthetic.lower()] = self.paths.get(short_name(written).lower())
        self.hinted[synthetic.lower()] = (written, frozenset(hint.options), source)

    def in_database(self, catalog: str, database: str) -> list[str]:
        """Keys of the tables and views declared in ``catalog.database``."""
        return [key for key, path in self.paths.items() if path == (catalog, database) and key not in self.hinted]

    def drop(self, key: str) -> None:
        for held in (self.tables, self.views, self.bound, self.bound_roles, self.paths):
            held.pop(key, None)

    def table(self, name: str) -> Optional[CreateTable]:
        return self.tables.get(short_name(name).lower())

    def view(self, name: str) -> Optional[CreateView]:
        return self.views.get(short_name(name).lower())

    def bound_table(self, name: str, role: Optional[str] = None):
        """The table ``name`` bound to its connector (None: no such table). ``role``
        ('source' or 'sink') binds it for that role if the program has not."""
        key = short_name(name).lower()
        table = self.tables.get(key)
        if table is None:
            return None
        bound = self.bound.get(key)
        roles = self.bound_roles.setdefault(key, set())
        if bound is None or bound.table is not table or (role is not None and role not in roles):
            from job.connectors.registry import bind

            bound = self.bound[key] = bind(table, role)
            roles.add(role)
        return bound

    def bound_tables(self) -> list:
        """Every table, bound, in the catalog's order."""
        return [self.bound_table(key) for key in self.tables]
