"""postgres-cdc without a server: wal2json decoding, batch cutting, type checks, options."""
from __future__ import annotations

import json

import pytest

from job.connectors.postgres_cdc import replication as pg
from job.connectors.postgres_cdc.column_types import suggested_type, type_problem
from job.connectors.registry import validate_options
from job.errors import PipelineError
from job.sql.statements import Column, CreateTable

SPEC = {"schema": "public", "table": "users", "columns": ["uid", "acct", "n"], "key": ["uid"]}


def change(action, columns=None, identity=None, table="users"):
    out = {"action": action, "schema": "public", "table": table}
    if columns is not None:
        out["columns"] = [{"name": k, "value": v} for k, v in columns.items()]
    if identity is not None:
        out["identity"] = [{"name": k, "value": v} for k, v in identity.items()]
    return json.dumps(out)


B, C = '{"action":"B"}', '{"action":"C"}'

# Three transactions, as pg_logical_slot_peek_changes returns them: (lsn, data); a C row's
# LSN is the end of its commit record, the value the offsets use.
WAL = [
    (100, B), (100, change("I", {"uid": "a", "acct": "1", "n": 1})), (110, change("I", {"uid": "b", "acct": "1", "n": 2})),
    (150, C),
    (150, B), (160, C),   # another table's transaction: wal2json's 'add-tables' leaves it empty
    (160, B), (160, change("U", {"uid": "a", "acct": "2", "n": 0}, {"uid": "a"}).replace('"value": 0', '"value": 1.50')),
    (170, change("U", {"uid": "c", "acct": "2", "n": None}, {"uid": "b"})),  # key change b → c
    (180, change("D", identity={"uid": "c"})), (200, C),
    (200, B), (200, change("I", {"uid": "z", "acct": "9", "n": 9})),          # not committed yet
]


def decoded(start, end):
    return [(r[0], r[1], r[2], *r[5:]) for r in pg.decode_changes(WAL, SPEC, start, end)]


def test_transactions_in_the_range_become_upserts_and_deletes_in_commit_order():
    assert decoded(0, 200) == [
        ("U", pg.seq_major(150), 0, "a", "1", "1"),
        ("U", pg.seq_major(150), 1, "b", "1", "2"),
        ("U", pg.seq_major(200), 0, "a", "2", "1.50"),      # numbers keep their exact text
        ("D", pg.seq_major(200), 1, "b", None, None),       # the old key of a key-changing update
        ("U", pg.seq_major(200), 2, "c", "2", None),
        ("D", pg.seq_major(200), 3, "c", None, None),
    ]


def test_a_batch_holds_whole_transactions_committed_in_start_end():
    assert [r[3] for r in decoded(0, 150)] == ["a", "b"]
    assert [r[3] for r in decoded(150, 199)] == []          # commit at 200 is not ≤ 199
    assert decoded(150, 200) == decoded(0, 200)[2:]         # the start is exclusive
    assert decoded(200, 10_000) == []                       # an open transaction is never emitted


def test_rows_carry_position_and_raw_change():
    row = next(pg.decode_changes(WAL, SPEC, 0, 150))
    assert row[3] == "public.users insert at LSN 0/64 (commit 0/96)"
    assert json.loads(row[4])["columns"][0] == {"name": "uid", "value": "a"}


def test_update_without_key_change_with_replica_identity_full_fills_missing_toast_columns():
    wal = [(1, B), (2, change("U", {"uid": "a", "n": 2}, {"uid": "a", "acct": "big", "n": 1})), (3, C)]
    assert [r[5:] for r in pg.decode_changes(wal, SPEC, 0, 3)] == [("a", "big", "2")]


def test_text_values_match_postgres_text_forms():
    assert [pg.text_value(v) for v in (None, True, False, "x", "12.50", [1, 2])] == [
        None, "true", "false", "x", "12.50", "[1, 2]"]


def test_scan_latest_ends_at_the_last_relevant_commit():
    assert pg.scan_latest(WAL, 0) == 200
    assert pg.scan_latest(WAL, 150) == 200
    assert pg.scan_latest(WAL, 200) == 200                  # nothing new: the start comes back
    assert pg.scan_latest(WAL, 0, max_changes=1) == 150     # whole transactions, at least one
    assert pg.scan_latest(WAL, 0, max_changes=3) == 200


def test_scan_latest_moves_past_other_tables_only_after_enough_wal():
    other = [(10, B), (50, C)]
    assert pg.scan_latest(other, 0) == 0
    assert pg.scan_latest(other, 0, idle_bytes=40) == 50


def test_lsn_text_round_trip():
    assert pg.lsn_text(0x1_0000_16B3) == "1/16B3"
    assert pg.lsn_int("1/16B3") == 0x1_0000_16B3
    assert pg.seq_major(255) < pg.seq_major(256)


def test_wal2json_table_filter_escapes_separators():
    assert pg.wal2json_table_filter("public", "users") == "public.users"
    assert pg.wal2json_table_filter("my schema", "a.b,c") == "my\\ schema.a\\.b\\,c"


@pytest.mark.parametrize("pg_type,formatted,spark,ok", [
    ("int4", "integer", "int", True), ("int4", "integer", "bigint", True), ("int8", "bigint", "int", False),
    ("int4", "integer", "smallint", False), ("int4", "integer", "decimal(10,0)", True),
    ("int4", "integer", "decimal(9,0)", False), ("numeric", "numeric(10,2)", "decimal(12,2)", True),
    ("numeric", "numeric(10,2)", "decimal(10,1)", False), ("numeric", "numeric(10,2)", "decimal(9,2)", False),
    ("numeric", "numeric", "decimal(38,10)", True), ("float8", "double precision", "float", False),
    ("float4", "real", "double", True), ("text", "text", "int", False), ("text", "text", "string", True),
    ("timestamptz", "timestamp with time zone", "timestamp", True), ("date", "date", "timestamp", True),
    ("bool", "boolean", "boolean", True), ("bytea", "bytea", "binary", True), ("uuid", "uuid", "string", True),
    ("bytea", "bytea", "int", False), ("jsonb", "jsonb", "string", True),
])
def test_type_problem(pg_type, formatted, spark, ok):
    assert (type_problem(pg_type, formatted, spark) is None) == ok


def test_suggested_type():
    assert suggested_type("numeric", "numeric(12,3)") == "DECIMAL(12, 3)"
    assert suggested_type("int8", "bigint") == "BIGINT"
    assert suggested_type("uuid", "uuid") == "STRING"


def cdc_table(**options):
    base = {"connector": "postgres-cdc", "hostname": "127.0.0.1", "username": "u", "database-name": "d",
            "table-name": "users", "slot.name": "s1"}
    return CreateTable(name="users", columns=(Column("uid", "string", "STRING"), Column("n", "int", "INT")),
                       options={**base, **options}, primary_key=("uid",))


def test_options_defaults_and_primary_key_required():
    connector, options = validate_options(cdc_table(), "source")
    assert options["port"] == 5432 and options["schema-name"] == "public"
    assert options["scan.startup.mode"] == "initial" and options["decoding.plugin.name"] == "wal2json"
    table = CreateTable(name="users", columns=(Column("uid", "string", "STRING"),), options=cdc_table().options)
    with pytest.raises(PipelineError, match="requires a PRIMARY KEY"):
        validate_options(table, "source")


def test_bad_slot_name_and_sink_role_are_refused():
    with pytest.raises(PipelineError, match="not a valid replication slot name") as err:
        validate_options(cdc_table(**{"slot.name": "Bad-Name"}), "source")
    assert err.value.option == "slot.name"
    with pytest.raises(PipelineError, match="can only be a source"):
        validate_options(cdc_table(), "sink")
