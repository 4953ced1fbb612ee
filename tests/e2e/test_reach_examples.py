"""The reach examples, run as users run them (their pipeline files, --once, from cron or
Airflow), against real systems: Kafka, a registry speaking Confluent's REST API, a local
Iceberg warehouse, and MariaDB's binlog. Each run starts from the last one's checkpoint,
and the sink must then hold exactly the current result."""
from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from chispa import assert_df_equality

from job.api import RunOptions, run
from tests.support.kafka_io import consume, topic_name, upsert_state

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.kafka, pytest.mark.slow]

ORDER_SCHEMA = {"type": "record", "name": "Order", "fields": [
    {"name": "order_id", "type": "long"},
    {"name": "product", "type": ["null", "string"]},
    {"name": "quantity", "type": ["null", "int"]},
    {"name": "price", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}]},
    {"name": "order_time", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]}]}


def run_example(name: str, variables: dict, checkpoint: Path) -> None:
    err = io.StringIO()
    code = run(RunOptions(pipeline=str(ROOT / "examples" / name / "pipeline.yaml"), variables=variables, once=True,
                          checkpoint_dir=str(checkpoint)), out=io.StringIO(), err=err)
    assert code == 0, err.getvalue()


def test_kafka_avro_to_iceberg(spark, kafka_bootstrap, tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from tests.connectors.test_iceberg import read_table
    from tests.support.schema_registry import RegistryServer

    topic, warehouse = topic_name("orders"), tmp_path / "lake"
    at = dt.datetime(2024, 5, 1, 9, 30, tzinfo=dt.timezone.utc)
    schema = "product string, orders long, units long, revenue decimal(38,2)"
    with RegistryServer() as registry:
        serialize = AvroSerializer(SchemaRegistryClient({"url": registry.url}), json.dumps(ORDER_SCHEMA))
        context = SerializationContext(topic, MessageField.VALUE)
        producer = Producer({"bootstrap.servers": kafka_bootstrap})

        def send(*orders):
            for order_id, product, quantity, price in orders:
                producer.produce(topic, value=serialize({"order_id": order_id, "product": product, "quantity": quantity,
                                                         "price": Decimal(price), "order_time": at}, context))
            producer.flush(30)

        variables = {"bootstrap": kafka_bootstrap, "registry": registry.url, "orders_topic": topic,
                     "warehouse": str(warehouse)}
        send((1, "lamp", 2, "19.99"), (2, "desk", 1, "149.00"), (3, "lamp", 1, "21.50"))
        run_example("kafka_avro_to_iceberg", variables, tmp_path / "ck")
        assert_df_equality(read_table(spark, warehouse, ("shop", "revenue_by_product"), schema),
                           spark.createDataFrame([("lamp", 2, 3, Decimal("61.48")), ("desk", 1, 1, Decimal("149.00"))],
                                                 schema), ignore_row_order=True, ignore_nullable=True)
        # The next run updates the lamp's row in place and adds the chair's.
        send((4, "lamp", 3, "20.00"), (5, "chair", 4, "35.25"))
        run_example("kafka_avro_to_iceberg", variables, tmp_path / "ck")
        assert_df_equality(read_table(spark, warehouse, ("shop", "revenue_by_product"), schema),
                           spark.createDataFrame([("lamp", 3, 6, Decimal("121.48")), ("desk", 1, 1, Decimal("149.00")),
                                                  ("chair", 1, 4, Decimal("141.00"))], schema),
                           ignore_row_order=True, ignore_nullable=True)
        assert registry.registry.subjects[f"{topic}-value"]  # the producer's subject, Flink's default one


@pytest.mark.mariadb
def test_mysql_cdc_to_upsert_kafka(spark, kafka_bootstrap, mariadb, tmp_path, monkeypatch):
    import pymysql

    database, details = f"shop_{uuid.uuid4().hex[:8]}", topic_name("order_details")
    conn = pymysql.connect(host=mariadb["host"], port=mariadb["port"], user=mariadb["user"],
                           password=mariadb["password"], autocommit=True)

    def sql(*statements):
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)

    def current() -> dict:
        state = upsert_state(consume(spark, kafka_bootstrap, details))
        return {json.loads(k)["order_id"]: (v["amount"], v["status"], v["customer"], v["region"])
                for k, v in state.items()}

    monkeypatch.setenv("MYSQL_PASSWORD", mariadb["password"])
    variables = {"mysql_host": mariadb["host"], "mysql_port": str(mariadb["port"]), "mysql_user": mariadb["user"],
                 "database": database, "bootstrap": kafka_bootstrap, "details_topic": details}
    sql(f"CREATE DATABASE {database}",
        f"CREATE TABLE {database}.customers (id INT PRIMARY KEY, name VARCHAR(40), region VARCHAR(10))",
        f"CREATE TABLE {database}.orders (id INT PRIMARY KEY, customer_id INT, amount DECIMAL(12, 2), "
        "status VARCHAR(10))",
        f"INSERT INTO {database}.customers VALUES (1, 'Ann', 'EU'), (2, 'Bob', 'US')",
        f"INSERT INTO {database}.orders VALUES (10, 1, 25.00, 'new'), (11, 2, 40.50, 'new'), (12, 3, 9.99, 'new')")
    try:
        run_example("mysql_cdc_to_upsert_kafka", variables, tmp_path / "ck")
        assert current() == {10: (25.0, "new", "Ann", "EU"), 11: (40.5, "new", "Bob", "US"),
                             12: (9.99, "new", None, None)}
        # The binlog: a customer moves (every order of theirs follows), the missing
        # customer arrives, an order is paid, another is deleted.
        sql(f"UPDATE {database}.customers SET region = 'APAC' WHERE id = 1",
            f"INSERT INTO {database}.customers VALUES (3, 'Cid', 'EU')",
            f"UPDATE {database}.orders SET status = 'paid' WHERE id = 10",
            f"DELETE FROM {database}.orders WHERE id = 11")
        run_example("mysql_cdc_to_upsert_kafka", variables, tmp_path / "ck")
        assert current() == {10: (25.0, "paid", "Ann", "APAC"), 12: (9.99, "new", "Cid", "EU")}
    finally:
        sql(f"DROP DATABASE IF EXISTS {database}")
        conn.close()
