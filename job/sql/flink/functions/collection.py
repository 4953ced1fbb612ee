"""Flink's collection functions (``array[i]`` and ``map[k]`` are in the translator)."""
from __future__ import annotations

from job.sql.flink import rules
from job.sql.flink.functions import not_supported, scalar
from job.sql.flink.translate import Typed
from job.sql.types import BOOLEAN_TYPE, INT_TYPE, STRING_TYPE, t

CATEGORY = "collection"


@scalar("CARDINALITY", CATEGORY, "CARDINALITY(array) / CARDINALITY(map)", "The number of elements or entries.")
def cardinality(call):
    x = call.args(1)[0]
    call.need(0, "array", "map")
    return Typed(f"IF({x.sql} IS NULL, NULL, size({x.sql}))", INT_TYPE.nullable_as(x.type.nullable))


@scalar("ELEMENT", CATEGORY, "ELEMENT(array)",
        "The only element of an array of one; NULL for an empty array; an error for more.")
def element(call):
    x = call.args(1)[0]
    call.need(0, "array")
    return Typed(f"CASE WHEN size({x.sql}) = 0 THEN NULL WHEN size({x.sql}) = 1 THEN {x.sql}[0] "
                 f"ELSE raise_error('ELEMENT: the array has more than one element') END",
                 x.type.children[0].nullable_as(True))


@scalar("ARRAY_CONTAINS", CATEGORY, "ARRAY_CONTAINS(haystack, needle)", "Whether the array holds the value.")
def array_contains(call):
    arr, value = call.args(2)
    call.need(0, "array")
    if not rules.comparable(arr.type.children[0], value.type):
        call.refuse(f"ARRAY_CONTAINS: {value.type} cannot be an element of {arr.type}")
    return Typed(f"array_contains({arr.sql}, {value.sql})", BOOLEAN_TYPE.nullable_as(True))


@scalar("ARRAY_DISTINCT", CATEGORY, "ARRAY_DISTINCT(haystack)", "The array without duplicates, first occurrences kept.")
def array_distinct(call):
    arr = call.args(1)[0]
    call.need(0, "array")
    return Typed(f"array_distinct({arr.sql})", arr.type)


@scalar("ARRAY_REVERSE", CATEGORY, "ARRAY_REVERSE(haystack)", "The array in reverse order.")
def array_reverse(call):
    arr = call.args(1)[0]
    call.need(0, "array")
    return Typed(f"reverse({arr.sql})", arr.type)


@scalar("ARRAY_JOIN", CATEGORY, "ARRAY_JOIN(array, delimiter[, nullReplacement])",
        "The array's strings joined with DELIMITER; NULL elements skipped unless replaced.")
def array_join(call):
    args = call.args(2, 3)
    call.need(0, "array"), call.need(1, "string")
    extra = f", {args[2].sql}" if len(args) == 3 else ""
    return Typed(f"array_join({args[0].sql}, {args[1].sql}{extra})", STRING_TYPE.nullable_as(call.nullable()))


@scalar("MAP_KEYS", CATEGORY, "MAP_KEYS(map)", "The map's keys as an array.")
def map_keys(call):
    m = call.args(1)[0]
    call.need(0, "map")
    return Typed(f"map_keys({m.sql})", t("ARRAY", children=(m.type.children[0],), nullable=m.type.nullable))


@scalar("MAP_VALUES", CATEGORY, "MAP_VALUES(map)", "The map's values as an array.")
def map_values(call):
    m = call.args(1)[0]
    call.need(0, "map")
    return Typed(f"map_values({m.sql})", t("ARRAY", children=(m.type.children[1],), nullable=m.type.nullable))


for _name in ("ARRAY_APPEND", "ARRAY_PREPEND", "ARRAY_POSITION", "ARRAY_REMOVE", "ARRAY_SLICE", "ARRAY_SORT",
              "ARRAY_UNION", "ARRAY_CONCAT", "ARRAY_MAX", "ARRAY_MIN", "ARRAY_EXCEPT", "ARRAY_INTERSECT",
              "MAP_UNION", "MAP_ENTRIES", "MAP_FROM_ARRAYS", "SPLIT"):
    not_supported(_name, CATEGORY)
