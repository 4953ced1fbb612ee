"""OVER aggregations (ROWS / RANGE frames ordered by a time attribute)."""
from __future__ import annotations

from sqlglot import exp

from job.plan.relation import Rel


def plan_over(planner, rel: Rel, node: exp.Select) -> Rel:
    window = next(w for item in node.expressions for w in item.find_all(exp.Window))
    raise planner.error(window, "OVER windows are not supported yet")
