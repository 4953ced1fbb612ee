"""Lookup joins (FOR SYSTEM_TIME AS OF a PROCTIME() attribute) against a real PostgreSQL:
each row is joined with the table's rows for its key when it is processed."""
from __future__ import annotations

import json
import uuid

import pytest

from job.api import collect
from job.errors import PipelineError
from tests.support.services import connect_postgres

pytestmark = pytest.mark.postgres


@pytest.fixture
def dim(postgres):
    conn = connect_postgres(postgres)
    name = "dim_" + uuid.uuid4().hex[:10]
    conn.execute(f"CREATE TABLE {name} (id INT, region TEXT, score NUMERIC(6, 2), PRIMARY KEY (id))")
    yield postgres, conn, name
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.close()


def tables(tmp_path, facts, name, orders):
    (tmp_path / "orders").mkdir()
    (tmp_path / "orders" / "part-0").write_text("".join(json.dumps(o) + "\n" for o in orders))
    return [
        f"CREATE TABLE orders (oid INT, cust INT, amount INT, p AS PROCTIME()) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path / 'orders'}', 'format' = 'json')",
        f"CREATE TABLE customers (id INT, region STRING, score DECIMAL(6, 2), PRIMARY KEY (id) NOT ENFORCED) WITH "
        f"('connector' = 'jdbc', 'url' = '{facts['url']}', 'table-name' = '{name}', 'username' = '{facts['user']}', "
        f"'password' = '{facts['password']}')",
    ]


def test_inner_and_left_lookup_join_read_the_table_when_rows_are_processed(spark, dim, tmp_path):
    facts, conn, name = dim
    customers = {1: ("eu", "1.50"), 2: ("us", None), 4: (None, "7.25")}
    for cid, (region, score) in customers.items():
        conn.execute(f"INSERT INTO {name} VALUES (%s, %s, %s)", (cid, region, score))
    orders = [{"oid": i, "cust": c, "amount": 10 * i} for i, c in enumerate([1, 2, 3, None, 1, 4, 5, 2])]
    statements = tables(tmp_path, facts, name, orders)

    inner = collect(statements, "SELECT o.oid, c.region, c.score FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF "
                                "o.p AS c ON o.cust = c.id", spark=spark, checkpoint_dir=str(tmp_path / "ck1"))
    expected = [(o["oid"], *customers[o["cust"]]) for o in orders if o["cust"] in customers]
    assert sorted((oid, region, None if score is None else str(score)) for oid, region, score in inner.rows) \
        == sorted(expected, key=repr)
    assert inner.append_only

    left = collect(statements, "SELECT o.oid, c.id, c.region FROM orders o LEFT JOIN customers FOR SYSTEM_TIME AS OF "
                               "o.p AS c ON o.cust = c.id AND o.amount > 20", spark=spark,
                   checkpoint_dir=str(tmp_path / "ck2"))
    expected = [(o["oid"], o["cust"], customers[o["cust"]][0]) if o["cust"] in customers and o["amount"] > 20
                else (o["oid"], None, None) for o in orders]
    assert sorted(left.rows, key=repr) == sorted(expected, key=repr)

    # A later run looks the new rows up in the table as it is then.
    conn.execute(f"UPDATE {name} SET region = 'apac' WHERE id = 1")
    (tmp_path / "orders" / "part-1").write_text(json.dumps({"oid": 100, "cust": 1, "amount": 1}) + "\n")
    again = collect(statements, "SELECT o.oid, c.region FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF o.p AS c "
                                "ON o.cust = c.id", spark=spark, checkpoint_dir=str(tmp_path / "ck1"))
    assert again.rows == [(100, "apac")]


def test_lookup_join_of_a_table_that_is_not_jdbc_is_refused_by_name(spark, tmp_path):
    (tmp_path / "d").mkdir()
    statements = [
        f"CREATE TABLE orders (oid INT, cust INT, p AS PROCTIME()) WITH ('connector' = 'filesystem', "
        f"'path' = '{tmp_path / 'd'}', 'format' = 'json')",
        f"CREATE TABLE customers (id INT, region STRING) WITH ('connector' = 'filesystem', 'path' = '{tmp_path / 'd'}', "
        "'format' = 'json')",
    ]
    with pytest.raises(PipelineError) as err:
        collect(statements, "SELECT o.oid FROM orders o JOIN customers FOR SYSTEM_TIME AS OF o.p AS c ON o.cust = c.id",
                spark=spark, checkpoint_dir=str(tmp_path / "ck"))
    assert "not a 'jdbc' table" in err.value.render() and "1:" in err.value.render()
