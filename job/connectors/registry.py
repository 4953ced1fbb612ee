"""Finding connectors and formats by identifier, and binding a table to its connector.

:func:`bind` is where a table's options are validated, and the only place: it returns a
:class:`~job.connectors.base.BoundTable` (typed options, resolved formats, changelog
mode) that everything downstream takes. The functions at the end ask every connector's
hooks on the run's behalf (endpoints, "unreachable" errors, session settings, source
identity), so that the run needs no knowledge of any connector.

Built-in connectors are the modules named in ``BUILTIN_CONNECTORS``; each defines a
module-level ``CONNECTOR``. Third-party connectors are found through the Python entry
point group ``streamsql.connectors`` (the entry point loads a ``Connector`` object), so a
package outside this repository adds a connector with one line in its setup.cfg.
"""
from __future__ import annotations

import importlib
from types import MappingProxyType
from importlib import metadata
from typing import Any, Iterable, Mapping, Optional

from job.connectors.base import COMMON_OPTIONS, BoundTable, Connector, Endpoint
from job.errors import PipelineError
from job.formats.base import Format
from job.options import APPEND, CHANGELOG, Option, convert, did_you_mean, is_secret_option, table_error
# Re-exported: callers that bound tables before job.options existed import them from here.
from job.options import describe, parse_duration_ms  # noqa: F401

ENTRY_POINT_GROUP = "streamsql.connectors"
FORMAT_ENTRY_POINT_GROUP = "streamsql.formats"

BUILTIN_CONNECTORS = (
    "job.connectors.kafka",
    "job.connectors.kafka.upsert",
    "job.connectors.filesystem",
    "job.connectors.datagen",
    "job.connectors.print",
    "job.connectors.blackhole",
    "job.connectors.postgres_cdc",
    "job.connectors.mysql_cdc",
    "job.connectors.jdbc",
    "job.connectors.iceberg",
    "job.connectors.delta",
)
BUILTIN_FORMATS = (
    "job.formats.json",
    "job.formats.csv",
    "job.formats.raw",
    "job.formats.parquet",
    "job.formats.debezium_json",
    "job.formats.avro",
    "job.formats.avro_confluent",
    "job.formats.debezium_avro_confluent",
)


def _load(modules: Iterable[str], attr: str, group: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in modules:
        obj = getattr(importlib.import_module(name), attr)
        found[obj.identifier if attr == "CONNECTOR" else obj.name] = obj
    for ep in metadata.entry_points(group=group):
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plugin must not hide the built-ins
            raise PipelineError(
                f"the {group} entry point '{ep.name}' ({ep.value}) failed to load: {exc}",
                hint="fix or uninstall the package that provides it",
            ) from exc
        found[obj.identifier if attr == "CONNECTOR" else obj.name] = obj
    return found


_connectors: dict[str, Connector] | None = None
_formats: dict[str, Format] | None = None


def connectors() -> dict[str, Connector]:
    """All connectors by identifier (built-ins, then entry points, which may override)."""
    global _connectors
    if _connectors is None:
        _connectors = _load(BUILTIN_CONNECTORS, "CONNECTOR", ENTRY_POINT_GROUP)
    return _connectors


def formats() -> dict[str, Format]:
    global _formats
    if _formats is None:
        _formats = _load(BUILTIN_FORMATS, "FORMAT", FORMAT_ENTRY_POINT_GROUP)
    return _formats


def connector_for(table) -> Connector:
    """The connector named by the table's 'connector' option."""
    name = table.options.get("connector")
    if not name:
        raise table_error(table, f"table '{table.name}' has no 'connector' option", option="connector",
                          hint="add 'connector' = '<one of: " + ", ".join(sorted(connectors())) + ">' to its WITH clause")
    found = connectors().get(name)
    if found is None:
        raise table_error(table, f"unknown connector '{name}' for table '{table.name}'.{did_you_mean(name, connectors())}",
                          option="connector", hint="available connectors: " + ", ".join(sorted(connectors())))
    return found


# Flink formats a migrating pipeline names that the job does not run yet: refused by name,
# rather than as an unknown format with a did-you-mean towards one that reads other bytes
# ('avro' reads no Confluent wire format).
NOT_SUPPORTED_FORMATS = {
    "protobuf": "Protocol Buffers records",
}


def format_for(name: str, *, table, option: str) -> Format:
    found = formats().get(name)
    if found is None and name in NOT_SUPPORTED_FORMATS:
        raise table_error(
            table, f"format '{name}' ({NOT_SUPPORTED_FORMATS[name]}) in option '{option}' of table '{table.name}' "
                   "is a Flink format this job does not support yet", option=option,
            hint="available formats: " + ", ".join(sorted(formats())))
    if found is None:
        raise table_error(
            table, f"unknown format '{name}' in option '{option}' of table '{table.name}'.{did_you_mean(name, formats())}",
            option=option, hint="available formats: " + ", ".join(sorted(formats())))
    return found


def formats_named(connector: Connector, table) -> dict[str, Format]:
    """The formats the table names in its connector's format options ('format',
    'key.format', 'value.format'), by option."""
    return {option: format_for(table.options[option], table=table, option=option)
            for option in connector.format_options if table.options.get(option)}


def declared_options(connector: Connector, table, named: Optional[Mapping[str, Format]] = None) -> list[Option]:
    """Every option the table may use: the connector's, the common ones, and the options
    of each format the table names, under that format's prefix (Flink's convention:
    'json.ignore-parse-errors', 'value.json.ignore-parse-errors')."""
    options = list(COMMON_OPTIONS) + list(connector.options)
    for fmt_option, fmt in (formats_named(connector, table) if named is None else named).items():
        prefix = fmt_option[: -len("format")]  # '' | 'key.' | 'value.'
        for opt in fmt.options:
            options.append(Option(prefix + fmt.name + "." + opt.name, opt.type, opt.required,
                                  opt.default, opt.description, opt.choices, opt.secret))
    return options


def changelog_mode(connector: Connector, table, named: Mapping[str, Format]) -> str:
    """append / upsert / changelog, from the connector and the value format.

    A changelog format (debezium-json) makes any connector's table a changelog (with
    ``table.exec.source.cdc-events-duplicate`` the planner normalizes it by its PRIMARY
    KEY, as Flink does).
    """
    fmt = named.get("value.format") or named.get("format")
    if fmt is not None and fmt.changelog:
        return CHANGELOG
    if connector.mode_for is not None:
        return connector.mode_for(table)
    return connector.source_mode or APPEND


def bind(table, role: Optional[str] = None) -> BoundTable:
    """Check the table's WITH options against its connector's declaration and bind it.

    ``role`` is ``'source'``, ``'sink'`` or None (declared but not used). Raises
    PipelineError on the first problem, naming the option and where it was written.
    A pipeline binds each table once, when its program is checked, and keeps it in its
    catalog (job.catalog.Catalog.bound_table); the hooks below take those.
    """
    connector = connector_for(table)

    def fail(message: str, option: str | None = None, hint: str | None = None):
        raise table_error(table, message, option=option, hint=hint)

    if role == "source" and not connector.can_source:
        fail(f"table '{table.name}' is read from, but connector '{connector.identifier}' can only be a sink")
    if role == "sink" and not connector.can_sink:
        fail(f"table '{table.name}' is written to, but connector '{connector.identifier}' can only be a source")
    if connector.requires_primary_key and not table.primary_key:
        fail(f"connector '{connector.identifier}' requires a PRIMARY KEY on table '{table.name}'",
             hint="declare one, e.g. PRIMARY KEY (id) NOT ENFORCED")

    named = formats_named(connector, table)
    declared = declared_options(connector, table, named)
    typed: dict[str, Any] = {}
    secrets = set()
    for key, raw in table.options.items():
        opt = next((o for o in declared if o.matches(key)), None)
        if opt is None:
            plain = [o.name for o in declared if not o.is_pattern]
            fail(f"unknown option '{key}' for connector '{connector.identifier}' (table '{table.name}').{did_you_mean(key, plain)}",
                 option=key, hint="supported options: " + ", ".join(sorted(o.name for o in declared)))
        typed[key] = convert(opt, key, raw, fail)
        if opt.secret or is_secret_option(key):
            secrets.add(key)
    for opt in declared:
        if opt.is_pattern:
            continue
        if opt.name not in typed:
            if opt.required:
                fail(f"missing required option '{opt.name}' for connector '{connector.identifier}' (table '{table.name}')",
                     hint=opt.description or None)
            if opt.default is not None:
                typed[opt.name] = opt.default
    if typed.get("on-error") == "dead-letter" and not typed.get("dead-letter.table"):
        fail("'on-error' = 'dead-letter' needs 'dead-letter.table' naming the table that receives bad records",
             option="on-error")
    if connector.check is not None:
        connector.check(table, typed, role)
    _check_formats(table, typed, named)
    return BoundTable(table, connector, MappingProxyType(typed), MappingProxyType(named),
                      changelog_mode(connector, table, named), role, frozenset(secrets))


def _check_formats(table, typed: Mapping[str, Any], named: Mapping[str, Format]) -> None:
    """Let each format that checks its columns (avro) refuse what it cannot hold, naming
    the format option. It sees every physical column: a key or value format may hold any."""
    from job.formats.base import format_options
    from job.sql.types import logical_type

    for option, fmt in named.items():
        if fmt.check is None:
            continue
        prefix = option[: -len("format")] + fmt.name + "."
        keys = {k.lower() for k in table.primary_key}
        fields = [(c.name, logical_type(c.flink_type).nullable_as(c.nullable and c.name.lower() not in keys))
                  for c in table.physical_columns]
        try:
            fmt.check(fields, format_options(typed, prefix))
        except PipelineError as exc:
            # A format that names its own option (avro-confluent) is pointed at that option.
            at = prefix + exc.option if exc.option else option
            raise table_error(table, f"format '{fmt.name}' of table '{table.name}': {exc.message}", option=at) from None


def _bound(table) -> BoundTable:
    """A hook's argument as a bound table (a table not bound yet, e.g. a test's, is bound here)."""
    return table if isinstance(table, BoundTable) else bind(table)


def validate_options(table, role: Optional[str]) -> tuple[Connector, dict[str, Any]]:
    """(connector, typed options) of :func:`bind`, for callers that need only those."""
    bound = bind(table, role)
    return bound.connector, dict(bound.options)


# --------------------------------------------------------------------------- hooks

def endpoints(tables: Iterable) -> list[tuple[BoundTable, Endpoint]]:
    """The network endpoints of these tables, as their connectors declare them."""
    out = []
    for table in tables:
        bound = _bound(table)
        if bound.connector.endpoints is not None:
            out += [(bound, e) for e in bound.connector.endpoints(bound)]
    return out


def waiting_tables(tables: Iterable) -> int:
    """How many of a query's tables hold its micro-batches back until enough of their
    records have come, as their connectors declare (at least 1): they share that minimum."""
    bound = [table if isinstance(table, BoundTable) else bind(table, "source") for table in tables]
    return max(1, sum(1 for b in bound if b.connector.waits_for_records is not None and b.connector.waits_for_records(b)))


def is_unreachable(text: str) -> bool:
    """Does a connector recognise this failure text as "the system cannot be reached"?"""
    return any(c.is_unreachable(text) for c in connectors().values() if c.is_unreachable is not None)


def session_conf(tables: Iterable, conf: Mapping[str, str]) -> dict[str, str]:
    """The Spark settings the connectors of a pipeline need (static: before the session)."""
    bound = [_bound(t) for t in tables]
    out: dict[str, str] = {}
    for connector in connectors().values():
        if connector.session_conf is not None:
            out.update(connector.session_conf([b for b in bound if b.connector is connector], conf))
    return out


def prepare_session(spark, conf: Mapping[str, str], verbose: bool = False) -> None:
    for connector in connectors().values():
        if connector.prepare_session is not None:
            connector.prepare_session(spark, conf, verbose)


def start_services(spark, conf: Mapping[str, str], err=None) -> None:
    for connector in connectors().values():
        if connector.start_services is not None:
            connector.start_services(spark, conf, err)


def source_identity(table) -> dict[str, Any]:
    """What a source table's read position refers to (see Connector.source_identity)."""
    bound = _bound(table)
    identity = {"connector": bound.connector.identifier}
    if bound.connector.source_identity is not None:
        identity.update(bound.connector.source_identity(bound))
    return identity
