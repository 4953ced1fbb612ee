"""ORDER BY keys as the sorting operators take them (Top-N, the temporal sort)."""
from __future__ import annotations

from sqlglot import exp

from job.changelog.specs import SortKey


def sort_keys(planner, ordered: list, fields: list) -> list[SortKey]:
    """The engine's sort keys for ORDER BY items ``ordered`` resolved to ``fields``, with
    Flink's default NULL order (first ascending, last descending)."""
    keys = []
    for o, f in zip(ordered, fields):
        descending = bool(o.args.get("desc"))
        nulls_first = o.args.get("nulls_first")
        if nulls_first is not None and bool(nulls_first) != (not descending):
            raise planner.error(o, "NULLS FIRST / NULLS LAST against Flink's default order is not supported yet")
        keys.append(SortKey(column=f.col, descending=descending, nulls_first=not descending))
    return keys


def written(planner, ordered: list) -> str:
    """ORDER BY items as the user wrote them (for --explain), keys the select list does
    not show included."""
    def one(o: exp.Ordered) -> str:
        text = o.this.meta.get("as_written") or planner.current.flink_sql(o.this)
        return text + (" DESC" if o.args.get("desc") else "")

    return ", ".join(one(o) for o in ordered)
