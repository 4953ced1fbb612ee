"""print: writes every row to standard output (Flink's 'print' sink), for debugging.

Rows look like Flink's: ``+I[1, Alice, 2024-01-01T10:00]``, prefixed with
``<print-identifier>> `` when one is set. Updating queries show the full changelog
(``-U``/``+U``/``-D``), as Flink's print sink does. Rows are printed by the driver, in
the order the micro-batch delivers them, so print only small results.

Values are shown the way Flink (Java) shows them: NULL as ``null``, booleans as
``true``/``false``, TIMESTAMP as ``2024-01-01T10:00:00.500`` (seconds and fraction only
when not zero), DOUBLE as ``1.0E10``, arrays as ``[a, b]``, maps as ``{k=v}`` and ROWs as
``+I[…]``.
"""
from __future__ import annotations

import datetime
import decimal
import sys

from job.connectors.base import APPEND, CHANGELOG, UPSERT, Connector, Option, Sink

OPTIONS = (
    Option("print-identifier", description="Text printed before each row, as '<identifier>> +I[…]'."),
    Option("standard-error", "bool", default=False, description="Print to standard error instead of standard output."),
)

_SIMPLE = ("string", "varchar", "char", "boolean", "tinyint", "smallint", "int", "integer", "bigint", "long",
           "float", "double", "decimal", "date")


class PrintSink(Sink):
    def write_append(self, batch, batch_id):
        self._print(batch, None)

    def write_changes(self, batch, batch_id):
        self._print(batch, "__op")

    # ------------------------------------------------------------------ helpers
    def _columns(self, batch) -> list[str]:
        present = {c.lower(): c for c in batch.columns}
        wanted = [c.name for c in self.ctx.table.columns if c.is_persisted]
        if wanted and all(w.lower() in present for w in wanted):
            return [present[w.lower()] for w in wanted]
        return [c for c in batch.columns if not c.startswith("__")]

    def _print(self, batch, op_column):
        from pyspark.sql import functions as F

        names = self._columns(batch)
        types = dict(batch.dtypes)
        exprs = [_display(F.col(f"`{n}`"), types[n]).alias(f"c{i}") for i, n in enumerate(names)]
        if op_column:
            exprs.append(F.col(op_column).alias("op"))
        rows = batch.select(*exprs).toLocalIterator()
        identifier = self.ctx.options.get("print-identifier")
        prefix = f"{identifier}> " if identifier else ""
        out = sys.stderr if self.ctx.options.get("standard-error") else sys.stdout
        for row in rows:
            op = row["op"] if op_column else "+I"
            values = [row[f"c{i}"] for i in range(len(names))]
            out.write(f"{prefix}{op}[{', '.join(format_value(v) for v in values)}]\n")
        out.flush()


def _display(col, spark_type: str):
    """Most values are turned into Flink's text in Spark (Java's number formatting, the
    session time zone for timestamps); nested values are formatted in Python."""
    from pyspark.sql import functions as F

    base = spark_type.split("(")[0].split("<")[0].strip().lower()
    if base in ("timestamp", "timestamp_ntz", "timestamp_ltz"):
        return java_datetime(F.date_format(col, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"))
    if base in _SIMPLE:
        return col.cast("string")
    return col


def java_datetime(text):
    """'2024-01-01T10:00:00.000000' → '2024-01-01T10:00', as java.time.LocalDateTime prints."""
    from pyspark.sql import functions as F

    millis = F.regexp_replace(text, r"(\.\d{3})000$", "$1")
    no_fraction = F.regexp_replace(millis, r"\.000$", "")
    return F.regexp_replace(no_fraction, r"(T\d\d:\d\d):00$", "$1")


def format_value(value) -> str:
    """A value as Flink's Row.toString shows it."""
    from pyspark.sql import Row

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, Row):
        return "+I[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, (bytes, bytearray)):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k)}={format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, datetime.datetime):
        text = value.isoformat()
        if value.microsecond == 0 and value.second == 0:
            return text[:16]
        if value.microsecond % 1000 == 0 and value.microsecond:
            return text[:23]
        return text
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    return str(value)


CONNECTOR = Connector(
    identifier="print",
    description="Prints every row (and every change) to standard output, for debugging.",
    options=OPTIONS,
    sink_modes=(APPEND, UPSERT, CHANGELOG),
    create_sink=PrintSink,
    accepts_retractions=True,
)
