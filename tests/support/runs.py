"""Running a pipeline in-process (shared SparkSession) or as a subprocess, capturing output."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from job.api import RunOptions, run

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


def start_cli(*args: str, env=None):
    """``python job/main.py ARGS`` started in a process group of its own, as systemd,
    Airflow or ``kill -TERM -PGID`` see a job. Returns the process, the list its stderr
    lines are collected into as they come, and the thread collecting them (join it once
    the process has ended to have them all)."""
    import threading

    proc = subprocess.Popen([sys.executable, str(MAIN), *args], cwd=ROOT, env=env or job_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    return proc, lines, reader


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_job_tree(proc: "subprocess.Popen", timeout: float = 60) -> None:
    """``kill -9`` for a job: SIGKILL it and every process it started at the same instant —
    the driver JVM runs in a session of its own (job.run.session), so a process-group kill
    would leave it to exit on its own — then wait until all of them are gone, so that a
    restart never meets the dead run's JVM (its checkpoint writes, its Derby lock)."""
    import signal
    import time

    pids = [proc.pid, *descendants(proc.pid)]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout)
    deadline = time.monotonic() + timeout
    while any(_alive(pid) for pid in pids[1:]):
        if time.monotonic() > deadline:
            raise AssertionError(f"the job's processes {pids} did not die within {timeout:.0f} s")
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
