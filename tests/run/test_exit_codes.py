"""Documented exit codes, each with one line on stderr saying which."""
from __future__ import annotations

import socket
import time

import pytest

from tests.support.kafka_io import produce, topic_name
from tests.support.runs import ROOT, run_cli, run_inline

PRINT_SINK = "CREATE TABLE out1 (uid STRING, n INT) WITH ('connector' = 'print');"


def kafka_source(bootstrap: str, topic: str, extra: str = "") -> str:
    return (f"CREATE TABLE src (uid STRING, n INT) WITH ('connector' = 'kafka', 'topic' = '{topic}', "
            f"'properties.bootstrap.servers' = '{bootstrap}', 'format' = 'json', "
            f"'scan.startup.mode' = 'earliest-offset'{extra});")


def closed_port() -> int:
    with socket.socket() as s:  # bound, never listening: connections are refused
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_exit_2_for_a_syntax_error_without_starting_spark():
    r = run_cli("CREATE TABLE t (a STRING) WITH ('connector' = 'print'); INSERT INTO t SELEC 1", timeout=60)
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1 and r.err.startswith("error (exit 2, invalid pipeline): arg 1:1:"), r.err


def test_exit_2_for_sql_spark_rejects(spark):
    r = run_inline(statements=[kafka_source("127.0.0.1:1", "t"), PRINT_SINK, "INSERT INTO out1 SELECT uid, nope FROM src"],
                   dry_run=True)
    assert r.code == 2
    assert r.error_line.startswith("error (exit 2, invalid pipeline): arg 3:1:")
    assert "nope" in r.error_line


DATAGEN = ("CREATE TABLE orders (id BIGINT, cat INT, amount DOUBLE) "
           "WITH ('connector' = 'datagen', 'number-of-rows' = '10');")


@pytest.mark.parametrize("query, condition, hint", [
    ("INSERT INTO out1 SELECT CAST(id AS STRING), CAST(rn AS INT) FROM (\n"
     "  SELECT id, ROW_NUMBER() OVER (PARTITION BY cat ORDER BY amount DESC) AS rn FROM orders)",
     "needs a range of ranks in the outer WHERE", "Top-N"),
    ("INSERT INTO out1 SELECT CAST(id AS STRING), CAST(r AS INT) FROM (\n"
     "  SELECT id, RANK() OVER (PARTITION BY cat ORDER BY amount DESC) AS r FROM orders) WHERE r <= 2",
     "RANK() on streaming table is not supported currently", "ROW_NUMBER()"),
    ("INSERT INTO out1 SELECT CAST(id AS STRING), cat FROM orders ORDER BY amount",
     "Sort on a non-time-attribute field is not supported", "LIMIT"),
])
def test_exit_2_at_planning_for_what_spark_streams_cannot_do(spark, query, condition, hint):
    # Refused while planning (--dry-run reports it, located), in Flink's terms: a ranking
    # without Flink's Top-N filter, a sort of a stream on a non-time column.
    r = run_inline(statements=[DATAGEN, PRINT_SINK, query], dry_run=True)
    assert r.code == 2, r.err
    assert r.error_line.startswith("error (exit 2, invalid pipeline): arg 3:"), r.error_line
    assert condition in r.error_line and "~Sort" not in r.error_line
    assert hint is None or hint in r.error_line


def test_exit_3_fast_for_a_closed_kafka_port():
    started = time.monotonic()
    r = run_cli(kafka_source("127.0.0.1:1", "t"), PRINT_SINK, "INSERT INTO out1 SELECT uid, n FROM src", "--once",
                timeout=120)
    elapsed = time.monotonic() - started
    assert r.code == 3, r.err
    assert r.err.count("\n") == 1, r.err
    assert r.err.startswith("error (exit 3, source or sink unreachable): ")
    assert "'properties.bootstrap.servers' = '127.0.0.1:1' cannot be reached" in r.err
    assert elapsed < 15, f"took {elapsed:.1f} s"


def test_exit_3_for_an_unreachable_sink():
    port = closed_port()
    sink = (f"CREATE TABLE counts (n INT, c BIGINT, PRIMARY KEY (n) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', "
            f"'topic' = 'c', 'properties.bootstrap.servers' = '127.0.0.1:{port}', 'key.format' = 'json', "
            "'value.format' = 'json')")
    source = "CREATE TABLE g (n INT) WITH ('connector' = 'datagen', 'number-of-rows' = '3')"
    r = run_inline(statements=[source, sink, "INSERT INTO counts SELECT n, COUNT(*) FROM g GROUP BY n"], once=True)
    assert r.code == 3
    assert f"table 'counts': 'properties.bootstrap.servers' = '127.0.0.1:{port}' cannot be reached" in r.error_line


@pytest.mark.kafka
@pytest.mark.slow
def test_exit_4_for_malformed_json_under_fail(spark, kafka_bootstrap, tmp_path):
    topic = topic_name("bad")
    produce(spark, kafka_bootstrap, topic, [("k1", {"uid": "1", "n": 1}), ("k2", '{"uid": "2", "n": '),
                                            ("k3", {"uid": "3", "n": 3})])
    r = run_inline(statements=[kafka_source(kafka_bootstrap, topic), PRINT_SINK, "INSERT INTO out1 SELECT uid, n FROM src"],
                   once=True, checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 4, r.err
    line = r.error_line
    assert line.startswith("error (exit 4, bad record): query 'sql-pipeline-1-out1' stopped at a bad record: table 'src': ")
    assert f"topic {topic} partition 0 offset 1" in line
    assert ': {"uid": "2", "n": ' in line  # the preview
    assert "on-error" in line  # the hint


@pytest.mark.kafka
@pytest.mark.slow
def test_exit_4_for_a_string_where_int_is_declared_in_the_seed_example(spark, kafka_bootstrap, tmp_path):
    """Seed 002's crash: 'id' is INT, a producer sends a string."""
    users, counts = topic_name("users"), topic_name("counts")
    produce(spark, kafka_bootstrap, users, [
        ("100-1", {"uid": "100-1", "accountId": "100", "id": 1, "fullName": "bob", "op": "c"}),
        ("100-2", {"uid": "100-2", "accountId": "100", "id": "two", "fullName": "bob", "op": "c"}),
    ])
    r = run_inline(files=[str(ROOT / "examples" / "user_count_by_account" / "pipeline.sql")], once=True,
                   variables={"bootstrap": kafka_bootstrap, "users_topic": users, "counts_topic": counts},
                   checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 4, r.err
    assert f"topic {users} partition 0 offset 1" in r.error_line
    assert '"id": "two"' in r.error_line


def test_flink_durations_set_the_trigger_interval_and_bad_ones_are_named():
    from job.plan.program import trigger_interval_ms

    def conf(value):
        return {"execution.checkpointing.interval": value}

    assert trigger_interval_ms(conf("1 s")) == 1000
    assert trigger_interval_ms(conf("500ms")) == 500
    assert trigger_interval_ms(conf("2 min")) == 120_000
    assert trigger_interval_ms({}) == 0
    result = run_inline(statements=["SET 'execution.checkpointing.interval' = 'soon'",
                                    "CREATE TABLE s (a INT) WITH ('connector' = 'datagen', 'number-of-rows' = '1')",
                                    "CREATE TABLE k (a INT) WITH ('connector' = 'blackhole')",
                                    "INSERT INTO k SELECT a FROM s"], dry_run=True)
    assert result.code == 2, result.err
    assert "execution.checkpointing.interval" in result.err and "not a duration" in result.err
