"""Translate single Flink expressions over a small typed table, and evaluate them on Spark."""
from __future__ import annotations

from sqlglot import exp

from job.errors import Origin
from job.sql.flink.query import parse_query
from job.sql.flink.translate import Scope, Settings, Translator, Typed
from job.sql.types import logical_type


class TableScope(Scope):
    """Columns of one table: name → Flink type text; Spark column = the name itself."""

    def __init__(self, columns: dict[str, str]) -> None:
        self.types = {name.lower(): (name, logical_type(text)) for name, text in columns.items()}

    def column(self, node: exp.Column) -> Typed:
        found = self.types.get(node.name.lower())
        if found is None:
            raise KeyError(node.name)
        return Typed(f"`{found[0]}`", found[1])


def translate(expression: str, columns: dict[str, str] | None = None, zone: str = "UTC") -> Typed:
    """The Typed translation of ``expression`` (the only select item of a query)."""
    query = parse_query(f"SELECT {expression} FROM t", Origin("test"))
    item = query.tree.expressions[0]
    if isinstance(item, exp.Alias):
        item = item.this
    return Translator(query, TableScope(columns or {}), Settings(local_time_zone=zone)).expr(item)


def evaluate(spark, expression: str, columns: dict[str, str] | None = None, rows=None, zone: str = "UTC"):
    """Values of ``expression`` over ``rows`` (tuples in ``columns`` order), evaluated by Spark."""
    columns = columns or {}
    typed = translate(expression, columns, zone)
    if columns:
        schema = ", ".join(f"`{n}` {logical_type(t).spark}" for n, t in columns.items())
        frame = spark.createDataFrame(rows or [], schema)
    else:
        frame = spark.range(1).select()
    return [r[0] for r in frame.selectExpr(typed.sql).collect()], typed.type
