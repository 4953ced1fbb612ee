"""Rows of an outer join's side that cannot match (a NULL key, or a one-sided ON condition
that fails) are emitted padded with NULLs, without state, by the join operator itself;
inner sides drop them. Changelog input over two micro-batches: such rows are inserted,
updated into and out of a key, and deleted. The final rows must be the batch join of the
final tables, and the changelog must never retract a row it does not hold."""
from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from job.api import collect

ORDERS = [  # (before, after, op) per micro-batch; oid is the key, cust may be NULL
    [(None, {"oid": 1, "cust": 1, "amount": 10}, "c"), (None, {"oid": 2, "cust": None, "amount": 7}, "c"),
     (None, {"oid": 3, "cust": 2, "amount": 5}, "c"), (None, {"oid": 5, "cust": None, "amount": 1}, "c")],
    [({"oid": 2, "cust": None, "amount": 7}, {"oid": 2, "cust": 1, "amount": 7}, "u"),
     ({"oid": 1, "cust": 1, "amount": 10}, {"oid": 1, "cust": None, "amount": 10}, "u"),
     (None, {"oid": 4, "cust": None, "amount": 9}, "c"), ({"oid": 3, "cust": 2, "amount": 5}, None, "d"),
     ({"oid": 5, "cust": None, "amount": 1}, None, "d")],
]
CUSTOMERS = [[(None, {"id": 1, "region": "eu"}, "c")], [(None, {"id": 2, "region": "us"}, "c")]]
PAYMENTS = [  # pid is the key, cust may be NULL
    [(None, {"pid": 1, "cust": None, "paid": 3}, "c"), (None, {"pid": 2, "cust": 1, "paid": 4}, "c")],
    [(None, {"pid": 3, "cust": 3, "paid": 6}, "c"), ({"pid": 1, "cust": None, "paid": 3}, {"pid": 1, "cust": 2, "paid": 3}, "u"),
     (None, {"pid": 4, "cust": None, "paid": 8}, "c")],
]


def _final(batches, key):
    rows = {}
    for batch in batches:
        for before, after, op in batch:
            if op == "d":
                rows.pop(before[key], None)
            else:
                rows[after[key]] = after
    return list(rows.values())


def _tables(tmp_path):
    statements = []
    for name, batches, columns, pk in (("orders", ORDERS, "oid INT, cust INT, amount INT", "oid"),
                                       ("customers", CUSTOMERS, "id INT, region STRING", "id"),
                                       ("payments", PAYMENTS, "pid INT, cust INT, paid INT", "pid")):
        (tmp_path / name).mkdir()
        for i, batch in enumerate(batches):
            path = tmp_path / name / f"part-{i}.json"
            path.write_text("".join(json.dumps({"before": b, "after": a, "op": op}) + "\n" for b, a, op in batch))
            os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
        statements.append(f"CREATE TABLE {name} ({columns}, PRIMARY KEY ({pk}) NOT ENFORCED) WITH ("
                          f"'connector' = 'filesystem', 'path' = '{tmp_path / name}', 'format' = 'debezium-json', "
                          f"'source.max-files-per-trigger' = '1')")
    return statements


def _left(rows, others, match):
    out = []
    for r in rows:
        hits = [o for o in others if match(r, o)]
        out += [(r, o) for o in hits] or [(r, None)]
    return out


def _consistent(result):
    held = Counter()
    for kind, row in result.changes:
        held[row] += 1 if kind in ("+I", "+U") else -1
        assert held[row] >= 0, f"{kind} {row} retracts a row the result does not hold"


orders, customers, payments = (_final(ORDERS, "oid"), _final(CUSTOMERS, "id"), _final(PAYMENTS, "pid"))


def _get(row, column):
    return None if row is None else row[column]


CASES = {
    "left": ("SELECT o.oid, c.region FROM orders o LEFT JOIN customers c ON o.cust = c.id",
             [(o["oid"], _get(c, "region"))
              for o, c in _left(orders, customers, lambda o, c: o["cust"] is not None and o["cust"] == c["id"])]),
    "left with a one-sided condition": (
        "SELECT o.oid, c.region FROM orders o LEFT JOIN customers c ON o.cust = c.id AND o.amount > 8",
        [(o["oid"], _get(c, "region")) for o, c in
         _left(orders, customers, lambda o, c: o["cust"] is not None and o["cust"] == c["id"] and o["amount"] > 8)]),
    "inner": ("SELECT o.oid, p.pid FROM orders o JOIN payments p ON o.cust = p.cust",
              [(o["oid"], p["pid"]) for o in orders for p in payments
               if o["cust"] is not None and o["cust"] == p["cust"]]),
    "full": ("SELECT o.oid, p.pid FROM orders o FULL JOIN payments p ON o.cust = p.cust",
             [(o["oid"], _get(p, "pid")) for o, p in
              _left(orders, payments, lambda o, p: o["cust"] is not None and o["cust"] == p["cust"])]
             + [(None, p["pid"]) for p in payments
                if not any(o["cust"] is not None and o["cust"] == p["cust"] for o in orders)]),
    "three inputs": (
        "SELECT o.oid, c.region, p.pid FROM orders o LEFT JOIN customers c ON o.cust = c.id "
        "LEFT JOIN payments p ON o.cust = p.cust",
        [(o["oid"], _get(c, "region"), _get(p, "pid"))
         for o, c in _left(orders, customers, lambda o, c: o["cust"] is not None and o["cust"] == c["id"])
         for _, p in _left([o], payments, lambda o, p: o["cust"] is not None and o["cust"] == p["cust"])]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_rows_that_cannot_match_are_padded_by_the_join(spark, tmp_path, case):
    query, expected = CASES[case]
    result = collect(_tables(tmp_path), query, spark=spark, checkpoint_dir=str(tmp_path / "ck"))
    _consistent(result)
    assert sorted(result.rows, key=repr) == sorted(expected, key=repr)


def test_an_outer_join_reads_each_source_once(spark, tmp_path):
    """The padded rows come out of the operator, not from a second read of their source."""
    from job.errors import Origin
    from job.pipeline.load import load_statements
    from job.plan.program import declare
    from job.plan.queries import new_planner
    from job.plan.sources import QuerySources
    from job.sql.flink.query import parse_query

    catalog, conf, _ = declare(load_statements(args=_tables(tmp_path)).statements, None)
    query = CASES["three inputs"][0]
    planner = new_planner(spark, catalog, conf, QuerySources(spark, str(tmp_path / "ck"), once=True).open)
    rel = planner.settle(planner.plan(parse_query(query, Origin("query"), query)))
    plan = rel.df._jdf.queryExecution().logical().toString()
    assert plan.count("StreamingRelation") == 3  # orders, customers, payments
