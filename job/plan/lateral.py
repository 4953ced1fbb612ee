"""``FROM t, LATERAL TABLE(f(x))`` — also ``CROSS JOIN LATERAL TABLE(…)``, ``JOIN LATERAL
TABLE(…) ON TRUE`` and ``LEFT JOIN LATERAL TABLE(…) ON TRUE`` — with ``f`` a user's Flink
table function (``CREATE FUNCTION f AS '…'`` of a class extending ``TableFunction``): each
row with every row ``f``'s ``eval`` collects for it; on a LEFT JOIN a row for which it
collects none is kept, padded with NULLs.

Its columns are named as Flink names them — a ROW output's field names, ``EXPR$0`` for an
atomic output — or by ``AS T(a, b)``. The call runs in Spark's JVM: the Spark function
registered for the chosen ``eval`` (job.plan.user_functions) returns the rows it collected
as an array of structs, which Spark's ``inline`` / ``inline_outer`` turns into rows. A
table function keeps no state, so over a changelog each change gives its output rows with
its own sign (the ``__sign`` column passes through, as for UNNEST: job.plan.unnest).
"""
from __future__ import annotations

from sqlglot import exp

from job.plan import nodes
from job.plan.relation import Field, Rel
from job.plan.unnest import correlated_source, join_side


def plan_lateral_table(planner, left: Rel, node: exp.Join) -> Rel:
    from pyspark.sql import functions as F

    from job.sql.flink.functions import call_table, lookup

    lateral = node.this
    call = lateral.this
    if not (isinstance(call, exp.Anonymous) and call.name.upper() == "TABLE" and len(call.expressions) == 1
            and isinstance(call.expressions[0], exp.Anonymous)):
        raise planner.error(lateral, "LATERAL is supported as LATERAL TABLE(f(…)) of a user-defined table function",
                            hint="CROSS JOIN UNNEST(array) expands an array into rows")
    call = call.expressions[0]
    outer, condition = join_side(planner, node, "LATERAL TABLE(…)", conditions=True)
    name = call.name
    builtin = lookup(name.upper()) is not None
    user = planner.settings.user_function(name, builtin=builtin)
    if user is None:
        if builtin:
            raise planner.error(call, f"Function '{name}' cannot be used as a table function",
                                hint="a table function is a class extending org.apache.flink.table.functions."
                                     "TableFunction, declared with CREATE FUNCTION")
        raise planner.error(call, f"No match found for function signature {name}(…): no CREATE FUNCTION declares "
                                  f"a table function '{name}'")
    left, source = correlated_source(planner, left)
    tr = planner.translator(left, "LATERAL TABLE")
    value = call_table(tr, call, user)
    output = value.type
    if output.name == "ROW":
        names, types = list(output.field_names), list(output.children)
    else:
        names, types = ["EXPR$0"], [output]
    alias = lateral.args.get("alias")
    qualifier = alias.name if alias is not None and alias.name else None
    renamed = [c.name for c in (alias.args.get("columns") or [])] if alias is not None else []
    if renamed and len(renamed) != len(names):
        raise planner.error(alias, f"List of column aliases must have same degree as table; table has {len(names)} "
                                   f"columns ({', '.join(repr(n) for n in names)}), whereas alias list has "
                                   f"{len(renamed)} columns")
    rows, cols = planner.fresh(), [planner.fresh() for _ in names]
    # The call in a projection of its own, then inline: Spark evaluates a nondeterministic
    # function (isDeterministic() = false) in a projection, once per row.
    df = source.select("*", F.expr(value.sql).alias(rows))
    df = df.select(*[F.col(c) for c in source.columns],
                   F.expr(f"{'inline_outer' if outer else 'inline'}({rows})").alias(*cols))
    fields = [Field(n, qualifier, c, t.nullable_as(True) if outer else t)
              for n, c, t in zip(renamed or names, cols, types)]
    rel = Rel(df, left.fields + fields, left.append_only, None,
              left.steps + [nodes.spark("correlate", f"{'left join' if outer else 'cross join'} lateral table "
                                                     f"{planner.current.flink_sql(call)}",
                                        "stateless: the table function's eval per row in Spark's JVM, its rows "
                                        "by Spark's inline")],
              computed=left.computed)
    if condition is not None:
        rel = planner.filter(rel, condition, "ON")
    return rel
