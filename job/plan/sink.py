"""The last step of a query: its rows → what the sink table can take.

* The query's columns meet the sink's columns by position, converted as Flink converts
  them on INSERT (implicit casts that lose nothing; anything else is an error, as in
  Flink: "Incompatible types for sink column").
* Append-only result → the connector's own streaming writer (exactly-once file sink,
  Kafka sink…).
* Updating result into an upsert sink (a PRIMARY KEY) → per micro-batch, the net change
  per key becomes one upsert or one delete. That is exact when the query's rows are
  unique on the sink key, which the planner proves (or a materializer makes true).
* Updating result into a sink that shows changes (print, blackhole) → +I/-U/+U/-D.
* Updating result into an append-only sink → a planning error, as in Flink.
"""
from __future__ import annotations

from dataclasses import dataclass

from job.connectors.base import APPEND, UPSERT, Connector, Sink
from job.changelog.columns import OP
from job.errors import PipelineError
from job.plan import engine, nodes
from job.plan.nodes import with_mode
from job.plan.relation import NET, SIGN, Rel
from job.sql.flink.translate import Typed
from job.sql.types import LogicalType, logical_type


# to_json options that round-trip every value (timestamps to the microsecond), so that two
# rows compare equal as JSON exactly when they are equal.
ROW_JSON = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
            "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"}


@dataclass
class SinkPlan:
    writer: object             # DataStreamWriter, without checkpoint/trigger/name
    mode: str                  # how the sink is fed, for --explain
    steps: list                # job.plan.nodes.PlanNode: the sink's own steps, the write last


def target_columns(table, column_names: tuple[str, ...]) -> list:
    """The sink columns an INSERT writes, in query order."""
    persisted = [c for c in table.columns if c.is_persisted]
    if not column_names:
        return persisted
    out = []
    for name in column_names:
        col = table.column(name)
        if col is None:
            raise PipelineError(f"table '{table.name}' has no column '{name}'",
                                hint="columns: " + ", ".join(c.name for c in persisted))
        if not col.is_persisted:
            raise PipelineError(f"column '{name}' of table '{table.name}' is {col.kind}{' VIRTUAL' if col.virtual else ''} "
                                "and cannot be written")
        out.append(col)
    return out


_WIDER = {"TINYINT": 1, "SMALLINT": 2, "INT": 3, "BIGINT": 4, "DECIMAL": 5, "FLOAT": 6, "DOUBLE": 7}


def implicit_cast(source: LogicalType, target: LogicalType) -> bool:
    """Does Flink convert a query column of type ``source`` into a sink column of type
    ``target`` without an explicit CAST (its LogicalTypeCasts.supportsImplicitCast)?"""
    if source.is_null or source.nullable_as(target.nullable) == target:
        return True
    if source.is_character and target.is_character:
        return True
    if source.is_binary and target.is_binary:
        return True
    if source.is_numeric and target.is_numeric:
        return _WIDER[source.name] <= _WIDER[target.name] or (source.name == target.name == "DECIMAL")
    if source.name == target.name and source.name in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME", "DATE"):
        return True
    if source.name == target.name and source.name in ("ARRAY", "MAP", "MULTISET", "ROW"):
        return len(source.children) == len(target.children) and all(
            implicit_cast(a, b) for a, b in zip(source.children, target.children))
    return False


def shape_for_sink(planner, rel: Rel, table, column_names: tuple[str, ...]):
    """Select the query's columns as the sink's columns, converted to the sink's types.

    Returns (DataFrame with sink columns + __sign (+ __net while the rel's net_key is
    set), {internal col → sink column name})."""
    from pyspark.sql import functions as F

    targets = target_columns(table, column_names)
    if len(targets) != len(rel.fields):
        raise PipelineError(f"the query produces {len(rel.fields)} columns but table '{table.name}' takes "
                            f"{len(targets)} ({', '.join(c.name for c in targets)})",
                            hint="list the target columns: INSERT INTO t (a, b) SELECT …")
    written = {c.name for c in targets}
    tr = planner.translator(rel, "INSERT")
    selected, mapping = [], {}
    for position, (field, col) in enumerate(zip(rel.fields, targets)):
        target = logical_type(col.flink_type)
        if not implicit_cast(field.type, target):
            raise PipelineError(
                f"Incompatible types for sink column '{col.name}' at position {position}: the query gives "
                f"{field.type}, table '{table.name}' takes {target}",
                hint=f"CAST the value in the query, e.g. CAST(… AS {target.summary(False)})")
        value = Typed(f"`{field.col}`", field.type)
        if field.type.nullable_as(target.nullable) != target and not field.type.is_null:
            value = tr.cast(value, target.nullable_as(True))
        selected.append(F.expr(value.sql).cast(col.spark_type).alias(col.name))
        mapping[field.col] = col.name
    for col in table.columns:  # persisted columns the INSERT leaves out are NULL
        if col.is_persisted and col.name not in written:
            selected.append(F.lit(None).cast(col.spark_type).alias(col.name))
    order = [c.name for c in table.columns if c.is_persisted]
    df = planner.signed(rel)
    extra = [F.col(SIGN)] + ([F.col(NET)] if rel.net_key is not None else [])
    df = df.select(*selected, *extra)
    return df.select(*[F.col(f"`{n}`") for n in order], *extra), mapping


def plan_sink(planner, rel: Rel, table, connector: Connector, sink: Sink, column_names=()) -> SinkPlan:
    from pyspark.sql import functions as F

    rel = planner.settle(rel)
    bound = planner.catalog.bound_table(table.name, "sink")
    df, mapping = shape_for_sink(planner, rel, table, column_names)
    cols = [c for c in df.columns if c not in (SIGN, NET)]
    if rel.append_only:
        if APPEND not in connector.sink_modes and not connector.accepts_retractions and UPSERT not in connector.sink_modes:
            raise PipelineError(f"connector '{connector.identifier}' cannot take an append-only result")
        # An inner join can produce the same row twice: a sign n means n copies.
        rows = df.select(*cols, F.explode(F.array_repeat(F.lit(1), F.col(SIGN))).alias("__copy")).drop("__copy")
        return SinkPlan(sink.write_stream(rows), "append", [nodes.sink("write appended rows", nodes.APPEND, table=bound)])

    # A format that writes changes (debezium-avro-confluent) takes every change, as Flink's.
    fmt = bound.value_format
    if connector.accepts_retractions or (fmt is not None and fmt.writes_changes):
        raw = sink.write_change_stream(df.select(*cols, F.col(SIGN)))
        if raw is not None:
            return SinkPlan(raw, "changelog", [nodes.sink("write every change as it comes", nodes.RETRACT, table=bound)])
        key = list(table.primary_key) or ([mapping[c] for c in rel.unique_key] if rel.unique_key else cols)
        return SinkPlan(df.writeStream.foreachBatch(lambda b, i: sink.write_changes(label_changes(b, key, cols), i)),
                        "changelog", [nodes.sink("write every change as +I/-U/+U/-D", nodes.RETRACT, keys=key,
                                                 table=bound)])
    if UPSERT not in connector.sink_modes:
        raise PipelineError(
            f"Table sink '{table.name}' (connector '{connector.identifier}') doesn't support consuming update and "
            "delete changes, which the query produces (it aggregates, joins with outer sides, or reads an "
            "upsert/changelog table)",
            hint="write to an upsert sink such as 'upsert-kafka' with a PRIMARY KEY, or use 'print' to inspect changes")
    if not table.primary_key:
        raise PipelineError(f"table '{table.name}' receives updates and needs a PRIMARY KEY to apply them",
                            hint="declare PRIMARY KEY (…) NOT ENFORCED matching the query's key")
    pk = list(table.primary_key)
    if rel.unique_key is not None:
        query_key = sorted(mapping[c] for c in rel.unique_key if c in mapping)
        if len(query_key) == len(rel.unique_key) and {k.lower() for k in query_key} <= {p.lower() for p in pk}:
            steps = [nodes.sink(f"upsert by ({', '.join(pk)}): net change per key per micro-batch "
                                f"(the query is unique on ({', '.join(query_key) or 'one row'}))", nodes.UPSERT,
                                keys=pk, table=bound)]
            if rel.net_key is not None and {mapping.get(c, "").lower() for c in rel.net_key} == {p.lower() for p in pk}:
                # The last operator netted each key's changes already (one row per key, and
                # no filter since): its '+U'/'-D' rows are the sink's changes, no shuffle.
                netted = df.filter(F.col(NET).isNotNull()).select(*cols, F.col(NET).alias(OP))
                return upserts(sink, netted, steps)
            # One row per key and batch: the batch's changes netted per sink key.
            netted = engine.net_changes(planner, df, pk, cols)
            net = nodes.engine("net_changes", "netChanges", f"net each micro-batch's changes per ({', '.join(pk)})",
                               "engine", keys=pk, stateful=False, spec=planner.spec_for("netChanges"))
            return upserts(sink, netted, [with_mode(net, nodes.UPSERT)] + steps)
        if len(query_key) == len(rel.unique_key):
            reject_key_mismatch(table, pk, query_key, rel, mapping)
    # Uniqueness on the sink key is unknown, or the query's key is not within the sink's
    # PRIMARY KEY: keep every row per sink key in state and show the latest, as Flink's
    # SinkUpsertMaterializer does.
    out = engine.materialize(planner, df, pk, cols)
    materialize = nodes.engine("materialize", "materialize", f"materialize by ({', '.join(pk)})",
                               "stateful: the query's uniqueness on the sink key is not provable, so the latest row "
                               "per key is kept", keys=pk, spec=planner.spec_for("materialize"))
    plan = upserts(sink, out, [with_mode(materialize, nodes.UPSERT),
                               nodes.sink(f"upsert by ({', '.join(pk)})", nodes.UPSERT, keys=pk, table=bound,
                                          shown=False)])
    return SinkPlan(plan.writer, "upsert (materialized)", plan.steps)


def upserts(sink, netted, steps: list) -> SinkPlan:
    """Upserts ('+U'/'-D', one per key and batch) into the sink: as a stream where the
    sink writes one (no Python per micro-batch), else per micro-batch."""
    writer = sink.write_upsert_stream(netted)
    if writer is None:
        writer = netted.writeStream.foreachBatch(lambda b, i: sink.write_changes(b, i))
    return SinkPlan(writer, "upsert", steps)


def reject_key_mismatch(table, pk: list[str], query_key: list[str], rel: Rel, mapping: dict) -> None:
    """The query's rows are unique on ``query_key``, which the sink's PRIMARY KEY does not
    contain, and every sink key column is a plain column of the query: rows of the query
    provably share sink keys and would overwrite one another in no defined order."""
    source_of = {sink_col.lower(): internal for internal, sink_col in mapping.items()}
    if any(source_of.get(p.lower()) in rel.computed or p.lower() not in source_of for p in pk):
        return
    raise PipelineError(
        f"table '{table.name}' has PRIMARY KEY ({', '.join(pk)}), but the query's rows are unique on "
        f"({', '.join(query_key) or 'one row'}): several result rows would share one sink key and overwrite "
        "each other in no defined order",
        hint=f"declare the sink's key as PRIMARY KEY ({', '.join(query_key)}) NOT ENFORCED, or change the query "
             "so that it is unique on the sink's key (e.g. GROUP BY the key columns)")


def label_changes(batch, key: list[str], cols: list[str]):
    """Signed rows → Flink's row kinds: a retraction and an insert of the same key in
    one batch are -U/+U, a lone retraction -D, a lone insert +I. Retractions first."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy(*[F.col(f"`{k}`") for k in key])
    has_insert = F.max(F.when(F.col(SIGN) > 0, 1).otherwise(0)).over(w) == 1
    has_retract = F.min(F.col(SIGN)).over(w) < 0
    op = (F.when(F.col(SIGN) < 0, F.when(has_insert, F.lit("-U")).otherwise(F.lit("-D")))
          .otherwise(F.when(has_retract, F.lit("+U")).otherwise(F.lit("+I"))))
    labelled = batch.select("*", op.alias(OP))
    copies = labelled.select("*", F.explode(F.array_repeat(F.lit(1), F.abs(F.col(SIGN)))).alias("__copy"))
    return copies.orderBy(*[F.col(f"`{k}`") for k in key], F.col(SIGN)).select(*[F.col(f"`{c}`") for c in cols], OP)
