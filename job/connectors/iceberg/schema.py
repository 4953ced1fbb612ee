"""Declared columns ↔ Iceberg schema, as Iceberg's Flink connector maps them
(FlinkSchemaUtil): TINYINT and SMALLINT are stored as int, TIMESTAMP as timestamp (no
zone), TIMESTAMP_LTZ as timestamptz, STRING/VARCHAR/CHAR as string, BYTES as binary. The
PRIMARY KEY becomes the table's identifier fields (required columns).
"""
from __future__ import annotations

import re
from typing import Optional


def iceberg_type(spark_type: str):
    from pyiceberg import types as T

    t = spark_type.lower().strip()
    simple = {"boolean": T.BooleanType(), "tinyint": T.IntegerType(), "smallint": T.IntegerType(),
              "int": T.IntegerType(), "bigint": T.LongType(), "float": T.FloatType(), "double": T.DoubleType(),
              "string": T.StringType(), "binary": T.BinaryType(), "date": T.DateType(),
              "timestamp": T.TimestamptzType(), "timestamp_ntz": T.TimestampType()}
    if t in simple:
        return simple[t]
    if t.startswith(("varchar(", "char(")):
        return T.StringType()
    m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", t)
    if m:
        return T.DecimalType(int(m.group(1)), int(m.group(2)))
    raise ValueError(f"no Iceberg type for {spark_type}")


def iceberg_schema(table, cols):
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField

    pk = set(table.primary_key)
    fields = [NestedField(i + 1, c.name, iceberg_type(c.spark_type), required=(c.name in pk or not c.nullable))
              for i, c in enumerate(cols)]
    ids = [f.field_id for f in fields if f.name in pk]
    return Schema(*fields, identifier_field_ids=ids)


def verify(schema, table, cols, writing: bool = True) -> Optional[str]:
    """Why ``schema`` (an existing table's) cannot take the declared columns (``writing``)
    or be read as them, or None. A reader may declare a required column nullable."""
    for col in cols:
        try:
            field = schema.find_field(col.name, case_sensitive=False)
        except ValueError:
            return f"it has no column '{col.name}' (its columns: {', '.join(f.name for f in schema.fields)})"
        wanted = iceberg_type(col.spark_type)
        if field.field_type != wanted:
            return f"its column '{field.name}' is {field.field_type}, the declared {col.flink_type} is stored as {wanted}"
        if writing and field.required and col.nullable and col.name not in table.primary_key:
            return f"its column '{field.name}' is required (NOT NULL), the declared '{col.name}' is nullable"
    return None


def arrow_schema(schema, names: list[str]):
    """The Arrow schema pyiceberg writes for these columns (the table's own spelling)."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    full = schema_to_pyarrow(schema, include_field_ids=False)
    by_lower = {f.name.lower(): f for f in full}
    return pa.schema([by_lower[n.lower()] for n in names])


def conform(batch, target):
    """A Spark Arrow batch cast to the table's Arrow types (int8 → int32, the session's
    time zone → UTC), its columns named as the table names them."""
    import pyarrow as pa

    arrays = [batch.column(i).cast(field.type) for i, field in enumerate(target)]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def declared_columns(schema) -> tuple[tuple, tuple[str, ...]]:
    """An Iceberg table's columns as Flink's catalog shows them (TypeToFlinkType):
    (Columns, PRIMARY KEY from its identifier fields). Raises ValueError naming a column
    whose type has no mapping here."""
    from pyiceberg import types as T

    from job.sql.statements import Column

    simple = {T.BooleanType: ("boolean", "BOOLEAN"), T.IntegerType: ("int", "INT"), T.LongType: ("bigint", "BIGINT"),
              T.FloatType: ("float", "FLOAT"), T.DoubleType: ("double", "DOUBLE"), T.StringType: ("string", "STRING"),
              T.BinaryType: ("binary", "BYTES"), T.DateType: ("date", "DATE"),
              T.TimestampType: ("timestamp_ntz", "TIMESTAMP(6)"), T.TimestamptzType: ("timestamp", "TIMESTAMP_LTZ(6)")}
    columns = []
    for field in schema.fields:
        kind = field.field_type
        if isinstance(kind, T.DecimalType):
            spark, flink = f"decimal({kind.precision},{kind.scale})", f"DECIMAL({kind.precision}, {kind.scale})"
        elif type(kind) in simple:
            spark, flink = simple[type(kind)]
        else:
            raise ValueError(f"its column '{field.name}' has type {kind}, which the iceberg connector does not read")
        columns.append(Column(field.name, spark, flink, nullable=not field.required))
    return tuple(columns), tuple(sorted(schema.identifier_field_names(), key=[f.name for f in schema.fields].index))
