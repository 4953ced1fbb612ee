"""The planner's calls into the engine's stateful operators.

The operators run in the JVM (``engine/``, see :mod:`job.changelog.jvm`): each takes a
streaming DataFrame and a specification naming the columns it reads, and returns its
output DataFrame. Rows stay
Spark rows from the source to the sink; state is kept per key in Spark's state store.
The planner never builds an operator's state layout itself, so the engine can change it
without touching planning.
"""
from __future__ import annotations

from job.changelog import columns, specs
from job.changelog.jvm import run_operator
from job.plan import nodes
from job.plan.relation import SIGN, Rel


def call(planner, spec, df):
    """Run the engine operator ``spec`` (job.changelog.specs) describes over ``df``."""
    planner.ran(spec)
    return run_operator(planner.spark, spec, df)


def spark_type_json(logical) -> str:
    """A Flink type's Spark type, as Spark's type JSON (what the engine's specs carry)."""
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(logical.spark).json()


def schema_of(rel: Rel, cols=None):
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    wanted = rel.cols() if cols is None else cols
    by_col = {f.col: f for f in rel.fields}
    return StructType([StructField(c, _parse_datatype_string(by_col[c].type.spark), True) for c in wanted])


# Each normalized change's position in its source (engine NormalizeOp), kept for the
# order-dependent aggregates (Planner.keeps_positions).
POSITION_MAJOR, POSITION_MINOR = columns.POSITION_MAJOR, columns.POSITION_MINOR


def normalize(planner, rel: Rel) -> Rel:
    """An upsert table's latest row per key → signed changes (retractions)."""
    cols = rel.cols()
    out = call(planner, specs.Normalize(keys=tuple(rel.pending_upsert), row=tuple(cols),
                                        state_ttl_ms=planner.state_ttl_ms or 0), rel.df)
    positions = [POSITION_MAJOR, POSITION_MINOR] if planner.keeps_positions else []
    return Rel(out.select(*cols, SIGN, *positions), rel.fields, append_only=False, unique_key=rel.unique_key,
               computed=rel.computed,
               steps=rel.steps + [nodes.engine("normalize", "normalize", "normalize by PRIMARY KEY into retractions",
                                               "stateful", spec=planner.spec_for("normalize"),
                                               keys=[f.name for f in rel.fields if f.col in rel.pending_upsert])])


def group_aggregate(planner, staged, group_cols: list[str], calls: list[specs.AggregateCall],
                    append_only: bool, ordered: bool = False):
    """Retractable aggregation. ``staged`` has the group columns, the argument columns and
    ``__sign`` (and the changes' positions when ``ordered``); no group columns: one global
    group. Returns (__sign, group columns, results by name, __net).

    Equal rows are netted in each partition before the shuffle (Flink's local-global
    aggregation; engine/…/grouping/NetReduction.java, placed below the aggregate's
    exchange): the aggregate reads a row of sign n as n copies. Not when a call depends
    on the order of the rows (``ordered``): netting would move a row to its first
    equal's place."""
    return call(planner, specs.Aggregate(keys=tuple(group_cols), calls=tuple(calls), append_only=append_only,
                                         ordered=ordered, state_ttl_ms=planner.state_ttl_ms or 0), staged)


def join(planner, unioned, keys: list[str], sides: list[specs.JoinSide]):
    """A regular join of the sides unioned in ``unioned`` (see job.plan.joins)."""
    return call(planner, specs.Join(keys=tuple(keys), sides=tuple(sides), state_ttl_ms=planner.state_ttl_ms or 0),
                unioned)


def materialize(planner, df, pk: list[str], cols: list[str]):
    """Changes → the latest row per sink key (Flink's SinkUpsertMaterializer): columns
    ``cols`` plus ``__op`` ('+U' / '-D')."""
    return call(planner, specs.Materialize(keys=tuple(pk), row=tuple(cols), state_ttl_ms=planner.state_ttl_ms or 0),
                df)


def net_changes(planner, df, pk: list[str], cols: list[str]):
    """A micro-batch's signed rows → one '+U' or '-D' per sink key (columns ``cols`` plus
    ``__op``); no state."""
    return call(planner, specs.NetChanges(keys=tuple(pk), row=tuple(cols)), df)


def rank(planner, df, partition: list[str], row: list[str], sort: list[specs.SortKey], function: str, lower: int,
         upper: int, append_only: bool, show_rank: bool, newest_first: bool):
    """Top-N: (__sign, row columns, __rnk, __net)."""
    return call(planner, specs.Rank(keys=tuple(partition), row=tuple(row), sort=tuple(sort), function=function,
                                    lower=lower, upper=upper, append_only=append_only, show_rank=show_rank,
                                    newest_first=newest_first, state_ttl_ms=planner.state_ttl_ms or 0), df)

