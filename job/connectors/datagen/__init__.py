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
source is bounded. Computed columns work as usual; METADATA columns do not exist here.

Every value is a pure function of the row's index (no random state), and the stream's
offset is the number of rows produced plus the batch's generation time, so a micro-batch
replayed after a restart produces exactly the same rows: the source is exactly-once, and
two runs of the same pipeline generate the same data.

With ``--once`` (Trigger.AvailableNow, which Python streaming sources support since Spark
4.2 through ``SupportsTriggerAvailableNow``) a bounded datagen produces all of its rows
at once, without waiting for 'rows-per-second', and the query ends; an unbounded one is
refused because it would never end.

The source is a Python data source (``pyspark.sql.datasource``): rows are generated in
the Python workers, vectorised with numpy and handed over as Arrow batches, so the ``job``
package must be importable there (it is when the job ships it with ``--py-files``).
"""
from __future__ import annotations

import decimal
import json
import math
import re
import time
import zlib
from typing import Any, Mapping

from job.connectors.base import APPEND, Connector, Option, SourceStream
from job.errors import PipelineError

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

INTEGRAL = {"tinyint": 8, "smallint": 16, "int": 32, "integer": 32, "bigint": 64, "long": 64}
SUPPORTED = tuple(INTEGRAL) + ("float", "double", "decimal", "string", "boolean", "date", "timestamp", "timestamp_ntz")
FLOAT_RANGE = {"float": (1.4e-45, 3.4028234663852886e38), "double": (5e-324, 1.7976931348623157e308)}
DEFAULT_LENGTH = 100
DATA_SOURCE_NAME = "streamsql_datagen"
ROW_COLUMN = "__row"


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
    statement = table.source.text if table.source else None
    table_origin = table.source.origin if table.source else None

    def fail(message, option=None, hint=None):
        origin = table.option_origins.get(option, table_origin) if option else table_origin
        raise PipelineError(message, origin=origin, statement=statement, option=option, hint=hint)

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
            from job.connectors.registry import did_you_mean

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

    from job.connectors.rows import physical_schema, table_frame

    table = ctx.table
    spec = field_specs(table, ctx.options)
    if ctx.once and spec["total"] is None:
        raise PipelineError(
            "datagen without 'number-of-rows' never ends; set it or run without --once",
            origin=table.source.origin if table.source else None,
            statement=table.source.text if table.source else None, option="number-of-rows",
            hint=f"e.g. 'number-of-rows' = '1000' on table '{table.name}'")
    try:
        spec["partitions"] = max(1, ctx.spark.sparkContext.defaultParallelism)
    except Exception:  # no SparkContext in this client (Spark Connect)
        spec["partitions"] = 4
    ctx.spark.dataSource.register(_build_classes()["DatagenDataSource"])  # registering again replaces it
    schema = StructType(list(physical_schema(table).fields) + [StructField(ROW_COLUMN, LongType(), False)])
    df = ctx.spark.readStream.format(DATA_SOURCE_NAME).schema(schema).option("spec", json.dumps(spec)).load()
    physical = {c.name: F.col(f"`{c.name}`") for c in table.physical_columns}
    control = {"__error": F.lit(None).cast("string"), "__raw": F.lit(None).cast("string"),
               "__position": F.concat(F.lit("datagen row "), F.col(ROW_COLUMN).cast("string"))}
    frame = table_frame(df, table, physical=physical, metadata={}, control=control)
    return SourceStream(frame, APPEND, bounded=spec["total"] is not None)


# --------------------------------------------------------------------------- generation
# Pure numpy/pyarrow functions of the row indexes, run in the Python workers.

_GOLDEN, _M1, _M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _mix(z):
    """splitmix64's finaliser on a uint64 array (wrapping arithmetic)."""
    import numpy as np

    z = z + np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
    return z ^ (z >> np.uint64(31))


def _hash(rows, salt: int, stream: int):
    """64 pseudo-random bits per row, a pure function of (row, column salt, stream)."""
    import numpy as np

    key = _mix(np.array([(salt * 1_000_003 + stream) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    return _mix(_mix(rows.astype(np.uint64) ^ key))


def _uniform_int(h, lo: int, hi: int):
    """Integers in [lo, hi] (int64) from hashes."""
    import numpy as np

    span = hi - lo + 1
    offset = h if span >= 2 ** 64 else h % np.uint64(span)
    return (offset + np.uint64(lo & 0xFFFFFFFFFFFFFFFF)).view(np.int64)


def _unit(h):
    """Floats in [0, 1) from hashes."""
    import numpy as np

    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def _hex_strings(rows, spec):
    import numpy as np
    import pyarrow as pa

    n, length = len(rows), spec["length"]
    if length == 0:
        return pa.array([""] * n, type=pa.string())
    words = -(-length // 16)
    hashes = np.stack([_hash(rows, spec["salt"], 2 + j) for j in range(words)], axis=1)  # (n, words)
    shifts = np.arange(60, -1, -4, dtype=np.uint64)
    nibbles = ((hashes[:, :, None] >> shifts[None, None, :]) & np.uint64(15)).reshape(n, words * 16)[:, :length]
    chars = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles.astype(np.intp)]
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(length)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(chars.tobytes()))


def generate_column(rows, spec, arrow_type, anchor_ms: int):
    """One column's values for the given row indexes (numpy int64) as an Arrow array."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    base = spec["type"]
    n = len(rows)
    if spec["kind"] == "sequence":
        start = int(decimal.Decimal(spec["start"])) if base not in ("float", "double", "decimal") else None
        if base in INTEGRAL:
            array = pa.array(np.int64(start) + rows, type=pa.int64()).cast(arrow_type)
        elif base == "string":
            array = pa.array([str(start + int(i)) for i in rows], type=pa.string())
        elif base == "decimal":
            first = decimal.Decimal(spec["start"])
            array = pa.array([first + int(i) for i in rows], type=arrow_type)
        else:
            array = pa.array(float(spec["start"]) + rows.astype(np.float64), type=pa.float64()).cast(arrow_type)
    else:
        h = _hash(rows, spec["salt"], 0)
        if base in INTEGRAL:
            values = _uniform_int(h, int(spec["min"]), int(spec["max"]))
            array = pa.array(values, type=pa.int64()).cast(arrow_type)
        elif base in ("float", "double"):
            u = _unit(h)
            lo, hi = float(spec["min"]), float(spec["max"])
            values = lo * (1.0 - u) + hi * u
            array = pa.array(values.astype(np.float32 if base == "float" else np.float64), type=arrow_type)
        elif base == "decimal":
            lo, hi = int(spec["min"]), int(spec["max"])
            span = hi - lo + 1
            h2 = _hash(rows, spec["salt"], 1)
            scale = spec["scale"]
            array = pa.array([decimal.Decimal(lo + ((int(a) << 64) | int(b)) % span).scaleb(-scale)
                              for a, b in zip(h, h2)], type=arrow_type)
        elif base == "string":
            array = _hex_strings(rows, spec)
        elif base == "boolean":
            array = pa.array((h & np.uint64(1)) == np.uint64(0), type=pa.bool_())
        elif base == "date":
            days_past = spec["max_past_ms"] // 86_400_000
            anchor_day = anchor_ms // 86_400_000
            values = np.int64(anchor_day) - (h % np.uint64(days_past + 1)).astype(np.int64)
            array = pa.array(values.astype(np.int32), type=pa.int32()).cast(pa.date32())
        else:  # timestamp, timestamp_ntz: microseconds since the epoch (UTC wall clock for ntz)
            past = (h % np.uint64(spec["max_past_ms"] + 1)).astype(np.int64)
            micros = (np.int64(anchor_ms) - past) * np.int64(1000)
            array = pa.array(micros, type=pa.int64()).cast(arrow_type)
    if spec["null_rate"] > 0:
        nulls = _unit(_hash(rows, spec["salt"], 1_000)) < spec["null_rate"]
        array = pc.if_else(pa.array(nulls), pa.scalar(None, type=array.type), array)
    if array.type != arrow_type:
        array = array.cast(arrow_type)
    assert len(array) == n
    return array


def generate_batch(spec: dict, arrow_schema, lo: int, hi: int, anchor_ms: int):
    """Rows lo … hi-1 as one Arrow RecordBatch in ``arrow_schema`` (fields, then __row)."""
    import numpy as np
    import pyarrow as pa

    rows = np.arange(lo, hi, dtype=np.int64)
    arrays = [generate_column(rows, spec_, arrow_schema.field(i).type, anchor_ms)
              for i, spec_ in enumerate(spec["fields"])]
    arrays.append(pa.array(rows, type=pa.int64()))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


# --------------------------------------------------------------------------- data source
# The classes subclass pyspark's, so they are built on first use (module __getattr__):
# importing the connector, as validation and --dry-run do, must not import pyspark.
# Workers unpickle them by reference (job.connectors.datagen.DatagenDataSource), which
# builds them there the same way.

BATCH_ROWS = 8192
_classes: dict[str, type] = {}


def _build_classes() -> dict[str, type]:
    if _classes:
        return _classes
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow

    class DatagenPartition(InputPartition):
        def __init__(self, lo: int, hi: int, anchor_ms: int) -> None:
            super().__init__((lo, hi, anchor_ms))
            self.lo, self.hi, self.anchor_ms = lo, hi, anchor_ms

    class DatagenStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        """Offsets: {"rows": rows produced so far, "at": generation time of the batch}."""

        def __init__(self, spec: dict, schema) -> None:
            self.spec = spec
            self.schema = schema
            self._started: float | None = None
            self._base = 0
            self._target: int | None = None

        def initialOffset(self) -> dict:
            return {"rows": 0, "at": 0}

        def _available(self, done: int) -> int:
            if self._target is not None:
                return self._target
            now = time.time()
            if self._started is None:  # count the rate from this run's start, not the first run's
                self._started, self._base = now, done
            available = self._base + int((now - self._started) * self.spec["rows_per_second"])
            total = self.spec["total"]
            return available if total is None else min(available, total)

        def latestOffset(self, start: dict, limit) -> dict:
            done = int(start["rows"])
            available = self._available(done)
            if isinstance(limit, ReadMaxRows):
                available = min(available, done + limit.max_rows)
            if available <= done:
                return start
            return {"rows": available, "at": int(time.time() * 1000)}

        def prepareForTriggerAvailableNow(self) -> None:
            # A bounded datagen is all available at once: --once does not wait for the rate.
            total = self.spec["total"]
            self._target = total if total is not None else self._available(0)

        def partitions(self, start: dict, end: dict):
            lo, hi, anchor = int(start["rows"]), int(end["rows"]), int(end["at"])
            if hi <= lo:
                return []
            count = max(1, min(self.spec["partitions"], -(-(hi - lo) // 1000)))
            step = -(-(hi - lo) // count)
            return [DatagenPartition(a, min(a + step, hi), anchor) for a in range(lo, hi, step)]

        def read(self, partition):
            from pyspark.sql.pandas.types import to_arrow_schema

            arrow_schema = to_arrow_schema(self.schema, timezone="UTC")
            for a in range(partition.lo, partition.hi, BATCH_ROWS):
                yield generate_batch(self.spec, arrow_schema, a, min(a + BATCH_ROWS, partition.hi),
                                     partition.anchor_ms)

        def commit(self, end: dict) -> None:
            pass

    class DatagenDataSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return DATA_SOURCE_NAME

        def schema(self):
            raise ValueError("the datagen data source needs an explicit schema")

        def streamReader(self, schema):
            return DatagenStreamReader(json.loads(self.options["spec"]), schema)

    for cls in (DatagenPartition, DatagenStreamReader, DatagenDataSource):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
        _classes[cls.__name__] = cls
    return _classes


def __getattr__(name: str):
    if name in ("DatagenPartition", "DatagenStreamReader", "DatagenDataSource"):
        return _build_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


CONNECTOR = Connector(
    identifier="datagen",
    description="Generates random or sequential rows at a fixed rate, optionally bounded.",
    options=OPTIONS,
    source_mode=APPEND,
    create_source=create_source,
    check=check,
)
