"""Both engines as whole processes, measured the same way.

* :func:`run_measured` starts a command in a session of its own and measures the whole
  process tree: wall seconds, CPU seconds (user + sys of every process of the tree,
  including the JVMs and Python workers an engine starts: the harness is their child
  subreaper, so orphans are reaped here and counted), peak resident memory of the tree
  (sampled every 0.2 s) and the machine's load average before and after.
* :func:`job_command` / :func:`flink_command` are the two engines' command lines: the job
  by ./spark-submit.sh (``--once`` for bounded input), Flink by benchmarks/flink_runner.py in
  Flink's own virtualenv (scripts/flink.sh install) at parallelism 2, streaming mode.
* :func:`render` renders a pipeline template (Jinja2, as the job does) once, so that both
  engines read the same SQL text; :func:`split_statements` cuts it into statements.

Pure helpers (rendering, splitting, upsert-topic compaction, percentiles, final-row
comparison) are tested in tests/test_benchmark_engines.py; nothing here is timed by a test.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterable, Optional

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FLINK_PYTHON = ROOT / ".services" / "flink-venv" / "bin" / "python"
FLINK_JARS = ROOT / ".services" / "flink-jars"
JOB_PYTHON = ROOT / ".venv" / "bin" / "python"
PR_SET_CHILD_SUBREAPER = 36


# --- templates and statements ---------------------------------------------------------------

def render(text: str, variables: dict) -> str:
    """A pipeline template with its variables, as the job renders it (Jinja2, undefined = error)."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(text).render(**variables)


def split_statements(text: str) -> list[str]:
    """SQL text → statements, cut at ';' outside quotes, `names` and comments; comments and
    blank statements dropped. Enough for the benchmark pipelines and Nexmark's files."""
    out, buf, i, n = [], [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if ch == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            buf.append(" ")
            continue
        if ch in "'`\"":
            j = i + 1
            while j < n:
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:  # doubled quote inside a literal
                        j += 2
                        continue
                    break
                j += 1
            buf.append(text[i:j + 1])
            i = j + 1
            continue
        if ch == ";":
            stmt = "".join(buf).strip()
            if stmt:
                out.append(stmt)
            buf = []
        else:
            buf.append(ch)
        i += 1
    stmt = "".join(buf).strip()
    if stmt:
        out.append(stmt)
    return out


_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+(`[^`]+`|[\w.]+)\s*(\([^)]*\))?\s*", re.I)


def insert_parts(statement: str) -> Optional[tuple[str, str]]:
    """'INSERT INTO t SELECT …' → ('t', 'SELECT …'); None for any other statement."""
    m = _INSERT.match(statement)
    if not m:
        return None
    return m.group(1).strip("`"), statement[m.end():].strip()


# --- the process tree -----------------------------------------------------------------------

def become_subreaper() -> None:
    """Orphaned descendants (a JVM whose launcher exited, Spark's Python daemon) reparent to
    this process, so they are reaped here and their CPU time is counted in RUSAGE_CHILDREN."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _proc_table() -> dict[int, tuple[int, list[str]]]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                table[int(entry)] = (int(fields[1]), fields)
            except (OSError, IndexError, ValueError):
                pass
    return table


def tree_pids(root: int, table=None) -> list[int]:
    table = table if table is not None else _proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        if p in table:
            out.append(p)
        todo += children.get(p, [])
    return out


def tree_rss_bytes(root: int) -> int:
    total = 0
    for p in tree_pids(root):
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total


def tree_cpu_seconds(root: int) -> float:
    """user + sys of the live tree, with what its members already reaped (cutime, cstime)."""
    table = _proc_table()
    ticks = 0
    for p in tree_pids(root, table):
        ticks += sum(int(x) for x in table[p][1][11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


class Measured:
    """A started engine process and what is being sampled of it."""

    def __init__(self, cmd: list[str], log: Path, env: Optional[dict] = None, cwd: Optional[Path] = None):
        become_subreaper()
        self.cmd, self.log_path = cmd, log
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(log, "ab")
        self.usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.load_before = load_avg()
        self.started = time.time()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=str(cwd or ROOT), start_new_session=True)
        self.peak_rss = 0
        self._done = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self):
        while not self._done.is_set():
            try:
                self.peak_rss = max(self.peak_rss, tree_rss_bytes(self.proc.pid))
            except Exception:  # noqa: BLE001 - a process vanished while sampled
                pass
            self._done.wait(0.2)

    def cpu_now(self) -> float:
        return tree_cpu_seconds(self.proc.pid)

    def stop(self, sig=signal.SIGTERM, grace: float = 30.0) -> None:
        """Ask the engine to stop (its process group), then kill what is left after ``grace``."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)

    def wait(self, timeout: Optional[float] = None) -> dict:
        """Wait for the engine's main process; kill what it left behind; the run's figures."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            code = self.proc.wait()
            code = f"timeout after {timeout}s"
        wall = time.time() - self.started
        self._done.set()
        self._sampler.join()
        load_after = load_avg()
        try:  # whatever is left of the session: daemons, a JVM that outlived its launcher
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._reap()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.log.close()
        return {
            "exit": code, "wall_s": round(wall, 2),
            "cpu_s": round((usage.ru_utime - self.usage0.ru_utime) + (usage.ru_stime - self.usage0.ru_stime), 2),
            "cpu_user_s": round(usage.ru_utime - self.usage0.ru_utime, 2),
            "cpu_sys_s": round(usage.ru_stime - self.usage0.ru_stime, 2),
            "peak_rss_mb": round(self.peak_rss / 1e6), "load_before": self.load_before, "load_after": load_after,
        }

    @staticmethod
    def _reap() -> None:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                time.sleep(0.05)


def run_measured(cmd: list[str], log: Path, env: Optional[dict] = None, timeout: Optional[float] = None,
                 cwd: Optional[Path] = None) -> dict:
    return Measured(cmd, log, env, cwd).wait(timeout)


def engine_cwd(engine: str) -> Path:
    """Where an engine's process starts: the job from its own root (Spark's Python workers put
    their working directory first on sys.path, so it must hold the job that is measured)."""
    return job_root() if engine == "job" else ROOT


# --- the two engines ------------------------------------------------------------------------

def engine_env() -> dict:
    env = dict(os.environ)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def job_root(rev: Optional[str] = None) -> Path:
    """Where the job runs from: this checkout, or (``rev``) a snapshot of a commit, so a
    benchmark measures one known version while the working tree is being edited. The
    snapshot (git archive) shares this checkout's .venv, fetched jars and JVM archive."""
    rev = rev or os.environ.get("STREAMSQL_JOB_REV")
    if not rev:
        return ROOT
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"], capture_output=True,
                         text=True, check=True).stdout.strip()
    dest = Path(os.environ.get("STREAMSQL_BENCH_WORK", "/tmp/streamsql-bench")) / "job-snapshots" / sha[:12]
    if not (dest / "spark-submit.sh").exists():
        tmp = dest.with_name(dest.name + ".tmp")
        subprocess.run(["rm", "-rf", str(tmp)], check=True)
        tmp.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        (tmp / ".venv").symlink_to(ROOT / ".venv")
        # The driver's class-data-sharing archive (job/run/driver_jvm.py) belongs to the JDK and
        # PySpark, which the snapshot shares: without it the snapshot's JVM starts seconds slower.
        (tmp / "build").mkdir(exist_ok=True)
        (tmp / "build" / "jvm").symlink_to(ROOT / "build" / "jvm")
        for sub in (ROOT / "jars").iterdir():  # real directories of links: find(1) lists them
            if sub.is_dir() and sub.name != "engine":  # the snapshot's engine is its own (below)
                (tmp / "jars" / sub.name).mkdir(parents=True, exist_ok=True)
                for jar in sub.iterdir():
                    if not (tmp / "jars" / sub.name / jar.name).exists():
                        (tmp / "jars" / sub.name / jar.name).symlink_to(jar.resolve())
        # Built now rather than by the first measured run's spark-submit.sh.
        subprocess.run([str(tmp / "scripts" / "build_engine.sh")], check=True)
        # Bytecode, as scripts/setup.sh writes for a checkout.
        subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "compileall", "-q", str(tmp / "job")], check=True)
        tmp.rename(dest)
    return dest


def job_command(sql_file: Path, checkpoint: Path, once: bool = True, conf: Iterable[str] = (),
                root: Optional[Path] = None) -> list[str]:
    """The job as users run it: ./spark-submit.sh (local[*] on this machine: 2 cores)."""
    cmd = [str((root or job_root()) / "spark-submit.sh")]
    for c in conf:
        cmd += ["--conf", c]
    cmd += ["--", "--file", str(sql_file), "--checkpoint-dir", str(checkpoint)]
    return cmd + (["--once"] if once else [])


def flink_command(sql_file: Path, parallelism: int = 2, collect: Optional[Path] = None,
                  conf: Iterable[str] = ()) -> list[str]:
    """Flink 2.3 (PyFlink's local mini-cluster) running the same rendered SQL file."""
    if not FLINK_PYTHON.exists():
        raise SystemExit("Flink is not installed: scripts/flink.sh install")
    cmd = [str(FLINK_PYTHON), str(ROOT / "benchmarks" / "flink_runner.py"), "--sql", str(sql_file),
           "--parallelism", str(parallelism)]
    for jar in sorted(FLINK_JARS.glob("*.jar")):
        cmd += ["--jar", str(jar)]
    for c in conf:
        cmd += ["--conf", c]
    if collect:
        cmd += ["--collect", str(collect)]
    return cmd


def first_error(log: Path) -> str:
    """An engine's own message ("error: …" / "flink error: …" and what follows) or the log's end."""
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("error:") or line.startswith("flink error:"):
            return "\n".join(lines[i:i + 6])[:1500]
    return "\n".join(lines[-8:])[:1500]


def collect_rows(engine: str, sql_file: Path, out: Path, timeout: Optional[float] = None,
                 upsert_key: Optional[str] = None) -> dict:
    """The final rows of the file's one INSERT's query on an engine (Flink: collect(); the job:
    job.api.collect), as {"rows": [...], "changes": n} or {"error"/"refused"/"failed": "…"}."""
    log = out.with_suffix(".log")
    if engine == "flink":
        cmd = flink_command(sql_file, collect=out) + (["--upsert-key", upsert_key] if upsert_key else [])
    else:
        cmd = [str(JOB_PYTHON), str(ROOT / "benchmarks" / "job_collect.py"), "--sql", str(sql_file), "--out", str(out)]
    env = engine_env()
    if engine == "job":
        env["STREAMSQL_JOB_ROOT"] = env["PYTHONPATH"] = str(job_root())
    figures = run_measured(cmd, log, env, timeout, cwd=engine_cwd(engine))
    result = json.loads(out.read_text()) if out.exists() else {"failed": first_error(log)}
    result["collect_wall_s"] = figures["wall_s"]
    return result


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# --- results --------------------------------------------------------------------------------

def append_jsonl(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(record, default=str) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def now_utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def git_commit() -> str:
    """The job's version a record was measured with: the snapshot's commit (--job-rev), or
    HEAD, marked '+dirty' when the working tree's job/, conf/ or scripts/ differ from it."""
    try:
        snapshot = os.environ.get("STREAMSQL_JOB_REV")
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", snapshot or "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        if snapshot:  # a snapshot of a commit is that commit, whatever the working tree holds
            return sha
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "job", "conf", "scripts",
                                "spark-submit.sh"], capture_output=True, text=True, timeout=30).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return ""


def percentile(values, q: float):
    values = sorted(values)
    if not values:
        return None
    k = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return values[k]


# --- comparing results ----------------------------------------------------------------------

def upsert_table(records: Iterable[tuple[Optional[str], Optional[str]]]) -> dict[str, dict]:
    """The table an upsert topic stands for: the last value per key; a tombstone deletes."""
    state: dict[str, dict] = {}
    for key, value in records:
        if value is None:
            state.pop(key, None)
        else:
            state[key] = json.loads(value)
    return state


def rows_digest(rows: list) -> str:
    return hashlib.sha256("\n".join(sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)).encode()).hexdigest()[:16]


def compare_rows(a: list, b: list, show: int = 3) -> dict:
    """Two multisets of rows (already in one canonical form): equal, or how they differ."""
    from collections import Counter

    ca = Counter(json.dumps(r, sort_keys=True, default=str) for r in a)
    cb = Counter(json.dumps(r, sort_keys=True, default=str) for r in b)
    only_a, only_b = ca - cb, cb - ca
    return {"same": not only_a and not only_b, "rows": [len(a), len(b)],
            "only_first": sum(only_a.values()), "only_second": sum(only_b.values()),
            "examples_first": list(only_a)[:show], "examples_second": list(only_b)[:show]}


def log_dir(kind: str) -> Path:
    return Path(os.environ.get("STREAMSQL_BENCH_WORK", "/tmp/streamsql-bench")) / "logs" / kind


if __name__ == "__main__":  # a quick look at one command's figures: python benchmarks/engines.py CMD...
    print(json.dumps(run_measured(sys.argv[1:], Path("/tmp/streamsql-bench/measure.log"))))
