"""Airflow: drain a Kafka topic with a streamsql pipeline every 15 minutes.

Each run is ``--once``: it reads what the topic holds beyond the offsets in the pipeline's
checkpoint, writes the purchases among those events (examples/airflow/kafka_purchases.yaml),
commits the new offsets and exits, so consecutive runs together read every event once.
Runs never overlap (``max_active_runs=1``): they share that checkpoint. A broker that
does not answer is exit 3, which the task retries; 2 and 4 fail at once
(streamsql_operator.py).

Settings (environment of the Airflow worker), besides those of streamsql_dag.py:

* ``STREAMSQL_KAFKA_BOOTSTRAP``: the brokers (default 127.0.0.1:9092).
* ``STREAMSQL_KAFKA_TOPIC``: the topic (default ``events``).
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta

try:  # Airflow 3
    from airflow.sdk import DAG
except ImportError:  # Airflow 2
    from airflow import DAG

from streamsql_operator import HOME, StreamsqlSubmitOperator

DATA_DIR = os.environ.get("STREAMSQL_DATA_DIR", "/tmp/streamsql-airflow")
BOOTSTRAP = os.environ.get("STREAMSQL_KAFKA_BOOTSTRAP", "127.0.0.1:9092")
TOPIC = os.environ.get("STREAMSQL_KAFKA_TOPIC", "events")

with DAG(
    dag_id="streamsql_kafka_purchases",
    description="streamsql: examples/airflow/kafka_purchases.yaml, every 15 minutes",
    schedule="*/15 * * * *",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,  # every run continues from the one checkpoint; never two at once
    default_args={"retries": 3, "retry_delay": timedelta(minutes=2)},
    tags=["streamsql"],
) as dag:
    StreamsqlSubmitOperator(
        task_id="kafka_purchases",
        pipeline_name="kafka_purchases",
        application_args=[
            "--pipeline", str(HOME / "examples" / "airflow" / "kafka_purchases.yaml"),
            "--once",
            "--var", f"bootstrap={BOOTSTRAP}",
            "--var", f"topic={TOPIC}",
            "--var", f"data_dir={DATA_DIR}",
        ],
    )
