"""examples/airflow/ with a real Apache Airflow (scripts/test-airflow.sh): heavy — Airflow is
installed into its own virtualenv on first use — so it runs only with STREAMSQL_AIRFLOW_TEST=1.
About 2 minutes with the virtualenv cached, plus about a minute to create it."""
from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.runs import ROOT, job_env

pytestmark = [
    pytest.mark.airflow,
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("STREAMSQL_AIRFLOW_TEST") != "1",
                       reason="set STREAMSQL_AIRFLOW_TEST=1 to run the Airflow DAG test"),
]


def test_airflow_dags_run_their_pipelines_and_retry_only_what_can_succeed():
    proc = subprocess.run([str(ROOT / "scripts" / "test-airflow.sh")], cwd=ROOT, env=job_env(), text=True,
                          capture_output=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "purchases for 2024-01-31: 3 rows as expected" in proc.stdout
    # Parsing the DAG files writes no zip; exit 2 fails the task at once, exit 3 is retried.
    assert "parsing the DAG files wrote nothing" in proc.stderr
    assert "exit 2: failed without retries; exit 3: left to the retries" in proc.stderr
    # The Kafka DAG, run twice on one topic: each event read once.
    assert "kafka purchases over two runs: 3 rows as expected" in proc.stdout
