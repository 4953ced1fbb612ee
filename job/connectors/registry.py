"""Finding connectors and formats by identifier, and validating a table's options.

Built-in connectors are the modules named in ``BUILTIN_CONNECTORS``; each defines a
module-level ``CONNECTOR``. Third-party connectors are found through the Python entry
point group ``streamsql.connectors`` (the entry point loads a ``Connector`` object), so a
package outside this repository adds a connector with one line in its setup.cfg.
"""
from __future__ import annotations

import difflib
import importlib
import re
from importlib import metadata
from typing import Any, Iterable, Mapping

from job.connectors.base import COMMON_OPTIONS, Connector, Option
from job.errors import PipelineError
from job.formats.base import Format

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
    "job.connectors.jdbc",
)
BUILTIN_FORMATS = (
    "job.formats.json",
    "job.formats.csv",
    "job.formats.raw",
    "job.formats.parquet",
    "job.formats.debezium_json",
)

# Option names that hold secrets even when a connector forgot to declare them so.
_SECRET_NAME = re.compile(r"(password|passwd|secret|token|sasl\.jaas\.config|credential|(^|\.)key$|\.key\.)", re.I)


def is_secret_option(key: str) -> bool:
    """True for options whose values must never be shown (masked as ``****``)."""
    return bool(_SECRET_NAME.search(key)) and not key.endswith((".format", ".fields"))


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


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


def connector_for(table) -> Connector:
    """The connector named by the table's 'connector' option."""
    name = table.options.get("connector")
    origin = table.option_origins.get("connector") or (table.source.origin if table.source else None)
    statement = table.source.text if table.source else None
    if not name:
        raise PipelineError(
            f"table '{table.name}' has no 'connector' option",
            origin=origin, statement=statement, option="connector",
            hint="add 'connector' = '<one of: " + ", ".join(sorted(connectors())) + ">' to its WITH clause",
        )
    found = connectors().get(name)
    if found is None:
        raise PipelineError(
            f"unknown connector '{name}' for table '{table.name}'.{did_you_mean(name, connectors())}",
            origin=origin, statement=statement, option="connector",
            hint="available connectors: " + ", ".join(sorted(connectors())),
        )
    return found


def format_for(name: str, *, table, option: str) -> Format:
    found = formats().get(name)
    if found is None:
        raise PipelineError(
            f"unknown format '{name}' in option '{option}' of table '{table.name}'.{did_you_mean(name, formats())}",
            origin=table.option_origins.get(option), statement=table.source.text if table.source else None,
            option=option, hint="available formats: " + ", ".join(sorted(formats())),
        )
    return found


def declared_options(connector: Connector, table) -> list[Option]:
    """Every option the table may use: the connector's, the common ones, and the options
    of each format the table names, under that format's prefix (Flink's convention:
    'json.ignore-parse-errors', 'value.json.ignore-parse-errors')."""
    options = list(COMMON_OPTIONS) + list(connector.options)
    for fmt_option in connector.format_options:
        fmt_name = table.options.get(fmt_option)
        if not fmt_name:
            continue
        fmt = format_for(fmt_name, table=table, option=fmt_option)
        prefix = fmt_option[: -len("format")]  # '' | 'key.' | 'value.'
        for opt in fmt.options:
            options.append(Option(prefix + fmt.name + "." + opt.name, opt.type, opt.required,
                                  opt.default, opt.description, opt.choices, opt.secret))
    return options


def validate_options(table, role: str) -> tuple[Connector, dict[str, Any]]:
    """Check the table's WITH options against its connector's declaration.

    ``role`` is ``'source'`` or ``'sink'``. Returns the connector and the typed options
    with defaults filled in; raises PipelineError on the first problem, naming the
    option and where it was written.
    """
    connector = connector_for(table)
    statement = table.source.text if table.source else None
    table_origin = table.source.origin if table.source else None

    def fail(message: str, option: str | None = None, hint: str | None = None):
        origin = table.option_origins.get(option, table_origin) if option else table_origin
        raise PipelineError(message, origin=origin, statement=statement, option=option, hint=hint)

    if role == "source" and not connector.can_source:
        fail(f"table '{table.name}' is read from, but connector '{connector.identifier}' can only be a sink")
    if role == "sink" and not connector.can_sink:
        fail(f"table '{table.name}' is written to, but connector '{connector.identifier}' can only be a source")
    if connector.requires_primary_key and not table.primary_key:
        fail(f"connector '{connector.identifier}' requires a PRIMARY KEY on table '{table.name}'",
             hint="declare one, e.g. PRIMARY KEY (id) NOT ENFORCED")

    declared = declared_options(connector, table)
    typed: dict[str, Any] = {}
    for key, raw in table.options.items():
        opt = next((o for o in declared if o.matches(key)), None)
        if opt is None:
            plain = [o.name for o in declared if not o.is_pattern]
            fail(f"unknown option '{key}' for connector '{connector.identifier}' (table '{table.name}').{did_you_mean(key, plain)}",
                 option=key, hint="supported options: " + ", ".join(sorted(o.name for o in declared)))
        typed[key] = convert(opt, key, raw, fail)
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
    return connector, typed


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|milli|millis|milliseconds?|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?)?\s*$", re.I)
_DURATION_MS = {"ms": 1, "mil": 1, "s": 1000, "se": 1000, "m": 60_000, "mi": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str) -> int | None:
    """'5 s', '10s', '1 min', '500 ms', '2h' → milliseconds (Flink's duration syntax)."""
    m = _DURATION.match(text)
    if not m:
        return None
    unit = (m.group(2) or "ms").lower()
    factor = _DURATION_MS.get(unit[:3]) or _DURATION_MS.get(unit[:2]) or _DURATION_MS[unit[0]]
    return int(float(m.group(1)) * factor)


def convert(opt: Option, key: str, raw: str, fail) -> Any:
    """A raw option string → the declared type, or a clear error."""
    kind = opt.type
    if kind == "string":
        return raw
    if kind == "int":
        try:
            return int(raw.strip())
        except ValueError:
            fail(f"option '{key}' must be a whole number, got '{raw}'", option=key)
    if kind == "double":
        try:
            return float(raw.strip())
        except ValueError:
            fail(f"option '{key}' must be a number, got '{raw}'", option=key)
    if kind == "bool":
        low = raw.strip().lower()
        if low in ("true", "false"):
            return low == "true"
        fail(f"option '{key}' must be 'true' or 'false', got '{raw}'", option=key)
    if kind == "duration":
        ms = parse_duration_ms(raw)
        if ms is None:
            fail(f"option '{key}' must be a duration such as '10 s' or '500 ms', got '{raw}'", option=key)
        return ms
    if kind == "enum":
        if raw in opt.choices:
            return raw
        fail(f"option '{key}' must be one of {', '.join(repr(c) for c in opt.choices)}, got '{raw}'.{did_you_mean(raw, opt.choices)}",
             option=key)
    raise AssertionError(f"option type {kind!r} of {key!r} is not known")


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options safe to print: secrets masked."""
    return {k: ("****" if is_secret_option(k) else v) for k, v in options.items()}
