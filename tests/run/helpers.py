"""Running a pipeline in-process (shared SparkSession) or as a subprocess, capturing output."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from job.run.runner import RunOptions, run

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "job" / "main.py"


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def error_line(self) -> str:
        lines = [l for l in self.err.splitlines() if l.startswith("error")]
        return lines[-1] if lines else ""


def run_inline(**options) -> Result:
    out, err = io.StringIO(), io.StringIO()
    code = run(RunOptions(**options), out=out, err=err)
    return Result(code, out.getvalue(), err.getvalue())


def job_env(**extra) -> dict:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONUNBUFFERED": "1", **extra}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYSPARK_GATEWAY_SECRET", None)
    return env


def run_cli(*args: str, timeout: float = 300, env=None) -> Result:
    """``python job/main.py ARGS`` in a fresh process (its own JVM)."""
    proc = subprocess.run([sys.executable, str(MAIN), *args], cwd=ROOT, env=env or job_env(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)
