"""Run the catalog statements of a pipeline as it is declared (job.plan.program.declare):
CREATE CATALOG / DATABASE, USE, DROP, and SHOW / DESCRIBE, whose tables are printed as
Flink's SQL client prints them, with the catalog as it stands at that statement.
"""
from __future__ import annotations

from job.catalog import Catalog, short_name
from job.catalogs import DESCRIBE_HEADER, describe_rows, split, tableau
from job.errors import PipelineError
from job.sql.statements import CreateCatalog, CreateDatabase, Drop, Show, UseNamespace


def apply(catalog: Catalog, statement, inserts: list) -> None:
    space = catalog.namespace
    if isinstance(statement, CreateCatalog):
        space.create_catalog(statement.name, dict(statement.options), statement.if_not_exists)
    elif isinstance(statement, CreateDatabase):
        space.create_database(statement.name, statement.if_not_exists)
    elif isinstance(statement, UseNamespace):
        (space.use_catalog if statement.kind == "catalog" else space.use_database)(statement.name)
    elif isinstance(statement, Drop):
        _drop(catalog, statement, inserts)
    elif isinstance(statement, Show):
        catalog.printed.append(_show(catalog, statement))


def _show(catalog: Catalog, show: Show) -> str:
    space = catalog.namespace
    here = catalog.in_database(space.current_catalog, space.current_database)
    if show.what == "CATALOGS":
        return tableau("catalog name", [[c] for c in sorted(space.catalogs)])
    if show.what in ("DATABASES", "TABLES", "VIEWS") and space.current_catalog in space.external:
        raise PipelineError(f"SHOW {show.what} in Iceberg catalog {space.current_catalog} is not supported: Flink "
                            "lists what the warehouse holds, the job knows only what the file declares",
                            hint="list the warehouse with Iceberg's own tools")
    if show.what == "DATABASES":
        return tableau("database name", [[d] for d in sorted(space.catalogs[space.current_catalog])])
    if show.what == "CURRENT CATALOG":
        return tableau("current catalog name", [[space.current_catalog]])
    if show.what == "CURRENT DATABASE":
        return tableau("current database name", [[space.current_database]])
    if show.what == "TABLES":  # Flink lists views as tables too
        return tableau("table name", [[catalog.lookup(k).name.split(".")[-1].replace("`", "")] for k in sorted(here)])
    if show.what == "VIEWS":
        return tableau("view name", [[catalog.views[k].name.split(".")[-1].replace("`", "")]
                                     for k in sorted(here) if k in catalog.views])
    if show.what == "USER FUNCTIONS":
        return tableau("function name", [[f.name.lower()] for f in sorted(catalog.functions.values(),
                                                                          key=lambda f: f.name.lower())])
    if show.what == "FUNCTIONS":
        raise PipelineError("SHOW FUNCTIONS is not supported: Flink lists its built-in functions too, a list the "
                            "job does not reproduce", hint="SHOW USER FUNCTIONS lists the functions the file creates")
    return _describe(catalog, show.name)


def _describe(catalog: Catalog, name: str) -> str:
    key = _resolved(catalog, name)
    table = catalog.tables.get(key)
    if table is None:
        if key in catalog.views:
            raise PipelineError(f"DESCRIBE {name}: describing a view is not supported",
                                hint="the job prints DESCRIBE of a table; a view's columns are its query's")
        raise PipelineError(f"Tables or views with the identifier '{name}' doesn't exist.")
    return tableau(DESCRIBE_HEADER, describe_rows(table))


def _resolved(catalog: Catalog, name: str) -> str:
    """The key of the table or view ``name`` names, if it is declared at that path."""
    key = short_name(name).lower()
    path = catalog.namespace.path(name)[:2] if len(split(name)) > 1 else (
        catalog.namespace.current_catalog, catalog.namespace.current_database)
    return key if catalog.paths.get(key) == path else ""


def _drop(catalog: Catalog, drop: Drop, inserts: list) -> None:
    space = catalog.namespace
    if drop.kind == "CATALOG":
        space.drop_catalog(drop.name, drop.if_exists)
        for key, path in list(catalog.paths.items()):
            if path[0] == drop.name:
                catalog.drop(key)
        return
    if drop.kind == "DATABASE":
        parts = split(drop.name)
        where = (parts[0] if len(parts) == 2 else space.current_catalog, parts[-1])
        held = catalog.in_database(*where)
        space.drop_database(drop.name, drop.if_exists, empty=not held or drop.cascade)
        for key in held:
            _check_unused(catalog, key, inserts, drop)
            catalog.drop(key)
        return
    if drop.kind == "FUNCTION":
        if catalog.functions.pop(short_name(drop.name).lower(), None) is None and not drop.if_exists:
            raise PipelineError(f"Function {drop.name} doesn't exist.")
        return
    if drop.kind == "TABLE" and len(split(drop.name)) == 3:
        space.refuse_in_external(split(drop.name)[0], f"DROP TABLE {drop.name}")
    elif drop.kind == "TABLE":
        space.refuse_in_external(space.current_catalog, f"DROP TABLE {drop.name}")
    key = _resolved(catalog, drop.name)
    held = catalog.tables if drop.kind == "TABLE" else catalog.views
    if key not in held:
        if drop.if_exists:
            return
        what = "Table" if drop.kind == "TABLE" else "View"
        raise PipelineError(f"{what} with identifier '{drop.name}' does not exist.")
    _check_unused(catalog, key, inserts, drop)
    catalog.drop(key)


def _check_unused(catalog: Catalog, key: str, inserts: list, drop: Drop) -> None:
    """Flink runs each INSERT when the file reaches it; the job runs them all once the file is
    read. A table an INSERT before the DROP writes or reads is still needed then: refused."""
    from job.plan.program import tables_read

    for insert in inserts:
        used = {short_name(insert.table).lower()} | tables_read(catalog, insert.parsed)
        used |= {short_name(catalog.hinted[k][0]).lower() for k in used if k in catalog.hinted}
        if key in used:
            raise PipelineError(
                f"DROP {drop.kind} {drop.name}: INSERT INTO {insert.table} before it uses it",
                hint="the job starts every INSERT together once the whole file is read, so a table an INSERT uses "
                     "cannot be dropped in the same file; drop it in a later run")
