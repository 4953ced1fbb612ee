"""Every input event's latency: the first sink record that shows its change.

The producer writes a line per event it made, in produce order (KafkaTool's events file:
table, key, ts in microseconds, the users record's accountId or "-" for a tombstone). The
events are replayed against a model of the query, which gives each sink key the sequence
of rows it goes through (its *versions*: the row after each event that changed it, or
None once deleted):

- the count (users GROUP BY accountId, carrying COUNT(1) and MAX(ts)): a users record
  changes the account it joins, and the one it leaves; a tombstone the account the user
  was in;
- the join (users LEFT JOIN colors LEFT JOIN cheeses on the user's uid, carrying each
  side's ts): every record changes its uid's row, while the user exists.

A sink record shows the newest version of its key that has its row and was produced
before the record was appended, and every version before that one: an engine that merges
changes (a micro-batch netting them) writes the later row for both. An event is credited
with the first record of the key it changed, in append order, that shows its version or a
later one: the issue's rule (an event whose change a later change replaced is credited with
the record of that later change), for tombstones too, so no event is left out. An event no
sink record shows is *unanswered*, and counts with its time to the end of the run. An event
that changes no sink row (a color for a user that does not exist, a tombstone of a row that
does not exist) is *unaffected*: neither engine writes anything for it. An event that moves
a user from one account to another is credited on the account it joins.
"""
from __future__ import annotations

import bisect
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional


@dataclass
class Credited:
    samples: list = field(default_factory=list)      # (produce time s, latency ms) of each answered event
    unanswered: list = field(default_factory=list)   # produce times (s) of events no sink record shows
    unaffected: int = 0                              # events that change no sink row


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


class CountModel:
    """users GROUP BY accountId: the row (userCount, ts = MAX(ts)) per account."""

    def __init__(self):
        self.account_of: dict = {}                  # uid -> (accountId, ts)
        self.members: dict = defaultdict(dict)      # accountId -> {uid: ts}

    def row(self, account):
        users = self.members.get(account)
        return (len(users), max(users.values())) if users else None

    def apply(self, e: Event) -> list:
        """The sink keys ``e`` changes, the credited one first."""
        old = self.account_of.pop(e.key, None)
        if old is not None:
            del self.members[old[0]][e.key]
        if e.deleted:
            return [old[0]] if old is not None else []
        self.account_of[e.key] = (e.account, e.ts_us)
        self.members[e.account][e.key] = e.ts_us
        return [e.account] + ([old[0]] if old is not None and old[0] != e.account else [])

    @staticmethod
    def shown(value: Optional[dict]):
        return None if value is None else (value.get("userCount"), value.get("ts"))


class JoinModel:
    """users LEFT JOIN colors LEFT JOIN cheeses on uid: the row per existing user."""

    SIDE = {"colors": ("favoriteColor", "color_ts"), "cheeses": ("favoriteCheese", "cheese_ts")}

    def __init__(self):
        self.users: dict = {}                        # uid -> (accountId, ts)
        self.sides: dict = {t: {} for t in self.SIDE}  # table -> uid -> ts

    def row(self, uid):
        if uid not in self.users:
            return None
        return (self.users[uid][1], self.sides["colors"].get(uid), self.sides["cheeses"].get(uid))

    def apply(self, e: Event) -> list:
        if e.table == "users":
            existed = e.key in self.users
            if e.deleted:
                self.users.pop(e.key, None)
                return [e.key] if existed else []
            self.users[e.key] = (e.account, e.ts_us)
            return [e.key]
        side = self.sides[e.table]
        had = e.key in side
        if e.deleted:
            side.pop(e.key, None)
        else:
            side[e.key] = e.ts_us
        return [e.key] if e.key in self.users and (had or not e.deleted) else []

    @staticmethod
    def shown(value: Optional[dict]):
        return None if value is None else (value.get("user_ts"), value.get("color_ts"), value.get("cheese_ts"))


MODELS = {"count": CountModel, "join": JoinModel}


def credit(query: str, events: Iterable[Event], sink_records, window: tuple[float, float],
           end_s: float) -> Credited:
    """Credit every event produced within ``window`` (produce times in s); the model sees
    every event, so the ones before the window set the rows the window's events meet."""
    model = MODELS[query]()
    versions: dict = defaultdict(list)   # sink key -> [(produced us, row)]
    credited: list = []                  # (produced s, sink key, version index) of the window's events
    out = Credited()
    for e in events:
        keys = model.apply(e)
        for key in keys:
            versions[key].append((e.ts_us, model.row(key)))
        in_window = window[0] <= e.ts_us / 1e6 < window[1]
        if in_window and keys:
            credited.append((e.ts_us / 1e6, keys[0], len(versions[keys[0]]) - 1))
        elif in_window:
            out.unaffected += 1
    shows = shown_versions(model, versions, sink_records)
    for produced, key, version in credited:
        appended = first_showing(shows.get(key, ([], [])), version)
        if appended is None:
            out.unanswered.append(produced)
        else:
            out.samples.append((produced, appended - produced * 1000))
    return out


def shown_versions(model, versions: dict, sink_records) -> dict:
    """Per sink key: (append ms of each record in append order, the newest version index
    shown so far at that record)."""
    by_key = defaultdict(list)
    for _p, _o, append_ms, key, value in sink_records:
        by_key[key].append((append_ms, model.shown(json.loads(value) if value is not None else None)))
    out = {}
    for key, records in by_key.items():
        history = versions.get(key, [])
        times = [v[0] for v in history]
        appended, newest, best = [], [], -1
        for append_ms, row in sorted(records, key=lambda r: r[0]):
            j = bisect.bisect_right(times, append_ms * 1000) - 1
            while j >= 0 and history[j][1] != row:  # the newest version with this row, made before the record
                j -= 1
            best = max(best, j)
            appended.append(append_ms)
            newest.append(best)
        out[key] = (appended, newest)
    return out


def first_showing(shown: tuple[list, list], version: int) -> Optional[float]:
    appended, newest = shown
    i = bisect.bisect_left(newest, version)   # newest is non-decreasing
    return appended[i] if i < len(appended) else None


def all_latencies(c: Credited, end_s: float) -> list[float]:
    """Answered events' latencies, and each unanswered one's time until the run's end."""
    return [l for _, l in c.samples] + [(end_s - at) * 1000 for at in c.unanswered]
