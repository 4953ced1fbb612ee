"""Values of both engines in one comparable form (imported by the Flink oracle, which
runs in Flink's own virtualenv, and by the tests: standard library only).

* integers and strings as they are; booleans as booleans;
* DECIMAL as its exact text (the scale is part of the answer: ``1.50`` is not ``1.5``);
* FLOAT/DOUBLE rounded to 12 significant digits (the engines may sum in another order);
  NaN and the infinities as text;
* TIMESTAMP / DATE / TIME as ISO text (microseconds), bytes as hex, a day-time interval
  as microseconds;
* ARRAY as a list, MAP as a sorted list of pairs, ROW as a tuple — recursively.
"""
from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal


def value(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return float(f"{v:.12g}")
    if isinstance(v, Decimal):
        return ("decimal", str(v))
    if isinstance(v, dt.datetime):
        return ("timestamp", v.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds"))
    if isinstance(v, dt.date):
        return ("date", v.isoformat())
    if isinstance(v, dt.time):
        return ("time", v.isoformat(timespec="microseconds"))
    if isinstance(v, dt.timedelta):
        return ("interval", v // dt.timedelta(microseconds=1))
    if isinstance(v, (bytes, bytearray)):
        return ("bytes", bytes(v).hex())
    if isinstance(v, dict):
        return ("map", sorted(((value(k), value(x)) for k, x in v.items()), key=repr))
    if isinstance(v, (list, tuple)):
        return [value(x) for x in v]
    if hasattr(v, "_values"):  # PyFlink Row
        return tuple(value(x) for x in v._values)
    if hasattr(v, "asDict"):  # Spark Row
        return tuple(value(x) for x in v)
    return ("other", str(v))


def row(values) -> tuple:
    return tuple(value(v) for v in values)


def sequence(changes) -> list:
    """An append-only changelog's rows in the order they were emitted (a sorted stream's
    answer); a changelog with any other kind of change is marked as such."""
    if any(kind != "+I" for kind, _ in changes):
        return [("NOT-APPEND-ONLY", sorted({kind for kind, _ in changes}))]
    return [r for _, r in changes]


def final_rows(changes, upsert_key=None) -> list:
    """Apply a changelog [(kind, row)] to an empty multiset; the rows it leaves, sorted.

    ``upsert_key`` (column positions): the changelog is an upsert stream on that key, as
    Flink emits one when its sink takes upserts (+U without the -U before it): each +I/+U
    replaces the row of its key, -U/-D delete it."""
    if upsert_key is not None:
        table = {}
        for kind, r in changes:
            key = repr([r[i] for i in upsert_key])
            if kind in ("+I", "+U"):
                table[key] = r
            else:
                table.pop(key, None)
        return sorted(table.values(), key=repr)
    counts: dict = {}
    for kind, r in changes:
        key = repr(r)
        entry = counts.setdefault(key, [r, 0])
        entry[1] += 1 if kind in ("+I", "+U") else -1
    out = []
    for key, (r, n) in counts.items():
        if n < 0:
            out.append(("RETRACTED-MORE-THAN-INSERTED", r))
        out += [r] * max(n, 0)
    return sorted(out, key=repr)
