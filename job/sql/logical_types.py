"""Flink's data types as the job reasons about them, and their Spark types.

:class:`LogicalType` is a Flink type as Flink reasons about it (``DECIMAL(10, 2) NOT
NULL``, ``TIMESTAMP_LTZ(3)``, ``ROW<a INT, b STRING>``): the front end infers it for every
expression with Flink's rules, and its :attr:`~LogicalType.spark` string is the type the
value has in Spark. Reading a type from SQL text is :mod:`job.sql.types`' job.

Mapping notes (Flink → Spark):

* ``TIME[(p)]`` becomes ``string``: Spark has no time-of-day type.
* ``TIMESTAMP[(p)] [WITHOUT TIME ZONE]`` becomes ``timestamp``, not ``timestamp_ntz``.
  Spark's event-time watermarks only accept ``timestamp`` columns, and the job pins
  the session time zone to UTC, so a wall-clock value round-trips unchanged. The
  front end keeps the difference from ``TIMESTAMP_LTZ`` (an instant, shown in
  ``table.local-time-zone``) in the LogicalType and translates accordingly.
* ``MULTISET<T>`` becomes ``map<T,int>``, an element-to-count map, the same shape
  Flink uses when it converts multisets.
* Spark DDL cannot mark array elements or map values NOT NULL, so that nullability
  lives only in the LogicalType. Field comments are dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

MAX_LENGTH = 2147483647

# Families, for the rules that do not care about precision.
INTEGRAL = ("TINYINT", "SMALLINT", "INT", "BIGINT")
APPROXIMATE = ("FLOAT", "DOUBLE")
NUMERIC = INTEGRAL + ("DECIMAL",) + APPROXIMATE
CHARACTER = ("CHAR", "VARCHAR")
BINARY_STRING = ("BINARY", "VARBINARY")
TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
INTERVALS = ("INTERVAL_DAY_TIME", "INTERVAL_YEAR_MONTH")

_SPARK_SIMPLE = {
    "BOOLEAN": "boolean", "TINYINT": "tinyint", "SMALLINT": "smallint", "INT": "int", "BIGINT": "bigint",
    "FLOAT": "float", "DOUBLE": "double", "CHAR": "string", "VARCHAR": "string", "BINARY": "binary",
    "VARBINARY": "binary", "DATE": "date", "TIME": "string", "TIMESTAMP": "timestamp", "TIMESTAMP_LTZ": "timestamp",
    "INTERVAL_DAY_TIME": "interval day to second", "INTERVAL_YEAR_MONTH": "interval year to month",
    "NULL": "void",
}
_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class LogicalType:
    """A Flink type. ``precision`` holds DECIMAL's precision, TIME/TIMESTAMP's fraction
    digits and CHAR/VARCHAR/BINARY/VARBINARY's length; ``children`` the element type
    (ARRAY, MULTISET), key and value (MAP) or field types (ROW, named by
    ``field_names``)."""

    name: str
    nullable: bool = True
    precision: Optional[int] = None
    scale: Optional[int] = None
    children: tuple = ()
    field_names: tuple = ()

    # -- families --------------------------------------------------------------
    @property
    def is_numeric(self) -> bool:
        return self.name in NUMERIC

    @property
    def is_integral(self) -> bool:
        return self.name in INTEGRAL

    @property
    def is_exact(self) -> bool:
        return self.name in INTEGRAL or self.name == "DECIMAL"

    @property
    def is_character(self) -> bool:
        return self.name in CHARACTER

    @property
    def is_binary(self) -> bool:
        return self.name in BINARY_STRING

    @property
    def is_timestamp(self) -> bool:
        return self.name in TIMESTAMPS

    @property
    def is_interval(self) -> bool:
        return self.name in INTERVALS

    @property
    def is_null(self) -> bool:
        return self.name == "NULL"

    def nullable_as(self, nullable: bool) -> "LogicalType":
        return self if self.nullable == nullable else replace(self, nullable=nullable)

    # -- Spark ----------------------------------------------------------------
    @property
    def spark(self) -> str:
        """The Spark DDL type string of values of this type."""
        if self.name == "DECIMAL":
            return f"decimal({self.precision},{self.scale})"
        if self.name == "ARRAY":
            return f"array<{self.children[0].spark}>"
        if self.name == "MULTISET":
            return f"map<{self.children[0].spark},int>"
        if self.name == "MAP":
            return f"map<{self.children[0].spark},{self.children[1].spark}>"
        if self.name == "ROW":
            return "struct<" + ",".join(f"{spark_field_name(n)}:{t.spark}"
                                        for n, t in zip(self.field_names, self.children)) + ">"
        return _SPARK_SIMPLE[self.name]

    # -- Flink's own spelling --------------------------------------------------
    def __str__(self) -> str:
        return self.summary()

    def summary(self, nullability: bool = True) -> str:
        n = self.name
        if n == "VARCHAR" and self.precision == MAX_LENGTH:
            text = "STRING"
        elif n == "VARBINARY" and self.precision == MAX_LENGTH:
            text = "BYTES"
        elif n == "DECIMAL":
            text = f"DECIMAL({self.precision}, {self.scale})"
        elif n in CHARACTER + BINARY_STRING + ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ") and self.precision is not None:
            text = f"{n}({self.precision})"
        elif n in ("ARRAY", "MULTISET"):
            text = f"{n}<{self.children[0].summary()}>"
        elif n == "MAP":
            text = f"MAP<{self.children[0].summary()}, {self.children[1].summary()}>"
        elif n == "ROW":
            text = "ROW<" + ", ".join(f"`{f}` {t.summary()}" for f, t in zip(self.field_names, self.children)) + ">"
        elif n == "INTERVAL_DAY_TIME":
            text = "INTERVAL SECOND(3)"
        elif n == "INTERVAL_YEAR_MONTH":
            text = "INTERVAL MONTH"
        else:
            text = n
        return text + ("" if self.nullable or not nullability else " NOT NULL")


def t(name: str, precision: Optional[int] = None, scale: Optional[int] = None, nullable: bool = True,
      children: tuple = (), field_names: tuple = ()) -> LogicalType:
    """Shorthand: ``t("DECIMAL", 10, 2)``, ``t("ARRAY", children=(t("INT"),))``."""
    return LogicalType(name, nullable, precision, scale, tuple(children), tuple(field_names))


STRING_TYPE = t("VARCHAR", MAX_LENGTH)
BYTES_TYPE = t("VARBINARY", MAX_LENGTH)
BOOLEAN_TYPE = t("BOOLEAN")
INT_TYPE = t("INT")
BIGINT_TYPE = t("BIGINT")
DOUBLE_TYPE = t("DOUBLE")
DATE_TYPE = t("DATE")
NULL_TYPE = t("NULL")


def timestamp(precision: int = 6, ltz: bool = False, nullable: bool = True) -> LogicalType:
    return t("TIMESTAMP_LTZ" if ltz else "TIMESTAMP", precision, nullable=nullable)


def decimal(precision: int, scale: int, nullable: bool = True) -> LogicalType:
    return t("DECIMAL", precision, scale, nullable=nullable)



def spark_field_name(name: str) -> str:
    """A struct field name for a Spark DDL string, backquoted unless it is a plain word."""
    if _SIMPLE_NAME.fullmatch(name):
        return name
    return "`" + name.replace("`", "``") + "`"
