"""How datagen makes its rows: every value a pure function of the row's index and the
column (no random state), vectorised with numpy, and the Python data source that hands
them to Spark as Arrow batches, in the Python workers.
"""
from __future__ import annotations

import decimal
import json
import time

from job.connectors.python_source import LazyClasses

INTEGRAL = {"tinyint": 8, "smallint": 16, "int": 32, "integer": 32, "bigint": 64, "long": 64}
DATA_SOURCE_NAME = "streamsql_datagen"
ROW_COLUMN = "__row"

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
# Made on first use (job.connectors.python_source): importing the connector must not
# import pyspark.

BATCH_ROWS = 8192


def _define() -> tuple[type, ...]:
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

    return DatagenPartition, DatagenStreamReader, DatagenDataSource


CLASSES = LazyClasses(__name__, ("DatagenPartition", "DatagenStreamReader", "DatagenDataSource"), _define)
__getattr__ = CLASSES.module_getattr


def data_source() -> type:
    """The data source class to register with a session."""
    return CLASSES["DatagenDataSource"]
