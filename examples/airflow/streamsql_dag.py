"""Airflow: run a streamsql YAML pipeline once per schedule interval.

StreamsqlSubmitOperator (streamsql_operator.py beside this file, a SparkSubmitOperator from
apache-airflow-providers-apache-spark) submits the job, ``job/main.py`` plus ``job/`` zipped
as ``--py-files``, with the run's logical date as ``--var run_date={{ ds }}``. ``--once``
makes the job read what is there, write, commit its checkpoint and exit. The task fails
with the job's exit code; 3 (a source or sink unreachable) and 1 are retried, 2 (invalid
pipeline) and 4 (a bad record) fail at once (see docs/operations.md).

Settings (environment of the Airflow worker):

* ``STREAMSQL_HOME``: the repository checkout (default: two levels above this file).
* ``STREAMSQL_DATA_DIR``: passed to the pipeline as ``data_dir``.
* the ``spark_default`` connection: the master, e.g. ``spark://host:7077`` or ``local[2]``
  (``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'``).
* ``spark-submit``: the repository's ``.venv/bin`` is put first on the task's ``PATH``.
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
PIPELINE = HOME / "examples" / "airflow" / "daily_purchases.yaml"

with DAG(
    dag_id="streamsql_daily_purchases",
    description="streamsql: examples/airflow/daily_purchases.yaml, once per day",
    schedule="@daily",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,  # runs of one pipeline share a checkpoint per day; never overlap
    default_args={"retries": 2, "retry_delay": timedelta(minutes=5)},
    tags=["streamsql"],
) as dag:
    StreamsqlSubmitOperator(
        task_id="daily_purchases",
        pipeline_name="daily_purchases",
        application_args=[
            "--pipeline", str(PIPELINE),
            "--once",
            "--var", "run_date={{ ds }}",
            "--var", f"data_dir={DATA_DIR}",
        ],
    )
