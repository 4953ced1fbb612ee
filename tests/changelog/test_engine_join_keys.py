"""Joins whose key is compared after a type cast, end to end.

An upsert table joined on exactly its primary key is normalized inside the join
operator (the join key stands for the primary key there). That is only right when the
join compares the key as it is: a STRING key CAST to BIGINT is compared as BIGINT, where
'1' and '01' are one join key but two rows of the table. (Flink has no implicit cast
between STRING and BIGINT in a join condition: the query must say CAST.)
"""
from __future__ import annotations

import pytest

from job.api import RunOptions, run
from tests.changelog.engine_support import Clock, write_files
from tests.support.kafka_io import consume, topic_name, upsert_state

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def tables_sql(tmp_path, sink_columns: str, topic: str, bootstrap: str) -> str:
    """users (STRING key) and nums (BIGINT key) from Debezium files, one file per table
    and micro-batch, and an upsert-kafka sink out_t keyed by uid."""
    return f"""
    CREATE TABLE users (uid STRING, accountId STRING, score INT, PRIMARY KEY (uid) NOT ENFORCED) WITH (
      'connector' = 'filesystem', 'path' = '{tmp_path / "users"}', 'format' = 'debezium-json',
      'source.max-files-per-trigger' = '1');
    CREATE TABLE nums (num BIGINT, label STRING, PRIMARY KEY (num) NOT ENFORCED) WITH (
      'connector' = 'filesystem', 'path' = '{tmp_path / "nums"}', 'format' = 'debezium-json',
      'source.max-files-per-trigger' = '1');
    CREATE TABLE out_t ({sink_columns}, PRIMARY KEY (uid) NOT ENFORCED) WITH (
      'connector' = 'upsert-kafka', 'topic' = '{topic}', 'key.format' = 'raw', 'value.format' = 'json',
      'properties.bootstrap.servers' = '{bootstrap}');
    """


def test_string_key_joined_with_a_number_keeps_every_row(spark, kafka_bootstrap, tmp_path):
    clock = Clock()
    users = [  # (op, before, after)
        ("c", None, {"uid": "1", "accountId": "a0", "score": 1}),
        ("c", None, {"uid": "01", "accountId": "a1", "score": 2}),
        ("c", None, {"uid": "2", "accountId": "a2", "score": 3}),
    ]
    later_users = [
        ("u", {"uid": "1", "accountId": "a0", "score": 1}, {"uid": "1", "accountId": "a3", "score": 1}),
        ("c", None, {"uid": "002", "accountId": "a4", "score": 4}),
    ]
    nums = [("c", None, {"num": 1, "label": "one"}), ("c", None, {"num": 2, "label": "two"})]
    later_nums = [("u", {"num": 2, "label": "two"}, {"num": 2, "label": "deux"})]
    write_files(tmp_path / "users", [users, later_users], clock)
    write_files(tmp_path / "nums", [nums, later_nums], clock)

    topic = topic_name("engine-castkey")
    sql = tables_sql(tmp_path, "uid STRING, accountId STRING, label STRING", topic, kafka_bootstrap) + """
    INSERT INTO out_t SELECT u.uid, u.accountId, n.label FROM users u JOIN nums n ON CAST(u.uid AS BIGINT) = n.num;
    """
    assert run(RunOptions(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "checkpoints"))) == 0

    # Batch Spark SQL over the final tables, with the same cast.
    final_users = spark.createDataFrame([("1", "a3", 1), ("01", "a1", 2), ("2", "a2", 3), ("002", "a4", 4)],
                                        "uid STRING, accountId STRING, score INT")
    final_nums = spark.createDataFrame([(1, "one"), (2, "deux")], "num BIGINT, label STRING")
    expected = {r.uid: r.asDict() for r in spark.sql(
        "SELECT u.uid, u.accountId, n.label FROM {users} u JOIN {nums} n ON CAST(u.uid AS BIGINT) = n.num",
        users=final_users, nums=final_nums).collect()}
    assert len(expected) == 4
    assert upsert_state(consume(spark, kafka_bootstrap, topic)) == expected


def test_cast_key_rows_that_share_a_join_key_are_netted_per_sink_key(spark, kafka_bootstrap, tmp_path):
    """'1' leaves and '01' arrives in one micro-batch, under the one join key 1: the sink
    (keyed by uid) must get a delete for '1' and an upsert for '01'. Netting per join key
    would see a single upsert for key 1 and leave '1' in the sink."""
    clock = Clock()
    first = [("c", None, {"uid": "1", "accountId": "a0", "score": 1})]
    second = [("d", {"uid": "1", "accountId": "a0", "score": 1}, None),
              ("c", None, {"uid": "01", "accountId": "a1", "score": 2})]
    write_files(tmp_path / "users", [first, second], clock)
    write_files(tmp_path / "nums", [[("c", None, {"num": 1, "label": "one"})]], clock)
    topic = topic_name("engine-castnet")
    sql = tables_sql(tmp_path, "uid STRING, label STRING", topic, kafka_bootstrap) + """
    INSERT INTO out_t SELECT u.uid, n.label FROM users u JOIN nums n ON CAST(u.uid AS BIGINT) = n.num;
    """
    assert run(RunOptions(statements=[sql], once=True, checkpoint_dir=str(tmp_path / "checkpoints"))) == 0
    assert upsert_state(consume(spark, kafka_bootstrap, topic)) == {"01": {"uid": "01", "label": "one"}}


def test_string_key_joined_with_a_number_without_cast_is_refused_as_in_flink(tmp_path):
    import io

    sql = tables_sql(tmp_path, "uid STRING, label STRING", "t", "127.0.0.1:1") + """
    INSERT INTO out_t SELECT u.uid, n.label FROM users u JOIN nums n ON u.uid = n.num;
    """
    err = io.StringIO()
    assert run(RunOptions(statements=[sql], dry_run=True), out=io.StringIO(), err=err) == 2
    assert "implicit type conversion between STRING and BIGINT" in err.getvalue(), err.getvalue()
