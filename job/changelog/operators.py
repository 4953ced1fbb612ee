"""The changelog operators: normalize, join, aggregate, materialize.

Each runs inside Spark's ``transformWithStateInPandas``, grouped by a *bucket* (a hash of
the real key modulo a fixed count) rather than by the key itself: one Python call then
handles every key of the bucket in the micro-batch, which is what makes Python state
affordable (per-key calls cost milliseconds each). A bucket's state is one pickled dict,
kept in Spark's state store (RocksDB), so it is checkpointed with the query, moves with
its partition on a cluster and is restored exactly on restart.

Rows travel between operators as JSON strings (Spark's ``to_json`` of the row): the
operators compare and carry rows without looking inside, so no value passes through
pandas' lossy typing (ints with NULLs becoming floats). Changes are *signed*: +n adds n
copies of a row, -n retracts them. Because multiset arithmetic commutes, the order of
changes inside a micro-batch does not matter after normalization — only sources need
their sequence, which :class:`Normalize` applies.

Every operator computes, for each key a batch touches, its output before and after the
batch and emits the difference. That is the whole correctness argument: the sink
receives exactly the change between two consistent states.
"""
from __future__ import annotations

import math
import pickle
from decimal import Decimal
from fractions import Fraction
from typing import Any, Iterator, Optional

import pandas as pd

from job.changelog import grouped_input

try:  # the operators are importable (and unit-testable) without a JVM
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
except ImportError:  # pragma: no cover
    StatefulProcessor = object  # type: ignore

# The Python worker imports this module to unpickle an operator, before it reads any input.
grouped_input.install()


class BucketProcessor(StatefulProcessor):
    """Loads a bucket's state, lets :meth:`process` change it, stores it back."""

    def init(self, handle) -> None:
        self._state = handle.getValueState("bucket", "blob binary")

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        frames = [f for f in rows if len(f)]
        if not frames:
            return
        batch = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        # Each state call is a round trip to the JVM: get() answers None for a bucket
        # without state (no exists() first), and a bucket that had none and still has
        # none needs no clear().
        stored = self._state.get()
        state = pickle.loads(stored[0]) if stored is not None else {}
        out = self.process(batch, state)
        if state:
            self._state.update((pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL),))
        elif stored is not None:
            self._state.clear()
        if len(out):
            yield out

    def close(self) -> None:
        pass

    def process(self, batch: pd.DataFrame, state: dict) -> pd.DataFrame:  # pragma: no cover
        raise NotImplementedError


def _add(multiset: dict, row: Any, n: int) -> None:
    """Add n (possibly negative) copies of row; a count that reaches 0 disappears.

    A re-added row moves to the end, so dict order is 'most recently added last'."""
    count = multiset.pop(row, 0) + n
    if count:
        multiset[row] = count


def _diff(before: dict, after: dict) -> Iterator[tuple[Any, int]]:
    """Signed changes that turn multiset ``before`` into ``after``: retractions first."""
    for row, count in before.items():
        delta = after.get(row, 0) - count
        if delta < 0:
            yield row, delta
    for row, count in after.items():
        delta = count - before.get(row, 0)
        if delta > 0:
            yield row, delta


def _net_ops(signs: list, keys: list) -> list:
    """Per output row, its net effect on an upsert sink keyed by ``keys``: '+U' for the
    row a key ends with, '-D' for a key's retraction when nothing replaces it, None for
    a retraction that the key's new row overwrites anyway.

    Exact when the operator's output has at most one row per key (an aggregate's group,
    a join of tables keyed by the join key), which the planner checks before the sink
    uses it: the sink then needs no shuffle to net each key's changes."""
    upserted = {k for k, s in zip(keys, signs) if s > 0}
    return ["+U" if s > 0 else (None if k in upserted else "-D") for k, s in zip(keys, signs)]


# --------------------------------------------------------------------------- normalize

class Normalize(BucketProcessor):
    """Upsert stream → signed changes: the latest row per key wins.

    Input: ``k`` (key JSON), ``row`` (row JSON), ``kind`` ('U' upsert / 'D' delete),
    ``seq_major``, ``seq_minor`` (source position). Output: ``sign``, ``row``.
    A delete for an absent key and an upsert that repeats the current row emit nothing,
    so duplicates and tombstones for unknown keys are harmless.
    """

    OUTPUT = "sign int, row string"

    def process(self, batch, state):
        ordered = batch.sort_values(["seq_major", "seq_minor"], kind="stable")
        last = ordered.drop_duplicates("k", keep="last")
        signs, rows = [], []
        for k, row, kind in zip(last["k"], last["row"], last["kind"]):
            old = state.get(k)
            if kind == "D":
                if old is not None:
                    del state[k]
                    signs.append(-1), rows.append(old)
            elif old != row:
                if old is not None:
                    signs.append(-1), rows.append(old)
                state[k] = row
                signs.append(1), rows.append(row)
        return pd.DataFrame({"sign": pd.Series(signs, dtype="int32"), "row": pd.Series(rows, dtype=object)})


# --------------------------------------------------------------------------- join

class Join(BucketProcessor):
    """Equi-join of two changelogs, any of INNER / LEFT / RIGHT / FULL.

    Input: ``jk`` (join key JSON, never NULL: NULL keys never match and bypass this
    operator), ``side`` (0 left, 1 right), ``sign``, ``row``. Output: ``sign``, ``l``,
    ``r`` (row JSONs; NULL for the padded side of an outer join), ``net`` (see
    :func:`_net_ops`, per join key). State per join key: the left and right multisets.

    A side listed in ``upsert_sides`` is an upsert table whose primary key *is* its
    join key: its rows arrive un-normalized (``kind`` 'U'/'D' and ``seq_major``/
    ``seq_minor`` instead of a sign) and the latest one per key replaces the side's
    row here, which saves a separate normalize operator (and its shuffle).
    """

    COLUMNS = ("l", "r")

    def __init__(self, kind: str, upsert_sides: tuple[int, ...] = ()) -> None:
        self.left_outer = kind in ("left", "full")
        self.right_outer = kind in ("right", "full")
        self.upsert_sides = upsert_sides

    @property
    def output_schema(self) -> str:
        return ", ".join(["sign int"] + [f"{c} string" for c in self.COLUMNS] + ["net string"])

    def joined(self, left: dict, right: dict) -> dict:
        out: dict = {}
        if left and right:
            for l, lc in left.items():
                for r, rc in right.items():
                    out[(l, r)] = out.get((l, r), 0) + lc * rc
        elif left and self.left_outer:
            for l, lc in left.items():
                out[(l, None)] = lc
        elif right and self.right_outer:
            for r, rc in right.items():
                out[(None, r)] = rc
        return out

    def process(self, batch, state):
        before: dict = {}

        columns = self.COLUMNS

        def sides_of(jk):
            sides = state.get(jk)
            if sides is None:
                sides = state[jk] = tuple({} for _ in columns)
            if jk not in before:
                before[jk] = self.joined(*sides)
            return sides

        signed = batch
        if self.upsert_sides:
            is_upsert = batch["side"].isin(self.upsert_sides)
            upserts = batch[is_upsert]
            signed = batch[~is_upsert]
            if len(upserts):
                latest = (upserts.sort_values(["seq_major", "seq_minor"], kind="stable")
                          .drop_duplicates(["jk", "side"], keep="last"))
                for jk, side, kind, row in zip(latest["jk"], latest["side"], latest["kind"], latest["row"]):
                    target = sides_of(jk)[side]
                    target.clear()
                    if kind != "D":
                        target[row] = 1
        for jk, side, sign, row in zip(signed["jk"], signed["side"], signed["sign"], signed["row"]):
            _add(sides_of(jk)[side], row, int(sign))
        signs, combos, keys = [], [], []
        for jk, old in before.items():
            sides = state[jk]
            for combo, delta in _diff(old, self.joined(*sides)):
                signs.append(delta), combos.append(combo), keys.append(jk)
            if not any(sides):
                del state[jk]
        frame = {"sign": pd.Series(signs, dtype="int32")}
        for i, name in enumerate(columns):
            frame[name] = pd.Series([combo[i] for combo in combos], dtype=object)
        frame["net"] = pd.Series(_net_ops(signs, keys), dtype=object)
        return pd.DataFrame(frame)


class StarJoin(Join):
    """INNER and LEFT joins of three or more changelogs on one key, in one operator.

    ``users u LEFT JOIN colour c ON u.uid = c.userUid LEFT JOIN cheese ch ON u.uid =
    ch.userUid`` needs no second operator: every input is partitioned by the same key, so
    one state per key holds all inputs (side 0 … n-1) and the output is their join,
    computed left to right. Planned only when each join's key is the first input's key
    (or an INNER-joined input's, equal to it), so a partial row always has the key and
    matches every row of the next input under it. Saves the first join's output, a
    shuffle and an operator per extra table. Input as :class:`Join`; output ``sign``,
    ``r0`` … ``r{n-1}`` (row JSONs, NULL where a LEFT join found nothing), ``net``.
    """

    def __init__(self, kinds: tuple[str, ...], upsert_sides: tuple[int, ...] = ()) -> None:
        super().__init__("inner", upsert_sides)
        self.kinds = kinds  # kinds[i - 1] joins input i to the inputs before it
        self.COLUMNS = tuple(f"r{i}" for i in range(len(kinds) + 1))

    def joined(self, *sides: dict) -> dict:
        combos = [((row,), n) for row, n in sides[0].items()]
        for kind, rows in zip(self.kinds, sides[1:]):
            if rows:
                combos = [(combo + (row,), n * m) for combo, n in combos for row, m in rows.items()]
            elif kind == "left":
                combos = [(combo + (None,), n) for combo, n in combos]
            else:
                return {}
        out: dict = {}
        for combo, n in combos:
            out[combo] = out.get(combo, 0) + n
        return out


# --------------------------------------------------------------------------- aggregate

def _number(kind: str, text: Optional[str]):
    """An aggregate argument (passed as text, so nothing is lost on the way) → Python."""
    if text is None or (isinstance(text, float) and text != text):
        return None
    if kind == "int":
        return int(text)
    if kind == "decimal":
        return Decimal(text)
    if kind == "float":
        return float(text)
    return text  # strings, dates, timestamps: their text order is their value order


class Aggregate(BucketProcessor):
    """GROUP BY with retractable aggregates.

    ``aggs`` is a list of (function, value kind, distinct) with function one of
    count_star, count, sum, avg, min, max. Input: ``gk`` (group key JSON), ``sign``,
    ``a0``… (arguments as text). Output: ``sign``, ``gk``, ``r0``… (results as text, cast
    back to their SQL types by the planner), ``net`` (see :func:`_net_ops`, per group).

    State per group: [row count, accumulators…, last emitted results]. Invertible
    aggregates keep (sum, count); MIN, MAX and DISTINCT keep value → count maps, so a
    retraction of the current minimum finds the next one. A group whose row count drops
    to zero is deleted (Flink's behaviour), except the single group of a global
    aggregate, which stays and reports zeros.
    """

    def __init__(self, aggs: list[tuple[str, str, bool]], global_agg: bool) -> None:
        self.aggs = aggs
        self.global_agg = global_agg

    @property
    def output_schema(self) -> str:
        return ", ".join(["sign int", "gk string"] + [f"r{i} string" for i in range(len(self.aggs))] + ["net string"])

    def _new(self) -> list:
        accs: list = [0]
        for fn, _kind, distinct in self.aggs:
            if distinct or fn in ("min", "max"):
                accs.append({})
            elif fn in ("sum", "avg"):
                accs.append([0, 0])
            else:
                accs.append(0)
        accs.append(None)
        return accs

    def _apply(self, acc: list, sign: int, args: list) -> None:
        acc[0] += sign
        for i, (fn, kind, distinct) in enumerate(self.aggs):
            slot = i + 1
            if fn == "count_star":
                acc[slot] += sign
                continue
            value = _number(kind, args[i])
            if value is None:
                continue
            if distinct or fn in ("min", "max"):
                _add(acc[slot], value, sign)
            elif fn == "count":
                acc[slot] += sign
            else:
                if kind == "float" and math.isfinite(value):
                    # Exact, so retractions cancel exactly: a float running sum would keep
                    # the rounding of every row ever added (1e20 + 1 - 1e20 gives 0).
                    value = Fraction(value)
                acc[slot][0] += value * sign
                acc[slot][1] += sign

    def _result(self, acc: list) -> tuple:
        out = []
        for i, (fn, kind, distinct) in enumerate(self.aggs):
            a = acc[i + 1]
            if fn == "count_star" or (fn == "count" and not distinct):
                value = a
            elif distinct:
                values = list(a)
                if fn == "count":
                    value = len(values)
                elif not values:
                    value = None
                elif fn == "sum":
                    value = sum(values)
                elif fn == "avg":
                    value = sum(values) / len(values) if kind != "decimal" else sum(values) / Decimal(len(values))
                else:
                    value = min(values) if fn == "min" else max(values)
            elif fn in ("min", "max"):
                value = (min(a) if fn == "min" else max(a)) if a else None
            elif fn == "sum":
                value = None if not a[1] else float(a[0]) if kind == "float" else a[0]
            else:  # avg
                value = None if not a[1] else (a[0] / Decimal(a[1]) if kind == "decimal" else float(a[0] / a[1]))
            out.append(None if value is None else _text(value))
        return tuple(out)

    def process(self, batch, state):
        arg_cols = [batch[f"a{i}"] if f"a{i}" in batch else [None] * len(batch) for i in range(len(self.aggs))]
        touched = set()
        for j, (gk, sign) in enumerate(zip(batch["gk"], batch["sign"])):
            acc = state.get(gk)
            if acc is None:
                acc = state[gk] = self._new()
            touched.add(gk)
            self._apply(acc, int(sign), [col[j] for col in arg_cols])
        signs, gks, results = [], [], []
        for gk in touched:
            acc = state[gk]
            old = acc[-1]
            alive = acc[0] > 0 or (self.global_agg and acc[0] == 0)
            new = self._result(acc) if alive else None
            if old == new:
                pass
            else:
                if old is not None:
                    signs.append(-1), gks.append(gk), results.append(old)
                if new is not None:
                    signs.append(1), gks.append(gk), results.append(new)
            if acc[0] < 0:
                raise ValueError(f"group {gk} received more retractions than rows: the input is not a consistent changelog")
            if alive:
                acc[-1] = new
            else:
                del state[gk]
        frame = {"sign": pd.Series(signs, dtype="int32"), "gk": pd.Series(gks, dtype=object)}
        for i in range(len(self.aggs)):
            frame[f"r{i}"] = pd.Series([r[i] for r in results], dtype=object)
        frame["net"] = pd.Series(_net_ops(signs, gks), dtype=object)
        return pd.DataFrame(frame)


def _text(value) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


# --------------------------------------------------------------------------- materialize

class Materialize(BucketProcessor):
    """Changes → one current row per sink primary key (Flink's SinkUpsertMaterializer).

    Used when the planner cannot prove that the query's rows are unique on the sink's
    key: it keeps every row per key and shows the most recently added one.
    Input: ``pk``, ``sign``, ``row``. Output: ``op`` ('+U' upsert / '-D' delete), ``row``.
    """

    OUTPUT = "op string, row string"

    def process(self, batch, state):
        touched = {}
        for pk, sign, row in zip(batch["pk"], batch["sign"], batch["row"]):
            entry = state.get(pk)
            if entry is None:
                entry = state[pk] = [{}, None]
            touched.setdefault(pk, entry[1])
            _add(entry[0], row, int(sign))
        ops, rows = [], []
        for pk, shown in touched.items():
            rows_of_key, _ = state[pk]
            current = next(reversed(rows_of_key)) if rows_of_key else None
            if current is None:
                del state[pk]
                if shown is not None:
                    ops.append("-D"), rows.append(shown)
            else:
                state[pk][1] = current
                if current != shown:
                    ops.append("+U"), rows.append(current)
        return pd.DataFrame({"op": pd.Series(ops, dtype=object), "row": pd.Series(rows, dtype=object)})
