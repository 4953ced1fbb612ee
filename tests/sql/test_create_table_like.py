"""CREATE TABLE … LIKE: the derived table is the base merged as Flink's MergeTableLikeUtil
merges it, and every clash the strategies leave is an error at the derived statement."""
from __future__ import annotations

import pytest

from job.errors import Origin, PipelineError
from job.plan.program import declare
from job.sql.statements import StatementText

BASE = ("CREATE TABLE orders (id BIGINT, product STRING, order_time TIMESTAMP(3), day AS CAST(order_time AS DATE), "
        "part INT METADATA FROM 'partition' VIRTUAL, PRIMARY KEY (id) NOT ENFORCED, "
        "WATERMARK FOR order_time AS order_time - INTERVAL '1' SECOND) PARTITIONED BY (product) "
        "WITH ('connector' = 'kafka', 'topic' = 'orders', 'scan.startup.mode' = 'earliest-offset')")


def derive(text: str):
    statements = [StatementText(BASE, Origin("p.sql", 1, 1)), StatementText(text, Origin("p.sql", 2, 1))]
    catalog, _conf, _inserts = declare(statements)
    return catalog.table("derived")


def refused(text: str) -> PipelineError:
    with pytest.raises(PipelineError) as info:
        derive(text)
    assert info.value.origin.line == 2
    return info.value


def test_by_default_everything_is_included_and_options_are_overwritten():
    t = derive("CREATE TABLE derived (note STRING) WITH ('scan.startup.mode' = 'latest-offset') LIKE orders")
    assert [(c.name, c.kind) for c in t.columns] == [
        ("id", "physical"), ("product", "physical"), ("order_time", "physical"), ("day", "computed"),
        ("part", "metadata"), ("note", "physical")]
    assert t.options == {"connector": "kafka", "topic": "orders", "scan.startup.mode": "latest-offset"}
    assert t.primary_key == ("id",) and t.column("id").nullable is False
    assert t.watermark.column == "order_time" and t.watermark.delay == "1 second"
    assert t.partitioned_by == ("product",)
    assert t.like is None


def test_excluding_all_including_generated_keeps_physical_and_computed_columns_only():
    t = derive("CREATE TABLE derived WITH ('connector' = 'filesystem', 'path' = '/tmp/x', 'format' = 'json') "
               "LIKE orders (EXCLUDING ALL INCLUDING GENERATED)")
    assert [c.name for c in t.columns] == ["id", "product", "order_time", "day"]
    assert t.options == {"connector": "filesystem", "path": "/tmp/x", "format": "json"}
    assert (t.primary_key, t.watermark, t.partitioned_by) == ((), None, ())


def test_overwriting_replaces_in_place():
    t = derive("CREATE TABLE derived (day AS CAST(order_time AS STRING), "
               "WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND) "
               "LIKE orders (OVERWRITING GENERATED OVERWRITING WATERMARKS)")
    assert [c.name for c in t.columns][3] == "day" and t.column("day").expression == "CAST(order_time AS STRING)"
    assert t.watermark.delay == "5 seconds"


def test_a_new_key_and_partitions_once_the_base_ones_are_excluded():
    t = derive("CREATE TABLE derived (PRIMARY KEY (product) NOT ENFORCED) PARTITIONED BY (id) "
               "LIKE orders (EXCLUDING CONSTRAINTS EXCLUDING PARTITIONS)")
    assert t.primary_key == ("product",) and t.column("product").nullable is False
    assert t.partitioned_by == ("id",)


@pytest.mark.parametrize("text, message", [
    ("CREATE TABLE derived (product INT) LIKE orders", "a column named 'product' already exists in the base table"),
    ("CREATE TABLE derived (day AS 1) LIKE orders", "a generated column named 'day' already exists"),
    ("CREATE TABLE derived (id AS 1) LIKE orders (OVERWRITING GENERATED)",
     "computed columns can only overwrite other computed columns"),
    ("CREATE TABLE derived (part INT METADATA) LIKE orders", "a metadata column named 'part' already exists"),
    ("CREATE TABLE derived (WATERMARK FOR order_time AS order_time) LIKE orders",
     "there already exists a watermark spec for column 'order_time'"),
    ("CREATE TABLE derived (PRIMARY KEY (product) NOT ENFORCED) LIKE orders", "the base table already has a primary key"),
    ("CREATE TABLE derived PARTITIONED BY (id) LIKE orders", "the base table already has partitions defined"),
    ("CREATE TABLE derived WITH ('topic' = 'x') LIKE orders (INCLUDING ALL)",
     "there already exists an option 'topic' in the base table"),
    ("CREATE TABLE derived LIKE nowhere", "source table 'nowhere' of the LIKE clause was not found"),
    ("CREATE TABLE derived (WATERMARK FOR nope AS nope) LIKE orders", "a table can have only one WATERMARK"),
    ("CREATE TABLE derived (WATERMARK FOR nope AS nope) LIKE orders (EXCLUDING WATERMARKS)", "WATERMARK column 'nope' is not a column"),
])
def test_clashes_are_errors_at_the_derived_statement(text, message):
    assert message in refused(text).message


def test_a_view_is_no_base_table():
    statements = [StatementText(BASE, Origin("p.sql", 1, 1)),
                  StatementText("CREATE VIEW v AS SELECT id FROM orders", Origin("p.sql", 2, 1)),
                  StatementText("CREATE TABLE derived LIKE v", Origin("p.sql", 3, 1))]
    with pytest.raises(PipelineError) as info:
        declare(statements)
    assert "source table 'v' of the LIKE clause can not be a VIEW" in info.value.message
    assert (info.value.origin.line, info.value.origin.column) == (3, 27)
