"""Flink's namespace: catalogs, their databases, the current ones, and what SHOW / DESCRIBE print.

A pipeline starts, as Flink's SQL client does, in ``default_catalog.default_database``.
``CREATE CATALOG … WITH ('type' = …)`` is mapped to an implementation in one place,
:data:`CATALOG_TYPES`: Flink's ``generic_in_memory`` catalog (the tables the file
declares, gone when the job ends) and Iceberg's (``'type' = 'iceberg'``: its tables live in
an Iceberg catalog, and each is an ``iceberg`` connector table, job.catalog). Other types
(hive, jdbc, paimon) are refused by name.

Tables are still kept by their last name part (job.catalog): two tables of one name in two
databases are refused as a repeated name, never mixed up.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from job.errors import PipelineError

DEFAULT_CATALOG = "default_catalog"
DEFAULT_DATABASE = "default_database"
CREATED_CATALOG_DATABASE = "default"

# Catalog 'type' → what the job runs it as. The only place that knows catalog types.
CATALOG_TYPES = {"generic_in_memory": "in-memory", "iceberg": "iceberg"}
# The options of Iceberg's Flink catalog (FlinkCatalogFactory) that the job takes; whether
# its 'catalog-type' runs is the iceberg connector's check, at the catalog's first table.
ICEBERG_CATALOG_OPTIONS = ("catalog-type", "catalog-impl", "warehouse", "uri", "default-database",
                           "property-version", "cache-enabled", "cache.expiration-interval-ms")
ICEBERG_DEFAULT_DATABASE = "default"


def split(name: str) -> list[str]:
    """'cat.db.t' → ['cat', 'db', 't'] (backquoted parts keep their dots)."""
    parts, current, quoted = [], "", False
    for ch in name:
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + [current]


@dataclass
class Namespace:
    catalogs: dict[str, dict[str, None]] = field(
        default_factory=lambda: {DEFAULT_CATALOG: {DEFAULT_DATABASE: None}})
    current_catalog: str = DEFAULT_CATALOG
    current_database: str = DEFAULT_DATABASE
    # Catalogs that keep their tables elsewhere (iceberg): name → their WITH options.
    external: dict[str, dict] = field(default_factory=dict)

    def create_catalog(self, name: str, options: dict, if_not_exists: bool) -> None:
        kind = options.get("type")
        if kind is None:
            raise PipelineError(f"CREATE CATALOG {name}: the WITH options have no 'type'",
                                hint="the job runs CREATE CATALOG c WITH ('type' = 'generic_in_memory')")
        if kind not in CATALOG_TYPES:
            raise PipelineError(
                f"CREATE CATALOG {name}: catalog type '{kind}' is not supported", option="type",
                hint="the job has Flink's generic_in_memory and Iceberg's ('type' = 'iceberg') catalogs; declare "
                     "the tables with CREATE TABLE … WITH ('connector' = …) instead")
        allowed = ICEBERG_CATALOG_OPTIONS if kind == "iceberg" else ()
        extra = sorted(k for k in options if k != "type" and k not in allowed)
        if extra:
            raise PipelineError(f"CREATE CATALOG {name}: unsupported option '{extra[0]}' for catalog type '{kind}'",
                                option=extra[0], hint=f"a {kind} catalog takes "
                                + (", ".join(f"'{k}'" for k in ("type",) + allowed)))
        if name in self.catalogs:
            if if_not_exists:
                return
            raise PipelineError(f"Catalog {name} already exists.", hint="CREATE CATALOG IF NOT EXISTS keeps it")
        if kind == "iceberg":
            self.external[name] = dict(options)
            default = options.get("default-database", ICEBERG_DEFAULT_DATABASE)
            self.catalogs[name] = dict.fromkeys([default, *_warehouse_databases(options)])
            return
        # Flink's generic_in_memory catalog made by CREATE CATALOG starts with a database named 'default'
        # (only the SQL client's own default_catalog has default_database).
        self.catalogs[name] = {CREATED_CATALOG_DATABASE: None}

    def use_catalog(self, name: str) -> None:
        if name not in self.catalogs:
            raise PipelineError(f"A catalog with name [{name}] does not exist.", hint=_create_first("catalog"))
        self.current_catalog = name
        self.current_database = DEFAULT_DATABASE if name == DEFAULT_CATALOG else CREATED_CATALOG_DATABASE
        if name in self.external:
            self.current_database = self.external[name].get("default-database", ICEBERG_DEFAULT_DATABASE)

    def create_database(self, name: str, if_not_exists: bool) -> None:
        catalog, database = self._database_path(name)
        if database in self.catalogs[catalog]:
            if if_not_exists:
                return
            raise PipelineError(f"Database {database} already exists in Catalog {catalog}.",
                                hint="CREATE DATABASE IF NOT EXISTS keeps it")
        self.catalogs[catalog][database] = None

    def use_database(self, name: str) -> None:
        catalog, database = self._database_path(name)
        if database not in self.catalogs[catalog]:
            raise PipelineError(f"A database with name [{database}] does not exist in the catalog: [{catalog}].",
                                hint=_create_first("database"))
        self.current_catalog, self.current_database = catalog, database

    def refuse_in_external(self, catalog: str, what: str) -> None:
        """Dropping from an Iceberg catalog deletes from the warehouse in Flink: not done here."""
        if catalog in self.external:
            raise PipelineError(f"{what} in Iceberg catalog {catalog} is not supported: in Flink it deletes from "
                                "the warehouse, which the job never does", hint="drop it with Iceberg's own tools")

    def drop_database(self, name: str, if_exists: bool, empty: bool) -> None:
        catalog, database = self._database_path(name)
        self.refuse_in_external(catalog, f"DROP DATABASE {name}")
        if database not in self.catalogs[catalog]:
            if if_exists:
                return
            raise PipelineError(f"Database {database} does not exist in Catalog {catalog}.")
        if (catalog, database) == (self.current_catalog, self.current_database):
            raise PipelineError("Cannot drop a database which is currently in use.")
        if not empty:
            raise PipelineError(f"Database {database} in catalog {catalog} is not empty.",
                                hint="DROP DATABASE … CASCADE drops its tables and views too")
        del self.catalogs[catalog][database]

    def drop_catalog(self, name: str, if_exists: bool) -> None:
        if name not in self.catalogs:
            if if_exists:
                return
            raise PipelineError(f"Catalog {name} does not exist.")
        if name == self.current_catalog:
            raise PipelineError("Cannot drop a catalog which is currently in use.")
        del self.catalogs[name]

    def path(self, name: str) -> tuple[str, str, str]:
        """A table's full path: 't', 'db.t' and 'cat.db.t' resolved against the current catalog and
        database, which must exist (as Flink checks when a table is created)."""
        parts = split(name)
        if len(parts) > 3:
            raise PipelineError(f"'{name}' has more than three parts", hint="write catalog.database.table")
        catalog, database = {1: (self.current_catalog, self.current_database),
                             2: (self.current_catalog, parts[0])}.get(len(parts), tuple(parts[:2]))
        if catalog not in self.catalogs:
            raise PipelineError(f"Catalog {catalog} does not exist.", hint=_create_first("catalog"))
        if database not in self.catalogs[catalog]:
            raise PipelineError(f"Database {database} does not exist in Catalog {catalog}.",
                                hint=_create_first("database"))
        return catalog, database, parts[-1]

    def _database_path(self, name: str) -> tuple[str, str]:
        parts = split(name)
        if len(parts) > 2:
            raise PipelineError(f"'{name}' has more than two parts", hint="write catalog.database")
        catalog = parts[0] if len(parts) == 2 else self.current_catalog
        if catalog not in self.catalogs:
            raise PipelineError(f"Catalog {catalog} does not exist.", hint=_create_first("catalog"))
        return catalog, parts[-1]


def _warehouse_databases(options: dict) -> list[str]:
    """The databases an Iceberg Hadoop catalog's local warehouse holds: its directories
    that are not tables. Other catalogs are refused at their first table."""
    import os
    from urllib.parse import urlparse

    warehouse = options.get("warehouse") or ""
    parsed = urlparse(warehouse)
    if options.get("catalog-type") != "hadoop" or parsed.scheme not in ("", "file"):
        return []
    root = parsed.path if parsed.scheme else warehouse
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [n for n in names if os.path.isdir(os.path.join(root, n)) and not n.startswith(".")
            and not os.path.isdir(os.path.join(root, n, "metadata"))]


def _create_first(kind: str) -> str:
    return f"create it first with CREATE {kind.upper()}"


def tableau(header: str | list[str], rows: list[list[str]]) -> str:
    """Rows as Flink's SQL client prints a statement's result (its 'tableau' style: cells
    right-aligned, then 'N rows in set', or 'Empty set')."""
    headers = [header] if isinstance(header, str) else header
    if not rows:
        return "Empty set"
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells):
        return "|" + "|".join(" " + c.rjust(w) + " " for c, w in zip(cells, widths)) + "|"

    count = f"{len(rows)} row{'s' if len(rows) != 1 else ''} in set"
    return "\n".join([rule, line(headers), rule, *(line(r) for r in rows), rule, count])


def describe_rows(table) -> list[list[str]]:
    """DESCRIBE's rows for a CREATE TABLE: name, type, null, key, extras, watermark."""
    rows = []
    rowtime = table.watermark.column.lower() if table.watermark else None
    for c in table.columns:
        nullable = c.nullable and c.name not in table.primary_key
        kind = _flink_type(c.flink_type)  # nullability is the 'null' column's
        if rowtime == c.name.lower():
            kind += " *ROWTIME*"
        extras = ""
        if not c.flink_type:
            raise PipelineError(f"DESCRIBE {table.name}: the type of computed column '{c.name}' is not printed",
                                hint="the job types a computed column when it plans a query; DESCRIBE prints tables "
                                     "of physical and metadata columns")
        if c.kind == "computed":
            extras = f"AS {_quoted(c.expression or '', table)}"
        elif c.kind == "metadata":
            extras = "METADATA" + (f" FROM '{c.metadata_key}'" if c.metadata_key and c.metadata_key != c.name else "") \
                + (" VIRTUAL" if c.virtual else "")
        key = f"PRI({', '.join(table.primary_key)})" if c.name in table.primary_key else ""
        watermark = _quoted(table.watermark.expression, table) if rowtime == c.name.lower() else ""
        rows.append([c.name, kind, "TRUE" if nullable else "FALSE", key, extras, watermark])
    return rows


def _quoted(expression: str, table) -> str:
    """Column names in backquotes, as Flink prints an expression (string literals untouched)."""
    import re

    names = {c.name.lower() for c in table.columns}
    pieces = re.split(r"('(?:[^']|'')*'|`[^`]*`)", expression)
    return "".join(p if i % 2 else re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\b",
                                          lambda m: f"`{m.group(0)}`" if m.group(0).lower() in names else m.group(0), p)
                   for i, p in enumerate(pieces))


def _flink_type(text: str) -> str:
    """The type as Flink prints it (STRING, DECIMAL(10, 2)), without its nullability."""
    from job.sql.types import logical_type

    try:
        return str(logical_type(text)).replace(" NOT NULL", "")
    except PipelineError:
        return text.upper()


DESCRIBE_HEADER = ["name", "type", "null", "key", "extras", "watermark"]

