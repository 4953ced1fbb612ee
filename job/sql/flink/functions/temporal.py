"""Flink's temporal functions.

Flink's TIMESTAMP is a wall-clock value; its TIMESTAMP_LTZ is an instant shown in
``table.local-time-zone``. Both are Spark timestamps in a session pinned to UTC (see
job.sql.types), so wherever Flink's answer depends on the local time zone (extracting a
field of a TIMESTAMP_LTZ, formatting it, parsing a string into an instant, the current
date) the translation converts through that zone explicitly.
"""
from __future__ import annotations

from job.sql.flink.casts import parse_date, parse_timestamp, truncate_fraction, zone
from job.sql.flink.functions import scalar
from job.sql.flink.semantics import comparison, temporal_arithmetic
from job.sql.flink.typed import Typed, lit
from job.sql.types import BIGINT_TYPE, BOOLEAN_TYPE, DATE_TYPE, INT_TYPE, STRING_TYPE, t, timestamp

CATEGORY = "temporal"
DEFAULT_FORMAT = "yyyy-MM-dd HH:mm:ss"


def wall_clock(call, value: Typed) -> str:
    """A TIMESTAMP/TIMESTAMP_LTZ/DATE as the wall-clock timestamp Flink reads fields from."""
    if value.type.name == "TIMESTAMP_LTZ":
        return f"from_utc_timestamp({value.sql}, {zone(call.tr)})"
    if value.type.name == "DATE":
        return f"CAST({value.sql} AS TIMESTAMP)"
    return value.sql


# java.text.SimpleDateFormat("yyyy-MM-dd HH:mm:ss"), which Flink reads text with where no
# pattern is given (UNIX_TIMESTAMP, DATE_FORMAT of text, CONVERT_TZ): it reads a prefix of
# the text (what follows is ignored), takes any number of digits per field, and is
# lenient (month 13 is January of the next year).
_DEFAULT_TEXT = "^[ \\t]*([0-9]+)-([0-9]+)-([0-9]+) ([0-9]+):([0-9]+):([0-9]+)"


def read_default(sql: str) -> str:
    """Text read as SimpleDateFormat("yyyy-MM-dd HH:mm:ss") reads it, a TIMESTAMP or NULL."""
    def field(n: int) -> str:
        return f"CAST(regexp_extract({sql}, '{_DEFAULT_TEXT}', {n}) AS INT)"

    value = f"make_timestamp({field(1)}, 1, 1, 0, 0, 0)"
    for unit, n, offset in (("MONTH", 2, 1), ("DAY", 3, 1), ("HOUR", 4, 0), ("MINUTE", 5, 0), ("SECOND", 6, 0)):
        value = f"timestampadd({unit}, {field(n)}{f' - {offset}' if offset else ''}, {value})"
    return f"IF({sql} RLIKE '{_DEFAULT_TEXT}', {value}, NULL)"


def _format_arg(call, i: int, default: str = DEFAULT_FORMAT) -> str:
    if len(call) > i:
        call.need(i, "string")
        return call.arg(i).sql
    return lit(default).sql


@scalar("DATE_FORMAT", CATEGORY, "DATE_FORMAT(timestamp, string)",
        "The timestamp as text in the given SimpleDateFormat pattern (a TIMESTAMP_LTZ in the local time zone).")
def date_format(call):
    value, fmt = call.args(2)
    call.need(0, "timestamp", "string"), call.need(1, "string")
    if value.type.is_character:
        source = read_default(value.sql)
    else:
        source = wall_clock(call, value)
    return Typed(f"date_format({source}, {fmt.sql})", STRING_TYPE.nullable_as(True))


@scalar("TO_TIMESTAMP", CATEGORY, "TO_TIMESTAMP(string1[, string2])",
        "STRING1 parsed as a TIMESTAMP(3) (pattern STRING2, default 'yyyy-MM-dd HH:mm:ss'); NULL if it does not parse.")
def to_timestamp(call):
    args = call.args(1, 2)
    call.need(0, "string")
    if len(args) == 1:
        parsed = parse_timestamp(args[0].sql)
    else:
        call.need(1, "string")
        parsed = f"try_to_timestamp({args[0].sql}, {args[1].sql})"
    return Typed(truncate_fraction(parsed, 6, 3), timestamp(3))


@scalar("TO_DATE", CATEGORY, "TO_DATE(string1[, string2])",
        "STRING1 parsed as a DATE (pattern STRING2, default 'yyyy-MM-dd'); NULL if it does not parse.")
def to_date(call):
    args = call.args(1, 2)
    call.need(0, "string")
    if len(args) == 1:
        return Typed(parse_date(args[0].sql), DATE_TYPE)
    call.need(1, "string")
    return Typed(f"CAST(try_to_timestamp({args[0].sql}, {args[1].sql}) AS DATE)", DATE_TYPE)


@scalar("TO_TIMESTAMP_LTZ", CATEGORY, "TO_TIMESTAMP_LTZ(numeric, precision)",
        "An epoch number as a TIMESTAMP_LTZ(3): seconds for precision 0, milliseconds for 3.")
def to_timestamp_ltz(call):
    args = call.args(1, 2)
    if args[0].type.is_character:
        call.need(1, "string") if len(args) > 1 else None
        fmt = args[1].sql if len(args) > 1 else lit("yyyy-MM-dd HH:mm:ss.SSS").sql
        return Typed(f"to_utc_timestamp(try_to_timestamp({args[0].sql}, {fmt}), {zone(call.tr)})",
                     timestamp(3, ltz=True))
    call.need(0, "numeric")
    precision = call.constant_int(1, "0 (seconds) or 3 (milliseconds)") if len(args) == 2 else 3
    if precision not in (0, 3):
        call.refuse("the precision of TO_TIMESTAMP_LTZ must be 0 (seconds) or 3 (milliseconds)")
    millis = f"CAST({args[0].sql} AS DOUBLE) * 1000" if precision == 0 else f"CAST({args[0].sql} AS DOUBLE)"
    return Typed(f"timestamp_millis(CAST(floor({millis}) AS BIGINT))",
                 timestamp(3, ltz=True, nullable=args[0].type.nullable))


@scalar("UNIX_TIMESTAMP", CATEGORY, "UNIX_TIMESTAMP([string1[, string2]])",
        "Now, or STRING1 (pattern STRING2, default 'yyyy-MM-dd HH:mm:ss') read in the local time zone, "
        "as seconds since the epoch.")
def unix_timestamp(call):
    args = call.args(0, 1, 2)
    if not args:
        return Typed("unix_timestamp()", BIGINT_TYPE.nullable_as(False))
    call.need(0, "string")
    parsed = (read_default(args[0].sql) if len(args) == 1 else
              f"try_to_timestamp({args[0].sql}, {_format_arg(call, 1)})")
    # Flink answers Long.MIN_VALUE for a string that does not parse; its seconds are the
    # milliseconds divided by 1000, truncated (before 1970: rounded up).
    instant = standard_time_instant(parsed, zone(call.tr)) if len(args) == 1 else \
        f"to_utc_timestamp({parsed}, {zone(call.tr)})"
    return Typed(f"coalesce(unix_millis({instant}) div 1000, "
                 f"IF({args[0].sql} IS NULL, NULL, -9223372036854775808L))", BIGINT_TYPE.nullable_as(True))


@scalar("FROM_UNIXTIME", CATEGORY, "FROM_UNIXTIME(numeric[, string])",
        "Seconds since the epoch as text in the local time zone (pattern STRING, default 'yyyy-MM-dd HH:mm:ss').")
def from_unixtime(call):
    args = call.args(1, 2)
    call.need(0, "integer")
    local = f"from_utc_timestamp(timestamp_seconds({args[0].sql}), {zone(call.tr)})"
    return Typed(f"date_format({local}, {_format_arg(call, 1)})", STRING_TYPE.nullable_as(args[0].type.nullable))


@scalar("CONVERT_TZ", CATEGORY, "CONVERT_TZ(string1, string2, string3)",
        "The 'yyyy-MM-dd HH:mm:ss' time STRING1 of zone STRING2 as the time in zone STRING3.")
def convert_tz(call):
    value, src, dst = call.args(3)
    for i in range(3):
        call.need(i, "string")
    parsed = read_default(value.sql)
    moved = f"from_utc_timestamp({standard_time_instant(parsed, src.sql)}, {dst.sql})"
    return Typed(f"date_format({moved}, '{DEFAULT_FORMAT}')", STRING_TYPE.nullable_as(True))


# --------------------------------------------------------------------------- fields

# Fields of a DATE (days since the epoch), with Spark's functions on that date.
_DATE_FIELDS = {
    "YEAR": "year({d})", "QUARTER": "quarter({d})", "MONTH": "month({d})", "WEEK": "weekofyear({d})",
    "DAY": "day({d})", "DOW": "dayofweek({d})", "DOY": "dayofyear({d})",
    "ISODOW": "(pmod(dayofweek({d}) + 5, 7) + 1)", "DECADE": "floor(year({d}) / 10)",
    "CENTURY": "ceil(year({d}) / 100)", "MILLENNIUM": "ceil(year({d}) / 1000)",
    "ISOYEAR": "year(date_add({d}, 4 - (pmod(dayofweek({d}) + 5, 7) + 1)))",
}
# Fields of the time of day, from ``{m}``: a TIMESTAMP's epoch milliseconds (``{u}``:
# microseconds). Flink takes them with Java's truncating division and remainder, so a
# time before 1970 has negative fields (EXTRACT(HOUR FROM TIMESTAMP '1969-12-31
# 20:00:00') is -4) and its date is the next day's: reproduced as it is.
_TIME_FIELDS = {
    "HOUR": "(({m}) % 86400000) div 3600000", "MINUTE": "(({m}) % 3600000) div 60000",
    "SECOND": "(({m}) % 60000) div 1000", "MILLISECOND": "({m}) % 1000", "MICROSECOND": "({u}) % 1000000",
    "EPOCH": "({m}) div 1000",
}
_UNIT_ALIASES = {"YEARS": "YEAR", "MONTHS": "MONTH", "DAYS": "DAY", "HOURS": "HOUR", "MINUTES": "MINUTE",
                 "SECONDS": "SECOND", "WEEKS": "WEEK", "QUARTERS": "QUARTER", "DAYOFMONTH": "DAY",
                 "DAYOFWEEK": "DOW", "DAYOFYEAR": "DOY", "SQL_TSI_DAY": "DAY"}


def epoch_millis(call, value: Typed) -> tuple[str, str]:
    """(milliseconds, microseconds) since the epoch of a TIMESTAMP's wall-clock time, or of
    a TIMESTAMP_LTZ's time in the local time zone."""
    local = wall_clock(call, value)
    return f"unix_millis({local})", f"unix_micros({local})"


def flink_date(millis: str) -> str:
    """The DATE Flink gives a time: its epoch milliseconds divided by a day's, truncated
    (for times before 1970, the next day)."""
    return f"date_from_unix_date(CAST(({millis}) div 86400000 AS INT))"


def _field(call, unit: str, value: Typed) -> Typed:
    unit = _UNIT_ALIASES.get(unit, unit)
    if unit not in _DATE_FIELDS and unit not in _TIME_FIELDS:
        call.refuse(f"EXTRACT({unit} FROM …) is not supported")
    if value.type.name == "DATE":
        if unit in _TIME_FIELDS and unit != "EPOCH":
            call.refuse(f"EXTRACT({unit} FROM …) needs a time, not a DATE")
        text = (f"unix_date({value.sql}) * 86400" if unit == "EPOCH"
                else _DATE_FIELDS[unit].format(d=value.sql))
    else:
        millis, micros = epoch_millis(call, value)
        if unit == "EPOCH" and value.type.name == "TIMESTAMP_LTZ":
            millis = f"unix_millis({value.sql})"
        if unit in _TIME_FIELDS:
            text = _TIME_FIELDS[unit].format(m=millis, u=micros)
        else:
            text = _DATE_FIELDS[unit].format(d=flink_date(millis))
    return Typed(f"CAST({text} AS BIGINT)", BIGINT_TYPE.nullable_as(value.type.nullable))


@scalar("EXTRACT", CATEGORY, "EXTRACT(timeintervalunit FROM temporal)",
        "A field of a date or time point (YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, DOW, DOY …).")
def extract(call):
    call.arity(2)
    unit = call.unit(0)
    value = call.need(1, "temporal")
    return _field(call, unit, value)


for _name, _unit in [("YEAR", "YEAR"), ("QUARTER", "QUARTER"), ("MONTH", "MONTH"), ("WEEK", "WEEK"),
                     ("DAYOFYEAR", "DOY"), ("DAYOFMONTH", "DAY"), ("DAYOFWEEK", "DOW"), ("HOUR", "HOUR"),
                     ("MINUTE", "MINUTE"), ("SECOND", "SECOND")]:
    scalar(_name, CATEGORY, f"{_name}(temporal)", f"EXTRACT({_unit} FROM temporal), a BIGINT.")(
        lambda call, _u=_unit: (call.arity(1), _field(call, _u, call.need(0, "temporal")))[1])


_ADD_UNITS = {"MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"}


@scalar("TIMESTAMPADD", CATEGORY, "TIMESTAMPADD(timeintervalunit, interval, timepoint)",
        "TIMEPOINT plus INTERVAL units.")
def timestampadd(call):
    call.arity(3)
    unit = _UNIT_ALIASES.get(call.unit(0), call.unit(0))
    if unit not in _ADD_UNITS:
        call.refuse(f"TIMESTAMPADD unit {unit} is not supported")
    n, value = call.need(1, "integer"), call.need(2, "temporal")
    added = f"timestampadd({unit}, {n.sql}, {wall_clock(call, value) if value.type.name == 'DATE' else value.sql})"
    if value.type.name == "DATE":
        return Typed(f"CAST({added} AS DATE)", value.type.nullable_as(call.nullable(n, value)))
    return Typed(added, value.type.nullable_as(call.nullable(n, value)))


@scalar("TIMESTAMPDIFF", CATEGORY, "TIMESTAMPDIFF(timepointunit, timepoint1, timepoint2)",
        "The whole number of units from TIMEPOINT1 to TIMEPOINT2, an INT; months as Flink counts them (January 31 "
        "to February 29 is one month), quarters and years from those.")
def timestampdiff(call):
    call.arity(3)
    unit = _UNIT_ALIASES.get(call.unit(0), call.unit(0))
    if unit not in _ADD_UNITS:
        call.refuse(f"TIMESTAMPDIFF unit {unit} is not supported")
    a, b = call.need(1, "temporal"), call.need(2, "temporal")
    if (a.type.name == "TIMESTAMP_LTZ") != (b.type.name == "TIMESTAMP_LTZ"):
        call.refuse("TIMESTAMPDIFF compares two TIMESTAMPs or two TIMESTAMP_LTZs")
    sa = a.sql if a.type.name != "DATE" else f"CAST({a.sql} AS TIMESTAMP)"
    sb = b.sql if b.type.name != "DATE" else f"CAST({b.sql} AS TIMESTAMP)"
    nullable = INT_TYPE.nullable_as(call.nullable(a, b))
    if unit in ("MONTH", "QUARTER", "YEAR") and a.type.name != "TIMESTAMP_LTZ":
        months = _months_between(sa, sb)
        divided = {"MONTH": months, "QUARTER": f"({months}) div 3", "YEAR": f"({months}) div 12"}[unit]
        return Typed(f"CAST({divided} AS INT)", nullable)
    return Typed(f"CAST(timestampdiff({unit}, {sa}, {sb}) AS INT)", nullable)


def _months_between(start: str, end: str) -> str:
    """The whole months from ``start`` to ``end`` as Flink counts them (Calcite's
    DateTimeUtils.subtractMonths): the largest m for which start's date plus m months,
    clamped to the month's last day, is not after end's date (so Jan 31 to Feb 29 is a
    month), less one when that lands on end's date but at a later time of day. Quarters
    and years are those months divided by 3 or 12, truncated. Spark's timestampdiff counts
    whole calendar months without the clamp (Jan 31 to Feb 29 is none)."""
    d0, d1 = f"CAST({end} AS DATE)", f"CAST({start} AS DATE)"

    def whole(hi: str, lo: str) -> str:
        naive = f"((year({hi}) * 12 + month({hi})) - (year({lo}) * 12 + month({lo})))"
        return f"({naive} - CASE WHEN day({lo}) > day({hi}) AND {hi} <> last_day({hi}) THEN 1 ELSE 0 END)"

    x = f"(CASE WHEN {d0} >= {d1} THEN {whole(d0, d1)} ELSE -{whole(d1, d0)} END)"
    clock = "'HH:mm:ss.SSSSSS'"
    earlier = f"date_format({end}, {clock}) < date_format({start}, {clock})"
    return f"({x} - CASE WHEN add_months({d1}, {x}) = {d0} AND {earlier} THEN 1 ELSE 0 END)"


_TRUNC = {"YEAR": "YEAR", "QUARTER": "QUARTER", "MONTH": "MONTH", "WEEK": "WEEK", "DAY": "DAY", "HOUR": "HOUR",
          "MINUTE": "MINUTE", "SECOND": "SECOND", "MILLISECOND": "MILLISECOND"}


def ceil_floor_time(call, fn: str) -> Typed:
    """CEIL(t TO unit) / FLOOR(t TO unit)."""
    value = call.need(0, "temporal")
    unit = _UNIT_ALIASES.get(call.unit(1), call.unit(1))
    if unit not in _TRUNC:
        call.refuse(f"{fn.upper()}(… TO {unit}) is not supported")
    local = wall_clock(call, value)
    if unit == "WEEK":  # Flink's weeks start on Sunday (Spark's date_trunc: Monday)
        floored = f"CAST(date_sub(CAST({local} AS DATE), dayofweek({local}) - 1) AS TIMESTAMP)"
    else:
        floored = f"date_trunc('{_TRUNC[unit]}', {local})"
    if fn == "ceil":
        step = "QUARTER" if unit == "QUARTER" else unit
        out = f"IF({floored} = {local}, {floored}, timestampadd({step}, 1, {floored}))"
    else:
        out = floored
    if value.type.name == "TIMESTAMP_LTZ":
        # Flink moves the instant by the local time's offset, rounds, and moves it back by
        # that same offset (not the offset in force at the rounded time, which differs
        # across a daylight-saving change).
        out = f"({value.sql} + ({out} - {local}))"
    elif value.type.name == "DATE":
        out = f"CAST({out} AS DATE)"
    return Typed(out, value.type)


def standard_time_instant(local: str, zone_sql: str) -> str:
    """The instant of a local wall-clock time as java.util's calendar reads it: a time that
    happens twice (the hour a daylight-saving change repeats) is taken as the later one,
    standard time (Spark's to_utc_timestamp takes the earlier)."""
    earlier = f"to_utc_timestamp({local}, {zone_sql})"
    later = f"({earlier} + INTERVAL 1 HOUR)"
    return f"IF(from_utc_timestamp({later}, {zone_sql}) = {local}, {later}, {earlier})"


# --------------------------------------------------------------------------- now

@scalar("CURRENT_TIMESTAMP", CATEGORY, "CURRENT_TIMESTAMP", "The current time, a TIMESTAMP_LTZ(3).",
        aliases=("NOW",))
def current_timestamp(call):
    call.args(0)
    return Typed(truncate_fraction("current_timestamp()", 6, 3), timestamp(3, ltz=True, nullable=False))


@scalar("CURRENT_ROW_TIMESTAMP", CATEGORY, "CURRENT_ROW_TIMESTAMP()", "The current time, a TIMESTAMP_LTZ(3).")
def current_row_timestamp(call):
    return current_timestamp(call)


@scalar("PROCTIME", CATEGORY, "PROCTIME()", "The processing time, a TIMESTAMP_LTZ(3).")
def proctime(call):
    return current_timestamp(call)


@scalar("LOCALTIMESTAMP", CATEGORY, "LOCALTIMESTAMP", "The current wall-clock time of the local time zone, a "
        "TIMESTAMP(3).")
def localtimestamp(call):
    call.args(0)
    now = truncate_fraction(f"from_utc_timestamp(current_timestamp(), {zone(call.tr)})", 6, 3)
    return Typed(now, timestamp(3, nullable=False))


@scalar("CURRENT_DATE", CATEGORY, "CURRENT_DATE", "Today in the local time zone.")
def current_date(call):
    call.args(0)
    return Typed(f"CAST(from_utc_timestamp(current_timestamp(), {zone(call.tr)}) AS DATE)",
                 DATE_TYPE.nullable_as(False))


@scalar("CURRENT_TIME", CATEGORY, "CURRENT_TIME", "The current time of day in the local time zone.",
        aliases=("LOCALTIME",))
def current_time(call):
    call.args(0)
    return Typed(f"date_format(from_utc_timestamp(current_timestamp(), {zone(call.tr)}), 'HH:mm:ss')",
                 t("TIME", 0, nullable=False))




# --------------------------------------------------------------------------- OVERLAPS

def overlaps(tr, node) -> Typed:
    """``(start1, end1) OVERLAPS (start2, end2)``: each end is a time point or an interval
    after the start; a period whose end comes first is turned around; the periods
    overlap when each starts no later than the other ends (both ends included)."""
    from sqlglot import exp


    periods = []
    for side in (node.this, node.expression):
        if not isinstance(side, exp.Tuple) or len(side.expressions) != 2:
            tr.refuse(side, "OVERLAPS compares two periods written (start, end) or (start, interval)")
        start, end = (tr.expr(e) for e in side.expressions)
        if start.type.name not in ("DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ") and not start.type.is_null:
            tr.refuse(side.expressions[0], f"a period starts with a time point, not {start.type}")
        if end.type.is_interval:
            end = temporal_arithmetic(tr, "+", start, end, side)
        first = comparison(tr, "<", end, start, side)
        periods.append((Typed(f"(CASE WHEN {first.sql} THEN {end.sql} ELSE {start.sql} END)", start.type),
                        Typed(f"(CASE WHEN {first.sql} THEN {start.sql} ELSE {end.sql} END)", end.type)))
    (s1, e1), (s2, e2) = periods
    a, b = comparison(tr, "<=", s1, e2, node), comparison(tr, "<=", s2, e1, node)
    return Typed(f"({a.sql} AND {b.sql})", BOOLEAN_TYPE.nullable_as(a.type.nullable or b.type.nullable))
