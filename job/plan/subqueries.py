"""WHERE with subqueries: ``x IN (SELECT …)``, ``EXISTS (SELECT …)`` and their negations
become joins, as Flink rewrites them."""
from __future__ import annotations

from sqlglot import exp

from job.plan.relation import Rel, conjuncts


def plan_where(planner, rel: Rel, condition: exp.Expression) -> Rel:
    for cond in conjuncts(condition):
        if any(True for _ in cond.find_all(exp.Subquery, exp.Exists)) or (
                isinstance(cond, exp.In) and cond.args.get("query") is not None):
            raise planner.error(cond, "subqueries in WHERE are not supported yet",
                                hint="write it as a JOIN")
    return planner.filter(rel, condition, "WHERE")
