"""ORDER BY keys as the sorting operators take them (Top-N, the temporal sort)."""
from __future__ import annotations

from sqlglot import exp

from job.changelog.specs import SortKey


def sort_keys(planner, ordered: list, fields: list) -> list[SortKey]:
    """The engine's sort keys for ORDER BY items ``ordered`` resolved to ``fields``."""
    return [SortKey(column=f.col, descending=bool(o.args.get("desc")), nulls_first=nulls_first(o))
            for o, f in zip(ordered, fields)]


def nulls_first(o: exp.Ordered) -> bool:
    """Whether an ORDER BY item puts NULLs first: as written (NULLS FIRST / NULLS LAST),
    else Flink's default, first ascending and last descending. (The Flink dialect's
    parser fills in that default where the query does not say.)"""
    written = o.args.get("nulls_first")
    return bool(written) if written is not None else not o.args.get("desc")


def written(planner, ordered: list) -> str:
    """ORDER BY items as the user wrote them (for --explain), keys the select list does
    not show included."""
    def one(o: exp.Ordered) -> str:
        text = o.this.meta.get("as_written") or planner.current.flink_sql(o.this)
        return text + (" DESC" if o.args.get("desc") else "")

    return ", ".join(one(o) for o in ordered)
