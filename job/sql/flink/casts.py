"""Flink's CAST / TRY_CAST, and interval literals, as Spark SQL.

Where Spark's CAST computes what Flink's does, it is used as is. Where they differ,
Flink's meaning is spelled out:

* BOOLEAN → STRING is ``TRUE``/``FALSE`` (Spark: ``true``/``false``);
* TIMESTAMP(p) → STRING always shows p fraction digits (``…00:00:00.000`` for p = 3;
  Spark drops trailing zeros); a TIMESTAMP_LTZ is shown in ``table.local-time-zone``;
* → TIMESTAMP(p) and TIMESTAMP(p) → TIMESTAMP(q < p) keep q fraction digits;
* TIMESTAMP ↔ TIMESTAMP_LTZ ↔ DATE convert through ``table.local-time-zone``;
* → CHAR(n) / VARCHAR(n) cut the string to n characters (CHAR pads with blanks);
* → DECIMAL(p, s) is NULL when the value does not fit (Spark's ANSI mode would fail);
* text → a number reads the text by Flink's grammar for that type (number_text);
* numbers ↔ TIMESTAMP are refused, as in Flink (TO_TIMESTAMP_LTZ converts epochs).
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from job.sql.flink import rules
from job.sql.flink.number_text import text_to_number
from job.sql.flink.typed import Typed, let, spark_string, wrap_integer
from job.sql.types import MAX_LENGTH, LogicalType, t

_TEMPORAL = ("DATE", "TIMESTAMP", "TIMESTAMP_LTZ")


def timestamp_format(precision: int) -> str:
    """Spark date_format pattern for Flink's text of a TIMESTAMP(precision)."""
    digits = min(precision or 0, 6)
    return "yyyy-MM-dd HH:mm:ss" + ("." + "S" * digits if digits else "")


def truncate_fraction(sql: str, from_precision: int, to_precision: int) -> str:
    """A timestamp with only ``to_precision`` fraction digits (Spark keeps microseconds)."""
    if to_precision >= min(from_precision, 6):
        return sql
    unit = 10 ** (6 - to_precision)
    return f"timestamp_micros(floor(unix_micros({sql}) / {unit}) * {unit})"


def zone(tr) -> str:
    return exp.Literal.string(tr.settings.local_time_zone).sql(dialect="spark")


def as_string(tr, value, to: LogicalType) -> str:
    """The Spark text of ``value`` as Flink prints it (CAST … AS STRING)."""
    src = value.type
    sql = value.sql
    if src.name == "BOOLEAN":
        return f"upper(CAST({sql} AS STRING))"
    if src.name == "TIMESTAMP":
        return f"date_format({sql}, '{timestamp_format(src.precision)}')" + _nano_padding(src)
    if src.name == "TIMESTAMP_LTZ":
        return f"date_format(from_utc_timestamp({sql}, {zone(tr)}), '{timestamp_format(src.precision)}')" \
            + _nano_padding(src)
    if src.name in ("INTERVAL_DAY_TIME", "INTERVAL_YEAR_MONTH"):
        tr.refuse(None, f"CAST of {src} to a string is not supported yet")
    return f"CAST({sql} AS STRING)"


def _nano_padding(src: LogicalType) -> str:
    return "" if (src.precision or 0) <= 6 else ""  # digits beyond micros are always zero here


def cast(tr, value, to: LogicalType, node: Optional[exp.Expression] = None, safe: bool = False):
    """``CAST(value AS to)`` with Flink's semantics (``safe``: TRY_CAST, NULL on failure)."""
    src = value.type
    sql = value.sql
    spark_cast = "try_cast" if safe else "CAST"
    if src.is_null:
        return Typed(f"CAST(NULL AS {to.spark})", to.nullable_as(True))
    if src.nullable_as(to.nullable) == to:
        return Typed(sql, to)
    name = to.name
    # ---- to character strings
    if to.is_character:
        if src.is_character:
            text = sql
        elif src.is_binary:
            text = f"CAST({sql} AS STRING)"
        else:
            text = as_string(tr, value, to)
        length = to.precision or MAX_LENGTH
        if name == "CHAR":
            return Typed(f"rpad(substring({text}, 1, {length}), {length}, ' ')", to)
        if length < MAX_LENGTH and (not src.is_character or (src.precision or MAX_LENGTH) > length):
            return Typed(f"substring({text}, 1, {length})", to)
        return Typed(text, to)
    # ---- between temporal types
    if name in _TEMPORAL and src.name in _TEMPORAL:
        return Typed(_temporal(tr, sql, src, to), to)
    # ---- from character strings to temporal types
    if name in _TEMPORAL and src.is_character:
        if name == "DATE":
            return Typed(parse_date(sql, safe), to)
        parsed = parse_timestamp(sql, safe)
        parsed = truncate_fraction(parsed, 6, to.precision if to.precision is not None else 6)
        if name == "TIMESTAMP_LTZ":
            parsed = f"to_utc_timestamp({parsed}, {zone(tr)})"
        return Typed(parsed, to)
    if name in _TEMPORAL or src.name in _TEMPORAL:
        if src.is_numeric or to.is_numeric:
            tr.refuse(node, f"CAST from {src} to {to} is not supported by Flink",
                      hint="TO_TIMESTAMP_LTZ(epoch, 0|3) converts an epoch number; UNIX_TIMESTAMP the other way")
        tr.refuse(node, f"CAST from {src} to {to} is not supported")
    # ---- numbers
    if to.is_numeric and src.is_character:
        return Typed(text_to_number(sql, to, safe), to.nullable_as(to.nullable or safe or name == "DECIMAL"))
    if name == "DECIMAL":
        if src.is_numeric:
            return Typed(f"try_cast({sql} AS {to.spark})", to.nullable_as(True))
    if to.is_integral and src.is_integral:
        if _int_bits(src) > _int_bits(to):
            return Typed(wrap_integer(f"CAST({sql} AS BIGINT)", to), to)
        return Typed(f"CAST({sql} AS {to.spark})", to)
    if to.is_integral and src.name in ("FLOAT", "DOUBLE", "DECIMAL"):
        return Typed(approximate_to_integer(sql, src, to), to)
    if to.is_numeric and (src.is_numeric or src.is_character):
        return Typed(f"{spark_cast}({sql} AS {to.spark})", to.nullable_as(to.nullable or safe))
    if name == "BOOLEAN" and (src.is_character or src.is_numeric):
        return Typed(f"{spark_cast}({sql} AS BOOLEAN)", to.nullable_as(to.nullable or safe))
    if to.is_numeric and src.name == "BOOLEAN":
        return Typed(f"CAST(CAST({sql} AS INT) AS {to.spark})", to)
    if to.is_binary and (src.is_character or src.is_binary):
        return Typed(f"CAST({sql} AS BINARY)", to)
    if name in ("ARRAY", "MAP", "ROW", "MULTISET") and src.name == name:
        return Typed(f"{spark_cast}({sql} AS {to.spark})", to)
    tr.refuse(node, f"CAST from {src} to {to} is not supported")


def approximate_to_integer(sql: str, src: LogicalType, to: LogicalType) -> str:
    """Java's narrowing of a FLOAT/DOUBLE or DECIMAL to an integer type, as Flink casts:
    the fraction is cut; a DOUBLE beyond the range of INT (BIGINT) saturates to its
    bounds, NaN is 0, and a TINYINT/SMALLINT keeps the low-order bits of that INT; a
    DECIMAL keeps the low-order bits of its whole part."""
    if src.name == "DECIMAL":
        whole = f"CAST({sql} AS DECIMAL(38, 0))" if src.scale == 0 else \
            f"CAST(IF({sql} < 0, ceil({sql}), floor({sql})) AS DECIMAL(38, 0))"
        return wrap_integer(whole, to)
    wide = "BIGINT" if to.name == "BIGINT" else "INT"
    low, high = (-2 ** 63, 2 ** 63 - 1) if wide == "BIGINT" else (-2 ** 31, 2 ** 31 - 1)
    suffix = "L" if wide == "BIGINT" else ""
    d = f"CAST({sql} AS DOUBLE)"
    saturated = (f"CASE WHEN isnan({d}) THEN CAST(0 AS {wide}) WHEN {d} >= {float(high)!r} THEN {high}{suffix} "
                 f"WHEN {d} <= {float(low)!r} THEN {low}{suffix} ELSE CAST({d} AS {wide}) END")
    if to.name in ("TINYINT", "SMALLINT"):
        return wrap_integer(f"CAST({saturated} AS BIGINT)", to)
    return f"({saturated})"


# Flink's reading of text as a TIMESTAMP (DateTimeUtils.parseTimestampData): a date, or a
# date and a time with seconds, in digits; no 'T', no time zone, no surrounding blanks;
# a day past the month's end (but not past 31) is the month's last day. Spark's CAST
# reads much more, so the text is checked and rebuilt first.
TIMESTAMP_TEXT = (r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
                  r"( [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]{0,9})?)?$")
# … and as a DATE (DateTimeUtils.parseDate): the text up to a blank that is not its first
# character: a year, a year and month, or a year, month and day (the missing ones are 1),
# with blanks allowed around each number; a valid date.
DATE_TEXT = (r"^[\x00-\x20]*([0-9]{1,4})[\x00-\x20]*(-[\x00-\x20]*([0-9]+)[\x00-\x20]*"
             r"(-[\x00-\x20]*([0-9]+)[\x00-\x20]*)?)?$")


def parse_timestamp(sql: str, safe: bool = True) -> str:
    """Text as a TIMESTAMP the way Flink reads it: NULL for TRY_CAST, a failure for CAST."""
    pattern = spark_string(TIMESTAMP_TEXT)

    def body(v: str) -> str:
        def part(n: int) -> str:
            return f"CAST(regexp_extract({v}, {pattern}, {n}) AS INT)"

        y, m, d = part(1), part(2), part(3)
        day = f"least({d}, day(last_day(make_date({y}, {m}, 1))))"
        text = (f"concat(date_format(make_date({y}, {m}, {day}), 'yyyy-MM-dd'), "
                f"regexp_extract({v}, {pattern}, 4))")
        bad = "NULL" if safe else f"raise_error(concat('Invalid TIMESTAMP text: ', {v}))"
        return (f"(CASE WHEN NOT ({v} RLIKE {pattern}) THEN {bad} WHEN {m} NOT BETWEEN 1 AND 12 OR {d} NOT BETWEEN 1 "
                f"AND 31 THEN {bad} ELSE {'try_cast' if safe else 'CAST'}({text} AS TIMESTAMP) END)")

    return let(sql, body)


def parse_date(sql: str, safe: bool = True) -> str:
    """Text as a DATE the way Flink reads it: NULL for TRY_CAST, a failure for CAST."""
    pattern = spark_string(DATE_TEXT)

    def body(v: str) -> str:
        cut = f"IF(instr({v}, ' ') > 1, substring_index({v}, ' ', 1), {v})"

        def part(n: int) -> str:
            return f"regexp_extract({cut}, {pattern}, {n})"

        month, day = f"IF({part(3)} = '', '1', {part(3)})", f"IF({part(5)} = '', '1', {part(5)})"
        text = f"concat(lpad({part(1)}, 4, '0'), '-', lpad({month}, 2, '0'), '-', lpad({day}, 2, '0'))"
        bad = "NULL" if safe else f"raise_error(concat('Invalid DATE text: ', {v}))"
        parsed = f"try_to_date({text}, 'yyyy-MM-dd')"
        if not safe:
            parsed = f"coalesce({parsed}, {bad})"
        return f"(CASE WHEN {v} IS NULL THEN NULL WHEN NOT ({cut} RLIKE {pattern}) THEN {bad} ELSE {parsed} END)"

    return let(sql, body)


def _int_bits(x: LogicalType) -> int:
    return {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}[x.name]


def _temporal(tr, sql: str, src: LogicalType, to: LogicalType) -> str:
    z = zone(tr)
    if to.name == "DATE":
        if src.name == "TIMESTAMP_LTZ":
            return f"CAST(from_utc_timestamp({sql}, {z}) AS DATE)"
        # Flink divides a TIMESTAMP's epoch milliseconds by a day's, truncating: a time
        # before 1970 becomes the next day (reproduced, see functions.temporal.flink_date).
        return f"date_from_unix_date(CAST(unix_millis({sql}) div 86400000 AS INT))"
    precision = to.precision if to.precision is not None else 6
    if src.name == "DATE":
        out = f"CAST({sql} AS TIMESTAMP)"
        return f"to_utc_timestamp({out}, {z})" if to.name == "TIMESTAMP_LTZ" else out
    out = truncate_fraction(sql, src.precision if src.precision is not None else 6, precision)
    if src.name == to.name:
        return out
    if to.name == "TIMESTAMP_LTZ":  # wall clock in the local zone → instant
        return f"to_utc_timestamp({out}, {z})"
    return f"from_utc_timestamp({out}, {z})"  # instant → wall clock in the local zone


# --------------------------------------------------------------------------- intervals

_UNIT = {"YEARS": "YEAR", "MONTHS": "MONTH", "DAYS": "DAY", "HOURS": "HOUR", "MINUTES": "MINUTE",
         "SECONDS": "SECOND", "WEEKS": "WEEK", "QUARTERS": "QUARTER"}
_YEAR_MONTH = ("YEAR", "MONTH", "QUARTER")


def unit_name(text: str) -> str:
    return _UNIT.get(text.upper(), text.upper())


def interval_literal(tr, node: exp.Interval):
    unit = node.args.get("unit")
    text = node.this.name if node.this is not None else ""
    units = [unit_name(u.strip()) for u in (unit.name if unit is not None else "").split(" TO ")]
    if not units or not units[0]:
        tr.refuse(node, "an INTERVAL needs a unit, e.g. INTERVAL '10' SECOND")
    first = units[0]
    if first == "WEEK":
        return Typed(f"INTERVAL '{_int(tr, node, text) * 7}' DAY", t("INTERVAL_DAY_TIME", nullable=False))
    if first == "QUARTER":
        return Typed(f"INTERVAL '{_int(tr, node, text) * 3}' MONTH", t("INTERVAL_YEAR_MONTH", nullable=False))
    if first not in ("YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"):
        tr.refuse(node, f"INTERVAL unit {first} is not supported")
    qualifier = " TO ".join(units)
    if units[-1] == "SECOND":  # Flink keeps an interval in milliseconds: further digits are cut
        import re

        text = re.sub(r"(\.\d{3})\d+", r"\1", text)
    literal = exp.Literal.string(text).sql(dialect="spark")
    kind = "INTERVAL_YEAR_MONTH" if first in _YEAR_MONTH else "INTERVAL_DAY_TIME"
    return Typed(f"INTERVAL {literal} {qualifier}", t(kind, nullable=False))


def _int(tr, node, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        tr.refuse(node, f"'{text}' is not a whole number of units")


def interval_millis(tr, node: exp.Expression) -> int:
    """A constant INTERVAL as milliseconds (window sizes, watermark delays)."""
    import re

    if isinstance(node, exp.Paren):
        return interval_millis(tr, node.this)
    if not isinstance(node, exp.Interval):
        tr.refuse(node, "expected a constant INTERVAL, e.g. INTERVAL '10' MINUTE")
    unit = unit_name((node.args.get("unit").name if node.args.get("unit") is not None else "").split(" TO ")[0])
    text = node.this.name.strip()
    factors = {"DAY": 86_400_000, "HOUR": 3_600_000, "MINUTE": 60_000, "SECOND": 1000, "WEEK": 7 * 86_400_000}
    if unit in factors and re.fullmatch(r"-?\d+(\.\d+)?", text):
        return int(round(float(text) * factors[unit]))
    spans = {"DAY": ("d", "h", "m", "s"), "HOUR": ("h", "m", "s"), "MINUTE": ("m", "s")}
    if unit in spans:
        m = re.fullmatch(r"(-?)(\d+)(?:[ ](\d+))?(?::(\d+))?(?::(\d+(?:\.\d+)?))?", text)
        if m:
            parts = [p for p in m.groups()[1:] if p is not None]
            scale = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000}
            total = sum(float(p) * scale[u] for p, u in zip(parts, spans[unit]))
            return int(round(-total if m.group(1) else total))
    tr.refuse(node, f"INTERVAL '{text}' {unit} is not a fixed length of time"
                    + (" (months and years vary)" if unit in _YEAR_MONTH else ""))


INT = t("INT")
BIGINT = t("BIGINT")
rules_ = rules
