#!/usr/bin/env python3
"""Generate the connector and format tables of docs/connectors.md, and docs/functions.md,
from their declarations.

Every connector (``job/connectors/*.py``) and format (``job/formats/*.py``) declares its
options once (:class:`job.connectors.base.Option`); validation, did-you-mean errors and
these tables all come from that declaration. This script writes the tables into
docs/connectors.md between ``<!-- connectors:start -->`` and ``<!-- connectors:end -->``;
the prose around the markers is written by hand and left as it is.

docs/functions.md is written whole from the function library's registry
(``job/sql/flink/functions``): every Flink function and operator, supported or refused by
name, category by category as Flink's documentation lists them.

    .venv/bin/python scripts/gen_docs.py           # rewrite docs/connectors.md's tables and docs/functions.md
    .venv/bin/python scripts/gen_docs.py --check   # exit 1 if either is stale

Only built-in connectors and formats are listed (the modules named in
``job.connectors.registry``), so the output does not depend on which plugins happen to
be installed. Nothing here needs Spark.
"""
from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from pathlib import Path
from typing import Iterable, Sequence

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: make 'job' importable
    sys.path.insert(0, str(ROOT))

from job.connectors import registry  # noqa: E402
from job.connectors.base import APPEND, CHANGELOG, COMMON_OPTIONS, UPSERT, Connector, Option  # noqa: E402
from job.formats.base import Format  # noqa: E402

START = "<!-- connectors:start -->"
END = "<!-- connectors:end -->"
CONNECTORS_DOC = ROOT / "docs" / "connectors.md"
REGENERATE = ".venv/bin/python scripts/gen_docs.py"

_MODE_TEXT = {
    APPEND: "append (+I)",
    UPSERT: "upsert (by PRIMARY KEY)",
    CHANGELOG: "changelog (+I/-U/+U/-D)",
}


# --------------------------------------------------------------------------- declarations

def builtin_connectors() -> list[Connector]:
    """The built-in connectors, in the registry's order."""
    return [importlib.import_module(m).CONNECTOR for m in registry.BUILTIN_CONNECTORS]


def builtin_formats() -> list[Format]:
    return [importlib.import_module(m).FORMAT for m in registry.BUILTIN_FORMATS]


# --------------------------------------------------------------------------- markdown

def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: str) -> str:
    return f"`{text}`" if text != "" else "`''`"


def default_text(opt: Option) -> str:
    if opt.default is None:
        return ""
    if isinstance(opt.default, bool):
        return code("true" if opt.default else "false")
    if opt.type == "duration" and isinstance(opt.default, int):  # typed defaults are milliseconds
        ms = opt.default
        return code(f"{ms // 1000} s" if ms % 1000 == 0 else f"{ms} ms")
    return code(str(opt.default))


def type_text(opt: Option) -> str:
    if opt.type == "enum":
        return "enum: " + ", ".join(code(c) for c in opt.choices)
    return opt.type


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def option_table(options: Sequence[Option], prefix: str = "") -> list[str]:
    return table(
        ("Option", "Type", "Required", "Default", "Description"),
        ((code(prefix + o.name), type_text(o), "yes" if o.required else "", default_text(o),
          o.description + (" Secret: masked in logs and plans." if o.secret else ""))
         for o in options),
    )


def source_text(c: Connector, none: str = "—") -> str:
    if not c.can_source:
        return none
    if c.mode_for is not None:  # the mode depends on the table: ask with and without a key
        from types import SimpleNamespace

        unkeyed, keyed = (c.mode_for(SimpleNamespace(primary_key=pk)) for pk in ((), ("k",)))
        if unkeyed != keyed:
            return (f"{_MODE_TEXT.get(unkeyed, unkeyed)}; "
                    f"{_MODE_TEXT.get(keyed, keyed)} when declared")
    return _MODE_TEXT.get(c.source_mode, c.source_mode)


def sink_text(c: Connector, none: str = "—") -> str:
    if not c.can_sink:
        return none
    if c.accepts_retractions:
        return "any; receives every change (+I/-U/+U/-D)"
    modes = list(dict.fromkeys(c.sink_modes))
    return ", ".join(_MODE_TEXT.get(m, m).split(" (")[0] for m in modes)


def format_roles(f: Format) -> str:
    roles = []
    if f.decode is not None or f.file_format:
        roles.append("read")
    # Sinks write rows; a changelog format's envelope is written only by a format that
    # writes changes (debezium-avro-confluent), every other one's is only ever read.
    if (f.encode is not None or f.file_format) and (not f.changelog or f.writes_changes):
        roles.append("write")
    return ", ".join(roles)


def format_kind(f: Format) -> str:
    if f.changelog:
        return "changelog"
    if f.file_format and f.decode is None:
        return f"files ({f.file_format}; filesystem only)"
    if f.single_column:
        return "one column"
    return "row"


def render(connectors: Sequence[Connector], formats: Sequence[Format]) -> str:
    """The Markdown that goes between the markers (without them)."""
    out = [f"<!-- Generated by scripts/gen_docs.py from the connector and format declarations in job/. "
           f"Do not edit by hand: change the declarations, then run `{REGENERATE}`. -->", ""]

    out += ["### Connectors", ""]
    out += table(("Connector", "Source", "Sink", "Description"),
                 ((code(c.identifier), source_text(c), sink_text(c),
                   c.description + (" Needs a PRIMARY KEY." if c.requires_primary_key else ""))
                  for c in connectors))
    out += ["",
            "A table whose format is a changelog format (`debezium-json`, `debezium-avro-confluent`) is read as a "
            "changelog (+I/-U/+U/-D) whatever its connector and whether or not it declares a PRIMARY KEY; "
            "`SET 'table.exec.source.cdc-events-duplicate' = 'true'` normalizes a keyed one by its key. A `kafka` "
            "table in `debezium-avro-confluent` also takes an updating query's changes, as Flink writes them.",
            "",
            "Options every table accepts, whatever its connector:", ""]
    out += option_table(COMMON_OPTIONS)

    for c in connectors:
        out += ["", f"#### {code(c.identifier)}", "", c.description]
        facts = [f"Source: {source_text(c, 'no')}.", f"Sink: {sink_text(c, 'no')}."]
        if c.requires_primary_key:
            facts.append("Needs a PRIMARY KEY.")
        if c.format_options:
            facts.append("Formats are named by " + ", ".join(code(f) for f in c.format_options)
                         + "; a format's options (under Formats) take that option's prefix: "
                         + ", ".join(code(f[: -len("format")] + "json.ignore-parse-errors")
                                     for f in c.format_options) + ".")
        out += ["", " ".join(facts)]
        if c.options:
            out += [""] + option_table(c.options)
        else:
            out += ["", "No options of its own."]

    out += ["", "### Formats", ""]
    out += table(("Format", "Kind", "Use", "Description"),
                 ((code(f.name), format_kind(f), format_roles(f), f.description) for f in formats))
    out += ["",
            "A format's options are written with its name as a prefix: `'json.ignore-parse-errors' = 'true'`, "
            "or `'key.json.…'` / `'value.json.…'` when a Kafka table names the format in `key.format` / "
            "`value.format`."]
    for f in formats:
        out += ["", f"#### {code(f.name)}", "", f.description, ""]
        out += option_table(f.options, prefix=f.name + ".") if f.options else ["No options."]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- functions

FUNCTIONS_DOC = ROOT / "docs" / "functions.md"
CATEGORY_TITLES = {
    "comparison": "Comparison functions", "logical": "Logical functions", "arithmetic": "Arithmetic functions",
    "string": "String functions", "temporal": "Temporal functions", "conditional": "Conditional functions",
    "conversion": "Type conversion functions", "collection": "Collection functions", "json": "JSON functions",
    "value": "Value construction and value access functions", "hash": "Hash functions",
    "grouping": "Grouping functions", "aggregate": "Aggregate functions", "window": "Window functions",
    "table": "Table functions", "catalog": "Catalog functions", "other": "Other functions",
}


def _status(fn) -> str:
    from job.sql.flink.functions import AGGREGATE, OPERATOR, SCALAR

    if not fn.supported:
        return "refused: " + fn.refusal.split(" is not supported yet", 1)[-1].strip(" ()") if "(" in fn.refusal \
            else "refused"
    if fn.kind in (SCALAR, OPERATOR):
        return "supported"
    if fn.kind == AGGREGATE:
        return "supported (aggregate)"
    return "supported " + fn.notes if fn.notes else "supported"


def render_functions() -> str:
    """docs/functions.md from the registry."""
    from job.sql.flink import functions as lib

    lib._load()
    seen, by_fn = [], {}
    for name, fn in lib.REGISTRY.items():
        if id(fn) not in by_fn:
            by_fn[id(fn)] = (fn, [])
            seen.append(fn)
        if name != fn.name:
            by_fn[id(fn)][1].append(name)
    entries = [(fn, sorted(by_fn[id(fn)][1])) for fn in seen] + [(op, []) for op in lib.OPERATORS]
    out = ["# Flink SQL functions", "",
           f"<!-- Generated by scripts/gen_docs.py from the function library (job/sql/flink/functions). Do not "
           f"edit by hand: change the library, then run `{REGENERATE}`. -->", "",
           "Every built-in function and operator of Flink 2.3, category by category as Flink's documentation "
           "lists them. A *supported* function is translated with Flink's semantics and checked against Flink "
           "(tests/flink/cases); a *refused* one stops the pipeline before anything runs, naming the function "
           "and its line and column. A function Spark has under the same name is used only where it computes "
           "Flink's answer. Your own Flink scalar functions (Java classes, `CREATE FUNCTION`) run too: see "
           "[User-defined functions](sql.md#user-defined-functions).", "", "## Summary", ""]
    counts = []
    for category in CATEGORY_TITLES:
        these = [fn for fn, _ in entries if fn.category == category]
        if these:
            counts.append((CATEGORY_TITLES[category], str(sum(fn.supported for fn in these)),
                           str(sum(not fn.supported for fn in these))))
    out += table(("Category", "Supported", "Refused"), counts)
    for category, title in CATEGORY_TITLES.items():
        these = [(fn, aliases) for fn, aliases in entries if fn.category == category]
        if not these:
            continue
        out += ["", f"## {title}", ""]
        rows = []
        for fn, aliases in sorted(these, key=lambda e: (e[0].kind == "operator", e[0].name) if category not in
                                  ("comparison", "logical", "arithmetic") else (0, "")):
            name = fn.signature if fn.kind == "operator" else fn.name + (
                " (" + ", ".join(aliases) + ")" if aliases else "")
            signature = "" if fn.kind == "operator" else fn.signature
            rows.append((code(name), code(signature) if signature else "", _status(fn), fn.description))
        out += table(("Function", "Signature", "Status", "Description"), rows)
    out += ["", "## Known differences", ""]
    out += [f"* {text}" for text in lib.DIFFERENCES]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- docs/connectors.md

class MarkersMissing(Exception):
    pass


def replace_section(text: str, body: str) -> str:
    start = text.find(START)
    end = text.find(END)
    if start < 0 or end < 0 or end < start:
        raise MarkersMissing(f"the connectors reference needs the markers {START} and {END} (in that order)")
    return text[: start + len(START)] + "\n" + body + text[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the connector and format tables of docs/connectors.md, "
                                                 "and docs/functions.md.")
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated part is stale; write nothing")
    parser.add_argument("--connectors", "--readme", type=Path, default=CONNECTORS_DOC,
                        help="the file whose connector tables to update (default: docs/connectors.md)")
    parser.add_argument("--functions", type=Path, default=FUNCTIONS_DOC,
                        help="the function list to write (default: docs/functions.md)")
    args = parser.parse_args(argv)
    status = write_functions(args.functions, args.check)

    target = args.connectors
    current = target.read_text(encoding="utf-8") if target.exists() else ""
    try:
        wanted = replace_section(current, render(builtin_connectors(), builtin_formats()))
    except MarkersMissing as exc:
        print(f"gen_docs: {target}: {exc}", file=sys.stderr)
        return 1
    if args.check:
        if wanted == current:
            return status
        diff = difflib.unified_diff(current.splitlines(), wanted.splitlines(), f"{target.name} (now)",
                                    f"{target.name} (generated)", lineterm="", n=1)
        print("\n".join(list(diff)[:60]), file=sys.stderr)
        print(f"gen_docs: {target} is stale: the connector tables differ from the declarations in job/. "
              f"Run: {REGENERATE}", file=sys.stderr)
        return 1
    if wanted != current:
        target.write_text(wanted, encoding="utf-8")
        print(f"gen_docs: updated {target}")
    else:
        print(f"gen_docs: {target} is up to date")
    return status


def write_functions(path: Path, check: bool) -> int:
    """Write (or with ``check``, compare) the function list; 1 if it is stale."""
    wanted = render_functions()
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if wanted == current:
        if not check:
            print(f"gen_docs: {path} is up to date")
        return 0
    if check:
        diff = difflib.unified_diff(current.splitlines(), wanted.splitlines(), f"{path.name} (now)",
                                    f"{path.name} (generated)", lineterm="", n=1)
        print("\n".join(list(diff)[:60]), file=sys.stderr)
        print(f"gen_docs: {path} is stale: the function list differs from the library in job/sql/flink/functions. "
              f"Run: {REGENERATE}", file=sys.stderr)
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(wanted, encoding="utf-8")
    print(f"gen_docs: updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
