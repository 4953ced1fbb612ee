"""Lookup joins: ``JOIN dim FOR SYSTEM_TIME AS OF left.proc_time`` against a database.

A temporal join AS OF the left input's processing-time attribute (``PROCTIME()``) is
Flink's lookup join: each left row is joined with the rows the dimension table holds
for its key when the row is processed — later changes of the table do not change rows
already emitted. The table must be one that can be looked up by key: a ``jdbc`` table
(any other connector is refused, as Flink refuses a processing-time temporal join of a
table without a lookup source). The equalities of the ON clause must use plain columns of
the table on its side: they are the lookup key.

Each task looks its rows up in chunks, one query per chunk with the chunk's distinct keys
(the engine's ``lookupJoin``, engine/…/LookupJoin.java); nothing is kept in state. The
output is append-only when the left input is (a left row's change passes through with
its looked-up rows).
"""
from __future__ import annotations

from sqlglot import exp

from job.changelog.specs import ConnectionProperty, LookupJoin
from job.plan import engine, nodes
from job.plan.relation import SIGN, Field, Rel
from job.sql.flink import rules


def plan_lookup_join(planner, left, node, kind):
    from pyspark.sql import functions as F

    from job.plan import join_condition
    from job.sql.flink.columns import column_type

    right_node = node.this
    name = right_node.name
    table = planner.catalog.table(name) if planner.catalog.view(name) is None else None
    bound = planner.catalog.bound_table(name, "source") if table is not None else None
    connector, options = (bound.connector, dict(bound.options)) if bound is not None else (None, {})
    if table is None or connector.identifier != "jdbc":
        what = f"a '{connector.identifier}' table" if table is not None else "a view"
        raise planner.error(right_node.args["version"], f"a processing-time temporal join looks rows up in a "
                                                        f"database: '{name}' is {what}, not a 'jdbc' table (Flink: "
                                                        "Processing-time temporal join is not supported yet)",
                            hint="declare the dimension table with 'connector' = 'jdbc', or join AS OF the left "
                                 "input's event time against a versioned table")
    if kind not in ("inner", "left"):
        raise planner.error(node, f"{kind.upper()} lookup joins are not supported (Flink has INNER and LEFT)")
    alias = right_node.alias_or_name
    fields = [Field(c.name, alias, planner.fresh(), column_type(table, c, planner.settings))
              for c in table.physical_columns]
    right = Rel(None, fields, False)
    pairs, left_only, right_only, mixed = join_condition.split_condition(planner, left, right, node)
    if not pairs:
        raise planner.error(node, "a lookup join needs an equality between the left input and a column of the "
                                  "looked-up table in its ON clause (the lookup key)")
    if kind == "left" and (right_only or mixed):
        raise planner.error((right_only + mixed)[0], "a condition on the looked-up table in a LEFT lookup join is "
                                                     "not supported yet", hint="make the join INNER or move it to WHERE")
    left = planner.settle(left)
    for cond in (left_only if kind == "inner" else []):
        left = planner.filter(left, cond, "the JOIN condition")
    gates = left_only if kind == "left" else []

    key_columns, key_values = [], []
    for a, b in pairs:
        if not isinstance(b, exp.Column):
            raise planner.error(b, "the lookup key is a plain column of the looked-up table")
        found, path = planner.translator(right, "the JOIN condition").scope.resolve_column(b)
        if path:
            raise planner.error(b, "the lookup key is a plain column of the looked-up table")
        value = planner.expr(left, a, "the JOIN condition")
        if not rules.comparable(value.type, found.type):
            raise planner.error(a, f"implicit type conversion between {value.type.summary(False)} and "
                                   f"{found.type.summary(False)} is not supported on a join's condition")
        key_columns.append(fields.index(found))
        key_values.append(value if value.type.nullable_as(True) == found.type.nullable_as(True)
                          else planner.translator(left, "the JOIN condition").cast(value, found.type.nullable_as(True)))

    df = left.df if left.append_only else planner.signed(left)
    passed = left.cols() + ([SIGN] if SIGN in df.columns else [])
    gate = F.lit(False)
    tr = planner.translator(left, "the JOIN condition")
    for g in gates:
        gate = gate | ~F.coalesce(F.expr(tr.condition(g, "the JOIN condition").sql), F.lit(False))
    keys = [F.when(gate, F.lit(None)).otherwise(F.expr(v.sql)).alias(f"__lk{i}") for i, v in enumerate(key_values)]
    staged = df.select(*[F.col(f"`{c}`") for c in passed], *keys)
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    from job.connectors.jdbc import Database

    db = Database(planner.spark, table, options)
    props = db.properties()
    types = StructType([StructField(f"c{i}", _parse_datatype_string(f.type.spark), True)
                        for i, f in enumerate(fields)])
    quote = db.dialect.quote if db.dialect is not None else (lambda n: n)
    spec = LookupJoin(url=db.url, driver=db.driver_class,
                      properties=tuple(ConnectionProperty(name, props[name]) for name in sorted(props)),
                      table=options["table-name"], columns=tuple(quote(c.name) for c in table.physical_columns),
                      column_types=types.json(), key_columns=tuple(key_columns),
                      keys=tuple(f"__lk{i}" for i in range(len(key_values))), passed=tuple(passed),
                      left_outer=kind == "left", chunk=1000)
    out = engine.call(planner, spec, staged)
    out = out.select(*[F.col(f"`{c}`") for c in passed], *[F.col(f"r{i}").alias(f.col) for i, f in enumerate(fields)])
    if kind == "left":
        fields = [Field(f.name, f.qualifier, f.col, f.type.nullable_as(True)) for f in fields]
    on = ", ".join(planner.current.flink_sql(a) + " = " + planner.current.flink_sql(b) for a, b in pairs)
    step = nodes.engine("lookup_join", "lookupJoin", f"{kind} lookup join of {table.name} on {on}",
                        "engine: lookupJoin; each task queries the database for its rows' keys, in chunks; no state",
                        keys=tuple(planner.current.flink_sql(a) for a, _ in pairs), stateful=False,
                        spec=planner.spec_for("lookupJoin"))
    rel = Rel(out, left.fields + fields, left.append_only, None, left.steps + [step], computed=left.computed)
    for cond in right_only + mixed:
        rel = planner.filter(rel, cond, "the JOIN condition")
    return rel
