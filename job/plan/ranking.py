"""Top-N (ROW_NUMBER / RANK / DENSE_RANK … WHERE rn <= N), deduplication, and
ORDER BY … LIMIT."""
from __future__ import annotations

from sqlglot import exp

from job.plan.relation import Rel


def match_topn(planner, node: exp.Select):
    """A Top-N or deduplication query, planned; None if ``node`` is not one."""
    return None


def plan_order_limit(planner, rel: Rel, node: exp.Select) -> Rel:
    order = node.args.get("order") or node.args.get("limit") or node.args.get("offset")
    raise planner.error(order, "ORDER BY and LIMIT are not supported yet in a streaming query")
