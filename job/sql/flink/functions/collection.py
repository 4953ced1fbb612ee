"""Flink's collection functions (``array[i]`` and ``map[k]`` are in the translator).

Flink treats NULL elements as values: ARRAY_CONTAINS(a, NULL) asks whether a holds a
NULL, ARRAY_REMOVE(a, NULL) takes the NULLs out. Spark's functions of the same names
answer NULL instead, so those are written with null-safe comparisons (``<=>``). A NULL
array (or map) argument gives NULL throughout.
"""
from __future__ import annotations

from job.sql.flink import rules
from job.sql.flink.functions import lambda_var, scalar
from job.sql.flink.functions.regexp import quote
from job.sql.flink.typed import Typed
from job.sql.types import BOOLEAN_TYPE, INT_TYPE, STRING_TYPE, t

CATEGORY = "collection"


def _array(call, i: int = 0) -> Typed:
    return call.need(i, "array")


def _element(call, arr: Typed, i: int) -> Typed:
    """Argument ``i`` as a value of ``arr``'s element type (Flink casts it implicitly)."""
    value = call.arg(i)
    element = arr.type.children[0] if arr.type.name == "ARRAY" else value.type
    if not rules.comparable(element, value.type):
        call.refuse(f"{call.name}: {value.type} cannot be an element of {arr.type}", node=call.raw[i])
    if value.type.is_null or value.type.nullable_as(element.nullable) == element:
        return value
    return call.tr.cast(value, element.nullable_as(value.type.nullable), call.raw[i])


@scalar("CARDINALITY", CATEGORY, "CARDINALITY(array) / CARDINALITY(map)", "The number of elements or entries.")
def cardinality(call):
    x = call.args(1)[0]
    call.need(0, "array", "map")
    return Typed(f"IF({x.sql} IS NULL, NULL, size({x.sql}))", INT_TYPE.nullable_as(x.type.nullable))


@scalar("ELEMENT", CATEGORY, "ELEMENT(array)",
        "The only element of an array of one; NULL for an empty array; an error for more.")
def element(call):
    x = call.args(1)[0]
    _array(call)
    return Typed(f"CASE WHEN {x.sql} IS NULL OR size({x.sql}) = 0 THEN NULL WHEN size({x.sql}) = 1 THEN {x.sql}[0] "
                 f"ELSE raise_error('ELEMENT: the array has more than one element') END",
                 x.type.children[0].nullable_as(True))


@scalar("ARRAY_CONTAINS", CATEGORY, "ARRAY_CONTAINS(haystack, needle)",
        "Whether the array holds the value (a NULL needle: whether it holds a NULL).")
def array_contains(call):
    call.arity(2)
    arr = _array(call)
    value = _element(call, arr, 1)
    v = lambda_var()
    return Typed(f"IF({arr.sql} IS NULL, NULL, exists({arr.sql}, {v} -> {v} <=> {value.sql}))",
                 BOOLEAN_TYPE.nullable_as(arr.type.nullable))


@scalar("ARRAY_POSITION", CATEGORY, "ARRAY_POSITION(haystack, needle)",
        "The 1-based position of the first element equal to NEEDLE; 0 if none; NULL if either is NULL.")
def array_position(call):
    call.arity(2)
    arr = _array(call)
    value = _element(call, arr, 1)
    return Typed(f"IF({arr.sql} IS NULL OR {value.sql} IS NULL, NULL, CAST(array_position({arr.sql}, {value.sql}) "
                 f"AS INT))", INT_TYPE.nullable_as(call.nullable()))


def _with(call, fn: str):
    call.arity(2)
    arr = _array(call)
    value = _element(call, arr, 1)
    element = arr.type.children[0].nullable_as(arr.type.children[0].nullable or value.type.nullable)
    return Typed(f"IF({arr.sql} IS NULL, NULL, {fn}({arr.sql}, {value.sql}))",
                 t("ARRAY", children=(element,), nullable=arr.type.nullable))


@scalar("ARRAY_APPEND", CATEGORY, "ARRAY_APPEND(array, element)", "The array with ELEMENT (maybe NULL) added at the end.")
def array_append(call):
    return _with(call, "array_append")


@scalar("ARRAY_PREPEND", CATEGORY, "ARRAY_PREPEND(array, element)",
        "The array with ELEMENT (maybe NULL) added at the beginning.")
def array_prepend(call):
    return _with(call, "array_prepend")


@scalar("ARRAY_REMOVE", CATEGORY, "ARRAY_REMOVE(haystack, needle)",
        "The array without the elements equal to NEEDLE (a NULL needle removes the NULLs).")
def array_remove(call):
    call.arity(2)
    arr = _array(call)
    value = _element(call, arr, 1)
    v = lambda_var()
    return Typed(f"IF({arr.sql} IS NULL, NULL, filter({arr.sql}, {v} -> NOT ({v} <=> {value.sql})))", arr.type)


@scalar("ARRAY_DISTINCT", CATEGORY, "ARRAY_DISTINCT(haystack)", "The array without duplicates, first occurrences kept.")
def array_distinct(call):
    arr = call.args(1)[0]
    _array(call)
    return Typed(f"array_distinct({arr.sql})", arr.type)


@scalar("ARRAY_REVERSE", CATEGORY, "ARRAY_REVERSE(haystack)", "The array in reverse order.")
def array_reverse(call):
    arr = call.args(1)[0]
    _array(call)
    return Typed(f"reverse({arr.sql})", arr.type)


@scalar("ARRAY_SLICE", CATEGORY, "ARRAY_SLICE(array, start_offset[, end_offset])",
        "The elements from START_OFFSET to END_OFFSET (default: the end), both included; offsets are 1-based, "
        "negative ones count from the end and 0 is the beginning.")
def array_slice(call):
    args = call.args(2, 3)
    arr = _array(call)
    call.need(1, "integer")
    size = f"size({arr.sql})"

    def offset(sql: str) -> str:
        return f"(CASE WHEN {sql} < 0 THEN {size} + {sql} + 1 WHEN {sql} = 0 THEN 1 ELSE {sql} END)"

    start = f"greatest({offset(args[1].sql)}, 1)"
    end = f"least({offset(call.need(2, 'integer').sql)}, {size})" if len(args) == 3 else size
    value = (f"(CASE WHEN {' OR '.join(a.sql + ' IS NULL' for a in args)} THEN NULL "
             f"WHEN {start} > {end} THEN slice({arr.sql}, 1, 0) ELSE slice({arr.sql}, {start}, {end} - {start} + 1) END)")
    return Typed(value, arr.type.nullable_as(call.nullable()))


@scalar("ARRAY_SORT", CATEGORY, "ARRAY_SORT(array[, ascending_order[, null_first]])",
        "The array sorted, ascending with NULLs first by default; descending puts NULLs last unless NULL_FIRST says "
        "otherwise.")
def array_sort(call):
    args = call.args(1, 2, 3)
    arr = _array(call)
    if len(args) == 1:
        return Typed(f"sort_array({arr.sql}, TRUE)", arr.type)
    asc = call.need(1, "boolean").sql
    nulls_first = call.need(2, "boolean").sql if len(args) == 3 else asc
    v = lambda_var()
    values = f"filter({arr.sql}, {v} -> {v} IS NOT NULL)"
    nulls = f"filter({arr.sql}, {v} -> {v} IS NULL)"
    value = (f"(CASE WHEN {' OR '.join(a.sql + ' IS NULL' for a in args)} THEN NULL WHEN {nulls_first} "
             f"THEN concat({nulls}, sort_array({values}, {asc})) ELSE concat(sort_array({values}, {asc}), {nulls}) END)")
    return Typed(value, arr.type.nullable_as(call.nullable()))


def _two_arrays(call, fn: str):
    a, b = call.args(2)
    _array(call, 0), _array(call, 1)
    (a, b), common = call.tr.coerce([a, b], call.node, call.name)
    return Typed(f"{fn}({a.sql}, {b.sql})", common.nullable_as(call.nullable()))


@scalar("ARRAY_UNION", CATEGORY, "ARRAY_UNION(array1, array2)",
        "The elements of both arrays without duplicates, in order of first appearance.")
def array_union(call):
    return _two_arrays(call, "array_union")


@scalar("ARRAY_INTERSECT", CATEGORY, "ARRAY_INTERSECT(array1, array2)",
        "The elements of ARRAY1 that are also in ARRAY2, without duplicates, in ARRAY1's order.")
def array_intersect(call):
    return _two_arrays(call, "array_intersect")


@scalar("ARRAY_EXCEPT", CATEGORY, "ARRAY_EXCEPT(array1, array2)",
        "The elements of ARRAY1 that are not in ARRAY2, without duplicates, in ARRAY1's order.")
def array_except(call):
    return _two_arrays(call, "array_except")


@scalar("ARRAY_CONCAT", CATEGORY, "ARRAY_CONCAT(array1, …)", "The arrays one after the other; NULL if any is NULL.")
def array_concat(call):
    args = call.args(*range(1, 255))
    for i in range(len(args)):
        _array(call, i)
    values, common = call.tr.coerce(args, call.node, "ARRAY_CONCAT")
    if len(values) == 1:
        return values[0]
    return Typed(f"concat({', '.join(v.sql for v in values)})", common.nullable_as(call.nullable()))


def _extreme(call, fn: str):
    arr = call.args(1)[0]
    _array(call)
    element = arr.type.children[0]
    if not (element.is_numeric or element.is_character or element.name in ("DATE", "TIMESTAMP", "TIMESTAMP_LTZ",
                                                                            "TIME", "BOOLEAN") or element.is_binary):
        call.refuse(f"{call.name} needs an array of comparable values, not {arr.type}")
    return Typed(f"{fn}({arr.sql})", element.nullable_as(True))


@scalar("ARRAY_MAX", CATEGORY, "ARRAY_MAX(array)", "The largest non-NULL element; NULL for an empty array.")
def array_max(call):
    return _extreme(call, "array_max")


@scalar("ARRAY_MIN", CATEGORY, "ARRAY_MIN(array)", "The smallest non-NULL element; NULL for an empty array.")
def array_min(call):
    return _extreme(call, "array_min")


@scalar("ARRAY_JOIN", CATEGORY, "ARRAY_JOIN(array, delimiter[, nullReplacement])",
        "The array's strings joined with DELIMITER; NULL elements skipped unless replaced.")
def array_join(call):
    args = call.args(2, 3)
    arr = _array(call)
    if not (arr.type.is_null or arr.type.children[0].is_character):
        call.refuse(f"ARRAY_JOIN needs an array of strings, not {arr.type}", hint="CAST the elements to STRING")
    call.need(1, "string")
    extra = f", {call.need(2, 'string').sql}" if len(args) == 3 else ""
    return Typed(f"array_join({arr.sql}, {args[1].sql}{extra})", STRING_TYPE.nullable_as(call.nullable()))


@scalar("SPLIT", CATEGORY, "SPLIT(string, delimiter)",
        "STRING split at every DELIMITER (taken literally) into an ARRAY<STRING>, empty pieces kept; an empty "
        "DELIMITER splits into characters; an empty STRING gives an empty array.")
def split(call):
    s, d = call.args(2)
    call.need(0, "string"), call.need(1, "string")
    value = (f"(CASE WHEN {s.sql} IS NULL OR {d.sql} IS NULL THEN NULL WHEN {s.sql} = '' THEN array() "
             f"WHEN {d.sql} = '' THEN split({s.sql}, '') ELSE split({s.sql}, {quote(call, 1)}, -1) END)")
    return Typed(value, t("ARRAY", children=(STRING_TYPE,), nullable=call.nullable()))


# --------------------------------------------------------------------------- maps

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


@scalar("MAP_ENTRIES", CATEGORY, "MAP_ENTRIES(map)", "The map's entries as an array of ROW<key, value>.")
def map_entries(call):
    m = call.args(1)[0]
    call.need(0, "map")
    row = t("ROW", children=m.type.children, field_names=("key", "value"), nullable=True)
    v = lambda_var()
    return Typed(f"transform(map_entries({m.sql}), {v} -> named_struct('key', {v}.key, 'value', {v}.value))",
                 t("ARRAY", children=(row,), nullable=m.type.nullable))


@scalar("MAP_UNION", CATEGORY, "MAP_UNION(map1, …)",
        "The maps merged; a key in a later map replaces the same key of an earlier one; NULL if any is NULL.")
def map_union(call):
    args = call.args(*range(1, 255))
    for i in range(len(args)):
        call.need(i, "map")
    values, common = call.tr.coerce(args, call.node, "MAP_UNION")
    if len(values) == 1:
        return values[0]
    # map_concat keeps the last value of a repeated key (the session's mapKeyDedupPolicy
    # is LAST_WIN, see job/run/session.py).
    return Typed(f"map_concat({', '.join(v.sql for v in values)})", common.nullable_as(call.nullable()))


@scalar("MAP_FROM_ARRAYS", CATEGORY, "MAP_FROM_ARRAYS(array_of_keys, array_of_values)",
        "A map of the keys to the values at the same positions (the arrays must be as long as each other).")
def map_from_arrays(call):
    keys, values = call.args(2)
    _array(call, 0), _array(call, 1)
    key = keys.type.children[0] if keys.type.name == "ARRAY" else keys.type
    value = values.type.children[0] if values.type.name == "ARRAY" else values.type
    return Typed(f"map_from_arrays({keys.sql}, {values.sql})",
                 t("MAP", children=(key, value), nullable=call.nullable()))

