"""Every input event's latency: the sink record that first shows its change.

The producer writes a line per event it made, in produce order (KafkaTool's events file:
table, key, ts in microseconds, the users record's accountId or "-" for a tombstone). Each
event is replayed against a model of the query's tables to find the sink key its change
lands on, and whether it changes the sink at all:

- the count (users GROUP BY accountId, carrying MAX(ts)): a users record lands on its
  account; a tombstone on the account the user was in (none if the user did not exist);
- the join (users LEFT JOIN colors LEFT JOIN cheeses on the user's uid, carrying each
  side's ts): every record lands on its uid, but a colors or cheeses change shows only
  while the user exists, and a tombstone only deletes what exists.

An event that changes the sink is credited with the first sink record of its key, appended
after it was produced, that shows it: a record whose carried time for its table is at least
the event's own (the change itself, or a later change of the same key that replaced it
before it was written: the issue's rule, so no event is left out), or for a tombstone one
that shows the deletion (the key's tombstone, that side's ts gone, or, for the count, the
account's count after the deletion). An event no sink record shows is *unanswered*, and
counts with the time from its production to the end of the run, the most it can be.
An event that changes nothing in the sink (a colors record for a user that does not
exist) is *unaffected*: neither engine writes anything for it.
"""
from __future__ import annotations

import bisect
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

# The sink's carried time for each input table.
FIELD = {"count": {"users": "ts"},
         "join": {"users": "user_ts", "colors": "color_ts", "cheeses": "cheese_ts"}}


@dataclass
class Credited:
    samples: list = field(default_factory=list)      # (produce time s, latency ms) of each answered event
    unanswered: list = field(default_factory=list)   # produce times (s) of events no sink record shows
    unaffected: int = 0                              # events that change nothing in the sink


@dataclass(frozen=True)
class Event:
    table: str
    key: str
    ts_us: int
    account: Optional[str]   # users: the record's accountId; None for a tombstone
    deleted: bool


def read_events(path: Path) -> Iterable[Event]:
    with open(path) as f:
        for line in f:
            table, key, ts, account = line.rstrip("\n").split("\t")
            deleted = account == "-"
            yield Event(table, key, int(ts), None if deleted or not account else account, deleted)


class SinkIndex:
    """Sink records per key in append order: (append ms, value dict or None)."""

    def __init__(self, records):
        by_key = defaultdict(list)
        for _p, _o, append_ms, key, value in records:
            by_key[key].append((append_ms, json.loads(value) if value is not None else None))
        self.by_key = {k: sorted(v, key=lambda r: r[0]) for k, v in by_key.items()}
        self.times = {k: [r[0] for r in v] for k, v in self.by_key.items()}

    def first(self, key: str, from_ms: float, shows) -> Optional[float]:
        records = self.by_key.get(key)
        if not records:
            return None
        for append_ms, value in records[bisect.bisect_left(self.times[key], int(from_ms)):]:
            if shows(value):
                return append_ms
        return None


def carried(value: Optional[dict], name: str) -> Optional[int]:
    return None if value is None else value.get(name)


def credit(query: str, events: Iterable[Event], sink_records, window: tuple[float, float],
           end_s: float) -> Credited:
    """Credit every event produced within ``window`` (produce times in s); the model sees
    every event, so the ones before the window set the state the window's events meet."""
    index, out = SinkIndex(sink_records), Credited()
    user_account: dict = {}                 # count: uid -> accountId
    account_size: dict = defaultdict(int)   # count: accountId -> users in it
    users, sides = set(), defaultdict(set)  # join: uids that exist; per side table, uids with a row
    fields = FIELD[query]
    for e in events:
        at_s = e.ts_us / 1e6
        name = fields[e.table]
        shows = None
        if query == "count":
            if not e.deleted:
                key, old = e.account, user_account.get(e.key)
                if old is not None:
                    account_size[old] -= 1
                user_account[e.key] = key
                account_size[key] += 1
            elif e.key in user_account:
                key = user_account.pop(e.key)
                account_size[key] -= 1
                left = account_size[key]
                shows = (lambda v, left=left, ts=e.ts_us: v is None or v.get("userCount") == left
                         or (v.get("ts") or 0) >= ts)
            else:
                key = None
        else:
            key = e.key
            if e.table == "users":
                existed = key in users
                (users.discard if e.deleted else users.add)(key)
                if e.deleted:
                    shows = (lambda v, ts=e.ts_us: v is None or (v.get("user_ts") or 0) >= ts) if existed else None
                    key = key if existed else None
            else:
                had = key in sides[e.table]
                (sides[e.table].discard if e.deleted else sides[e.table].add)(key)
                if key not in users or (e.deleted and not had):
                    key = None
                elif e.deleted:
                    shows = (lambda v, ts=e.ts_us, name=name: v is not None
                             and (carried(v, name) is None or carried(v, name) >= ts))
        if not (window[0] <= at_s < window[1]):
            continue
        if key is None:
            out.unaffected += 1
            continue
        if shows is None:
            shows = (lambda v, ts=e.ts_us, name=name: (carried(v, name) or 0) >= ts)
        appended = index.first(key, e.ts_us / 1000, shows)
        if appended is None:
            out.unanswered.append(at_s)
        else:
            out.samples.append((at_s, appended - e.ts_us / 1000))
    return out


def all_latencies(c: Credited, end_s: float) -> list[float]:
    """Answered events' latencies, and each unanswered one's time until the run's end."""
    return [l for _, l in c.samples] + [(end_s - at) * 1000 for at in c.unanswered]
