"""Statements → a Program: the catalog, the Spark conf and the INSERTs, validated.

Everything here runs before any data is read: it is what ``--dry-run`` checks.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from job.catalog import Catalog, short_name
from job.connectors.registry import parse_duration_ms
from job.errors import PipelineError
from job.pipeline.load import LoadedPipeline
from job.plan.namespace import apply as apply_namespace
from job.sql.parse import parse_statement
from job.sql.statements import (AddJar, CreateCatalog, CreateDatabase, CreateFunction, CreateTable, CreateView, Drop,
                                 Explain, Insert, SetOption, Show, UseNamespace)


@dataclass(frozen=True)
class Program:
    """A checked pipeline: what ``--dry-run`` validated, never changed afterwards."""

    name: str
    catalog: Catalog
    conf: Mapping[str, str]
    inserts: tuple[Insert, ...]
    secrets: frozenset = frozenset()
    checkpoint_dir: str | None = None
    reads: Mapping[int, frozenset[str]] = field(default_factory=dict)   # insert index → tables it reads
    # EXPLAIN INSERT …: the indexes of INSERTs whose plan is printed, never run (as in Flink).
    explained: frozenset = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "conf", MappingProxyType(dict(self.conf)))
        object.__setattr__(self, "inserts", tuple(self.inserts))
        object.__setattr__(self, "reads", MappingProxyType({i: frozenset(r) for i, r in self.reads.items()}))


def build_program(loaded: LoadedPipeline) -> Program:
    catalog, conf, inserts = declare(loaded.statements, loaded.spark_conf)
    explained = frozenset(i for i, insert in enumerate(inserts) if insert.explain_only)
    if not inserts and catalog.printed:  # only SHOW / DESCRIBE: printed, nothing to run
        return Program(loaded.name, catalog, conf, (), frozenset(loaded.secrets), loaded.checkpoint_dir)
    if not inserts:
        raise PipelineError("the pipeline has no INSERT INTO statement, so there is nothing to run",
                            origin=loaded.statements[-1].origin if loaded.statements else None,
                            hint="add INSERT INTO <sink> SELECT … FROM <source>")
    reads = {i: tables_read(catalog, insert.parsed) for i, insert in enumerate(inserts)}
    program = Program(loaded.name, catalog, conf, inserts, frozenset(loaded.secrets), loaded.checkpoint_dir, reads,
                      explained)
    validate(program)
    return program


def declare(statements, conf=None) -> tuple[Catalog, dict[str, str], list[Insert]]:
    """The tables, views and functions the statements declare, the settings (``conf`` and the SET
    statements, later ones winning) and the INSERTs, in order."""
    catalog = Catalog()
    conf = dict(conf or {})
    inserts: list[Insert] = []
    explains: list[Insert] = []   # after the INSERTs: an EXPLAIN never renames a query (its checkpoint)
    for st in statements:
        try:
            statement = parse_statement(st)
            if statement is None:  # statement-set markers
                continue
            if isinstance(statement, CreateTable):
                if statement.like is not None:  # LIKE: merged with the base table declared before
                    statement = statement.like.merge(catalog.lookup(statement.like.table))
                catalog.add_table(statement)
            elif isinstance(statement, CreateView):
                _add_hinted(catalog, statement)
                catalog.add_view(statement)
            elif isinstance(statement, CreateFunction):
                catalog.add_function(statement)
            elif isinstance(statement, AddJar):
                catalog.jars.append(statement)
            elif isinstance(statement, SetOption):
                conf[statement.key] = statement.value
            elif isinstance(statement, Insert):
                _add_hinted(catalog, statement)
                inserts.append(statement)
            elif isinstance(statement, Explain):
                _add_hinted(catalog, statement.insert)
                explains.append(replace(statement.insert, explain_only=True))
            elif isinstance(statement, (CreateCatalog, CreateDatabase, UseNamespace, Drop, Show)):
                apply_namespace(catalog, statement, inserts)
        except PipelineError as err:
            raise err.located(st.origin, st.text)
    return catalog, conf, inserts + explains


def _add_hinted(catalog: Catalog, statement) -> None:
    """The tables of the statement's OPTIONS hints (job.sql.flink.hints), in the catalog."""
    for synthetic, written, hint in statement.parsed.table_hints:
        catalog.add_hinted(synthetic, written, hint, statement.source)
    if isinstance(statement, Insert) and statement.sink_hint:
        catalog.add_hinted(*statement.sink_hint[:1], statement.table, statement.sink_hint[1], statement.source)


def tables_read(catalog: Catalog, query, seen: frozenset = frozenset()) -> set[str]:
    """Names of the tables a query (a parsed :class:`~job.sql.flink.query.Query`) reads,
    through views."""
    out: set[str] = set()
    for name in query.tables:
        name = short_name(name).lower()
        if name in seen:
            continue
        view = catalog.view(name)
        if view is not None:
            out |= tables_read(catalog, view.parsed, seen | {name})
        elif catalog.table(name) is not None:
            out.add(name)
    return out


def validate(program: Program) -> None:
    """Every table's options for the role it plays; every INSERT's target."""
    catalog = program.catalog
    roles: dict[str, set[str]] = {}
    for i, insert in enumerate(program.inserts):
        located = dict(origin=insert.source.origin if insert.source else None,
                       statement=insert.source.text if insert.source else None)
        target = catalog.table(insert.sink_table)
        if target is None:
            hint = "INSERT INTO a view is not possible" if catalog.view(insert.table) else "define it with CREATE TABLE first"
            raise PipelineError(f"INSERT INTO '{insert.table}': no such table", hint=hint, **located)
        roles.setdefault(short_name(target.name).lower(), set()).add("sink")
        for name in program.reads.get(i, ()):
            roles.setdefault(name, set()).add("source")
    trigger_interval_ms(program.conf)
    bind_tables(catalog, roles)


def bind_tables(catalog: Catalog, roles: dict[str, set[str]]) -> None:
    """Bind every table to its connector, once per role it plays (``roles``: table key →
    'source'/'sink'). The catalog keeps them: nothing binds a table again."""
    for key, table in catalog.tables.items():
        for role in sorted(roles.get(key) or {None}, key=str):
            try:
                catalog.bound_table(key, role)
            except PipelineError as err:
                written, keys, source = catalog.hinted.get(key, (None, (), None))
                if err.option in keys:  # at the hint's option, in the statement that has the hint
                    err.message = f"in the OPTIONS hint on '{written}': {err.message.replace(key, written)}"
                    err.statement = source.text if source else None
                raise err.located(table.source.origin if table.source else None, table.source.text if table.source else None)


# SET keys that give the micro-batch interval (Flink's checkpoint interval is its batch cadence).
TRIGGER_KEYS = ("execution.checkpointing.interval", "streamsql.trigger.interval")


def trigger_interval_ms(conf) -> int:
    """The micro-batch interval SET by the pipeline (0: as fast as data comes)."""
    for key in TRIGGER_KEYS:
        value = conf.get(key)
        if value:
            ms = parse_duration_ms(str(value))
            if ms is None:
                raise PipelineError(f"SET '{key}' = '{value}' is not a duration", option=key,
                                    hint="write it as Flink does: '10 s', '500 ms', '1 min'")
            return ms
    return 0
