"""MySQL's column types and the declared ones, as Flink CDC maps them.

Flink CDC's mysql-cdc maps TINYINT(1) → BOOLEAN, TINYINT → TINYINT, SMALLINT and
TINYINT UNSIGNED → SMALLINT, INT/MEDIUMINT and SMALLINT UNSIGNED → INT, BIGINT and INT
UNSIGNED → BIGINT, BIGINT UNSIGNED → DECIMAL(20, 0), FLOAT → FLOAT, DOUBLE → DOUBLE,
DECIMAL(p, s) → DECIMAL(p, s), DATE → DATE, DATETIME(p) → TIMESTAMP(p), TIMESTAMP(p) →
TIMESTAMP_LTZ(p), YEAR → INT, CHAR/VARCHAR/TEXT/ENUM/JSON → STRING, BINARY/VARBINARY/BLOB
→ BYTES. A declared column is accepted when it can hold every value of the MySQL column
in that mapping (a wider integer, a wider DECIMAL); anything else is refused before the
query starts, naming the column and the type to declare — never a silently different
value. STRING only for MySQL's character types: Flink CDC would give Debezium's internal
form (epoch numbers) for a temporal column declared STRING.

Values travel as text (see ``binlog.text_value``) and are cast here to the declared type.
"""
from __future__ import annotations

import re
from typing import Optional

INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
_SPARK_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_SPARK_INT_DIGITS = {"tinyint": 2, "smallint": 4, "int": 9, "bigint": 18}
CHARACTER = ("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "json")
BINARY = ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
SUPPORTED = tuple(INT_BITS) + ("decimal", "float", "double", "date", "datetime", "timestamp", "year") \
    + CHARACTER + BINARY


def base_type(spark_type: str) -> str:
    return re.split(r"[(<]", spark_type.strip().lower(), maxsplit=1)[0]


def _signed_bits(data_type: str, column_type: str) -> int:
    """Bits a signed integer needs to hold the column's values (an UNSIGNED one needs one more)."""
    return INT_BITS[data_type] + (1 if "unsigned" in column_type else 0)


def is_boolean(data_type: str, column_type: str) -> bool:
    return data_type == "tinyint" and re.match(r"tinyint\(1\)", column_type) is not None


def flink_cdc_type(data_type: str, column_type: str, precision: Optional[int], scale: Optional[int],
                   fsp: Optional[int]) -> str:
    """The Flink type Flink CDC gives the column (the one to declare)."""
    if is_boolean(data_type, column_type):
        return "BOOLEAN"
    if data_type in INT_BITS:
        bits = _signed_bits(data_type, column_type)
        return ("TINYINT" if bits <= 8 else "SMALLINT" if bits <= 16 else "INT" if bits <= 32
                else "BIGINT" if bits <= 64 else "DECIMAL(20, 0)")
    if data_type == "decimal":
        return f"DECIMAL({precision}, {scale})"
    if data_type in ("float", "double"):
        return data_type.upper()
    if data_type == "date":
        return "DATE"
    if data_type == "datetime":
        return f"TIMESTAMP({fsp or 0})"
    if data_type == "timestamp":
        return f"TIMESTAMP_LTZ({fsp or 0})"
    if data_type == "year":
        return "INT"
    if data_type in CHARACTER:
        return "STRING"
    if data_type in BINARY:
        return "BYTES"
    return f"(none: MySQL {column_type.upper()} is not supported)"


def type_problem(data_type: str, column_type: str, precision: Optional[int], scale: Optional[int],
                 spark_type: str, flink_type: str) -> Optional[str]:
    """Why a column declared ``flink_type`` (Spark ``spark_type``) cannot hold the values of a
    MySQL column (information_schema's DATA_TYPE, COLUMN_TYPE, NUMERIC_PRECISION and
    NUMERIC_SCALE), or None."""
    if data_type not in SUPPORTED:
        return "not supported"
    spark = spark_type.strip().lower()
    base = base_type(spark)
    declared = flink_type.strip().upper()
    if base == "string":
        return None if data_type in CHARACTER else "different kind"
    if base == "binary":
        return None if data_type in BINARY else "different kind"
    if is_boolean(data_type, column_type):
        return None if base == "boolean" else "different kind"
    if base in _SPARK_INT_BITS:
        if data_type in INT_BITS:
            return None if _SPARK_INT_BITS[base] >= _signed_bits(data_type, column_type) else "too small"
        if data_type == "year":
            return None if base in ("int", "bigint") else "too small"
        return "different kind"
    if base == "decimal":
        dm = re.fullmatch(r"decimal\((\d+),(\d+)\)", spark.replace(" ", ""))
        dp, ds = (int(dm.group(1)), int(dm.group(2))) if dm else (10, 0)
        if data_type in INT_BITS:
            digits = len(str(2 ** _signed_bits(data_type, column_type)))
            return None if dp - ds >= digits else "too small"
        if data_type == "decimal":
            return None if dp - ds >= (precision or 10) - (scale or 0) and ds >= (scale or 0) else "too small"
        return "different kind"
    if base in ("float", "double"):
        # The snapshot reads MySQL's shortest text and the binlog the stored bits: only the
        # type of the same width gives one value for both.
        return None if data_type == base else "different kind"
    if base == "boolean":
        return "different kind"
    if base == "date":
        return None if data_type == "date" else "different kind"
    if base == "timestamp":
        ltz = "LTZ" in declared or "LOCAL TIME ZONE" in declared
        if data_type == "timestamp" or (data_type == "datetime" and not ltz):
            return None
        return "different kind"
    return "different kind"


def typed_value(text, spark_type: str, flink_type: str, data_type: str, server_zone: str):
    """A value's text (``binlog.text_value``) as the declared type. NULL where it does not
    fit, which the caller reports as a bad record.

    A MySQL TIMESTAMP is an instant, carried as UTC text: TIMESTAMP_LTZ takes the instant;
    a TIMESTAMP column takes its wall-clock time in 'server-time-zone', as Flink CDC does.
    The job's Spark session runs in UTC, so Spark's TIMESTAMP holds either exactly."""
    from pyspark.sql import functions as F

    base = base_type(spark_type)
    if data_type in BINARY:
        return F.unhex(text)
    if base == "string":
        return text
    declared = flink_type.strip().upper()
    if data_type == "timestamp" and base == "timestamp" and "LTZ" not in declared \
            and "LOCAL TIME ZONE" not in declared:
        return F.from_utc_timestamp(text.try_cast(spark_type), server_zone)
    if base == "boolean":  # TINYINT(1): any value but 0 is true
        return F.when(text.isNotNull(), text.try_cast("int") != 0)
    return text.try_cast(spark_type)
