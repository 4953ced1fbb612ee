"""Flink's value construction functions: ROW(…) and MAP[…] (ARRAY[…] is in the
translator; field access ``row.field`` too)."""
from __future__ import annotations

from job.sql.flink.functions import scalar
from job.sql.flink.typed import Typed
from job.sql.types import t

CATEGORY = "value"


@scalar("ROW", CATEGORY, "ROW(value1, [, value2]*)", "A row of the values (fields EXPR$0, EXPR$1 …).")
def row(call):
    args = call.args(*range(1, 255))
    names = tuple(f"EXPR${i}" for i in range(len(args)))
    parts = ", ".join(f"'{n}', {a.sql}" for n, a in zip(names, args))
    return Typed(f"named_struct({parts})", t("ROW", children=tuple(a.type for a in args), field_names=names,
                                            nullable=False))


@scalar("MAP", CATEGORY, "MAP[key1, value1 [, key2, value2]*]", "A map of the key/value pairs.")
def map_(call):
    args = call.args(*range(2, 255, 2))
    keys, key_type = call.tr.coerce(args[0::2], call.node, "MAP[…] keys")
    values, value_type = call.tr.coerce(args[1::2], call.node, "MAP[…] values")
    parts = ", ".join(f"{k.sql}, {v.sql}" for k, v in zip(keys, values))
    return Typed(f"map({parts})", t("MAP", children=(key_type, value_type), nullable=False))
