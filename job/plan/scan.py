"""Reading a table: its source stream as a relation, with its columns' Flink types and
time attributes."""
from __future__ import annotations

from job.connectors.base import APPEND, UPSERT
from job.plan import nodes
from job.plan.relation import SIGN, Field, Rel
from job.sql.flink.columns import column_type, is_proctime


def scan(planner, table, alias: str) -> Rel:
    from pyspark.sql import functions as F

    # Records need their source position only where a changelog is normalized by key.
    bound = planner.catalog.bound_table(table.name, "source")
    stream = planner.open_source(bound, ordered=planner.execution.cdc_events_duplicate)
    df = stream.df
    fields, renamed = table_fields(planner, table, alias)
    if stream.mode == APPEND:
        rows = df.select(*renamed)
        steps = [nodes.scan(f"scan {table.name}: append-only", table=bound, mode=nodes.APPEND)]
        if table.watermark is not None and planner.uses_current_watermark():
            from job.plan.current_watermark import with_current_watermark

            rows, field = with_current_watermark(planner, rows, fields, table)
            fields = [*fields, field]
            steps.append(nodes.engine("current_watermark", "currentWatermark",
                                      f"CURRENT_WATERMARK({table.watermark.column}): the watermark of the rows "
                                      "before each row", "engine: currentWatermark; stateful: the largest event "
                                      "time; one sequence", spec=planner.spec_for("currentWatermark")))
        return Rel(rows, fields, append_only=True, steps=steps, arrival_order=True)
    if stream.mode == UPSERT:
        pk_cols = tuple(f.col for f in fields if f.name in table.primary_key)
        staged = df.select(*renamed, F.col("__kind").alias("kind"), F.col("__seq_major").alias("seq_major"),
                           F.col("__seq_minor").alias("seq_minor"))
        return Rel(staged, fields, append_only=False, unique_key=frozenset(pk_cols), pending_upsert=pk_cols,
                   steps=[nodes.scan(f"scan {table.name}: upsert source keyed by ({', '.join(table.primary_key)})",
                                     keys=table.primary_key, table=bound)])
    pk_cols = tuple(f.col for f in fields if f.name in table.primary_key)
    if pk_cols and planner.execution.cdc_events_duplicate:
        # 'table.exec.source.cdc-events-duplicate': the events may repeat, so they are not
        # trusted as changes; the latest row per key wins (Flink's ChangelogNormalize).
        kind = F.when(F.col("__kind") == "-D", F.lit("D")).otherwise(F.lit("U"))
        staged = df.filter(F.col("__kind") != "-U").select(
            *renamed, kind.alias("kind"), F.col("__seq_major").alias("seq_major"),
            F.col("__seq_minor").alias("seq_minor"))
        return Rel(staged, fields, append_only=False, unique_key=frozenset(pk_cols), pending_upsert=pk_cols,
                   steps=[nodes.scan(f"scan {table.name}: changelog source normalized by PRIMARY KEY "
                                     f"({', '.join(table.primary_key)}) (table.exec.source.cdc-events-duplicate)",
                                     keys=table.primary_key, table=bound)])
    sign = F.when(F.col("__kind").isin("+I", "+U"), F.lit(1)).otherwise(F.lit(-1))
    return Rel(df.select(*renamed, sign.alias(SIGN)), fields, append_only=False,
               unique_key=frozenset(pk_cols) if pk_cols else None, arrival_order=True,
               steps=[nodes.scan(f"scan {table.name}: changelog source (+I/-U/+U/-D → signed rows)",
                                 keys=table.primary_key or (), table=bound)])


def table_fields(planner, table, alias: str):
    """A table's columns as a relation's fields (their Flink types, time attributes), and
    the source columns renamed to them."""
    from pyspark.sql import functions as F

    rowtime = table.watermark.column.lower() if table.watermark is not None else None
    fields = []
    for column in table.columns:
        time = "rowtime" if column.name.lower() == rowtime else "proctime" if is_proctime(column) else None
        fields.append(Field(column.name, alias, planner.fresh(), column_type(table, column, planner.settings), time))
    return fields, [F.col(f"`{c.name}`").alias(f.col) for c, f in zip(table.columns, fields)]


def bounded_stream(planner, df):
    """A batch DataFrame (VALUES) as a stream that yields its rows once."""
    from job.plan.values_source import register_values

    return register_values(planner.spark, "values", df)
