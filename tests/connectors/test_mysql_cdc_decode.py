"""mysql-cdc's batch cutting and decoding on recorded-shape binlog events, without a server:
whole transactions between positions, a key change as delete + upsert, a row limit that
stops at a transaction boundary, unsigned integers and instants as text."""
from __future__ import annotations

import datetime
import decimal

from job.connectors.mysql_cdc.binlog import decode_changes, scan_latest, text_value

COLS = [{"name": "id", "data_type": "int", "unsigned": False, "bits": 32},
        {"name": "v", "data_type": "varchar", "unsigned": False, "bits": 0}]
SPEC = {"tables": [{"database": "d", "table": "t", "width": 2, "positions": [0, 1], "columns": COLS,
                    "key_indexes": [0]}]}
F = "binlog.000003"


def txn(gtid, pos, *rows, table="t"):
    """A transaction: its GTID event, row events at pos+1…, the commit (Xid) at pos+9."""
    out = [(F, pos, "gtid", gtid)]
    out += [(F, pos + 1 + i, "rows", ("d", table, action, [row])) for i, (action, row) in enumerate(rows)]
    return out + [(F, pos + 9, "commit", None)]


EVENTS = (txn("0-1-1", 100, ("insert", {"values": {"id": 1, "v": "a"}}))
          + txn("0-1-2", 200, ("insert", {"values": {"id": 9, "v": "other"}}), table="other")
          + txn("0-1-3", 300, ("update", {"before_values": {"id": 1, "v": "a"}, "after_values": {"id": 2, "v": "a"}}),
                ("delete", {"values": {"id": 2, "v": "a"}})))


def test_batches_are_whole_transactions_between_positions():
    start = {"file": F, "pos": 50, "snapshot": True}
    assert scan_latest(EVENTS, SPEC, start) == {"file": F, "pos": 309, "gtid": "0-1-3", "snapshot": True}
    first = scan_latest(EVENTS, SPEC, start, max_changes=1)
    assert first == {"file": F, "pos": 109, "gtid": "0-1-1", "snapshot": True}
    assert [r[0] for r in decode_changes(EVENTS, SPEC, start, first)] == ["U"]
    rows = list(decode_changes(EVENTS, SPEC, first, {"file": F, "pos": 309}))
    assert [(r[0], r[5]) for r in rows] == [("D", "1"), ("U", "2"), ("D", "2")]  # the other table's row is not here
    assert {r[1] for r in rows} == {"00000000030000000000000309"} and [r[2] for r in rows] == [0, 1, 2]
    # Only another table's transaction after the start: no batch (a short idle stretch).
    assert scan_latest(EVENTS, SPEC, {"file": F, "pos": 109}, upto={"file": F, "pos": 209}) == {"file": F, "pos": 109}


def test_values_as_text():
    big = {"data_type": "bigint", "unsigned": True, "bits": 64}
    assert text_value(-1, big) == "18446744073709551615"
    assert text_value(decimal.Decimal("1E+3"), {"data_type": "decimal"}) == "1000"
    stamp = datetime.datetime(2024, 1, 2, 3, 4, 5, 120000)
    assert text_value(stamp, {"data_type": "timestamp"}) == "2024-01-02 03:04:05.120000+00:00"
    assert text_value(stamp, {"data_type": "datetime"}) == "2024-01-02 03:04:05.120000"
    assert text_value(b"\x01", {"data_type": "binary", "length": 3}) == "010000"
