"""Flink SQL constructs that Spark SQL spells differently, rewritten before Spark sees
the query.

Only queries that use them are rewritten (elsewhere positions in errors stay exact):

* group windows: ``GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE)`` → ``window(ts, '1 minute')``,
  ``HOP(ts, slide, size)`` → ``window(ts, size, slide)``, ``SESSION(ts, gap)`` →
  ``session_window(ts, gap)``; ``TUMBLE_START/_END`` (and HOP_/SESSION_) → the window's
  ``start``/``end``. Spark then runs them with its native, watermark-driven operators.
"""
from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

_WINDOW_CALL = re.compile(r"\b(TUMBLE|HOP|SESSION)(_START|_END|_ROWTIME)?\s*\(", re.I)


def _duration(node: exp.Expression) -> exp.Expression:
    """INTERVAL '5' MINUTE → '5 minute' (Spark's window durations are strings)."""
    if isinstance(node, exp.Interval):
        amount = node.this.name if isinstance(node.this, exp.Literal) else node.this.sql(dialect="spark")
        unit = node.args.get("unit")
        unit_text = unit.name if unit is not None else ""
        return exp.Literal.string(f"{amount} {unit_text.lower()}".strip())
    return node


def _window(kind: str, args: list[exp.Expression]) -> exp.Expression:
    ts, rest = args[0], [_duration(a) for a in args[1:]]
    if kind == "TUMBLE":
        return exp.Anonymous(this="window", expressions=[ts, rest[0]])
    if kind == "HOP":  # Flink: HOP(time, slide, size); Spark: window(time, size, slide)
        return exp.Anonymous(this="window", expressions=[ts, rest[1], rest[0]])
    return exp.Anonymous(this="session_window", expressions=[ts, rest[0]])


def flink_to_spark(sql: str) -> str:
    """The query with Flink's group windows spelled the Spark way (unchanged otherwise)."""
    if not _WINDOW_CALL.search(sql):
        return sql
    # sqlglot cannot parse a function named SESSION; give it a name it can.
    renamed = re.sub(r"\bSESSION(_START|_END|_ROWTIME)?(\s*\()", r"FLINK_SESSION\1\2", sql, flags=re.I)
    try:
        tree = sqlglot.parse_one(renamed, read="spark")
    except sqlglot.errors.ParseError:
        return sql  # Spark reports the syntax error with its position

    def swap(node: exp.Expression):
        if isinstance(node, exp.Anonymous):
            m = re.fullmatch(r"(TUMBLE|HOP|FLINK_SESSION)(_START|_END|_ROWTIME)?", node.name, re.I)
            if m:
                window = _window(m.group(1).upper().replace("FLINK_", ""), list(node.expressions))
                part = (m.group(2) or "").upper()
                if part == "_START":
                    return exp.Dot(this=window, expression=exp.to_identifier("start"))
                if part in ("_END", "_ROWTIME"):
                    return exp.Dot(this=window, expression=exp.to_identifier("end"))
                return window
        return node

    return tree.transform(swap).sql(dialect="spark")


# sqlglot reads 'window' as a keyword; for its structural parse only, Spark's window()
# call gets a neutral name (Spark itself always receives the query as written).
_SPARK_WINDOW = re.compile(r"\bwindow(\s*\()", re.I)
STRUCTURAL_WINDOW_NAME = "spark_window"


def parse_structure(sql: str) -> exp.Expression:
    """sqlglot's tree of a query, for finding its tables, joins and GROUP BY.

    Raises sqlglot.errors.ParseError; Spark reports the user's syntax errors itself."""
    renamed = _SPARK_WINDOW.sub(STRUCTURAL_WINDOW_NAME + r"\1", sql)
    renamed = re.sub(r"\bSESSION(_START|_END|_ROWTIME)?(\s*\()", r"FLINK_SESSION\1\2", renamed, flags=re.I)
    return sqlglot.parse_one(renamed, read="spark")
