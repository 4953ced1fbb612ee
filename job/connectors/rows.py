"""Turning decoded records into a table's rows, the same way for every connector.

A source decodes its payload into a struct; :func:`table_frame` lays the struct's fields,
the METADATA columns and the computed columns out in the declared order and keeps the
control columns (``__kind``, ``__seq_*``, ``__error``, ``__raw``, ``__position``) that the
planner needs.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

CONTROL_COLUMNS = ("__kind", "__seq_major", "__seq_minor", "__error", "__raw", "__position")


def physical_schema(table, names: Optional[Sequence[str]] = None, *, strip_prefix: str = ""):
    """StructType of the named physical columns (default: all), in declared order.

    Each field's metadata holds the column's Flink type and nullability (a PRIMARY KEY
    column is NOT NULL, as in Flink): formats whose encoding depends on Flink's type
    (avro: TINYINT, TIME, TIMESTAMP vs TIMESTAMP_LTZ) read them there."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    wanted = None if names is None else {n.lower() for n in names}
    fields = []
    for col in table.physical_columns:
        if wanted is not None and col.name.lower() not in wanted:
            continue
        name = col.name[len(strip_prefix):] if strip_prefix and col.name.startswith(strip_prefix) else col.name
        nullable = col.nullable and col.name.lower() not in {k.lower() for k in getattr(table, "primary_key", ())}
        meta = {"flink_type": col.flink_type, "flink_nullable": nullable}
        fields.append(StructField(name, _parse_datatype_string(col.spark_type), True, meta))
    return StructType(fields)


def clean_records(position) -> dict[str, object]:
    """The control columns of a source whose records cannot be bad (generated, or typed by
    Spark's own reader): no error, no raw text, and their ``position`` for messages."""
    from pyspark.sql import functions as F

    return {"__error": F.lit(None).cast("string"), "__raw": F.lit(None).cast("string"), "__position": position}


def table_frame(df, table, *, physical: Mapping[str, object], metadata: Mapping[str, object],
                control: Mapping[str, object]):
    """Select the table's columns in declared order, then the control columns.

    ``physical`` maps a physical column name to its expression (from the decoded value
    or key); ``metadata`` likewise for METADATA columns; ``control`` holds ``__*``
    columns. Computed columns are evaluated last, over the physical and metadata ones,
    as Flink does.
    """
    from pyspark.sql import functions as F

    base = []
    for col in table.columns:
        if col.kind == "physical":
            base.append(F.lit(None).cast(col.spark_type).alias(col.name) if col.name not in physical
                        else physical[col.name].cast(col.spark_type).alias(col.name))
        elif col.kind == "metadata":
            base.append(metadata[col.name].alias(col.name))
    out = df.select(*base, *[expr.alias(name) for name, expr in control.items()])
    computed = [c for c in table.columns if c.kind == "computed"]
    if computed:
        from job.sql.flink.columns import computed_column

        # Flink expressions, translated with Flink's meaning (job.sql.flink).
        out = out.select("*", *[F.expr(computed_column(table, c).sql).alias(c.name) for c in computed])
    ordered = [c.name for c in table.columns] + list(control)
    return out.select(*[F.col(f"`{n}`") for n in ordered])


# Flink's debezium-json refuses an update or delete without the row's old values.
MISSING_BEFORE = ("the \"before\" field of a Debezium {op} event is null: the row's old values are needed to "
                  "retract it (with Debezium's PostgreSQL connector, set the table's REPLICA IDENTITY to FULL)")


def changelog_rows(df, table, change_col: str, *, physical_names: Sequence[str]):
    """Expand a decoded Debezium change (struct<before, after, op>) into Flink's changelog:
    c/r → +I(after); u → -U(before), +U(after); d → -D(before).

    Returns df with ``__image`` (struct of the physical columns), ``__kind``, ``__pos``
    (the entry's index in its event, so -U sorts before +U) and ``__cdc_error`` (why the
    event cannot be read, as Flink's format would refuse it; NULL for a good one). An
    event without a valid op (malformed, or a Kafka tombstone) yields no entry, so it is
    not mistaken for a row of NULLs.
    """
    from pyspark.sql import functions as F

    change = F.col(change_col)
    op = change["op"]
    before, after = change["before"], change["after"]
    entries = (F.when(op.isin("c", "r"), F.array(F.struct(after.alias("image"), F.lit("+I").alias("kind"))))
               .when((op == "u") & before.isNotNull(),
                     F.array(F.struct(before.alias("image"), F.lit("-U").alias("kind")),
                             F.struct(after.alias("image"), F.lit("+U").alias("kind"))))
               .when((op == "d") & before.isNotNull(), F.array(F.struct(before.alias("image"), F.lit("-D").alias("kind"))))
               .otherwise(F.array()))
    error = (F.when((op == "u") & before.isNull(), F.lit(MISSING_BEFORE.format(op="update")))
             .when((op == "d") & before.isNull(), F.lit(MISSING_BEFORE.format(op="delete"))))
    # posexplode_outer keeps bad events (no entries) as one row, so the error policy sees them.
    exploded = df.select("*", F.posexplode_outer(entries).alias("__pos", "__entry"))
    return exploded.select(
        *[c for c in df.columns], F.col("__entry.image").alias("__image"), F.col("__entry.kind").alias("__kind"),
        F.col("__pos"), error.alias("__cdc_error"))


def debezium_change(row, sign):
    """A signed row as the Debezium event Flink's debezium formats write: an insert or
    update-after (sign > 0) is op 'c' with the row as ``after``, a delete or update-before
    op 'd' with it as ``before`` (Flink writes no 'u': it cannot merge -U and +U)."""
    from pyspark.sql import functions as F

    return F.struct(F.when(sign < 0, row).alias("before"), F.when(sign > 0, row).alias("after"),
                    F.when(sign > 0, F.lit("c")).otherwise(F.lit("d")).alias("op"))
