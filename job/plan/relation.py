"""A relation in a query plan: a streaming DataFrame of rows and what the planner knows
about it.

Columns get internal names (``_c0``, ``_c1`` …) so that joins of tables with equal
column names never clash; :class:`Field` maps the user's ``qualifier.name`` to them and
carries the column's Flink type. A relation that is not append-only has a ``__sign``
column (+n inserts n copies of the row, -n retracts them).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from sqlglot import exp

from job.changelog import columns
from job.errors import PipelineError
from job.sql.flink.translate import Scope, Typed, field_access
from job.sql.types import LogicalType

SIGN = columns.SIGN
# An operator's per-row net effect on an upsert sink ('+U', '-D' or NULL), valid while
# Rel.net_key is set: see the engine's net ops and plan.sink.
NET = columns.NET


@dataclass(frozen=True)
class Field:
    name: str                    # as the user refers to it
    qualifier: Optional[str]     # table alias or name; None after projections
    col: str                     # internal Spark column
    type: LogicalType            # Flink type
    time: Optional[str] = None   # 'rowtime' or 'proctime' for a time attribute

    def requalified(self, qualifier: Optional[str]) -> "Field":
        return replace(self, qualifier=qualifier)


@dataclass
class PendingJoin:
    """INNER/LEFT joins on one key, collected before they become one operator.

    The planner keeps a join of upsert tables on their shared key pending while the next
    join of the FROM clause can join on the same key too; :func:`job.plan.joins.settle_join`
    then plans all of them as one stateful operator (two inputs: a join; more: a star join).
    """

    inputs: list                 # per input: DataFrame of jk, side, sign, row, kind, seq_major, seq_minor
    schemas: list                # per input: StructType of its columns (to decode its rows)
    kinds: list[str]             # kinds[i - 1]: 'inner' or 'left', joining input i
    upsert_sides: tuple          # inputs normalized inside the operator (upserts keyed by the join key)
    unique_sides: tuple          # inputs with at most one row per join key (their unique key is in it)
    key_types: list              # per key part: the Flink type every input's key is cast to
    anchors: list[set]           # per key part: cols that hold the key in every output row
    passthrough: tuple           # sides whose NULL-key rows the operator emits padded, statelessly
    schema: object               # StructType of the joined columns
    extendable: bool             # may a following join on the same key become another input


@dataclass
class Rel:
    df: object                                  # streaming DataFrame: field cols (+ __sign)
    fields: list[Field]
    append_only: bool
    unique_key: Optional[frozenset] = None      # internal cols whose values identify a row
    steps: list = field(default_factory=list)   # its plan: job.plan.nodes.PlanNode, each after its inputs
    # An upsert table not normalized yet: ``df`` holds its rows with __kind/__seq_major/
    # __seq_minor instead of __sign, and these are its primary-key columns. A join on that
    # key normalizes inside the join; anything else calls Planner.settle first.
    pending_upsert: Optional[tuple] = None
    # Cols a projection computed with an expression (COALESCE(l.id, r.id), CAST(…)…).
    # A sink key made of such a column may be unique although the planner cannot prove it,
    # so the sink materializes; a sink key of plain columns that misses the unique key is
    # provably wrong and rejected (see plan.sink).
    computed: frozenset = frozenset()
    # Joins waiting to be planned as one operator (``df`` is None until then).
    pending_join: Optional[PendingJoin] = None
    # The cols whose values the last operator netted its changes by, in ``df``'s NET
    # column. Set only where that operator emits at most one row per such key, and kept
    # only through projections that pass these cols on unchanged.
    net_key: Optional[frozenset] = None
    # A window table function's relation: the window (job.plan.windows.Window) and its
    # window_start / window_end / window_time fields, for the aggregation that follows.
    window: Optional[object] = None
    window_fields: Optional[dict] = None
    # The rows are in the order the source holds them: a table's rows (append-only or a
    # changelog's signed rows), filtered or projected, never shuffled. Order-dependent
    # aggregates (LISTAGG, FIRST_VALUE, LAST_VALUE, ARRAY_AGG) need it, or the positions
    # of a normalized changelog (job.plan.aggregates).
    arrival_order: bool = False

    def __post_init__(self) -> None:
        # The step that made this relation outputs what the relation holds.
        if self.steps and self.steps[-1].mode is None:
            from job.plan.nodes import with_mode

            self.steps = self.steps[:-1] + [with_mode(self.steps[-1], self.mode)]

    @property
    def mode(self) -> str:
        """The relation as a changelog: append, upsert (not normalized yet) or retract."""
        from job.plan.nodes import APPEND, RETRACT, UPSERT

        return APPEND if self.append_only else UPSERT if self.pending_upsert is not None else RETRACT

    def cols(self) -> list[str]:
        return [f.col for f in self.fields]

    def field_of(self, col: str) -> Field:
        return next(f for f in self.fields if f.col == col)

    @property
    def rowtime(self) -> Optional[Field]:
        return next((f for f in self.fields if f.time == "rowtime"), None)

    @property
    def proctime(self) -> Optional[Field]:
        return next((f for f in self.fields if f.time == "proctime"), None)

    def resolve(self, column: exp.Column, where: str, query=None) -> Field:
        """The field a column reference names; ambiguity and absence are user errors."""
        name = column.name.lower()
        qualifier = column.table.lower() if column.table else None
        matches = [f for f in self.fields if f.name.lower() == name
                   and (qualifier is None or (f.qualifier or "").lower() == qualifier)]
        if len(matches) == 1:
            return matches[0]
        ref = f"{column.table}.{column.name}" if column.table else column.name
        if not matches:
            import difflib

            visible = [f for f in self.fields if not f.name.startswith("__")]
            known = ", ".join(sorted({(f"{f.qualifier}." if f.qualifier else "") + f.name for f in visible}))
            close = difflib.get_close_matches(column.name, [f.name for f in visible], n=1, cutoff=0.6)
            message = (f"Column '{ref}' not found in any table (in {where}; available: {known})"
                       + (f". Did you mean '{close[0]}'?" if close else ""))
        else:
            message = f"Column '{ref}' in {where} is ambiguous: qualify it with a table alias"
        if query is not None:
            raise query.error(column, message)
        raise PipelineError(message)

    def refers_only_to(self, node: exp.Expression) -> bool:
        """True when every column in ``node`` resolves in this relation."""
        for column in node.find_all(exp.Column):
            try:
                RelScope(self, "").resolve_column(column)
            except PipelineError:
                return False
        return True


class RelScope(Scope):
    """Names in an expression over a relation, for the translator: ``name``,
    ``qualifier.name``, and nested ROW fields (``t.r.f``, ``r.f``). ``replacements`` maps
    the Flink SQL text of a sub-expression (an aggregate call, a GROUP BY key) to the
    column that already holds its value."""

    def __init__(self, rel: Rel, where: str, replacements: Optional[dict] = None, query=None) -> None:
        self.rel = rel
        self.where = where
        self.replacements = replacements or {}
        self.query = query

    def resolve_column(self, node: exp.Column) -> tuple[Field, list[str]]:
        """The field and the nested field path a (possibly dotted) reference names."""
        parts = [p.name for p in node.parts]
        # Longest prefix first: qualifier.name, then name, each followed by ROW field names.
        candidates = []
        if len(parts) >= 2:
            candidates.append((exp.column(parts[1], parts[0]), parts[2:]))
        candidates.append((exp.column(parts[0]), parts[1:]))
        first_error = None
        for ref, path in candidates:
            try:
                return self.rel.resolve(ref, self.where), path
            except PipelineError as err:
                first_error = first_error or err
        if self.query is not None and first_error is not None:
            raise self.query.error(node, first_error.message)
        raise first_error

    def column(self, node: exp.Column) -> Typed:
        found, path = self.resolve_column(node)
        value = Typed(f"`{found.col}`", found.type)
        if path:
            from job.sql.flink.translate import Translator

            tr = Translator(self.query, self) if self.query is not None else None
            for name in path:
                value = field_access(tr, value, name, node)
        return value

    def replacement(self, node: exp.Expression) -> Optional[Typed]:
        if not self.replacements:
            return None
        from job.sql.flink.dialect import DIALECT

        return self.replacements.get(node.sql(dialect=DIALECT))


def flink_key(node: exp.Expression) -> str:
    """The text a replacement is keyed by (the node printed as Flink SQL)."""
    from job.sql.flink.dialect import DIALECT

    return node.sql(dialect=DIALECT)


def conjuncts(node: Optional[exp.Expression]) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    return [node]


# The hidden field holding each row's watermark (job.plan.current_watermark), which
# CURRENT_WATERMARK reads; ``*`` never shows it.
WATERMARK = "$watermark"


def keep_fields(rel: Rel, fields: list) -> Rel:
    """``rel`` with only ``fields`` (and its __sign / __net): its keys kept where they are
    made of those fields."""
    from pyspark.sql import functions as F

    kept = {f.col for f in fields}
    extra = [F.col(c) for c in (SIGN, NET) if c in rel.df.columns]
    return Rel(rel.df.select(*[F.col(f"`{f.col}`") for f in fields], *extra), list(fields), rel.append_only,
               rel.unique_key if rel.unique_key and rel.unique_key <= kept else None, rel.steps,
               computed=rel.computed, net_key=rel.net_key if rel.net_key and rel.net_key <= kept else None)


def output_name(node: exp.Expression, position: int) -> str:
    """The column name Flink gives a select item: its alias, the column's own name, or
    ``EXPR$n`` for other expressions."""
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Dot):
        return node.name
    return f"EXPR${position}"
