"""PostgreSQL's column types and the declared ones: whether a declared column can hold a
PostgreSQL column's values (checked before a query starts), and a value's text, as
wal2json and the snapshot give it, turned into the declared type.
"""
from __future__ import annotations

import re
from typing import Optional

# PostgreSQL base type → what it needs to be held: integral bits, decimal digits, etc.
_INT_BITS = {"int2": 16, "int4": 32, "int8": 64}
_INT_DIGITS = {"int2": 5, "int4": 10, "int8": 19}
_SPARK_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_SPARK_INT_DIGITS = {"tinyint": 2, "smallint": 4, "int": 9, "bigint": 18}
_SUGGEST = {"int2": "SMALLINT", "int4": "INT", "int8": "BIGINT", "float4": "FLOAT", "float8": "DOUBLE",
            "bool": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP(6)", "timestamptz": "TIMESTAMP_LTZ(6)",
            "bytea": "BYTES"}


def base_type(spark_type: str) -> str:
    return re.split(r"[(<]", spark_type.strip().lower(), maxsplit=1)[0]


def type_problem(pg_type: str, pg_formatted: str, spark_type: str) -> Optional[str]:
    """Why a column declared ``spark_type`` cannot hold PostgreSQL's ``pg_type`` values,
    or None. ``pg_formatted`` is format_type() (e.g. 'numeric(10,2)')."""
    spark = spark_type.strip().lower()
    base = base_type(spark)
    if base == "string":
        return None
    m = re.fullmatch(r"numeric\((\d+),(\d+)\)", pg_formatted.replace(" ", ""))
    p, s = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    if base in _SPARK_INT_BITS:
        if pg_type in _INT_BITS:
            return None if _SPARK_INT_BITS[base] >= _INT_BITS[pg_type] else "too small"
        if pg_type == "numeric" and p is not None and s == 0:
            return None if p <= _SPARK_INT_DIGITS[base] else "too small"
        return "different kind"
    if base == "decimal":
        dm = re.fullmatch(r"decimal\((\d+),(\d+)\)", spark.replace(" ", ""))
        dp, ds = (int(dm.group(1)), int(dm.group(2))) if dm else (10, 0)
        if pg_type in _INT_DIGITS:
            return None if dp - ds >= _INT_DIGITS[pg_type] else "too small"
        if pg_type == "numeric":
            if p is None:
                return None  # unconstrained numeric: only the values can tell
            return None if dp - ds >= p - s and ds >= s else "too small"
        return "different kind"
    if base == "float":
        return None if pg_type in ("float4", "int2") else "different kind"
    if base == "double":
        return None if pg_type in ("float4", "float8", "int2", "int4", "numeric") else "different kind"
    if base == "boolean":
        return None if pg_type == "bool" else "different kind"
    if base == "date":
        return None if pg_type == "date" else "different kind"
    if base in ("timestamp", "timestamp_ntz"):
        return None if pg_type in ("timestamp", "timestamptz", "date") else "different kind"
    if base == "binary":
        return None if pg_type == "bytea" else "different kind"
    return "different kind"


def suggested_type(pg_type: str, pg_formatted: str) -> str:
    m = re.fullmatch(r"numeric\((\d+),(\d+)\)", pg_formatted.replace(" ", ""))
    if m:
        return f"DECIMAL({m.group(1)}, {m.group(2)})"
    if pg_type == "numeric":
        return "DECIMAL(38, 10)"
    return _SUGGEST.get(pg_type, "STRING")


def typed_value(text, spark_type: str, pg_type: Optional[str]):
    """A text value (PostgreSQL's text form; bytea as hex) as the declared type. NULL
    where it does not fit, which the caller reports as a bad record."""
    from pyspark.sql import functions as F

    base = base_type(spark_type)
    if pg_type == "bytea":
        return F.unhex(text) if base == "binary" else F.concat(F.lit("\\x"), text)
    if base == "string":
        return text
    if base == "binary":
        return text.cast("binary")
    return text.try_cast(spark_type)
