"""The changelog operators on their own: pandas in, pandas out, state as a dict.

Each randomized test feeds random signed changes in random batches and checks the
accumulated output against a brute-force recomputation over the final input — the same
property the end-to-end tests check through Spark, here over thousands of cases.
"""
from __future__ import annotations

import random
from collections import Counter

import pandas as pd
import pytest

from job.changelog.operators import Aggregate, Join, Materialize, Normalize, _net_ops


def frame(**cols):
    return pd.DataFrame({k: pd.Series(v, dtype=object if k not in ("sign", "side", "seq_minor") else "int64")
                         for k, v in cols.items()})


def apply(acc: Counter, out: pd.DataFrame, cols) -> None:
    for rec in out.to_dict("records"):
        acc[tuple(rec[c] for c in cols)] += int(rec["sign"])
    for key in [k for k, v in acc.items() if v == 0]:
        del acc[key]


def apply_net(sink: dict, out: pd.DataFrame, key, cols) -> None:
    """An upsert sink fed the operator's ``net`` column: '+U' writes the row, '-D' deletes the key.

    A sink applies one batch's changes in no defined order, so a key gets one of them at most."""
    netted = [key(rec) for rec in out.to_dict("records") if rec["net"] is not None]
    assert len(netted) == len(set(netted))
    for rec in out.to_dict("records"):
        if rec["net"] == "+U":
            sink[key(rec)] = tuple(rec[c] for c in cols)
        elif rec["net"] == "-D":
            assert sink.pop(key(rec)) == tuple(rec[c] for c in cols)  # deletes the row the sink holds


def test_net_ops_per_key():
    assert _net_ops([-1, 1, -1, 1, -1], ["a", "a", "b", "c", "d"]) == [None, "+U", "-D", "+U", "-D"]
    assert _net_ops([1, -1], ["a", "a"]) == ["+U", None]  # order of a key's rows does not matter
    assert _net_ops([], []) == []


# ----------------------------------------------------------------------------- normalize

def test_normalize_latest_row_wins_and_deletes_remove():
    state: dict = {}
    op = Normalize()
    out = op.process(frame(k=["a", "a", "b"], row=["a1", "a2", "b1"], kind=["U", "U", "U"],
                           seq_major=["0", "0", "0"], seq_minor=[2, 1, 3]), state)
    # a1 has the higher offset, so it is the latest even though it arrived first
    assert list(zip(out.sign, out.row)) == [(1, "a1"), (1, "b1")]
    out = op.process(frame(k=["a", "b", "zz"], row=["a3", None, None], kind=["U", "D", "D"],
                           seq_major=["0"] * 3, seq_minor=[4, 5, 6]), state)
    assert list(zip(out.sign, out.row)) == [(-1, "a1"), (1, "a3"), (-1, "b1")]
    assert state == {"a": "a3"}
    # a duplicate of the current row changes nothing
    assert op.process(frame(k=["a"], row=["a3"], kind=["U"], seq_major=["0"], seq_minor=[7]), state).empty


def test_normalize_random_matches_last_write():
    rng = random.Random(7)
    for _ in range(200):
        state, acc, truth = {}, Counter(), {}
        seq = 0
        for _batch in range(rng.randint(1, 6)):
            ks, rows, kinds, minors = [], [], [], []
            for _ in range(rng.randint(1, 12)):
                seq += 1
                k = rng.choice("abcde")
                kind = rng.choice("UUD")
                ks.append(k), kinds.append(kind), minors.append(seq)
                rows.append(f"{k}{rng.randint(0, 3)}" if kind == "U" else None)
            order = list(range(len(ks)))
            rng.shuffle(order)  # arrival order inside a batch must not matter
            for i in sorted(range(len(ks)), key=lambda i: minors[i]):
                if kinds[i] == "D":
                    truth.pop(ks[i], None)
                else:
                    truth[ks[i]] = rows[i]
            batch = frame(k=[ks[i] for i in order], row=[rows[i] for i in order], kind=[kinds[i] for i in order],
                          seq_major=["0"] * len(order), seq_minor=[minors[i] for i in order])
            apply(acc, Normalize().process(batch, state), ["row"])
        assert acc == Counter({(r,): 1 for r in truth.values()})


# ----------------------------------------------------------------------------- join

def brute_join(left: Counter, right: Counter, kind: str) -> Counter:
    """left/right: Counter of (key, row) → count."""
    out: Counter = Counter()
    keys = {k for k, _ in left} | {k for k, _ in right}
    for key in keys:
        ls = {r: c for (k, r), c in left.items() if k == key}
        rs = {r: c for (k, r), c in right.items() if k == key}
        if ls and rs:
            for l, lc in ls.items():
                for r, rc in rs.items():
                    out[(l, r)] += lc * rc
        elif ls and kind in ("left", "full"):
            for l, lc in ls.items():
                out[(l, None)] += lc
        elif rs and kind in ("right", "full"):
            for r, rc in rs.items():
                out[(None, r)] += rc
    return out


def test_seed_left_join_cheddar_to_brie():
    op, state, acc = Join("left"), {}, Counter()
    apply(acc, op.process(frame(jk=["103-1"], side=[0], sign=[1], row=["user103"]), state), ["l", "r"])
    assert acc == Counter({("user103", None): 1})
    apply(acc, op.process(frame(jk=["103-1"], side=[1], sign=[1], row=["cheddar"]), state), ["l", "r"])
    assert acc == Counter({("user103", "cheddar"): 1})
    apply(acc, op.process(frame(jk=["103-1", "103-1"], side=[1, 1], sign=[-1, 1], row=["cheddar", "brie"]), state), ["l", "r"])
    assert acc == Counter({("user103", "brie"): 1})
    apply(acc, op.process(frame(jk=["103-1"], side=[1], sign=[-1], row=["brie"]), state), ["l", "r"])
    assert acc == Counter({("user103", None): 1})
    apply(acc, op.process(frame(jk=["103-1"], side=[0], sign=[-1], row=["user103"]), state), ["l", "r"])
    assert acc == Counter() and state == {}


@pytest.mark.parametrize("kind", ["inner", "left", "right", "full"])
def test_join_random_matches_brute_force(kind):
    rng = random.Random(hash(kind) % 1000)
    for _ in range(150):
        op, state, acc = Join(kind), {}, Counter()
        left, right = Counter(), Counter()
        for _batch in range(rng.randint(1, 5)):
            jks, sides, signs, rows = [], [], [], []
            for _ in range(rng.randint(1, 10)):
                side = rng.randint(0, 1)
                target = left if side == 0 else right
                key = rng.choice("xyz")
                present = [r for (k, r), c in target.items() if k == key and c > 0]
                if present and rng.random() < 0.4:
                    row, sign = rng.choice(present), -1
                else:
                    row, sign = f"{'LR'[side]}{key}{rng.randint(0, 2)}", 1
                target[(key, row)] += sign
                if target[(key, row)] == 0:
                    del target[(key, row)]
                jks.append(key), sides.append(side), signs.append(sign), rows.append(row)
            apply(acc, op.process(frame(jk=jks, side=sides, sign=signs, row=rows), state), ["l", "r"])
        assert acc == +brute_join(left, right, kind)


# ----------------------------------------------------------------------------- aggregate

AGGS = [("count_star", "int", False), ("count", "int", False), ("sum", "int", False), ("avg", "int", False),
        ("min", "int", False), ("max", "int", False), ("count", "int", True)]


def brute_agg(rows: Counter) -> Counter:
    """rows: Counter of (group, value-or-None) → count."""
    out: Counter = Counter()
    groups = {g for g, _ in rows}
    for g in groups:
        vals = [v for (gg, v), c in rows.items() if gg == g for _ in range(c)]
        nn = [int(v) for v in vals if v is not None]
        result = (str(len(vals)), str(len(nn)), str(sum(nn)) if nn else None,
                  repr(sum(nn) / len(nn)) if nn else None, str(min(nn)) if nn else None,
                  str(max(nn)) if nn else None, str(len(set(nn))))
        out[(g,) + result] += 1
    return out


def test_aggregate_random_matches_brute_force():
    rng = random.Random(11)
    for _ in range(200):
        op, state, acc, rows, sink = Aggregate(AGGS, global_agg=False), {}, Counter(), Counter(), {}
        for _batch in range(rng.randint(1, 6)):
            gks, signs, values = [], [], []
            for _ in range(rng.randint(1, 10)):
                present = [k for k, c in rows.items() if c > 0]
                if present and rng.random() < 0.45:
                    (g, v), sign = rng.choice(present), -1
                else:
                    g, v, sign = rng.choice("pq"), rng.choice([None, "1", "2", "5", "-3"]), 1
                rows[(g, v)] += sign
                if rows[(g, v)] == 0:
                    del rows[(g, v)]
                gks.append(g), signs.append(sign), values.append(v)
            batch = frame(gk=gks, sign=signs, **{f"a{i}": values for i in range(1, len(AGGS))})
            out = op.process(batch, state)
            apply(acc, out, ["gk"] + [f"r{i}" for i in range(len(AGGS))])
            apply_net(sink, out, lambda rec: rec["gk"], ["gk"] + [f"r{i}" for i in range(len(AGGS))])
        assert acc == brute_agg(rows)
        assert Counter(sink.values()) == acc  # the net ops alone give the same upsert sink
        assert set(state) == {g for g, _ in rows}  # emptied groups leave no state


def test_global_aggregate_keeps_its_row_at_zero():
    op, state, acc = Aggregate([("count_star", "int", False)], global_agg=True), {}, Counter()
    apply(acc, op.process(frame(gk=["{}"], sign=[1]), state), ["gk", "r0"])
    apply(acc, op.process(frame(gk=["{}"], sign=[-1]), state), ["gk", "r0"])
    assert acc == Counter({("{}", "0"): 1})


def test_decimal_sum_is_exact():
    op, state = Aggregate([("sum", "decimal", False)], global_agg=False), {}
    out = op.process(frame(gk=["g", "g", "g"], sign=[1, 1, 1], a0=["0.10", "0.20", "0.30"]), state)
    assert list(out.r0) == ["0.60"]


def test_float_sum_and_avg_cancel_retractions_exactly():
    """A running float sum keeps the rounding of rows long retracted: 1e20 + 1.5 - 1e20
    would be 0.0. The sum of the rows still there is what batch SQL reports."""
    op, state = Aggregate([("sum", "float", False), ("avg", "float", False)], global_agg=False), {}
    op.process(frame(gk=["g", "g"], sign=[1, 1], a0=["1e20", "1.5"], a1=["1e20", "1.5"]), state)
    out = op.process(frame(gk=["g"], sign=[-1], a0=["1e20"], a1=["1e20"]), state)
    assert list(zip(out.sign, out.r0, out.r1))[-1] == (1, "1.5", "1.5")
    out = op.process(frame(gk=["g", "g"], sign=[1, 1], a0=["0.1", "0.2"], a1=["0.1", "0.2"]), state)
    assert list(out.r0)[-1] == repr(1.5 + 0.1 + 0.2) and list(out.r1)[-1] == repr((1.5 + 0.1 + 0.2) / 3)
    out = op.process(frame(gk=["g", "g"], sign=[1, -1], a0=["inf", "1.5"], a1=["inf", "1.5"]), state)
    assert list(out.r0)[-1] == "inf"  # an infinite value cannot be exact; it still sums


# ----------------------------------------------------------------------------- materialize

def test_materialize_shows_latest_row_per_key():
    op, state = Materialize(), {}
    out = op.process(frame(pk=["k", "k"], sign=[1, 1], row=["r1", "r2"]), state)
    assert list(zip(out.op, out.row)) == [("+U", "r2")]
    out = op.process(frame(pk=["k"], sign=[-1], row=["r2"]), state)
    assert list(zip(out.op, out.row)) == [("+U", "r1")]
    out = op.process(frame(pk=["k"], sign=[-1], row=["r1"]), state)
    assert list(zip(out.op, out.row)) == [("-D", "r1")] and state == {}


@pytest.mark.parametrize("kind", ["inner", "left", "full"])
def test_join_with_upsert_sides_matches_normalize_then_join(kind):
    """Fusing the upsert normalization into the join must give exactly what a separate
    Normalize per side followed by the plain join gives."""
    rng = random.Random(5)
    for _ in range(150):
        fused, fused_state, fused_acc, fused_sink = Join(kind, upsert_sides=(0, 1)), {}, Counter(), {}
        plain, plain_state, plain_acc = Join(kind), {}, Counter()
        norm_states = ({}, {})
        seq = 0
        for _batch in range(rng.randint(1, 5)):
            recs = []
            for _ in range(rng.randint(1, 10)):
                seq += 1
                side, key = rng.randint(0, 1), rng.choice("xyz")
                kind_ = rng.choice("UUUD")
                recs.append((key, side, kind_, f"{'LR'[side]}{key}{rng.randint(0, 2)}" if kind_ == "U" else None, seq))
            rng.shuffle(recs)
            fused_batch = pd.DataFrame({"jk": [r[0] for r in recs], "side": [r[1] for r in recs],
                                        "sign": [0] * len(recs), "row": [r[3] for r in recs],
                                        "kind": [r[2] for r in recs], "seq_major": ["0"] * len(recs),
                                        "seq_minor": [r[4] for r in recs]})
            out = fused.process(fused_batch, fused_state)
            apply(fused_acc, out, ["l", "r"])
            if kind != "full":  # one row per join key: the net ops give the upsert sink
                apply_net(fused_sink, out, lambda rec: rec["l"][1], ["l", "r"])
            jks, sides, signs, rows = [], [], [], []
            for side in (0, 1):
                mine = [r for r in recs if r[1] == side]
                # rows carry the key so Normalize's output can be routed back to its jk
                out = Normalize().process(frame(k=[r[0] for r in mine], row=[f"{r[0]}|{r[3]}" for r in mine],
                                                kind=[r[2] for r in mine], seq_major=["0"] * len(mine),
                                                seq_minor=[r[4] for r in mine]), norm_states[side])
                for sign, row in zip(out.sign, out.row):
                    key, value = row.split("|", 1)
                    jks.append(key), sides.append(side), signs.append(int(sign)), rows.append(value)
            if jks:
                apply(plain_acc, plain.process(frame(jk=jks, side=sides, sign=signs, row=rows), plain_state), ["l", "r"])
        assert fused_acc == plain_acc
        if kind != "full":
            assert Counter(fused_sink.values()) == fused_acc
