"""Flink functions outside the categories of its main function list: grouping, catalog,
bitmaps, network addresses, structured types, model inference and the process table
functions, the window table functions and the legacy group window functions."""
from __future__ import annotations

from sqlglot import exp

from job.sql.flink.functions import AGGREGATE, SCALAR, TABLE, WINDOW, not_supported, planned, scalar
from job.sql.flink.typed import Typed

_IN_AGGREGATION = "in the SELECT list or HAVING clause of a GROUP BY query"
planned("GROUPING", "grouping", "GROUPING(key [, key]*)",
        "With GROUPING SETS, ROLLUP or CUBE: a bit per key, 1 where the row's grouping leaves the key out (its "
        "NULL is not a NULL of the data); the first key's bit is the highest. BIGINT NOT NULL.",
        _IN_AGGREGATION, kind=SCALAR)
planned("GROUPING_ID", "grouping", "GROUPING_ID(key [, key]*)", "The same bit vector as GROUPING. BIGINT NOT NULL.",
        _IN_AGGREGATION, kind=SCALAR)
planned("GROUP_ID", "grouping", "GROUP_ID()",
        "Which copy of a grouping set written more than once the row belongs to: 0, 1, … BIGINT NOT NULL.",
        _IN_AGGREGATION, kind=SCALAR)

not_supported("CURRENT_DATABASE", "catalog", "CURRENT_DATABASE()")

for _name in ("BITMAP_AND", "BITMAP_ANDNOT", "BITMAP_BUILD", "BITMAP_CARDINALITY", "BITMAP_FROM_BYTES", "BITMAP_OR",
              "BITMAP_TO_ARRAY", "BITMAP_TO_BYTES", "BITMAP_TO_STRING", "BITMAP_XOR"):
    not_supported(_name, "other", f"{_name}(…)", why="the BITMAP type")
for _name in ("BITMAP_AND_AGG", "BITMAP_AND_CARDINALITY_AGG", "BITMAP_BUILD_AGG", "BITMAP_BUILD_CARDINALITY_AGG",
              "BITMAP_OR_AGG", "BITMAP_OR_CARDINALITY_AGG", "BITMAP_XOR_AGG", "BITMAP_XOR_CARDINALITY_AGG"):
    not_supported(_name, "other", f"{_name}(…)", why="the BITMAP type", kind=AGGREGATE)
for _name in ("INET_ATON", "INET_NTOA"):
    not_supported(_name, "other", f"{_name}(…)")
for _name in ("OBJECT_OF", "OBJECT_UPDATE"):
    not_supported(_name, "value", f"{_name}(…)", why="structured types")
for _name in ("ML_PREDICT", "FROM_CHANGELOG", "TO_CHANGELOG"):
    not_supported(_name, "table", f"{_name}(…)", kind=TABLE)
not_supported("SOURCE_WATERMARK", "other", "SOURCE_WATERMARK()", why="a source's own watermarks")


@scalar("CURRENT_WATERMARK", "temporal", "CURRENT_WATERMARK(rowtime)",
        "The watermark the rows before this one made on ROWTIME's table (the largest event time so far minus the "
        "WATERMARK's delay, as Flink's assigner computes it with one reader), NULL before the first. Over a "
        "table's rows (filtered, projected, through views), not in a query with event-time operators yet.")
def current_watermark(call):
    from job.plan.relation import WATERMARK

    call.arity(1)
    node = call.raw[0]
    scope = getattr(call.tr, "scope", None)
    if not isinstance(node, exp.Column) or not hasattr(scope, "resolve_column"):
        call.refuse("CURRENT_WATERMARK takes a rowtime attribute column of the table the query reads")
    field, path = scope.resolve_column(node)
    if path or field.time != "rowtime":
        call.refuse(f"CURRENT_WATERMARK takes a rowtime attribute (a column with a WATERMARK), not {node.sql()}",
                    node=node)
    for hidden in scope.rel.fields:
        if hidden.name == WATERMARK and hidden.qualifier == field.qualifier:
            return Typed(f"`{hidden.col}`", hidden.type)
    call.refuse("CURRENT_WATERMARK is supported over the rowtime attribute of a table read by this query (also "
                "through views), not through a join or an aggregation yet", node=node)

# Window table functions: planned from FROM TABLE(…) (job/plan/windows.py).
for _name, _sig in [("TUMBLE", "TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size [, offset]))"),
                    ("HOP", "TABLE(HOP(TABLE t, DESCRIPTOR(ts), slide, size [, offset]))"),
                    ("CUMULATE", "TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), step, size [, offset]))"),
                    ("SESSION", "TABLE(SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap))")]:
    planned(_name, "window", _sig, "A window table function (event time); also the legacy group window "
            f"GROUP BY {_name}(ts, …)" if _name != "CUMULATE" else "A window table function (event time).",
            "as a window table function in FROM TABLE(…) or (TUMBLE, HOP, SESSION) as a group window in GROUP BY",
            kind=TABLE)
for _kind in ("TUMBLE", "HOP", "SESSION"):
    for _part, _doc in (("START", "the window's start"), ("END", "the window's end"),
                        ("ROWTIME", "the window's event time (end - 1 ms)")):
        planned(f"{_kind}_{_part}", "window", f"{_kind}_{_part}(ts, …)", f"In a query grouped by {_kind}(…): "
                f"{_doc}.", f"in the select list of a query grouped by {_kind}(ts, …)")
    not_supported(f"{_kind}_PROCTIME", "window", f"{_kind}_PROCTIME(ts, …)",
                  why="processing-time windows are not supported yet", kind=WINDOW)
