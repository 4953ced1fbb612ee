"""Temporal joins: ``JOIN versioned FOR SYSTEM_TIME AS OF left.time``."""
from __future__ import annotations


def plan_temporal_join(planner, left, node):
    raise planner.error(node, "temporal joins (FOR SYSTEM_TIME AS OF) are not supported yet")
