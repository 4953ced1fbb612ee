"""Flink's reading of text as a number (CAST / TRY_CAST of a string to a number type).

Flink 2.3 has three readers, each with its own grammar, and Spark's CAST matches none of
them exactly, so the text is checked here against Flink's grammar and only then handed
to Spark to compute the value. The rules below were found by running Flink 2.3 itself
(tests/flink/cases/casts_text.yaml holds the values that pin them down).

* TINYINT … BIGINT read the text with blanks (' ' only, not tabs or newlines) trimmed:
  an optional sign, digits and an optional fraction, which is cut off: ``'3.5'`` is 3,
  ``'-3.9'`` is -3, ``'1.'`` is 1, ``'.5'`` and even ``'.'`` are 0. No exponent, no hex,
  no inner blank; a lone sign or empty text fails; a whole part out of the type's range
  fails (nothing wraps).
* DECIMAL(p, s) with p <= 18, of text of at most 18 bytes, goes through Flink's own
  compact reader: blanks, tabs and newlines around the number; an optional sign; digits
  with at most one point; an exponent (``e``/``E``, optional sign). The reader swallows
  the one character that ends the digits, and the one that ends the exponent's digits,
  whatever it is, as long as it is ASCII: ``'1d'`` and ``'1x'`` are 1, ``'x'`` and
  ``'.'`` are 0, ``'1e3x'`` is 1000, but ``'1x2'`` fails. The value must fit: its digits
  before the point (leading zeros included) plus exponent plus scale at most p, and an
  exponent that moves the point more than 18 places past the scale fails. Rounding is
  half up.
* Any other DECIMAL goes through java.math.BigDecimal after blanks, tabs and newlines are
  trimmed: sign, digits (any script's), point, exponent; half-up rounding, NULL when the
  value needs more than p digits.
* FLOAT and DOUBLE go through Java's Float/Double.parseFloat/parseDouble, as Spark's CAST
  does, except for the names Spark also accepts (``inf``, ``infinity``, ``nan`` in any
  case): Java takes only ``NaN`` and ``Infinity``, with an optional sign.

Text that does not read is NULL for TRY_CAST; for CAST it fails the query, as in Flink
("For input string").
"""
from __future__ import annotations

from job.sql.flink.typed import let, spark_string
from job.sql.types import LogicalType

# Integer types: after trim(' '), a sign, the whole part (group 2), an optional fraction.
INTEGER_TEXT = r"^([+-]?)([0-9]*)(\.[0-9]*)?\z"

# (Patterns end in \z: Java's $ also matches before a final line break.)
# DECIMAL's compact reader. Groups: sign, whole digits, fraction digits, exponent. After
# the digits comes at most one swallowed ASCII character that is not a digit or point;
# when it is e/E and more follows, an exponent whose digits end likewise.
_ASCII_NOT = r"(?![{}])[\x00-\x7F]"
COMPACT_DECIMAL_TEXT = (
    r"^[ \n\t]*([+-]?)([0-9]*)(?:\.([0-9]*))?"
    r"(?:[eE](?:([+-]?[0-9]+)(?:" + _ASCII_NOT.format("0-9") + r")?"
    r"|[+-]" + _ASCII_NOT.format("0-9") + r"|" + _ASCII_NOT.format("0-9+-") + r")?"
    r"|" + _ASCII_NOT.format("0-9.eE") + r")?[ \n\t]*\z")
# … which fails on text of blanks alone, or blanks and a sign.
COMPACT_DECIMAL_EMPTY = r"^[ \n\t]*[+-]?\z"
# java.math.BigDecimal's grammar, with Flink's trimming.
BIG_DECIMAL_TEXT = r"^[ \n\t]*[+-]?(\p{Nd}+\.?\p{Nd}*|\.\p{Nd}+)([eE][+-]?\p{Nd}+)?[ \n\t]*\z"
COMPACT_DIGITS = 18  # DecimalData keeps up to 18 digits in a long, and reads text that short itself

# Names of non-finite numbers Spark reads and Java does not.
SPARK_ONLY_SPECIALS = r"(?i)^[\x00-\x20]*[+-]?(inf|infinity|nan)[\x00-\x20]*\z"
JAVA_SPECIALS = r"^[\x00-\x20]*[+-]?(Infinity|NaN)[\x00-\x20]*\z"


def text_to_number(sql: str, to: LogicalType, safe: bool) -> str:
    """Spark SQL for Flink's CAST (``safe``: TRY_CAST) of the string ``sql`` to the
    number type ``to``."""
    if to.is_integral:
        read = _integer
    elif to.name == "DECIMAL":
        read = _decimal
    else:
        read = _approximate

    def body(v: str) -> str:
        value, valid = read(v, to)
        if safe:
            return f"(CASE WHEN {valid} THEN {value} END)"
        failure = f"raise_error(concat('For input string: \"', {v}, '\" (CAST to {to.name})'))"
        return f"(CASE WHEN {v} IS NULL THEN NULL WHEN {valid} THEN coalesce({value}, {failure}) ELSE {failure} END)"

    return let(sql, body)


def _integer(v: str, to: LogicalType) -> tuple[str, str]:
    pattern = spark_string(INTEGER_TEXT)
    text = f"trim(BOTH ' ' FROM {v})"  # blanks only, as Flink trims
    sign = f"regexp_extract({text}, {pattern}, 1)"
    whole = f"regexp_extract({text}, {pattern}, 2)"
    valid = f"({text} RLIKE {pattern} AND {text} NOT IN ('', '+', '-'))"
    number = f"concat(IF({sign} = '-', '-', ''), IF({whole} = '', '0', {whole}))"
    return f"try_cast({number} AS {to.spark})", valid


def _decimal(v: str, to: LogicalType) -> tuple[str, str]:
    precision, scale = to.precision or 10, to.scale or 0
    big_pattern = spark_string(BIG_DECIMAL_TEXT)
    big = f"try_cast({v} AS {to.spark})"
    if precision > COMPACT_DIGITS:
        return big, f"({v} RLIKE {big_pattern})"
    pattern = spark_string(COMPACT_DECIMAL_TEXT)

    def group(n: int) -> str:
        return f"regexp_extract({v}, {pattern}, {n})"

    sign, whole, fraction, exponent = group(1), group(2), group(3), group(4)
    shift = f"coalesce(try_cast(nullif({exponent}, '') AS BIGINT), 0L)"
    fits = (f"length({whole}) + {shift} + {scale} <= {precision} "
            f"AND {shift} - length({fraction}) + {scale} >= -{COMPACT_DIGITS}")
    number = (f"concat(IF({sign} = '-', '-', ''), IF({whole} = '', '0', {whole}), '.', "
              f"IF({fraction} = '', '0', {fraction}), 'E', {shift})")
    compact = (f"({v} RLIKE {pattern} AND NOT ({v} RLIKE {spark_string(COMPACT_DECIMAL_EMPTY)}) "
               f"AND {fits})")
    long_text = f"octet_length({v}) > {COMPACT_DIGITS}"
    value = f"IF({long_text}, {big}, try_cast({number} AS {to.spark}))"
    valid = f"IF({long_text}, {v} RLIKE {big_pattern}, {compact})"
    return value, valid


def _approximate(v: str, to: LogicalType) -> tuple[str, str]:
    spark_only = (f"({v} RLIKE {spark_string(SPARK_ONLY_SPECIALS)} "
                  f"AND NOT ({v} RLIKE {spark_string(JAVA_SPECIALS)}))")
    return f"try_cast({v} AS {to.spark})", f"NOT {spark_only}"
