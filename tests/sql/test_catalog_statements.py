"""Catalog statements in a Flink SQL file: CREATE CATALOG / DATABASE, USE, SHOW, DESCRIBE, DROP,
EXPLAIN. SHOW and DESCRIBE print what Flink 2.3's SQL client prints (the expected tables below
were printed by Flink 2.3 for the same statements); none of these needs Spark."""
from __future__ import annotations

import io

import pytest

from job.api import RunOptions, run
from job.errors import Origin, PipelineError
from job.pipeline.load import load_statements
from job.plan.program import build_program, declare
from job.sql.parse import parse_statement
from job.sql.statements import StatementText

ORDERS = ("CREATE TABLE orders (id BIGINT NOT NULL, name STRING, amount DECIMAL(10,2), ts TIMESTAMP(3), "
          "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector'='datagen')")
SETUP = ["CREATE CATALOG c WITH ('type'='generic_in_memory')", "CREATE DATABASE c.db", "USE CATALOG c", "USE db",
         ORDERS, "CREATE VIEW v AS SELECT id FROM orders",
         "CREATE TABLE snk (id BIGINT) WITH ('connector'='blackhole')"]


def printed(statements: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = run(RunOptions(statements=[";\n".join(statements)], dry_run=True), out=out, err=err)
    assert code == 0, err.getvalue()
    return out.getvalue()


def error(statements: list[str]) -> PipelineError:
    with pytest.raises(PipelineError) as info:
        declare(load_statements(args=[";\n".join(statements)]).statements)
    return info.value


def test_show_prints_flinks_tables():
    text = printed(SETUP + ["SHOW CATALOGS", "SHOW DATABASES", "SHOW TABLES", "SHOW VIEWS", "SHOW CURRENT CATALOG",
                            "SHOW CURRENT DATABASE", "SHOW USER FUNCTIONS"])
    assert text == """\
+-----------------+
|    catalog name |
+-----------------+
|               c |
| default_catalog |
+-----------------+
2 rows in set
+---------------+
| database name |
+---------------+
|            db |
|       default |
+---------------+
2 rows in set
+------------+
| table name |
+------------+
|     orders |
|        snk |
|          v |
+------------+
3 rows in set
+-----------+
| view name |
+-----------+
|         v |
+-----------+
1 row in set
+----------------------+
| current catalog name |
+----------------------+
|                    c |
+----------------------+
1 row in set
+-----------------------+
| current database name |
+-----------------------+
|                    db |
+-----------------------+
1 row in set
Empty set
"""


def test_describe_prints_flinks_table():
    assert printed(SETUP + ["DESCRIBE orders"]) == """\
+--------+------------------------+-------+---------+--------+----------------------------+
|   name |                   type |  null |     key | extras |                  watermark |
+--------+------------------------+-------+---------+--------+----------------------------+
|     id |                 BIGINT | FALSE | PRI(id) |        |                            |
|   name |                 STRING |  TRUE |         |        |                            |
| amount |         DECIMAL(10, 2) |  TRUE |         |        |                            |
|     ts | TIMESTAMP(3) *ROWTIME* |  TRUE |         |        | `ts` - INTERVAL '5' SECOND |
+--------+------------------------+-------+---------+--------+----------------------------+
4 rows in set
"""


def test_show_is_the_catalog_at_that_statement():
    text = printed(["SHOW TABLES", ORDERS, "SHOW TABLES", "CREATE DATABASE d2", "USE d2", "SHOW TABLES",
                    "USE default_database", "DROP TABLE orders", "SHOW TABLES"])
    assert text.split("\n")[0] == "Empty set"
    assert text.count("Empty set") == 3 and "|     orders |" in text


def test_qualified_names_resolve_against_the_namespace():
    catalog, _conf, inserts = declare(load_statements(args=[";\n".join([
        "CREATE DATABASE IF NOT EXISTS db", "CREATE DATABASE IF NOT EXISTS db",
        ORDERS.replace("TABLE orders", "TABLE db.orders"),
        "CREATE TABLE default_catalog.db.snk (id BIGINT) WITH ('connector'='blackhole')",
        "INSERT INTO db.snk SELECT id FROM default_catalog.db.orders"])]).statements)
    assert catalog.paths == {"orders": ("default_catalog", "db"), "snk": ("default_catalog", "db")}
    assert [i.table for i in inserts] == ["db.snk"]


@pytest.mark.parametrize("statements, message", [
    (["CREATE CATALOG h WITH ('type'='paimon')"], "catalog type 'paimon' is not supported"),
    (["CREATE CATALOG h WITH ('type'='iceberg', 'clients'='2')"], "unsupported option 'clients' for catalog type"),
    (["CREATE CATALOG h WITH ('type'='hive', 'hive-conf-dir'='/x')"], "catalog type 'hive' is not supported"),
    (["CREATE CATALOG h WITH ('default-database'='x')"], "the WITH options have no 'type'"),
    (["CREATE CATALOG c WITH ('type'='generic_in_memory')"] * 2, "Catalog c already exists."),
    (["USE CATALOG nope"], "A catalog with name [nope] does not exist."),
    (["USE nope"], "A database with name [nope] does not exist in the catalog: [default_catalog]."),
    (["CREATE DATABASE db"] * 2, "Database db already exists in Catalog default_catalog."),
    ([ORDERS.replace("TABLE orders", "TABLE nodb.orders")], "Database nodb does not exist in Catalog default_catalog."),
    (["DROP TABLE nope"], "Table with identifier 'nope' does not exist."),
    (["DROP DATABASE default_database"], "Cannot drop a database which is currently in use."),
    (["CREATE DATABASE d", ORDERS.replace("TABLE orders", "TABLE d.orders"), "DROP DATABASE d"],
     "Database d in catalog default_catalog is not empty."),
    ([ORDERS, "CREATE TABLE s (id BIGINT) WITH ('connector'='blackhole')", "INSERT INTO s SELECT id FROM orders",
      "DROP TABLE orders"], "INSERT INTO s before it uses it"),
    (["SHOW FUNCTIONS"], "SHOW FUNCTIONS is not supported"),
])
def test_refused_by_name(statements, message):
    assert message in error(statements).message


def test_drops_that_run():
    catalog, _c, _i = declare(load_statements(args=[";\n".join([
        "DROP TABLE IF EXISTS nope", "CREATE DATABASE d", ORDERS.replace("TABLE orders", "TABLE d.orders"),
        "DROP DATABASE d CASCADE", "CREATE CATALOG c WITH ('type'='generic_in_memory')", "DROP CATALOG c"])]).statements)
    assert catalog.tables == {} and set(catalog.namespace.catalogs) == {"default_catalog"}


@pytest.mark.parametrize("text, column, message", [
    ("SHOW JOBS", 6, "unsupported statement 'SHOW JOBS'"),
    ("SHOW TABLES FROM db", 13, "'SHOW TABLES FROM …' is not supported"),
    ("DESCRIBE CATALOG c", 10, "unsupported statement 'DESCRIBE CATALOG'"),
    ("DROP MODEL m", 6, "unsupported statement 'DROP MODEL'"),
    ("EXPLAIN SELECT 1", 9, "EXPLAIN of a query on its own is not supported"),
    ("EXPLAIN BOGUS INSERT INTO t SELECT 1", 9, "unknown EXPLAIN detail 'BOGUS'"),
])
def test_parse_refusals_point_at_the_word(text, column, message):
    with pytest.raises(PipelineError) as info:
        parse_statement(StatementText(text, Origin("p.sql")))
    assert message in info.value.message and info.value.origin.column == column


def test_explain_is_planned_not_run():
    program = build_program(load_statements(args=[";\n".join(SETUP + [
        "EXPLAIN PLAN FOR INSERT INTO snk SELECT id FROM orders WHERE id > 1",
        "INSERT INTO snk SELECT id FROM orders"])]))
    # The EXPLAIN's INSERT comes after the real ones, so it never renames their queries (checkpoints).
    assert [i.query for i in program.inserts] == ["SELECT id FROM orders", "SELECT id FROM orders WHERE id > 1"]
    assert program.explained == frozenset({1})
