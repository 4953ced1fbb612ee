"""The Airflow operator both example DAGs use: SparkSubmitOperator, running job/main.py as
./spark-submit.sh would, with two differences that matter under a scheduler.

* It retries only what retrying can fix. The job's exit code 2 (invalid pipeline) and 4
  (a bad record under 'on-error' = 'fail') come back on every attempt, so the task fails
  at once, without its retries; 3 (a source or sink unreachable), 1 and a killed JVM are
  retried.
* ``job/`` is zipped for the executors (``--py-files``) when the task runs, not each time
  the scheduler parses the DAG file: a parse writes nothing.

This file holds no DAG; Airflow puts the DAGs' folder on ``sys.path``, so they import it.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import zipfile
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

try:  # Airflow 3
    from airflow.sdk.exceptions import AirflowFailException
except ImportError:  # Airflow 2
    from airflow.exceptions import AirflowFailException

HOME = Path(os.environ.get("STREAMSQL_HOME", Path(__file__).resolve().parents[2]))

# The job's exit codes that another attempt cannot change (docs/operations.md#exit-codes).
NOT_RETRIED = {2: "invalid pipeline", 4: "bad record"}


def job_zip() -> str:
    """``job/`` as a zip named by its content (what spark-submit.sh ships as --py-files),
    written only when the code changed; in a real deployment build it at release time."""
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


def exit_code_of(exc: BaseException):
    """spark-submit's exit code, which SparkSubmitHook puts in its exception's message."""
    match = re.search(r"Error code is: (\d+)", str(exc))
    return int(match.group(1)) if match else None


class StreamsqlSubmitOperator(SparkSubmitOperator):
    """Submit ``job/main.py`` with the repository's jars, conf and log settings; the task's
    arguments (``application_args``) are the job's."""

    def __init__(self, *, pipeline_name: str, **kwargs) -> None:
        log4j = f"-Dlog4j2.configurationFile=file:{HOME / 'conf' / 'log4j2.properties'}"
        kwargs.setdefault("conn_id", "spark_default")
        kwargs.setdefault("name", f"streamsql-{pipeline_name}")
        kwargs.setdefault("executor_memory", "512m")
        kwargs.setdefault("driver_memory", "1g")
        super().__init__(
            application=str(HOME / "job" / "main.py"),
            jars=",".join(sorted(str(p) for p in (HOME / "jars" / "spark").glob("*.jar"))) or None,
            properties_file=str(HOME / "conf" / "spark-defaults.conf"),
            conf={"spark.driver.defaultJavaOptions": log4j},
            # spark-submit from the repository's virtualenv (pyspark and the job's packages);
            # the driver and local executors run its Python too.
            env_vars={
                "PATH": f"{HOME / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
                "PYSPARK_PYTHON": str(HOME / ".venv" / "bin" / "python"),
                "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
            },
            **kwargs,
        )

    def execute(self, context):
        self.py_files = job_zip()
        try:
            return super().execute(context)
        except Exception as exc:
            code = exit_code_of(exc)
            if code in NOT_RETRIED:
                raise AirflowFailException(f"streamsql exited {code} ({NOT_RETRIED[code]}): retrying cannot fix "
                                           "it; see the job's error line above") from exc
            raise
