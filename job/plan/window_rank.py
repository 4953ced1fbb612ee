"""Window Top-N and window deduplication: ``ROW_NUMBER() OVER (PARTITION BY
window_start, window_end, … ORDER BY …)`` kept to a range of ranks, over a window
table function's rows or a window aggregation's.

Flink ranks a window's rows once the watermark passes the window's end, emits the rows
in the range once (an append-only result) and forgets the window. A Top-N whose
partition holds both window bounds runs that way here too, in the engine's
``windowRank`` operator (engine/…/WindowRankOp.java); any other Top-N is the regular,
updating one (job.plan.ranking).
"""
from __future__ import annotations

from sqlglot import exp

from job.changelog.columns import RANK
from job.changelog.specs import WindowRank
from job.plan import engine, nodes
from job.plan.event_time import time_attributes_kept, waits, without_event_time
from job.plan.relation import Field, Rel
from job.sql.types import BIGINT_TYPE


def plan_window_rank(planner, rel: Rel, partition: list, pcols: list, visible: list, sort: list,
                     function: str, lower: int, upper: int, shows_rank: bool, alias: str,
                     order: exp.Order):
    """The window Top-N, planned; None when the ranking is not over windows."""
    from pyspark.sql import functions as F

    names = {p.name.lower(): col for p, col in zip(partition, pcols) if isinstance(p, exp.Column)}
    if function != "row_number" or not rel.append_only or not {"window_start", "window_end"} <= set(names):
        return None
    end = rel.field_of(names["window_end"])
    if end.type.name != "TIMESTAMP":
        return None
    rows = [f.col for f in visible]
    sort_cols = [k.column for k in sort]
    wanted = list(dict.fromkeys(rows + pcols + sort_cols))
    df = without_event_time(rel.df).select(*[F.col(f"`{c}`") for c in wanted],
                                           (F.expr(f"unix_millis(`{end.col}`)") - 1).alias("__t"))
    spec = WindowRank(keys=tuple(pcols), row=tuple(rows), sort=tuple(sort), time="__t", lower=lower, upper=upper,
                      show_rank=shows_rank)
    ranked = engine.call(planner, spec, df)
    waits(planner, 0)
    fields = list(visible)
    selected = [F.col(f"`{c}`") for c in rows]
    if shows_rank:
        rank_col = planner.fresh()
        fields.append(Field(alias, None, rank_col, BIGINT_TYPE.nullable_as(False)))
        selected.append(F.col(RANK).alias(rank_col))
    what = "window deduplication" if upper == 1 and lower == 1 else f"window top {upper}"
    step = nodes.engine("window_rank", "windowRank",
                        f"{what} by row_number() over ({', '.join(planner.current.flink_sql(p) for p in partition)}) "
                        f"order by {', '.join(planner.current.flink_sql(o) for o in order.expressions)}",
                        "engine: windowRank; a window's rows are ranked once the watermark passes its end",
                        keys=tuple(planner.current.flink_sql(p) for p in partition), spec=planner.spec_for("windowRank"))
    out = time_attributes_kept(ranked.select(*selected), rel.df, fields)
    return Rel(out, fields, True, None, rel.steps + [step], computed=rel.computed)
