"""The MySQL binary log for the mysql-cdc connector: the client side.

Everything here runs in plain Python (the driver's planning process and the executors'
Python workers), talking to the server with PyMySQL (the snapshot, the binlog position)
and ``pymysqlreplication`` (the binlog, read as a replica would, non-blocking: it stops
at the log's current end).

Offsets are ``{"file": <binlog file>, "pos": <int>, "snapshot": <bool>, "gtid": <str>}``:
``file``/``pos`` is the position right after the commit of the last transaction the
stream has covered, where the next batch resumes; ``snapshot`` says whether the initial
table snapshot is behind it; ``gtid`` is the GTID of that transaction where the server
writes GTIDs (recorded for the operator; the stream resumes by file and position). A batch
covers whole transactions: those whose commit lies in (start, end]. The binary log is the
server's, kept for 'binlog_expire_logs_seconds', so a batch replayed after a crash reads
the same events again; nothing needs acknowledging.

The pure functions (:func:`scan_latest`, :func:`decode_changes`, :func:`text_value`) take
events as (file, pos, kind, payload) tuples and are unit-tested without a server.
"""
from __future__ import annotations

import datetime
import decimal
import json
from typing import Any, Iterable, Iterator, Optional

from job.connectors.python_source import LazyClasses

DATA_SOURCE_NAME = "streamsql_mysql_cdc"
VALUE_PREFIX = "__v"
# A stream with no change for its tables for this long (binlog bytes, or a new binlog
# file) still moves its offset (an empty batch), so a restart does not rescan it.
IDLE_ADVANCE_BYTES = 16 * 1024 * 1024
RAW_LIMIT = 2000


# --------------------------------------------------------------------------- positions

def position_key(file: str, pos: int) -> tuple[int, int]:
    """Binlog positions in order: 'binlog.000012' → file number 12."""
    return int(file.rsplit(".", 1)[-1]), int(pos)


def seq_major(file: str, pos: int) -> str:
    """A string that sorts like the position (the planner orders a key's changes by it)."""
    number, offset = position_key(file, pos)
    return f"{number:010d}{offset:016d}"


def after(a: dict, b: dict) -> bool:
    return position_key(a["file"], a["pos"]) > position_key(b["file"], b["pos"])


# --------------------------------------------------------------------------- connections

def connect(conn: dict, **extra):
    """A PyMySQL connection in UTC: a TIMESTAMP column reads as the UTC instant, as the
    binlog gives it."""
    import pymysql

    c = pymysql.connect(host=conn["host"], port=conn["port"], user=conn["user"], password=conn.get("password") or "",
                        connect_timeout=conn.get("connect_timeout", 30), charset="utf8mb4", autocommit=True,
                        init_command="SET time_zone = '+00:00'", **extra)
    return c


def current_position(conn: dict) -> dict:
    with connect(conn) as c, c.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
        gtid = ""
        try:
            cur.execute("SELECT @@gtid_binlog_pos")  # MariaDB
            gtid = cur.fetchone()[0] or ""
        except Exception:  # noqa: BLE001 - MySQL: no such variable; GTIDs are informational here
            pass
    if row is None:
        raise RuntimeError("the server's binary log is off (SHOW MASTER STATUS is empty)")
    return {"file": row[0], "pos": int(row[1]), "gtid": gtid}


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# --------------------------------------------------------------------------- events

def events(conn: dict, spec: dict, file: str, pos: int) -> Iterator[tuple]:
    """The binlog from (file, pos) to its current end as (file, pos, kind, payload):
    kind 'rows' (payload (schema, table, action, rows)), 'gtid' (payload the GTID),
    'commit' (a transaction's end, payload None) or 'ddl'; ``pos`` is the position after
    the event."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, XidEvent
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    actions = {WriteRowsEvent: "insert", UpdateRowsEvent: "update", DeleteRowsEvent: "delete"}
    settings = {"host": conn["host"], "port": conn["port"], "user": conn["user"], "passwd": conn.get("password") or "",
                "connect_timeout": conn.get("connect_timeout", 30)}
    stream = BinLogStreamReader(
        connection_settings=settings, server_id=int(spec["server_id"]), log_file=file, log_pos=int(pos),
        # By file and position on MariaDB too (its GTID handshake would start elsewhere).
        resume_stream=True, blocking=False, is_mariadb=False,
        only_schemas=sorted({t["database"] for t in spec["tables"]}) or None,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent, XidEvent, QueryEvent, GtidEvent,
                     MariadbGtidEvent], enable_logging=False)
    try:
        for event in stream:
            where = (stream.log_file, int(event.packet.log_pos))
            if isinstance(event, XidEvent):
                yield (*where, "commit", None)
            elif isinstance(event, (GtidEvent, MariadbGtidEvent)):
                yield (*where, "gtid", str(event.gtid))
            elif isinstance(event, QueryEvent):
                query = event.query.strip().upper() if isinstance(event.query, str) else ""
                if query == "COMMIT":  # a non-transactional table's statement ends here
                    yield (*where, "commit", None)
                elif query != "BEGIN":
                    yield (*where, "ddl", None)
            elif type(event) in actions:
                yield (*where, "rows", (event.schema, event.table, actions[type(event)], event.rows))
    finally:
        stream.close()


def _tables(spec: dict) -> dict[tuple[str, str], dict]:
    return {(t["database"], t["table"]): t for t in spec["tables"]}


def scan_latest(evts: Iterable[tuple], spec: dict, start: dict, *, upto: Optional[dict] = None,
                max_changes: Optional[int] = None, idle_bytes: int = IDLE_ADVANCE_BYTES) -> dict:
    """The end offset for a batch starting after ``start``: the position after the last
    transaction with changes to the tables (stopping once ``max_changes`` are covered, at
    a transaction boundary; not past ``upto``), else — when only other transactions came
    by and they span ``idle_bytes`` or a new binlog file — the last commit seen, else
    ``start``."""
    tables = _tables(spec)
    last_relevant = last_any = None
    count = in_txn = 0
    gtid = start.get("gtid", "")
    for file, pos, kind, payload in evts:
        here = {"file": file, "pos": pos}
        if not after(here, start):
            continue
        if upto is not None and after(here, upto):
            break
        if kind == "gtid":
            gtid, in_txn = payload, 0
        elif kind == "rows":
            if (payload[0], payload[1]) in tables:
                in_txn += len(payload[3])
        elif kind in ("commit", "ddl"):
            last_any = {**here, "gtid": gtid}
            if in_txn:
                last_relevant = last_any
                count += in_txn
                in_txn = 0
                if max_changes is not None and count >= max_changes:
                    break
    if last_relevant is not None:
        return {**last_relevant, "snapshot": True}
    if last_any is not None and (last_any["file"] != start["file"] or last_any["pos"] - start["pos"] >= idle_bytes):
        return {**last_any, "snapshot": True}
    return start


def text_value(value: Any, column: dict) -> Optional[str]:
    """A value (as the binlog or PyMySQL gives it) as text Spark casts to the declared
    type: exact numerics, ISO dates, UTC instants with their offset, bytes as hex."""
    if value is None:
        return None
    kind = column["data_type"]
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        if value < 0 and column.get("unsigned"):
            # The binlog carries unsigned integers as raw bits; without the server's
            # column metadata the client reads them as signed.
            value += 1 << column["bits"]
        return str(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime.datetime):
        text = value.isoformat(sep=" ")
        return text + "+00:00" if kind == "timestamp" else text
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        if kind in ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"):
            if kind == "binary" and column.get("length") and len(value) < column["length"]:
                value = bytes(value) + b"\0" * (column["length"] - len(value))  # BINARY(n) is zero-padded
            return bytes(value).hex()
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _row_values(values: dict, table: dict) -> list:
    ordered = list(values.values())
    if len(ordered) != table["width"]:
        raise RuntimeError(f"MySQL table {table['database']}.{table['table']} has {len(ordered)} columns in the binlog, "
                           f"{table['width']} when the query started: a schema change, which mysql-cdc does not "
                           "follow; restart the query from a new checkpoint")
    return [text_value(ordered[p], c) for p, c in zip(table["positions"], table["columns"])]


def decode_changes(evts: Iterable[tuple], spec: dict, start: dict, end: dict) -> Iterator[tuple]:
    """Output rows for the transactions committed in (start, end].

    A row is (kind, seq_major, seq_minor, position, raw, value…) with kind 'U' (the key's
    new row) or 'D' (the key is gone), one text value per declared column. An update that
    changes the primary key is a delete of the old key and an upsert of the new one.
    """
    tables = _tables(spec)
    pending: list[tuple] = []
    for file, pos, kind, payload in evts:
        here = {"file": file, "pos": pos}
        if kind == "gtid":
            pending = []
            continue
        if kind in ("commit", "ddl"):
            if after(here, start) and not after(here, end):
                major = seq_major(file, pos)
                for i, (k, position, raw, values) in enumerate(pending):
                    yield (k, major, i, f"{position} (commit {file}:{pos})", raw, *values)
            pending = []
            if not after(end, here):
                return
            continue
        if kind != "rows":
            continue
        schema, name, action, rows = payload
        table = tables.get((schema, name))
        if table is None:
            continue
        where = f"{schema}.{name} {action} at {file}:{pos}"
        key = table["key_indexes"]
        for row in rows:
            raw = json.dumps(row, default=str)
            raw = raw if len(raw) <= RAW_LIMIT else raw[:RAW_LIMIT] + "…"
            if action == "insert":
                pending.append(("U", where, raw, _row_values(row["values"], table)))
            elif action == "delete":
                pending.append(("D", where, raw, _row_values(row["values"], table)))
            else:
                old = _row_values(row["before_values"], table)
                new = _row_values(row["after_values"], table)
                if [old[i] for i in key] != [new[i] for i in key]:
                    pending.append(("D", where, raw, old))
                pending.append(("U", where, raw, new))


def snapshot_rows(conn: dict, spec: dict, start: dict) -> Iterator[tuple]:
    """The tables as they are now (one consistent read), as upserts ordered before every
    streamed change. Rows stream from the server (an unbuffered cursor)."""
    import pymysql.cursors

    major = seq_major(start["file"], start["pos"])
    c = connect(conn, cursorclass=pymysql.cursors.SSCursor)
    i = 0
    try:
        with c.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            for t in spec["tables"]:
                names = ", ".join(quote_ident(col["name"]) for col in t["columns"])
                cur.execute(f"SELECT {names} FROM {quote_ident(t['database'])}.{quote_ident(t['table'])}")
                where = f"{t['database']}.{t['table']}"
                for n, row in enumerate(cur, 1):
                    yield ("U", major, i, f"{where} snapshot row {n}", None,
                           *[text_value(v, col) for v, col in zip(row, t["columns"])])
                    i += 1
            cur.execute("COMMIT")
    finally:
        c.close()


# --------------------------------------------------------------------------- data source
# Made on first use (job.connectors.python_source): importing the connector must not
# import pyspark.


def _define() -> tuple[type, ...]:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow

    class CdcPartition(InputPartition):
        def __init__(self, what: str, start: dict, end: dict) -> None:
            super().__init__((what, json.dumps(start), json.dumps(end)))
            self.what, self.start, self.end = what, start, end

    class CdcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        """See the module docstring for the offsets."""

        def __init__(self, spec: dict, conn: dict) -> None:
            self.spec, self.conn = spec, conn
            self._target: Optional[dict] = None

        def initialOffset(self) -> dict:
            # Only a query without a checkpoint asks: the binlog's end now. The snapshot is
            # read after it, so a change in between is seen twice (upserts: harmless).
            return {**current_position(self.conn), "snapshot": self.spec["startup"] != "initial"}

        def getDefaultReadLimit(self):
            limit = self.spec.get("max_changes")
            return ReadMaxRows(int(limit)) if limit else ReadAllAvailable()

        def latestOffset(self, start: dict, limit) -> dict:
            if not start["snapshot"]:
                return {**start, "snapshot": True}  # the first batch: the snapshot alone
            max_changes = limit.max_rows if isinstance(limit, ReadMaxRows) else None
            evts = events(self.conn, self.spec, start["file"], start["pos"])
            return scan_latest(evts, self.spec, start, upto=self._target, max_changes=max_changes)

        def prepareForTriggerAvailableNow(self) -> None:
            self._target = current_position(self.conn)

        def partitions(self, start: dict, end: dict):
            if not start["snapshot"] and end["snapshot"]:
                return [CdcPartition("snapshot", start, end)]
            if after(end, start):
                return [CdcPartition("stream", start, end)]
            return []

        def read(self, partition):
            if partition.what == "snapshot":
                yield from snapshot_rows(self.conn, self.spec, partition.start)
            else:
                evts = events(self.conn, self.spec, partition.start["file"], partition.start["pos"])
                yield from decode_changes(evts, self.spec, partition.start, partition.end)

        def commit(self, end: dict) -> None:
            pass  # the binlog is the server's; the checkpoint says where to resume

    class CdcDataSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return DATA_SOURCE_NAME

        def schema(self):
            raise ValueError("the mysql-cdc data source needs an explicit schema")

        def streamReader(self, schema):
            conn = json.loads(self.options["spec.connection.password"])
            return CdcStreamReader(json.loads(self.options["spec"]), conn)

    return CdcPartition, CdcStreamReader, CdcDataSource


CLASSES = LazyClasses(__name__, ("CdcPartition", "CdcStreamReader", "CdcDataSource"), _define)
__getattr__ = CLASSES.module_getattr
