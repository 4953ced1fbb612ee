"""Window joins: two window table functions' rows joined on their windows and keys."""
from __future__ import annotations


def match_window_join(planner, left, right, node):
    """A window join, planned; None when ``node`` is not one."""
    return None
