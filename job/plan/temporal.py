"""Temporal joins: ``JOIN versioned FOR SYSTEM_TIME AS OF left.time``.

**Event time** (``AS OF`` the left input's event-time attribute): the right side is a
versioned table — a PRIMARY KEY and an event-time attribute, the rows of a changelog or
upsert source (or of an append-only table with a key), or a view that deduplicates an
append-only table by key, keeping the last row by event time. Each left row waits until
the watermark passes its time, then is joined with the version valid at that time (the
right row with the latest version time not after it; a deletion ends the key's
versions); a LEFT join pads it with NULLs when no version is valid. The output is
append-only and keeps the left row's time attribute. The join runs in the engine's
``temporalJoin`` operator (engine/…/TemporalJoinOp.java), keyed by the join key, which
must contain the versioned table's primary key (as in Flink).

The watermark is Spark's, the minimum over the query's watermarked inputs. A changelog
or upsert source's watermark is not one of them (its source applies none), so a left row
may be joined before a right row with a smaller time arrives from a lagging right
source; with each input in time order (and at the end of a bounded input) the result is
Flink's.

**Processing time** (``AS OF`` a PROCTIME() attribute) against a ``jdbc`` table is a
lookup join, planned by :mod:`job.plan.lookup`: each left row is joined with the rows
the database holds when it is processed.
"""
from __future__ import annotations

from sqlglot import exp

from job.changelog.columns import SIDE
from job.changelog.specs import TemporalJoin
from job.plan import engine, nodes
from job.plan.event_time import BARRIER, barrier, time_attributes_kept, waits, without_event_time
from job.plan.relation import SIGN, Field, Rel
from job.sql.flink import rules

RETRACT = "__retract"


def plan_temporal_join(planner, left, node):
    from job.plan import join_condition

    right_node = node.this
    version = right_node.args["version"]
    as_of = version.expression
    kind = join_condition.join_kind(node)
    left = planner.settle(left)
    if not isinstance(as_of, exp.Column) or not left.refers_only_to(as_of):
        raise planner.error(as_of, "FOR SYSTEM_TIME AS OF names a time attribute of the join's left input (Flink: "
                                   "Temporal table join currently only supports 'FOR SYSTEM_TIME AS OF' left table's "
                                   "time attribute field)")
    time_field, _ = planner.translator(left, "FOR SYSTEM_TIME AS OF").scope.resolve_column(as_of)
    if time_field.time == "proctime":
        from job.plan import lookup

        return lookup.plan_lookup_join(planner, left, node, kind)
    if time_field.time != "rowtime":
        raise planner.error(as_of, f"'{time_field.name}' is not a time attribute: a temporal join is AS OF the left "
                                   "input's event-time attribute (WATERMARK FOR …) or its PROCTIME() attribute")
    if kind not in ("inner", "left"):
        raise planner.error(node, f"{kind.upper()} temporal joins are not supported (Flink has INNER and LEFT)")
    if not left.append_only:
        raise planner.error(node, "an event-time temporal join of an updating left input is not supported yet",
                            hint="the left input must be append-only")
    if node.args.get("on") is None:
        raise planner.error(node, "a temporal join needs an ON clause with the versioned table's primary key")
    right = versioned(planner, right_node)
    pairs, left_only, right_only, mixed = join_condition.split_condition(planner, left, right, node)
    _check_key(planner, right, pairs, right_node, node)
    if kind == "left" and (right_only or mixed):
        raise planner.error((right_only + mixed)[0], "a condition on the versioned table in a LEFT temporal join is "
                                                     "not supported yet", hint="make the join INNER or move it to WHERE")
    for cond in (left_only if kind == "inner" else []):
        left = planner.filter(left, cond, "the JOIN condition")
    joined = _join(planner, left, right, pairs, kind, time_field, left_only if kind == "left" else [])
    for cond in right_only + mixed:
        joined = planner.filter(joined, cond, "the JOIN condition")
    return joined


def versioned(planner, node: exp.Table) -> Rel:
    """The right side as versions: its columns and ``__retract`` (a deletion), one row per
    change. Update-before rows say nothing about versions (Flink drops them)."""
    from pyspark.sql import functions as F

    from job.connectors.base import APPEND, UPSERT

    bare = node.copy()
    bare.set("version", None)
    alias = node.alias_or_name
    name = node.name
    in_cte = any(name.lower() in ctes for ctes in planner._ctes)
    table = None if in_cte or planner.catalog.view(name) is not None else planner.catalog.table(name)
    view = planner.catalog.view(name) if not in_cte else None
    rows = _deduplicated_rows(planner, view.parsed.tree) if view is not None else None
    if rows is not None:
        # A view that keeps each key's last row by event time: its versions are the
        # rows it deduplicates, each valid from its own time (the view's output, netted
        # per micro-batch, would show only a batch's last version per key).
        query, keys = rows
        planner._queries.append(view.parsed)
        try:
            rel = planner.settle(planner.query(query))
        finally:
            planner._queries.pop()
        rel = planner.requalify(rel, alias)
        by_name = {f.name.lower(): f for f in rel.fields}
        if not rel.append_only or any(k.lower() not in by_name for k in keys):
            rows = None
        else:
            rel.unique_key = frozenset(by_name[k.lower()].col for k in keys)
            _check_versioned(planner, rel, node)
            df = rel.df.select(*[F.col(f"`{c}`") for c in rel.cols()], F.lit(False).alias(RETRACT))
            return Rel(df, rel.fields, False, rel.unique_key,
                       rel.steps + [nodes.spark("versions", f"versions: the rows view {view.name} deduplicates by "
                                                f"({', '.join(keys)}), each valid from its event time", keys=keys)])
    if table is None:
        rel = planner.settle(planner.relation(bare))
        _check_versioned(planner, rel, node)
        # A deduplicating view retracts a key's previous row when a later one arrives:
        # the update-before of an upsert, dropped like Flink drops it.
        df = planner.signed(rel).filter(F.col(SIGN) > 0).select(*[F.col(f"`{c}`") for c in rel.cols()],
                                                                  F.lit(False).alias(RETRACT))
        return Rel(df, rel.fields, False, rel.unique_key,
                   rel.steps + [nodes.spark("versions", "versions: the view's rows by key")])
    from job.plan.scan import table_fields

    bound = planner.catalog.bound_table(table.name, "source")
    stream = planner.open_source(bound)
    fields, renamed = table_fields(planner, table, alias)
    pk = frozenset(f.col for f in fields if f.name in table.primary_key) or None
    df = stream.df
    if stream.mode == APPEND:
        df = df.select(*renamed, F.lit(False).alias(RETRACT))
        what = "append-only rows"
    elif stream.mode == UPSERT:
        df = df.select(*renamed, (F.col("__kind") == "D").alias(RETRACT))
        what = "upserts and deletes"
    else:
        df = df.filter(F.col("__kind") != "-U").select(*renamed, (F.col("__kind") == "-D").alias(RETRACT))
        what = "changelog without update-before rows"
    rel = Rel(df, fields, False, pk, [nodes.scan(f"scan {table.name}: versioned table ({what})",
                                                 keys=table.primary_key or (), table=bound)])
    _check_versioned(planner, rel, node)
    return rel


def _deduplicated_rows(planner, tree):
    """For a view ``SELECT cols FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY k ORDER BY
    rowtime DESC) AS rn FROM t …) WHERE rn = 1``: (the same query without the ranking,
    the partition column names); None for any other view."""
    from job.plan import ranking

    if not isinstance(tree, exp.Select) or tree.args.get("joins") or tree.args.get("group"):
        return None
    from_ = tree.args.get("from_") or tree.args.get("from")
    if from_ is None or not isinstance(from_.this, exp.Subquery) or not isinstance(from_.this.this, exp.Select):
        return None
    inner = from_.this.this
    found = ranking._rank_item(inner)
    if len(found) != 1 or not isinstance(found[0][1], exp.Alias):
        return None
    position, item, window = found[0]
    order = window.args.get("order")
    partition = window.args.get("partition_by") or []
    if window.this.name.upper() != "ROW_NUMBER" or order is None or len(order.expressions) != 1 \
            or not order.expressions[0].args.get("desc") or not partition \
            or not all(isinstance(p, exp.Column) for p in partition):
        return None
    alias = item.alias.lower()
    where = tree.args.get("where")
    lower, upper, rest = ranking.rank_range(where.this if where is not None else None,
                                            lambda n: isinstance(n, exp.Column) and n.name.lower() == alias)
    if (lower, upper) != (1, 1) or rest:
        return None
    if any(isinstance(c, exp.Column) and c.name.lower() == alias for e in tree.expressions for c in e.find_all(exp.Column)):
        return None
    plain = inner.copy()
    plain.set("expressions", [e for i, e in enumerate(plain.expressions) if i != position])
    outer = tree.copy()
    outer.set("where", None)
    subquery = from_.this.copy()
    subquery.set("this", plain)
    outer.set("from_" if "from_" in outer.args else "from", exp.From(this=subquery))
    return outer, [p.name for p in partition]


def _check_versioned(planner, rel: Rel, node) -> None:
    if not rel.unique_key:
        raise planner.error(node, f"'{node.name}' is not a versioned table: an event-time temporal join needs a "
                                  "PRIMARY KEY on it (Flink: Temporal Table Join requires primary key in versioned "
                                  "table, but no primary key can be found)")
    if rel.rowtime is None:
        raise planner.error(node, f"'{node.name}' is not a versioned table: an event-time temporal join needs an "
                                  "event-time attribute on it (Flink: Event-Time Temporal Table Join requires both "
                                  "primary key and row time attribute in versioned table, but no row time attribute "
                                  "can be found)")


def _check_key(planner, right: Rel, pairs, right_node, node) -> None:
    keyed = set()
    for _, b in pairs:
        if isinstance(b, exp.Column):
            found, path = planner.translator(right, "the JOIN condition").scope.resolve_column(b)
            if not path:
                keyed.add(found.col)
    if not right.unique_key <= keyed:
        names = ", ".join(sorted(f.name for f in right.fields if f.col in right.unique_key))
        raise planner.error(node.args.get("on") or node, f"the versioned table's primary key [{names}] must be "
                                                         "included in the equality conditions of the temporal join "
                                                         "(as Flink requires)")


def _join(planner, left: Rel, right: Rel, pairs, kind: str, time_field: Field, gates: list) -> Rel:
    from pyspark.sql import functions as F

    key_types = []
    lvals = [planner.expr(left, a, "the JOIN condition") for a, _ in pairs]
    rvals = [planner.expr(right, b, "the JOIN condition") for _, b in pairs]
    for (a, _), lv, rv in zip(pairs, lvals, rvals):
        if not rules.comparable(lv.type, rv.type):
            raise planner.error(a, f"implicit type conversion between {lv.type.summary(False)} and "
                                   f"{rv.type.summary(False)} is not supported on a join's condition")
        key_types.append(rules.least_restrictive([lv.type, rv.type]).nullable_as(True))

    def keys(rel, values, gate_conds):
        tr = planner.translator(rel, "the JOIN condition")
        cols = [F.expr((v if v.type.nullable_as(True) == k else tr.cast(v, k)).sql) for v, k in zip(values, key_types)]
        no_key = F.lit(False)
        for c in cols:
            no_key = no_key | c.isNull()
        for g in gate_conds:
            no_key = no_key | ~F.coalesce(F.expr(tr.condition(g, "the JOIN condition").sql), F.lit(False))
        return [F.when(no_key, F.lit(None)).otherwise(c).alias(f"__k{i}") for i, c in enumerate(cols)], no_key

    lkeys, lnone = keys(left, lvals, gates)
    rkeys, rnone = keys(right, rvals, [])
    right_time = right.rowtime
    lcols, rcols = left.cols(), right.cols()
    # The barrier goes into the operator's input (so Spark keeps it): the filters below
    # then stay above the watermark (see job.plan.event_time.barrier).
    ldf = barrier(left.df).select(*lkeys, F.lit(0).alias(SIDE),
                                  F.expr(f"unix_millis(`{time_field.col}`)").alias("__t"),
                                  F.lit(None).cast("boolean").alias(RETRACT), *[F.col(f"`{c}`") for c in lcols],
                                  lnone.alias("__no_key"), F.col(BARRIER))
    rdf = barrier(right.df).filter(~rnone).select(*rkeys, F.lit(1).alias(SIDE),
                                                  F.expr(f"unix_millis(`{right_time.col}`)").alias("__t"),
                                                  F.col(RETRACT), *[F.col(f"`{c}`") for c in rcols], F.col(BARRIER))
    matched = ldf.filter(~F.col("__no_key")).drop("__no_key").unionByName(rdf, allowMissingColumns=True)
    spec = TemporalJoin(keys=tuple(f"__k{i}" for i in range(len(pairs))), left=tuple(lcols), right=tuple(rcols),
                        time="__t", retract=RETRACT, left_outer=kind == "left")
    out = engine.call(planner, spec, without_event_time(matched))
    if kind == "left":
        # A left row whose key is NULL (or fails the left side's ON condition) matches no
        # version: emitted padded, without waiting.
        padded = ldf.filter(F.col("__no_key") & ~F.col(BARRIER)).select(*[F.col(f"`{c}`") for c in lcols],
                                                       *[F.lit(None).cast(t).alias(c) for c, t in
                                                         zip(rcols, [right.df.schema[c].dataType for c in rcols])])
        out = out.unionByName(padded)
    out = time_attributes_kept(out, [left.df, right.df], left.fields + right.fields)
    waits(planner, 0)
    rfields = right.fields if kind == "inner" else [Field(f.name, f.qualifier, f.col, f.type.nullable_as(True), f.time)
                                                     for f in right.fields]
    on = ", ".join(planner.current.flink_sql(a) + " = " + planner.current.flink_sql(b) for a, b in pairs)
    step = nodes.engine("temporal_join", "temporalJoin",
                        f"{kind} temporal join FOR SYSTEM_TIME AS OF {time_field.name} on {on}",
                        "engine: temporalJoin; a left row is joined with the version valid at its time once the "
                        "watermark passes it", keys=tuple(planner.current.flink_sql(a) for a, _ in pairs),
                        spec=planner.spec_for("temporalJoin"), inputs=2)
    return Rel(out, left.fields + rfields, True, None, left.steps + right.steps + [step],
               computed=left.computed | right.computed)
