"""A relation in the changelog plan: a streaming DataFrame of signed rows and what the
planner knows about it.

Columns get internal names (``_c0``, ``_c1`` …) so that joins of tables with equal
column names never clash; :class:`Field` maps the user's ``qualifier.name`` to them.
Every relation has a ``__sign`` column (+n insert n copies, -n retract them).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from sqlglot import exp

from job.errors import PipelineError

SIGN = "__sign"
# An operator's per-row net effect on an upsert sink ('+U', '-D' or NULL), valid while
# Rel.net_key is set: see operators._net_ops and changelog.sink.plan_sink.
NET = "__net"

# to_json/from_json options that round-trip every value the operators carry
# (microsecond timestamps included).
ROW_JSON = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
            "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"}


@dataclass(frozen=True)
class Field:
    name: str                    # as the user refers to it
    qualifier: Optional[str]     # table alias or name; None after projections
    col: str                     # internal Spark column


@dataclass
class PendingJoin:
    """INNER/LEFT joins on one key, collected before they become one operator.

    The planner keeps a join of upsert tables on their shared key pending while the next
    join of the FROM clause can join on the same key too; :meth:`Planner.settle` then
    plans all of them as one stateful operator (:class:`~job.changelog.operators.Join`
    for two inputs, :class:`~job.changelog.operators.StarJoin` for more).
    """

    inputs: list                 # per input: DataFrame of jk, side, sign, row, kind, seq_major, seq_minor
    schemas: list                # per input: StructType of its columns (to decode its row JSON)
    kinds: list[str]             # kinds[i - 1]: 'inner' or 'left', joining input i
    upsert_sides: tuple          # inputs normalized inside the operator (upserts keyed by the join key)
    key_types: list              # per key part: the type every input's key is cast to
    anchors: list[set]           # per key part: cols that hold the key in every output row
    passthrough: list            # (side, DataFrame): NULL-key rows an outer join emits padded, statelessly
    schema: object               # StructType of the joined columns
    extendable: bool             # may a following join on the same key become another input


@dataclass
class Rel:
    df: object                                  # streaming DataFrame: field cols + __sign
    fields: list[Field]
    append_only: bool
    unique_key: Optional[frozenset] = None      # internal cols whose values identify a row
    steps: list[str] = field(default_factory=list)  # what was planned, for --explain
    # An upsert table not normalized yet: ``df`` holds its rows with kind/seq_major/
    # seq_minor instead of __sign, and these are its primary-key columns. A join on that
    # key normalizes inside the join; anything else calls Planner.settle first.
    pending_upsert: Optional[tuple] = None
    # Cols a projection computed with an expression (COALESCE(l.id, r.id), CAST(…)…).
    # A sink key made of such a column may be unique although the planner cannot prove it,
    # so the sink materializes; a sink key of plain columns that misses the unique key is
    # provably wrong and rejected (see changelog.sink.plan_sink).
    computed: frozenset = frozenset()
    # Joins waiting to be planned as one operator (``df`` is None until then).
    pending_join: Optional[PendingJoin] = None
    # The cols whose values the last operator netted its changes by, in ``df``'s NET
    # column. Set only where that operator emits at most one row per such key, and kept
    # only through projections that pass these cols on unchanged (a filter could drop a
    # key's new row but keep its retraction).
    net_key: Optional[frozenset] = None

    def cols(self) -> list[str]:
        return [f.col for f in self.fields]

    def schema_of(self, cols=None):
        from pyspark.sql.types import StructType

        wanted = self.cols() if cols is None else cols
        schema = self.pending_join.schema if self.pending_join is not None else self.df.schema
        by_name = {f.name: f for f in schema.fields}
        return StructType([by_name[c] for c in wanted])

    def resolve(self, column: exp.Column, where: str) -> Field:
        """The field a column reference names; ambiguity and absence are user errors."""
        name = column.name.lower()
        qualifier = column.table.lower() if column.table else None
        matches = [f for f in self.fields if f.name.lower() == name
                   and (qualifier is None or (f.qualifier or "").lower() == qualifier)]
        if len(matches) == 1:
            return matches[0]
        ref = f"{column.table}.{column.name}" if column.table else column.name
        if not matches:
            known = ", ".join(sorted({(f"{f.qualifier}." if f.qualifier else "") + f.name for f in self.fields}))
            raise PipelineError(f"column '{ref}' in {where} is not known here (available: {known})")
        raise PipelineError(f"column '{ref}' in {where} is ambiguous: qualify it with a table alias")

    def refers_only_to(self, node: exp.Expression) -> bool:
        """True when every column in ``node`` resolves in this relation."""
        for column in node.find_all(exp.Column):
            try:
                self.resolve(column, "")
            except PipelineError:
                return False
        return True


def rewrite(node: exp.Expression, rel: Rel, where: str, replacements: Optional[dict] = None) -> str:
    """``node`` as Spark SQL over ``rel``'s internal columns.

    ``replacements`` maps the SQL text of sub-expressions (group keys, aggregate calls)
    to internal columns; they win over column resolution.
    """
    replacements = replacements or {}

    def swap(n: exp.Expression):
        if replacements:
            key = n.sql(dialect="spark")
            if key in replacements:
                return exp.column(replacements[key], quoted=True)
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            return exp.column(rel.resolve(n, where).col, quoted=True)
        return n

    return node.copy().transform(swap).sql(dialect="spark")


def reject_unsupported(node: exp.Expression, where: str) -> None:
    """Window functions and subqueries in an expression: Spark cannot evaluate them row
    by row on a stream (see plan.refuse_unplanned, which checks every clause)."""
    for found in node.find_all(exp.Window, exp.Select):
        if isinstance(found, exp.Window):
            raise PipelineError(f"the window function {found.sql(dialect='spark')} in {where} is not supported on a "
                                f"changelog", hint="Spark streaming has no OVER (…) windows; GROUP BY with MIN, MAX "
                                                   "or COUNT gives a per-key result that stays correct under updates")
        raise PipelineError(f"a subquery in {where} is not supported on a changelog",
                            hint="write it as a JOIN, e.g. JOIN (SELECT DISTINCT k FROM t) s ON … for IN (SELECT k FROM t)")


def conjuncts(node: Optional[exp.Expression]) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    return [node]


def output_name(node: exp.Expression) -> str:
    """The column name Spark would give a select item."""
    if isinstance(node, exp.Alias):
        return node.alias
    if isinstance(node, exp.Column):
        return node.name
    return node.sql(dialect="spark")
