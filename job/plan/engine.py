"""The planner's calls into the engine's stateful operators.

The operators run in the JVM (``engine/``, see :mod:`job.changelog.jvm`): each takes a
streaming DataFrame and a specification naming the columns it reads, and returns its
output DataFrame. Rows stay
Spark rows from the source to the sink; state is kept per key in Spark's state store.
The planner never builds an operator's state layout itself, so the engine can change it
without touching planning.
"""
from __future__ import annotations

import json

from job.changelog.jvm import engine_call
from job.plan.relation import SIGN, Rel


def call(planner, operator: str, df, spec: dict):
    """Run one of the engine's operators (``normalize``, ``aggregate``, ``join``,
    ``materialize``, ``rank``) over ``df``."""
    spec = {**spec, "ttl_ms": planner.state_ttl_ms or 0}
    return engine_call(planner.spark, operator, df, json.dumps(spec))


def spark_type_json(logical) -> dict:
    """A Flink type's Spark type, as the JSON the engine reads."""
    from pyspark.sql.types import _parse_datatype_string

    return json.loads(_parse_datatype_string(logical.spark).json())


def schema_of(rel: Rel, cols=None):
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    wanted = rel.cols() if cols is None else cols
    by_col = {f.col: f for f in rel.fields}
    return StructType([StructField(c, _parse_datatype_string(by_col[c].type.spark), True) for c in wanted])


# Each normalized change's position in its source (engine NormalizeOp), kept for the
# order-dependent aggregates (Planner.keeps_positions).
POSITION_MAJOR, POSITION_MINOR = "__pos_major", "__pos_minor"


def normalize(planner, rel: Rel) -> Rel:
    """An upsert table's latest row per key → signed changes (retractions)."""
    cols = rel.cols()
    out = call(planner, "normalize", rel.df, {"keys": list(rel.pending_upsert), "row": cols, "kind": "kind",
                                              "major": "seq_major", "minor": "seq_minor"})
    positions = [POSITION_MAJOR, POSITION_MINOR] if planner.keeps_positions else []
    return Rel(out.select(*cols, SIGN, *positions), rel.fields, append_only=False, unique_key=rel.unique_key,
               computed=rel.computed,
               steps=rel.steps + ["normalize by PRIMARY KEY into retractions [stateful]"])


def group_aggregate(planner, staged, group_cols: list[str], calls: list[dict], global_agg: bool,
                    append_only: bool, ordered: bool = False):
    """Retractable aggregation. ``staged`` has the group columns, the argument columns and
    ``__sign`` (and the changes' positions when ``ordered``); ``calls`` are the engine's
    aggregate specifications (fn, arg, distinct, separator, result, name). Returns
    (__sign, group columns, results by name, __net).

    Equal rows are netted in each partition before the shuffle (Flink's local-global
    aggregation; engine/…/grouping/NetReduction.java, placed below the aggregate's
    exchange): the aggregate reads a row of sign n as n copies. Not when a call depends
    on the order of the rows (``ordered``): netting would move a row to its first
    equal's place."""
    return call(planner, "aggregate", staged, {"keys": group_cols, "sign": SIGN, "global": global_agg,
                                               "append_only": append_only, "ordered": ordered, "aggs": calls})


def join(planner, unioned, keys: list[str], sides: list[dict]):
    """A regular join of the sides unioned in ``unioned`` (see job.plan.joins)."""
    return call(planner, "join", unioned, {"keys": keys, "sides": sides, "side": "__side", "sign": SIGN,
                                           "kind": "kind", "major": "seq_major", "minor": "seq_minor"})


def materialize(planner, df, pk: list[str], cols: list[str]):
    """Changes → the latest row per sink key (Flink's SinkUpsertMaterializer): columns
    ``cols`` plus ``__op`` ('+U' / '-D')."""
    return call(planner, "materialize", df, {"keys": pk, "row": cols, "sign": SIGN})


def net_changes(planner, df, pk: list[str], cols: list[str]):
    """A micro-batch's signed rows → one '+U' or '-D' per sink key (columns ``cols`` plus
    ``__op``); no state."""
    return call(planner, "netChanges", df, {"keys": pk, "row": cols, "sign": SIGN})


def rank(planner, df, partition: list[str], row: list[str], sort: list[dict], function: str, lower: int,
         upper: int, append_only: bool, show_rank: bool, newest_first: bool):
    """Top-N: (__sign, row columns, __rnk, __net)."""
    return call(planner, "rank", df, {"keys": partition, "row": row, "sort": sort, "sign": SIGN,
                                      "function": function, "lower": lower, "upper": upper,
                                      "append_only": append_only, "show_rank": show_rank,
                                      "newest_first": newest_first})

