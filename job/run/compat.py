"""Is a checkpoint still valid for the query that is about to use it?

Spark restarts a streaming query from whatever checkpoint it is given. When the query's
SQL changed in the meantime, Spark's own checks catch only some incompatibilities (a
state schema that no longer fits) and miss others: an aggregation whose filter changed
keeps the counts of rows the new filter would drop, a join reading another topic at the
same source position continues from the old topic's offsets. The results are then
silently wrong.

So each query's checkpoint directory gets a small fingerprint file on first start,
``streamsql-plan.json``, read off the query's plan (job.plan.nodes): the sources it reads
(in Spark's order, which is how its offset log is keyed) and, when a step of the plan keeps
state, the shape of that state: every step (its kind, what it does, its keys, whether and
in which layout it keeps state), the normalised SQL (with the views it reads: a projection
feeding an aggregation changes its state without changing a step) and the columns of its
tables. On restart:

* same fingerprint: fine;
* a stateless query (no step keeps state) whose projection or filter changed: fine — it
  has no state, new rows simply follow the new SQL; the fingerprint is updated;
* a changed stateful shape, or changed sources: a :class:`PipelineError` (exit 2) that
  says so and how to start fresh, before anything runs.

Fingerprints written before the plan was typed (no ``format``) are compared with what
that version computed for the same plan (:func:`legacy_fingerprint`), so an unchanged query
keeps its checkpoint and a changed one is refused as it was; the file is then rewritten in
the current format.

Only local checkpoint paths are checked (``file:`` or no scheme); others are left to Spark.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Optional

from job.errors import PipelineError

from job.plan.nodes import ENGINE_STATE_VERSION

FINGERPRINT_FILE = "streamsql-plan.json"
# The changelog engine's state layout (job.plan.nodes). A checkpoint of another layout is refused.
VERSION = ENGINE_STATE_VERSION
# The fingerprint's own format. 2: read off the typed plan (1, no 'format' key: from the
# SQL and the wording of --explain's steps).
FORMAT = 2


def query_tree(statement):
    """The query of an INSERT or CREATE VIEW as the program parsed it (once, on the
    statement); one built without it (a test's) is parsed here."""
    parsed = getattr(statement, "parsed", None)
    if parsed is not None:
        return parsed.tree
    from job.sql.flink.query import parse_query

    return parse_query(statement.query, statement.query_origin, statement.query).tree


def normalized_sql(tree) -> str:
    """The query as the Flink dialect prints it back (case, spacing and comments do not matter)."""
    from job.sql.flink.dialect import DIALECT

    return tree.sql(dialect=DIALECT, comments=False)


def is_stateful_sql(tree) -> bool:
    """Format 1's second test of statefulness: the query aggregates, joins, deduplicates or
    uses windows."""
    from sqlglot import exp

    kinds = (exp.Group, exp.AggFunc, exp.Join, exp.Distinct, exp.Window)
    return any(True for _ in tree.find_all(*kinds))


def referenced_views(program, tree, seen: Optional[set] = None) -> dict:
    """The views a query reads (through other views), name → its parsed query."""
    from sqlglot import exp

    from job.catalog import short_name

    seen = set() if seen is None else seen
    out: dict = {}
    for node in tree.find_all(exp.Table):
        name = short_name(node.name).lower()
        view = program.catalog.view(name)
        if view is None or name in seen:
            continue
        seen.add(name)
        out[name] = query_tree(view)
        out.update(referenced_views(program, out[name], seen))
    return out


def source_identity(bound) -> dict:
    """What a source's offsets refer to (``bound``: the catalog's bound table): the connector
    and what its connector says they refer to (a topic, a directory…)."""
    from job.connectors.registry import source_identity as identity

    return identity(bound)


def fingerprint(program, plan) -> dict:
    """What the query's checkpoint must match (see the module docstring), from its plan."""
    return _fingerprint(program, plan, plan.stateful, lambda: {
        "operators": [{"kind": n.kind, "step": n.text, "keys": list(n.keys), "state_version": n.state_version}
                      for n in plan.nodes]}, FORMAT)


def legacy_fingerprint(program, plan) -> dict:
    """The fingerprint the job wrote before its plan was typed (format 1), for the same plan.

    That version called a query stateful when its result was a changelog or it normalized
    or materialized by key (the steps it marked '[stateful'), or when its SQL had an
    aggregation, join, DISTINCT or window; it kept the engine's name and each step's
    wording without bracketed remarks (what ``--explain`` printed, so its nodes' ``str``)."""
    from job.plan.nodes import PlanNode

    engine = "changelog" if not plan.append_only or any(n.kind in ("normalize", "materialize")
                                                         for n in plan.nodes) else "native"
    insert = program.inserts[plan.insert_index]
    tree = query_tree(insert)
    stateful = engine == "changelog" or any(is_stateful_sql(t) for t in
                                            [tree, *referenced_views(program, tree).values()])
    # It listed the netting of a batch's changes after the sink's write.
    shown: list[PlanNode] = [n for n in plan.nodes if n.shown and n.kind != "net_changes"] + \
        [n for n in plan.nodes if n.shown and n.kind == "net_changes"]
    return _fingerprint(program, plan, stateful, lambda: {
        "engine": engine, "operators": [operator_shape(str(n)) for n in shown]}, None)


def _fingerprint(program, plan, stateful: bool, steps, format_) -> dict:
    from job.catalog import short_name

    insert = program.inserts[plan.insert_index]
    reads = sorted(program.reads.get(plan.insert_index, set()))
    tables = [program.catalog.table(n) for n in reads]
    out = {
        "version": VERSION,
        "query": plan.name,
        "sink": short_name(plan.sink_table),
        "sources": {short_name(t.name): source_identity(program.catalog.bound_table(t.name))
                    for t in tables if t is not None},
        "stateful": stateful,
    }
    if format_ is not None:
        out["format"] = format_
    if stateful:
        tree = query_tree(insert)
        views = referenced_views(program, tree)
        out["state"] = {
            "sql": normalized_sql(tree),
            "views": {name: normalized_sql(view) for name, view in views.items()},
            "columns": {short_name(t.name): [f"{c.name} {c.spark_type}" for c in t.columns]
                        for t in tables if t is not None},
            **steps(),
        }
    return out


def operator_shape(step: str) -> str:
    """Format 1's step: its wording without bracketed remarks ('[engine: join; stateful; …]'),
    innermost first (a remark may hold brackets of its own)."""
    while True:  # innermost brackets first: the commentary may hold brackets of its own
        shorter = re.sub(r"\s*\[[^\[\]]*\]", "", step)
        if shorter == step:
            return step.strip()
        step = shorter


def local_dir(checkpoint: str) -> Optional[Path]:
    if "://" in checkpoint and not checkpoint.startswith("file:"):
        return None
    return Path(checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint)


def has_progress(directory: Path) -> bool:
    """True once Spark wrote an offset log entry: the checkpoint holds a position (and state)."""
    offsets = directory / "offsets"
    return offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())


def differences(old: dict, new: dict) -> list[str]:
    """What changed, in words, in the parts that make a checkpoint unusable."""
    out = []
    if (old.get("stateful") or new.get("stateful")) and old.get("version", 1) != new.get("version", 1):
        out.append(f"it keeps its state in the layout of engine version {old.get('version', 1)}, and this version "
                   f"of the job keeps it in the layout of version {new.get('version', 1)}")
        return out
    if old.get("sources") != new.get("sources"):
        out.append(f"the sources changed (was {describe_sources(old)}, now {describe_sources(new)})")
    if old.get("stateful") or new.get("stateful"):
        before, after = old.get("state") or {}, new.get("state") or {}
        labels = {"engine": "the engine", "sql": "the query's SQL", "views": "a view it reads",
                  "columns": "the columns of a table it reads", "operators": "the stateful operators"}
        changed = [label for key, label in labels.items() if before.get(key) != after.get(key)]
        if changed:
            out.append("the stateful query changed: " + ", ".join(changed))
    return out


def describe_sources(fp: dict) -> str:
    items = []
    for name, ident in sorted((fp.get("sources") or {}).items()):
        where = ident.get("topic") or ident.get("topic-pattern") or ident.get("path") or ""
        items.append(f"{name} ({ident.get('connector')}{': ' + where if where else ''})")
    return ", ".join(items) or "none"


# What Spark's atomic writes leave behind when the process dies before their rename:
# '.0.<uuid>.tmp' and its checksum '..0.<uuid>.tmp.crc'.
INTERRUPTED_WRITE = re.compile(r"^\.\.?\d+\.[0-9a-fA-F-]{36}\.tmp(\.crc)?$")


def remove_interrupted_writes(directory: Path) -> list[Path]:
    """Delete the temp files of offset/commit log writes a crash interrupted.

    They are never part of a checkpoint (the entry only exists once renamed into place,
    and Spark rewrites it on restart), but Spark's check that a query's first start finds
    an empty ``offsets/`` counts them: a job SIGKILLed while writing its very first offset
    entry would otherwise fail on every restart with STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY.
    """
    removed = []
    for log in ("offsets", "commits"):
        folder = directory / log
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if INTERRUPTED_WRITE.match(path.name):
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def check_checkpoints(program, plans, *, write: bool = True) -> None:
    """Compare each query's fingerprint with the one in its checkpoint (see the module
    docstring); with ``write``, record the new one and clear what interrupted writes
    left behind (``--dry-run`` only checks)."""
    for plan in plans:
        directory = local_dir(plan.checkpoint)
        if directory is None:
            continue
        if write:
            for checkpoint in [plan.checkpoint] + [cp for _name, _writer, cp in plan.dead_letters]:
                folder = local_dir(checkpoint)
                if folder is not None:
                    remove_interrupted_writes(folder)
        new = fingerprint(program, plan)
        path = directory / FINGERPRINT_FILE
        old = None
        if path.is_file():
            try:
                old = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                old = None  # unreadable (a crash while writing it): rewritten below
        if old is not None and has_progress(directory):
            expected = new if old.get("format") == FORMAT else legacy_fingerprint(program, plan)
            changed = differences(old, expected)
            if changed:
                insert = program.inserts[plan.insert_index]
                raise PipelineError(
                    f"the checkpoint {directory} of query '{plan.name}' (INSERT INTO {plan.sink_table}) was written "
                    f"by an incompatible version of this query: {'; '.join(changed)}. Restarting on it would give "
                    "wrong results, so the pipeline does not start",
                    origin=insert.source.origin if insert.source else None,
                    statement=insert.source.text if insert.source else None,
                    hint=f"to start this query fresh, delete {directory} (or run with a new --checkpoint-dir for "
                         "the whole pipeline); it then reads its sources again from 'scan.startup.mode', and its "
                         "sink receives the results again. To keep the old results, undo the change.")
        if write and old != new:
            write_fingerprint(path, new)


def write_fingerprint(path: Path, fp: dict) -> None:
    """Atomically: a crash while writing leaves the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(fp, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
