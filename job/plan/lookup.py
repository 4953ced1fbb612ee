"""Lookup joins: ``JOIN dim FOR SYSTEM_TIME AS OF left.proc_time`` against a database."""
from __future__ import annotations


def plan_lookup_join(planner, left, node, kind):
    raise planner.error(node.this.args["version"], "processing-time temporal joins (lookup joins) are not supported "
                                                   "yet")
