"""The planner's calls into the engine's stateful operators.

Each function takes relations (or staged DataFrames) and returns the operator's output
as a DataFrame of typed columns; how the operator keeps its state is the engine's
business (:mod:`job.changelog`). The planner never builds operator inputs itself, so
the engine can change its state layout and row encoding without touching planning.
"""
from __future__ import annotations

from job.plan.relation import NET, SIGN, Rel

# to_json/from_json options that round-trip every value the operators carry.
ROW_JSON = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
            "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"}
BUCKET = "__bucket"


def schema_of(rel: Rel, cols=None):
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    wanted = rel.cols() if cols is None else cols
    by_col = {f.col: f for f in rel.fields}
    return StructType([StructField(c, _parse_datatype_string(by_col[c].type.spark), True) for c in wanted])


def row_json(cols: list[str]):
    from pyspark.sql import functions as F

    return F.to_json(F.struct(*[F.col(f"`{c}`") for c in cols]), ROW_JSON)


def from_row_json(column: str, schema):
    from pyspark.sql import functions as F

    parsed = F.from_json(F.col(column), schema, ROW_JSON)
    return [parsed[f.name].alias(f.name) for f in schema.fields]


def bucket(planner, key_col):
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(key_col), F.lit(planner.buckets)).alias(BUCKET)


def stateful(df, processor, schema: str):
    return df.groupBy(BUCKET).transformWithStateInPandas(processor, schema, "Append", "None")


def normalize(planner, rel: Rel) -> Rel:
    """An upsert table's latest row per key → signed changes (retractions)."""
    from pyspark.sql import functions as F

    from job.changelog import operators as ops

    cols = rel.cols()
    prepared = rel.df.select(row_json(list(rel.pending_upsert)).alias("k"), row_json(cols).alias("row"),
                             "kind", "seq_major", "seq_minor")
    prepared = prepared.select(bucket(planner, F.col("k")), "*")
    normalized = stateful(prepared, ops.Normalize(), ops.Normalize.OUTPUT)
    out = normalized.select(*from_row_json("row", schema_of(rel)), F.col("sign").alias(SIGN))
    return Rel(out, rel.fields, append_only=False, unique_key=rel.unique_key, computed=rel.computed,
               steps=rel.steps + [f"normalize by PRIMARY KEY into retractions [stateful, {planner.buckets} buckets]"])


def group_aggregate(planner, staged, group_cols: list[str], arg_cols: list, specs: list, global_agg: bool):
    """Retractable aggregation. ``staged`` has the group columns, the argument columns
    (as text), and ``sign``; returns (sign, group columns, r0…, net) with results as text."""
    from pyspark.sql import functions as F

    from job.changelog import operators as ops

    group_schema = staged.select(*[F.col(f"`{c}`") for c in group_cols]).schema
    gk = F.to_json(F.struct(*[F.col(f"`{c}`") for c in group_cols]), ROW_JSON) if group_cols else F.lit("{}")
    prepared = staged.select(gk.alias("gk"), "sign", *[c for c in arg_cols if c is not None])
    processor = ops.Aggregate(specs, global_agg=global_agg)
    result = stateful(prepared.select(bucket(planner, F.col("gk")), "*"), processor, processor.output_schema)
    parsed = F.from_json(F.col("gk"), group_schema, ROW_JSON)
    return result.select("sign", *[parsed[c].alias(c) for c in group_cols],
                         *[F.col(f"r{i}") for i in range(len(specs))], "net")


def materialize(planner, df, pk: list[str], cols: list[str]):
    """Changes → the latest row per sink key (Flink's SinkUpsertMaterializer): columns
    ``cols`` plus ``__op`` ('+U' / '-D')."""
    from pyspark.sql import functions as F

    from job.changelog import operators as ops

    pk_json = F.to_json(F.struct(*[F.col(f"`{p}`") for p in pk]), ROW_JSON)
    staged = df.select(pk_json.alias("pk"), F.col(SIGN).alias("sign"), row_json(cols).alias("row"))
    materialized = stateful(staged.select(bucket(planner, F.col("pk")), "*"), ops.Materialize(), ops.Materialize.OUTPUT)
    schema = df.select(*[F.col(f"`{c}`") for c in cols]).schema
    return materialized.select(*from_row_json("row", schema), F.col("op").alias("__op"))


NET_COLUMN = NET
