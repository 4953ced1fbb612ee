"""A table's ``WATERMARK FOR ts AS …`` as Spark can run it: the delay of
``withWatermark``. Spark's watermark is "the largest event time seen minus a fixed
delay", so Flink's ``ts`` and ``ts - INTERVAL 'n' UNIT`` are accepted and any other
expression is refused where it is written.
"""
from __future__ import annotations

import re
from decimal import Decimal

from job.sql.tokens import IDENT, NUMBER, QUOTED, STRING, Token, TokenStream, describe

WATERMARK_HINT = "e.g. WATERMARK FOR ts AS ts - INTERVAL '5' SECOND (or AS ts for no delay)."

# Interval units a watermark delay may use: Spark's unit name and its milliseconds.
_UNITS = {
    "MILLISECOND": ("millisecond", 1),
    "SECOND": ("second", 1_000),
    "MINUTE": ("minute", 60_000),
    "HOUR": ("hour", 3_600_000),
    "DAY": ("day", 86_400_000),
}
_INTERVAL_VALUE = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,9})?")


def watermark_delay(ts: TokenStream, column: Token, tokens: list[Token]) -> str:
    """Spark's ``withWatermark`` delay for ``ts`` or ``ts - INTERVAL 'n' UNIT``.

    Spark watermarks are "max event time minus a fixed delay", so other shapes of
    expression have no Spark equivalent and are rejected.
    """
    inner = tokens
    while len(inner) >= 2 and inner[0].matches("(") and _closes_at_end(inner):
        inner = inner[1:-1]

    def is_column(token: Token) -> bool:
        return token.kind in (IDENT, QUOTED) and token.value.lower() == column.value.lower()

    if len(inner) == 1 and is_column(inner[0]):
        return "0 seconds"
    if (
        len(inner) == 5 and is_column(inner[0]) and inner[1].matches("-")
        and inner[2].is_keyword("INTERVAL") and inner[3].kind in (STRING, NUMBER)
    ):
        return _interval(ts, inner[3], inner[4])
    raise ts.error(
        f"unsupported watermark expression: Spark needs '{column.value}' or "
        f"'{column.value} - INTERVAL …' (a fixed delay)",
        tokens[0], hint=WATERMARK_HINT,
    )


def _closes_at_end(tokens: list[Token]) -> bool:
    """Whether the ``(`` at tokens[0] is closed by the last token (not earlier)."""
    depth = 0
    for i, token in enumerate(tokens):
        if token.matches("("):
            depth += 1
        elif token.matches(")"):
            depth -= 1
            if depth == 0:
                return i == len(tokens) - 1
    return False


def _interval(ts: TokenStream, value: Token, unit: Token) -> str:
    word = unit.value.upper() if unit.kind == IDENT else ""
    if word.endswith("S") and word[:-1] in _UNITS:
        word = word[:-1]
    if word not in _UNITS:
        raise ts.error(
            f"unsupported interval unit {describe(unit)} in the watermark", unit,
            hint="use MILLISECOND, SECOND, MINUTE, HOUR or DAY.",
        )
    name, millis = _UNITS[word]
    text = value.value.strip()
    if not _INTERVAL_VALUE.fullmatch(text):
        raise ts.error(f"invalid interval value {value.text}: expected a non-negative number", value)
    amount = Decimal(text)
    if amount == amount.to_integral_value():
        n = int(amount)
        return f"{n} {name}{'' if n == 1 else 's'}"
    # Fractions are converted to whole seconds or milliseconds: Spark's interval parser
    # accepts fractions of seconds only, and Flink's watermarks have millisecond precision.
    total = amount * millis
    if total != total.to_integral_value():
        raise ts.error(f"watermark delay {value.text} {unit.text} is finer than a millisecond", value)
    total_ms = int(total)
    if total_ms % 1000 == 0:
        return f"{total_ms // 1000} seconds"
    return f"{total_ms} milliseconds"
