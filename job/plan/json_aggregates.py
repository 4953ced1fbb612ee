"""The argument of JSON_ARRAYAGG / JSON_OBJECTAGG as the engine's aggregate reads it.

Flink wraps these aggregates' values in JSON_STRING before they reach the function
(its WrapJsonAggFunctionArgumentsRule), so the function only holds JSON text: a string
becomes a quoted JSON string, a number its digits, a nested JSON_OBJECT / JSON_ARRAY call
its JSON. The same text is computed here (the writer of JSON_STRING), and the engine
joins the texts (engine Aggs.JsonArray / Aggs.JsonObject).
"""
from __future__ import annotations

from job.sql.flink.functions import json_writing


class _Call:
    """What the JSON writer needs of a call: its name and a way to refuse."""

    def __init__(self, planner, node, name: str):
        self.planner, self.node, self.name = planner, node, name

    def refuse(self, message: str, node=None):
        raise self.planner.error(node if node is not None else self.node, message)


def json_argument(planner, tr, call) -> tuple[str, str, str]:
    """(engine function, Spark SQL of the staged argument, its Spark type)."""
    raw = call.node
    name = call.function.name
    writer = _Call(planner, raw, name)
    text = json_writing.render(writer, tr.expr(call.arg), call.arg)
    on_null = "absent_on_null" if call.absent_on_null else "null_on_null"
    if call.json_key is None:
        return f"json_arrayagg_{on_null}", text, "STRING"
    key = tr.expr(call.json_key)
    if not key.type.is_character:
        raise planner.error(call.json_key, f"the key of {name} must be a string, not {key.type}")
    return (f"json_objectagg_{on_null}", f"named_struct('k', {key.sql}, 'v', {text})",
            "STRUCT<k: STRING, v: STRING>")
