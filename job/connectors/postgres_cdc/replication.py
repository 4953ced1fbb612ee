"""PostgreSQL logical replication for the postgres-cdc connector: the client side.

Everything here runs in plain Python (the driver's planning process and the executors'
Python workers, neither of which has py4j), talking to PostgreSQL with psycopg 3 over the
SQL interface of logical decoding:

* ``pg_logical_slot_peek_changes(slot, upto_lsn, …)`` decodes the slot's pending changes
  with wal2json (format version 2) *without consuming them*, so a micro-batch can be read
  again after a crash;
* ``pg_replication_slot_advance(slot, lsn)`` acknowledges them, and is only called from
  the stream reader's ``commit``, which Spark calls after the batch is committed.

Offsets are ``{"lsn": <int>, "snapshot": <bool>}``: ``lsn`` is the end LSN of the last
transaction the stream has covered (the value ``pg_replication_slot_advance`` takes);
``snapshot`` says whether the initial table snapshot is behind it. A batch covers whole
transactions: those whose commit LSN lies in (start, end].

The pure functions (:func:`decode_changes`, :func:`scan_latest`, :func:`text_value`) do
not touch the network and are unit-tested on recorded wal2json output.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Iterable, Iterator, Optional, Sequence

from job.connectors.python_source import LazyClasses

DATA_SOURCE_NAME = "streamsql_postgres_cdc"
PLUGIN = "wal2json"
# Control columns of the data source's rows, then one STRING column per table column.
CONTROL_FIELDS = ("__kind", "__seq_major", "__seq_minor", "__position", "__raw")
VALUE_PREFIX = "__v"
# A stream with no change for this table for this long (in WAL bytes) still moves its
# offset (an empty batch), so the slot does not hold back WAL that only other tables wrote.
IDLE_ADVANCE_BYTES = 16 * 1024 * 1024
RAW_LIMIT = 2000
SNAPSHOT_FETCH = 2000
SLOT_BUSY_RETRIES = 20


# --------------------------------------------------------------------------- LSNs

def lsn_text(lsn: int) -> str:
    """23817272 → '0/16B6C38' (PostgreSQL's notation)."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def lsn_int(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def seq_major(lsn: int) -> str:
    """A string that sorts like the LSN (the planner orders a key's changes by it)."""
    return f"{lsn:016X}"


# --------------------------------------------------------------------------- connections

def connect(conn: dict, *, autocommit: bool = True):
    """A psycopg connection with the session settings the decoding depends on: wal2json
    formats values with the session's output functions, so UTC timestamps and ISO dates
    here mean the same text in the snapshot and in the stream."""
    import psycopg

    c = psycopg.connect(host=conn["host"], port=conn["port"], dbname=conn["dbname"], user=conn["user"],
                        password=conn.get("password") or None, connect_timeout=conn.get("connect_timeout", 10),
                        application_name="streamsql postgres-cdc", autocommit=autocommit)
    c.execute("SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET bytea_output = 'hex'; "
              "SET IntervalStyle = 'iso_8601'")
    if not autocommit:
        c.commit()
    return c


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def qualified(schema: str, table: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(table)}"


def wal2json_table_filter(schema: str, table: str) -> str:
    """wal2json's 'add-tables' value for one table ('.', ',', '*' and ' ' escaped)."""
    def esc(s: str) -> str:
        return "".join("\\" + ch if ch in ".,* \\" else ch for ch in s)
    return f"{esc(schema)}.{esc(table)}"


def _peek_sql() -> str:
    return ("SELECT (lsn - '0/0'::pg_lsn)::bigint, data FROM pg_logical_slot_peek_changes("
            "%s, %s::pg_lsn, NULL, 'format-version', '2', 'include-types', '0', 'add-tables', %s)")


def peek(conn: dict, spec: dict, upto: Optional[int]) -> Iterator[tuple[int, str]]:
    """(lsn, data) rows of the slot's pending changes up to ``upto`` (None: all), streamed.

    Retries while another session holds the slot (a peek of the previous attempt of a task
    that is being cancelled, say): PostgreSQL lets one session use a slot at a time."""
    import psycopg

    for attempt in range(SLOT_BUSY_RETRIES):
        c = connect(conn, autocommit=False)
        yielded = False
        try:
            with c.cursor(name="streamsql_cdc_peek") as cur:
                cur.itersize = SNAPSHOT_FETCH
                cur.execute(_peek_sql(), (spec["slot"], None if upto is None else lsn_text(upto),
                                          wal2json_table_filter(spec["schema"], spec["table"])))
                for lsn, data in cur:
                    yielded = True
                    yield int(lsn), data
            c.commit()
            return
        except psycopg.errors.ObjectInUse:
            if yielded or attempt == SLOT_BUSY_RETRIES - 1:
                raise
            time.sleep(0.5)
        finally:
            c.close()


def current_lsn(conn: dict) -> int:
    with connect(conn) as c:
        return int(c.execute("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint").fetchone()[0])


def slot_state(c, slot: str) -> Optional[dict]:
    """The slot's plugin, database and confirmed LSN, or None when there is no such slot."""
    row = c.execute("SELECT plugin, database, (confirmed_flush_lsn - '0/0'::pg_lsn)::bigint, active "
                    "FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
    if row is None:
        return None
    return {"plugin": row[0], "database": row[1], "confirmed": None if row[2] is None else int(row[2]),
            "active": row[3]}


def advance(conn: dict, slot: str, lsn: int) -> None:
    """Acknowledge everything up to ``lsn``: PostgreSQL may recycle that WAL now."""
    with connect(conn) as c:
        state = slot_state(c, slot)
        if state is None or (state["confirmed"] or 0) >= lsn:
            return
        c.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (slot, lsn_text(lsn)))


# --------------------------------------------------------------------------- decoding

def _loads(data: str) -> dict:
    # Numbers stay text (exact numerics, no float rounding); Spark casts them.
    return json.loads(data, parse_float=str, parse_int=str, parse_constant=str)


def text_value(value: Any) -> Optional[str]:
    """A wal2json value as PostgreSQL's text form (what ``col::text`` gives)."""
    if value is None:
        return None
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _action(data: str) -> str:
    # Every wal2json v2 object starts with {"action":"X"; avoid parsing big rows twice.
    return data[11] if data.startswith('{"action":"') else _loads(data).get("action", "?")


def scan_latest(rows: Iterable[tuple[int, str]], start: int, *, max_changes: Optional[int] = None,
                idle_bytes: int = IDLE_ADVANCE_BYTES) -> int:
    """The end offset for a batch starting after ``start``: the commit LSN of the last
    transaction with changes to the table (stopping once ``max_changes`` are covered, at
    a transaction boundary), else — when only other tables' transactions came by and
    they span ``idle_bytes`` — the last commit seen, else ``start``."""
    last_relevant, last_any, count, in_txn = None, None, 0, 0
    for lsn, data in rows:
        action = _action(data)
        if action == "B":
            in_txn = 0
        elif action in ("I", "U", "D"):
            in_txn += 1
        elif action == "C":
            if lsn <= start:
                continue
            last_any = lsn
            if in_txn:
                last_relevant = lsn
                count += in_txn
                if max_changes is not None and count >= max_changes:
                    break
    if last_relevant is not None:
        return last_relevant
    if last_any is not None and last_any - start >= idle_bytes:
        return last_any
    return start


def _columns(items: Optional[list]) -> dict[str, Any]:
    return {item["name"]: item.get("value") for item in (items or ())}


def decode_changes(rows: Iterable[tuple[int, str]], spec: dict, start: int, end: int) -> Iterator[tuple]:
    """Output rows for the transactions committed in (start, end].

    A row is (kind, seq_major, seq_minor, position, raw, value…) with kind 'U' (the
    key's new row) or 'D' (the key is gone) and one text value per declared column
    (``spec["columns"]``: PostgreSQL names, in order). An update that changes the
    primary key is a delete of the old key and an upsert of the new one. Columns an
    update leaves out (unchanged TOASTed values) are taken from the old row when the
    table has REPLICA IDENTITY FULL, else they are NULL.
    """
    schema, table = spec["schema"], spec["table"]
    names: Sequence[str] = spec["columns"]
    key: Sequence[str] = spec["key"]
    where = f"{schema}.{table}"
    pending: list[tuple] = []
    for lsn, data in rows:
        action = _action(data)
        if action == "B":
            pending = []
            continue
        if action == "C":
            if start < lsn <= end:
                major = seq_major(lsn)
                for i, (kind, position, raw, values) in enumerate(pending):
                    yield (kind, major, i, f"{position} (commit {lsn_text(lsn)})", raw, *values)
            pending = []
            continue
        if action not in ("I", "U", "D"):
            continue  # T(runcate) and M(essage) carry no row: see the connector's docs
        change = _loads(data)
        if change.get("schema") != schema or change.get("table") != table:
            continue
        raw = data if len(data) <= RAW_LIMIT else data[:RAW_LIMIT] + "…"
        position = f"{where} {dict(I='insert', U='update', D='delete')[action]} at LSN {lsn_text(lsn)}"
        new = _columns(change.get("columns"))
        old = _columns(change.get("identity"))
        if action == "D":
            pending.append(("D", position, raw, [text_value(old.get(n)) for n in names]))
            continue
        if action == "U" and old and any(n in old and text_value(old[n]) != text_value(new.get(n)) for n in key):
            pending.append(("D", position, raw, [text_value(old.get(n)) if n in key else None for n in names]))
        values = [text_value(new[n]) if n in new else text_value(old.get(n)) for n in names]
        pending.append(("U", position, raw, values))


def snapshot_rows(conn: dict, spec: dict, lsn: int) -> Iterator[tuple]:
    """The table as it is now, as upserts ordered before every streamed change."""
    exprs = [f"encode({quote_ident(n)}, 'hex')" if n in spec["hex"] else f"{quote_ident(n)}::text"
             for n in spec["columns"]]
    where = f"{spec['schema']}.{spec['table']}"
    major = seq_major(lsn)
    c = connect(conn, autocommit=False)
    try:
        c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        with c.cursor(name="streamsql_cdc_snapshot") as cur:
            cur.itersize = SNAPSHOT_FETCH
            cur.execute(f"SELECT {', '.join(exprs)} FROM {qualified(spec['schema'], spec['table'])}")
            for i, values in enumerate(cur):
                yield ("U", major, i, f"{where} snapshot row {i + 1}", None, *values)
        c.commit()
    finally:
        c.close()


# --------------------------------------------------------------------------- data source
# Made on first use (job.connectors.python_source): importing the connector must not
# import pyspark.


def _define() -> tuple[type, ...]:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

    class CdcPartition(InputPartition):
        def __init__(self, what: str, start: int, end: int) -> None:
            super().__init__((what, start, end))
            self.what, self.start, self.end = what, start, end

    class CdcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        """See the module docstring for the offsets."""

        def __init__(self, spec: dict, conn: dict) -> None:
            self.spec, self.conn = spec, conn
            self._target: Optional[int] = None

        def initialOffset(self) -> dict:
            return {"lsn": int(self.spec["start_lsn"]), "snapshot": self.spec["startup"] != "initial"}

        def getDefaultReadLimit(self):
            limit = self.spec.get("max_changes")
            return ReadMaxRows(int(limit)) if limit else ReadAllAvailable()

        def latestOffset(self, start: dict, limit) -> dict:
            if not start["snapshot"]:
                return {"lsn": start["lsn"], "snapshot": True}  # the first batch: the snapshot alone
            upto = self._target if self._target is not None else current_lsn(self.conn)
            max_changes = limit.max_rows if isinstance(limit, ReadMaxRows) else None
            end = scan_latest(peek(self.conn, self.spec, upto), int(start["lsn"]), max_changes=max_changes)
            return {"lsn": end, "snapshot": True} if end > int(start["lsn"]) else start

        def prepareForTriggerAvailableNow(self) -> None:
            self._target = current_lsn(self.conn)

        def partitions(self, start: dict, end: dict):
            if not start["snapshot"] and end["snapshot"]:
                return [CdcPartition("snapshot", int(start["lsn"]), int(end["lsn"]))]
            if int(end["lsn"]) > int(start["lsn"]):
                return [CdcPartition("stream", int(start["lsn"]), int(end["lsn"]))]
            return []

        def read(self, partition):
            if partition.what == "snapshot":
                yield from snapshot_rows(self.conn, self.spec, partition.start)
            else:
                rows = peek(self.conn, self.spec, partition.end)
                yield from decode_changes(rows, self.spec, partition.start, partition.end)

        def commit(self, end: dict) -> None:
            # Spark has committed the batch that ends here; only now may PostgreSQL forget
            # it. A failure is not fatal: the slot keeps the WAL a little longer, and the
            # checkpoint, not the slot, says where the stream resumes.
            try:
                advance(self.conn, self.spec["slot"], int(end["lsn"]))
            except Exception as exc:  # noqa: BLE001
                print(f"postgres-cdc: could not acknowledge LSN {lsn_text(int(end['lsn']))} on slot "
                      f"'{self.spec['slot']}' ({type(exc).__name__}: {exc}); will retry after the next batch",
                      file=sys.stderr)

    class CdcDataSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return DATA_SOURCE_NAME

        def schema(self):
            raise ValueError("the postgres-cdc data source needs an explicit schema")

        def streamReader(self, schema):
            conn = json.loads(self.options["spec.connection.password"])
            return CdcStreamReader(json.loads(self.options["spec"]), conn)

    return CdcPartition, CdcStreamReader, CdcDataSource


CLASSES = LazyClasses(__name__, ("CdcPartition", "CdcStreamReader", "CdcDataSource"), _define)
__getattr__ = CLASSES.module_getattr
