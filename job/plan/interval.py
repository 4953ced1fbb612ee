"""Interval joins: two append-only streams joined on keys and a time range."""
from __future__ import annotations


def match_interval_join(planner, left, right, node):
    """An interval join, planned; None when ``node`` is a regular join."""
    return None
