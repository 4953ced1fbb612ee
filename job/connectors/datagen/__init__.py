"""datagen: generated rows (Flink's 'datagen' connector), for demos, tests and benchmarks.

Each physical column has a generator: ``random`` (the default) or ``sequence``.

* random numbers are uniform in ['fields.<col>.min', 'fields.<col>.max'] (default: the
  type's range; DECIMAL(p, s) from 0 to the largest value it holds, FLOAT/DOUBLE from the
  smallest positive value to the largest, as Flink does);
* random strings are 'fields.<col>.length' (default 100) hexadecimal characters, as
  Flink's are; booleans are true or false;
* TIMESTAMP values are the batch's generation time minus a random amount up to
  'fields.<col>.max-past' (default 0: the generation time); DATE values likewise, in
  whole days;
* sequence columns count 'fields.<col>.start' … 'fields.<col>.end' (numbers, or strings
  of numbers), and the source ends when a sequence is exhausted;
* 'fields.<col>.null-rate' makes that fraction of the values NULL.

Rows are produced at 'rows-per-second'; with 'number-of-rows' (or a sequence column) the
source is bounded, and a pipeline reading only bounded tables runs to completion — unless
'rows-per-second' is set: then the rows come at that rate and the pipeline runs until it is
stopped. Computed columns work as usual; METADATA columns do not exist here.

Every value is a pure function of the row's index (no random state), and the stream's
offset is the number of rows produced plus the batch's generation time, so a micro-batch
replayed after a restart produces exactly the same rows: the source is exactly-once, and
two runs of the same pipeline generate the same data.

With ``--once`` (Trigger.AvailableNow, which Python streaming sources support since Spark
4.2 through ``SupportsTriggerAvailableNow``) a bounded datagen produces all of its rows
at once, without waiting for 'rows-per-second', and the query ends; an unbounded one is
refused because it would never end.

The source is a Python data source (``pyspark.sql.datasource``): rows are generated in
the Python workers, vectorised with numpy and handed over as Arrow batches
(:mod:`job.connectors.datagen.generate`), so the ``job`` package must be importable there
(it is when the job ships it with ``--py-files``).
"""
from __future__ import annotations

import decimal
import json
import math
import re
import zlib
from typing import Any, Mapping

from job.connectors.base import APPEND, Connector, Option, SourceStream
from job.connectors.datagen.generate import DATA_SOURCE_NAME, INTEGRAL, ROW_COLUMN, data_source
from job.connectors.rows import clean_records, physical_schema, table_frame
from job.options import did_you_mean, table_error

OPTIONS = (
    Option("rows-per-second", "int", default=10000, description="Rows generated per second."),
    Option("number-of-rows", "int", description="Total number of rows; without it the source is unbounded "
                                                "(unless a column is a sequence)."),
    Option("fields.*.kind", "enum", choices=("random", "sequence"), description="Generator of column *."),
    Option("fields.*.min", description="Smallest random value of column * (numbers)."),
    Option("fields.*.max", description="Largest random value of column * (numbers)."),
    Option("fields.*.max-past", "duration", description="Random TIMESTAMP/DATE values lie up to this far in the past."),
    Option("fields.*.length", "int", description="Length of random strings (default 100)."),
    Option("fields.*.start", description="First value of a sequence column."),
    Option("fields.*.end", description="Last value of a sequence column."),
    Option("fields.*.null-rate", "double", description="Fraction of NULL values (0 … 1)."),
)
FIELD_PROPERTIES = ("kind", "min", "max", "max-past", "length", "start", "end", "null-rate")

SUPPORTED = tuple(INTEGRAL) + ("float", "double", "decimal", "string", "boolean", "date", "timestamp", "timestamp_ntz")
FLOAT_RANGE = {"float": (1.4e-45, 3.4028234663852886e38), "double": (5e-324, 1.7976931348623157e308)}
DEFAULT_LENGTH = 100


# --------------------------------------------------------------------------- spec

def _type_of(spark_type: str) -> tuple[str, int, int]:
    """'decimal(10,2)' → ('decimal', 10, 2); 'int' → ('int', 0, 0)."""
    text = spark_type.strip().lower()
    m = re.fullmatch(r"decimal\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)", text)
    if m:
        return "decimal", int(m.group(1)), int(m.group(2))
    if text == "decimal":
        return "decimal", 10, 0
    if text.startswith(("varchar", "char")):
        return "string", 0, 0
    return text, 0, 0


def field_specs(table, options: Mapping[str, Any]) -> dict:
    """Validate the generator options and return the generation spec (JSON-able).

    Raises PipelineError naming the option or column at fault."""
    def fail(message, option=None, hint=None):
        raise table_error(table, message, option=option, hint=hint)

    for col in table.columns:
        if col.kind == "metadata":
            fail(f"the datagen connector has no metadata; column '{col.name}' of table '{table.name}' "
                 "cannot be a METADATA column", hint="declare it as a physical or computed column")
    physical = {c.name.lower(): c for c in table.physical_columns}
    per_field: dict[str, dict[str, Any]] = {}
    for key, value in options.items():
        if not key.startswith("fields."):
            continue
        rest = key[len("fields."):]
        name, _, prop = rest.rpartition(".")
        if prop not in FIELD_PROPERTIES or not name:
            continue  # registry validation already rejected unknown keys
        col = physical.get(name.lower())
        if col is None:
            fail(f"option '{key}' names column '{name}', which is not a physical column of table "
                 f"'{table.name}'.{did_you_mean(name, [c.name for c in table.physical_columns])}", option=key)
        per_field.setdefault(col.name, {})[prop] = (key, value)

    rps = options.get("rows-per-second", 10000)
    if rps <= 0:
        fail(f"'rows-per-second' must be positive, got {rps}", option="rows-per-second")
    limit = options.get("number-of-rows")
    if limit is not None and limit < 0:
        fail(f"'number-of-rows' must not be negative, got {limit}", option="number-of-rows")

    fields = []
    for index, col in enumerate(table.physical_columns):
        base, precision, scale = _type_of(col.spark_type)
        given = per_field.get(col.name, {})
        if base not in SUPPORTED:
            fail(f"the datagen connector cannot generate column '{col.name}' of type {col.flink_type} "
                 f"(table '{table.name}')",
                 hint="supported: TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, STRING, BOOLEAN, DATE, "
                      "TIMESTAMP; compute other types from these with a computed column")
        kind = given.get("kind", (None, "random"))[1]
        spec: dict[str, Any] = {"name": col.name, "type": base, "precision": precision, "scale": scale,
                                "kind": kind, "salt": zlib.crc32(col.name.encode()) * 131 + index}
        allowed = {"kind", "null-rate"}
        numeric = base in INTEGRAL or base in ("float", "double", "decimal")
        if kind == "sequence":
            if not (numeric or base == "string"):
                fail(f"column '{col.name}' of type {col.flink_type} cannot be a sequence (table '{table.name}')",
                     option=f"fields.{col.name}.kind", hint="sequences are numbers or strings of numbers")
            allowed |= {"start", "end"}
            for prop in ("start", "end"):
                if prop not in given:
                    fail(f"sequence column '{col.name}' needs 'fields.{col.name}.{prop}' (table '{table.name}')",
                         option=f"fields.{col.name}.kind")
            start = _number(given["start"], "int" if base == "string" else base, scale, fail)
            end = _number(given["end"], "int" if base == "string" else base, scale, fail)
            if end < start:
                fail(f"'fields.{col.name}.end' ({end}) is smaller than 'fields.{col.name}.start' ({start})",
                     option=given["end"][0])
            spec["start"], spec["count"] = str(start), int(end - start) + 1
        else:
            if numeric:
                allowed |= {"min", "max"}
                lo, hi = _default_range(base, precision, scale)
                if "min" in given:
                    lo = _number(given["min"], base, scale, fail)
                if "max" in given:
                    hi = _number(given["max"], base, scale, fail)
                if base == "decimal":
                    largest = decimal.Decimal(10) ** (precision - scale) - decimal.Decimal(10) ** -scale
                    lo, hi = max(lo, -largest), min(hi, largest)
                    lo_unscaled = int((lo * 10 ** scale).to_integral_value(decimal.ROUND_CEILING))
                    hi_unscaled = int((hi * 10 ** scale).to_integral_value(decimal.ROUND_FLOOR))
                    if hi_unscaled < lo_unscaled:
                        fail(f"'fields.{col.name}.min' is larger than 'fields.{col.name}.max' (table '{table.name}')",
                             option=f"fields.{col.name}.min")
                    spec["min"], spec["max"] = str(lo_unscaled), str(hi_unscaled)
                else:
                    if hi < lo:
                        fail(f"'fields.{col.name}.min' ({lo}) is larger than 'fields.{col.name}.max' ({hi}) "
                             f"(table '{table.name}')", option=f"fields.{col.name}.min")
                    spec["min"], spec["max"] = (str(lo), str(hi)) if base in INTEGRAL else (lo, hi)
            if base == "string":
                allowed.add("length")
                length = given.get("length", (None, DEFAULT_LENGTH))[1]
                if length < 0:
                    fail(f"'fields.{col.name}.length' must not be negative, got {length}",
                         option=f"fields.{col.name}.length")
                spec["length"] = length
            if base in ("timestamp", "timestamp_ntz", "date"):
                allowed.add("max-past")
                spec["max_past_ms"] = int(given.get("max-past", (None, 0))[1])
        rate = given.get("null-rate", (None, 0.0))[1]
        if not 0.0 <= rate <= 1.0:
            fail(f"'fields.{col.name}.null-rate' must be between 0 and 1, got {rate}",
                 option=f"fields.{col.name}.null-rate")
        spec["null_rate"] = rate
        for prop, (key, _value) in given.items():
            if prop not in allowed:
                fail(f"option '{key}' does not apply to {kind} column '{col.name}' of type {col.flink_type} "
                     f"(table '{table.name}')", option=key,
                     hint=f"options for this column: {', '.join(f'fields.{col.name}.{p}' for p in sorted(allowed))}")
        fields.append(spec)

    total = limit
    for spec in fields:
        if spec["kind"] == "sequence":
            total = spec["count"] if total is None else min(total, spec["count"])
    return {"fields": fields, "rows_per_second": rps, "total": total}


def _number(entry, base: str, scale: int, fail):
    key, text = entry
    try:
        if base in INTEGRAL:
            value = int(str(text).strip())
            bits = INTEGRAL[base]
            if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
                fail(f"option '{key}' = '{text}' is out of range for {base.upper()}", option=key)
            return value
        if base == "decimal":
            return decimal.Decimal(str(text).strip())
        value = float(str(text).strip())
        if not math.isfinite(value):
            raise ValueError(text)
        return value
    except (ValueError, decimal.InvalidOperation):
        fail(f"option '{key}' must be a {'whole ' if base in INTEGRAL else ''}number, got '{text}'", option=key)


def _default_range(base: str, precision: int, scale: int):
    if base in INTEGRAL:
        bits = INTEGRAL[base]
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if base == "decimal":
        largest = decimal.Decimal(10) ** (precision - scale) - decimal.Decimal(10) ** -scale
        return decimal.Decimal(0), largest
    return FLOAT_RANGE[base]


# --------------------------------------------------------------------------- check / source

def check(table, options, role):
    field_specs(table, options)


def create_source(ctx) -> SourceStream:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    table = ctx.table
    spec = field_specs(table, ctx.options)
    if ctx.once and spec["total"] is None:
        raise table_error(table, "datagen without 'number-of-rows' never ends; set it or run without --once",
                          option="number-of-rows", hint=f"e.g. 'number-of-rows' = '1000' on table '{table.name}'")
    try:
        spec["partitions"] = max(1, ctx.spark.sparkContext.defaultParallelism)
    except Exception:  # no SparkContext in this client (Spark Connect)
        spec["partitions"] = 4
    ctx.spark.dataSource.register(data_source())  # registering again replaces it
    schema = StructType(list(physical_schema(table).fields) + [StructField(ROW_COLUMN, LongType(), False)])
    df = ctx.spark.readStream.format(DATA_SOURCE_NAME).schema(schema).option("spec", json.dumps(spec)).load()
    physical = {c.name: F.col(f"`{c.name}`") for c in table.physical_columns}
    control = clean_records(F.concat(F.lit("datagen row "), F.col(ROW_COLUMN).cast("string")))
    frame = table_frame(df, table, physical=physical, metadata={}, control=control)
    # A bounded datagen ends a pipeline that reads only bounded tables (it runs to completion,
    # every row at once) unless its rate was asked for: then its rows come at that rate and
    # the pipeline runs until stopped (--once still generates everything at once).
    paced = "rows-per-second" in table.options
    return SourceStream(frame, APPEND, bounded=spec["total"] is not None and not paced)


CONNECTOR = Connector(
    identifier="datagen",
    description="Generates random or sequential rows at a fixed rate, optionally bounded.",
    options=OPTIONS,
    source_mode=APPEND,
    create_source=create_source,
    check=check,
)
