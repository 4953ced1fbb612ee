"""Top-N and deduplication: the rows ranked within their partition, kept to a range of
ranks.

Input: ``pk`` (partition key JSON), ``ok`` (sort key: a JSON object, one field per ORDER
BY item), ``row`` (row JSON), ``sign``, ``seq`` (arrival order: a later row of equal sort
key ranks after an earlier one, as in Flink). Output: ``sign``, ``row``, ``rnk`` (the
rank, when the query shows it) and ``net`` (per partition and rank: see
``operators._net_ops``).

State per partition: every row with its count, sort key and arrival sequence (an
append-only input keeps only the rows within the top N: a row outside them can never
come back, as nothing is retracted). For each partition a batch touches, the ranked rows
before and after the batch are compared and the difference is emitted — the operators'
correctness argument: the sink receives exactly the change between two consistent
states. The rank function decides ranks among equal sort keys: ROW_NUMBER gives each row
its own, RANK skips after ties, DENSE_RANK does not.
"""
from __future__ import annotations

import json
from decimal import Decimal
import pandas as pd

from job.changelog.operators import BucketProcessor, _diff, _net_ops


class _Key:
    """A sort key with each item's direction and Flink's NULL order (NULLs first in an
    ascending order, last in a descending one)."""

    __slots__ = ("values", "descending")

    def __init__(self, values: list, descending: tuple) -> None:
        self.values = values
        self.descending = descending

    def __lt__(self, other: "_Key") -> bool:
        for a, b, desc in zip(self.values, other.values, self.descending):
            if a == b:
                continue
            if a is None:
                return not desc
            if b is None:
                return desc
            return (a > b) if desc else (a < b)
        return False

    def __eq__(self, other) -> bool:
        return self.values == other.values


class TopN(BucketProcessor):
    OUTPUT = "sign int, row string, rnk long, net string"

    def __init__(self, function: str, lower: int, upper: int, descending: tuple, append_only: bool,
                 show_rank: bool, newest_first: bool = False) -> None:
        self.function = function          # row_number | rank | dense_rank
        self.lower, self.upper = lower, upper
        self.descending = descending
        self.append_only = append_only
        self.show_rank = show_rank
        self.newest_first = newest_first  # among equal sort keys, the later arrival ranks first

    def _key(self, text: str) -> _Key:
        values = json.loads(text, parse_float=Decimal)  # a JSON object: one field per ORDER BY item
        return _Key(list(values.values()) if isinstance(values, dict) else values, self.descending)

    def ranked(self, entries: dict, keep: set | None = None) -> dict:
        """{(row, rank) or row: count} of the rows within the rank range; ``keep``
        collects every row ranked up to the range's end (the ones an append-only input
        must remember)."""
        sign = -1 if self.newest_first else 1
        order = sorted(entries.items(), key=lambda item: (self._key(item[1][1]), sign * item[1][2]))
        out: dict = {}
        rank = dense = 0
        previous = None
        position = 0
        for row, (count, key_text, _seq) in order:
            for _ in range(count):
                position += 1
                if self.function == "row_number":
                    rank = position
                elif previous is None or key_text != previous:
                    rank = position if self.function == "rank" else dense + 1
                    dense += 1
                previous = key_text
                if rank > self.upper:
                    return out
                if keep is not None:
                    keep.add(row)
                if rank >= self.lower:
                    entry = (row, rank) if self.show_rank else row
                    out[entry] = out.get(entry, 0) + 1
        return out

    def process(self, batch, state):
        batch = batch.sort_values("seq", kind="stable")  # arrival order decides among equal sort keys
        touched: dict = {}
        for pk, ok, row, sign, seq in zip(batch["pk"], batch["ok"], batch["row"], batch["sign"], batch["seq"]):
            part = state.get(pk)
            if part is None:
                part = state[pk] = {"rows": {}, "next": 0}
            if pk not in touched:
                touched[pk] = self.ranked(part["rows"])
            rows = part["rows"]
            entry = rows.get(row)
            if entry is None:
                if int(sign) < 0:
                    continue  # a retraction of a row never kept (outside an append-only top N)
                part["next"] += 1
                rows[row] = [int(sign), ok, part["next"]]
            else:
                entry[0] += int(sign)
                if entry[0] <= 0:
                    del rows[row]
        signs, rows_out, ranks, keys = [], [], [], []
        for pk, before in touched.items():
            part = state[pk]
            keep: set = set()
            after = self.ranked(part["rows"], keep)
            if self.append_only:  # nothing is retracted: a row below the top N never returns
                part["rows"] = {r: v for r, v in part["rows"].items() if r in keep}
            for entry, delta in _diff(before, after):
                row, rank = entry if self.show_rank else (entry, None)
                signs.append(delta)
                rows_out.append(row)
                ranks.append(rank)
                keys.append(f"{pk}|{rank}" if self.show_rank else f"{pk}|{row}")
            if not part["rows"]:
                del state[pk]
        return pd.DataFrame({"sign": pd.Series(signs, dtype="int32"), "row": pd.Series(rows_out, dtype=object),
                             "rnk": pd.Series(ranks, dtype="Int64"),
                             "net": pd.Series(_net_ops(signs, keys), dtype=object)})
