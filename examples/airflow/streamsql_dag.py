"""Airflow: run a streamsql YAML pipeline once per schedule interval.

SparkSubmitOperator (apache-airflow-providers-apache-spark) submits the job —
``job/main.py`` plus ``job/`` zipped as ``--py-files`` — with the run's logical date as
``--var run_date={{ ds }}``. ``--once`` makes the job read what is there, write, commit its
checkpoint and exit; the task fails with the job's exit code (2 invalid pipeline, 3 a
source or sink unreachable, 4 a bad record; see docs/operations.md).

Settings (environment of the Airflow worker):

* ``STREAMSQL_HOME``: the repository checkout (default: two levels above this file).
* ``STREAMSQL_DATA_DIR``: passed to the pipeline as ``data_dir``.
* the ``spark_default`` connection: the master, e.g. ``spark://host:7077`` or ``local[2]``
  (``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'``).
* ``spark-submit``: the repository's ``.venv/bin`` is put first on the task's ``PATH``.
"""
from __future__ import annotations

import hashlib
import io
import os
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

try:  # Airflow 3
    from airflow.sdk import DAG
except ImportError:  # Airflow 2
    from airflow import DAG
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

HOME = Path(os.environ.get("STREAMSQL_HOME", Path(__file__).resolve().parents[2]))
DATA_DIR = os.environ.get("STREAMSQL_DATA_DIR", "/tmp/streamsql-airflow")
PIPELINE = HOME / "examples" / "airflow" / "daily_purchases.yaml"


def job_zip() -> str:
    """``job/`` as a zip named by its content (what spark-submit.sh ships as --py-files).
    Rebuilt only when the code changed; in a real deployment build it at release time."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted((HOME / "job").rglob("*.py")):
            if "__pycache__" not in path.parts:
                info = zipfile.ZipInfo(str(path.relative_to(HOME)), date_time=(1980, 1, 1, 0, 0, 0))
                z.writestr(info, path.read_bytes())
    data = buf.getvalue()
    target = HOME / "build" / "pyfiles" / f"job-{hashlib.sha256(data).hexdigest()[:16]}.zip"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    return str(target)


JARS = ",".join(sorted(str(p) for p in (HOME / "jars" / "spark").glob("*.jar")))  # the Kafka connector

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
    SparkSubmitOperator(
        task_id="daily_purchases",
        conn_id="spark_default",
        application=str(HOME / "job" / "main.py"),
        py_files=job_zip(),
        jars=JARS or None,
        properties_file=str(HOME / "conf" / "spark-defaults.conf"),
        conf={"spark.driver.defaultJavaOptions": f"-Dlog4j2.configurationFile=file:{HOME / 'conf' / 'log4j2.properties'}"},
        name="streamsql-daily_purchases",
        application_args=[
            "--pipeline", str(PIPELINE),
            "--once",
            "--var", "run_date={{ ds }}",
            "--var", f"data_dir={DATA_DIR}",
        ],
        executor_memory="512m",
        driver_memory="1g",
        # spark-submit from the repository's virtualenv (pyspark 4.3 and the job's packages);
        # the driver and local executors run its Python too.
        env_vars={
            "PATH": f"{HOME / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYSPARK_PYTHON": str(HOME / ".venv" / "bin" / "python"),
            "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        },
    )
