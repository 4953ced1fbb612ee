"""The differential harness: the same SQL and input on Flink 2.3 and on the job.

A case file (tests/flink/cases/*.yaml) declares tables — columns, format, rows (inline,
or generated from a seed) — and cases, each a query over them:

    tables:
      orders:
        columns: "id INT, cat STRING, amount DECIMAL(10, 2), ts TIMESTAMP(3)"
        extra: "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND"     # optional DDL lines
        format: json                                               # json | debezium-json | csv
        rows: [{id: 1, cat: a, amount: 1.5, ts: "2024-01-01 10:00:00"}, …]   # or JSON lines as strings
        generate: {random: users, seed: 3, events: 200}             # or generated rows
    cases:
      - name: upper_of_category
        query: SELECT UPPER(cat) FROM orders
        time_zone: Asia/Shanghai                                   # optional table.local-time-zone
        ordered: true                                              # the rows' order is the answer (a sorted stream)
        known_difference: "why"                                    # an open gap: xfail until fixed
        statements: ["SET 'k' = 'v'", "CREATE VIEW …"]             # optional, before the query
                     # (${UDF_JAR}: the jar of tests/flink/udf/'s functions; ${PATH:t}:
                     # table t's data directory, for a case's own CREATE TABLE over it)

Both engines read the same files through the same CREATE TABLE (connector
'filesystem'). Flink runs every case in one JVM (tests/flink/oracle.py), in the
background from the end of pytest's collection on; the job runs each with
:func:`job.api.collect`. The final rows of the changelogs are compared.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from tests.flink import canonical
from tests.support.user_functions import with_udf_jar

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = Path(__file__).resolve().parent / "cases"
ORACLE = Path(__file__).resolve().parent / "oracle.py"


@dataclass
class Case:
    name: str
    group: str
    query: str
    statements: list = field(default_factory=list)       # DDL (with paths) + the case's own statements
    time_zone: str = "UTC"
    note: str = ""
    fingerprint: str = ""     # what Flink's answer depends on (see flink_results' cache)
    known_difference: str = ""  # a difference not fixed yet: the case fails once it is gone
    ordered: bool = False     # an append-only result compared in the order it is emitted

    @property
    def id(self) -> str:
        return f"{self.group}::{self.name}"


def flink_python() -> Optional[str]:
    venv = ROOT / ".services" / "flink-venv" / "bin" / "python"
    return str(venv) if venv.exists() else None


# --------------------------------------------------------------------------- data

def _debezium(op: str, before, after) -> str:
    return json.dumps({"before": before, "after": after, "op": op})


def _generated(spec: dict) -> list:
    """Seeded random rows: a changelog of users (create / update / delete) by default."""
    rng = random.Random(spec.get("seed", 0))
    kind = spec.get("random", "users")
    n = spec.get("events", 100)
    if kind == "users":
        state: dict = {}
        events = []
        for _ in range(n):
            uid = f"u{rng.randint(0, spec.get('keys', 20))}"
            after = {"uid": uid, "accountId": f"a{rng.randint(0, 4)}", "score": rng.choice([None, *range(0, 12)])}
            if uid in state and rng.random() < 0.25:
                events.append(["d", state.pop(uid), None])
            elif uid in state:
                events.append(["u", state[uid], after])
                state[uid] = after
            else:
                events.append(["c", None, after])
                state[uid] = after
        return events
    if kind == "orders":
        rows = []
        for i in range(n):
            minute = rng.randint(0, 59)
            second = rng.randint(0, 59)
            rows.append({"id": i, "uid": f"u{rng.randint(0, 9)}", "cat": rng.choice(["a", "b", "c", None]),
                         "amount": rng.randint(1, 500) / 4, "qty": rng.randint(-3, 20),
                         "ts": f"2024-01-01 10:{minute:02d}:{second:02d}.{rng.randint(0, 999):03d}"})
        rows.sort(key=lambda r: r["ts"]) if spec.get("ordered") else None
        if spec.get("closing"):
            # One last row at a given time, so that several tables end at the same time:
            # the end of a bounded run advances event time from the largest time Spark
            # reports, which is one input's (see job.run.end_of_input.max_event_time).
            rows.append({"id": n, "uid": "closing", "cat": None, "amount": 0.0, "qty": 0, "ts": spec["closing"]})
        return rows
    if kind == "versions":
        # A versioned table's changelog in event-time order: each key's row is created,
        # updated and deleted; an update's or delete's before image is the key's previous
        # row (with its own, older, version time), as Debezium writes it.
        state = {}
        events = []
        for i in range(n):
            minute, second = divmod(i * 3600 // n, 60)
            rts = f"2024-01-01 {9 + (minute + 55) // 60:02d}:{(minute + 55) % 60:02d}:{second:02d}.{rng.randint(0, 999):03d}"
            key = f"u{rng.randint(0, spec.get('keys', 9))}"
            after = {"currency": key, "rate": rng.randint(1, 9), "rts": rts}
            if key in state and rng.random() < spec.get("deletes", 0.15):
                events.append(["d", state.pop(key), None])
            elif key in state:
                events.append(["u", state[key], after])
                state[key] = after
            else:
                events.append(["c", None, after])
                state[key] = after
        return events
    raise ValueError(f"unknown generator {kind!r}")


def write_table(directory: Path, spec: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    rows = spec.get("rows")
    if rows is None and "generate" in spec:
        rows = _generated(spec["generate"])
    fmt = spec.get("format", "json")
    lines = []
    for r in rows or []:
        if fmt == "debezium-json":
            lines.append(_debezium(*r))
        elif fmt == "csv":
            lines.append(",".join("" if v is None else str(v) for v in r))
        else:  # a row given as a string is the file's line as written (numbers beyond a float)
            lines.append(r if isinstance(r, str) else json.dumps(r))
    (directory / "part-0").write_text("".join(line + "\n" for line in lines))


def ddl(name: str, spec: dict, directory: Path) -> str:
    parts = [spec["columns"]]
    if spec.get("extra"):
        parts.append(spec["extra"])
    options = {"connector": "filesystem", "path": str(directory), "format": spec.get("format", "json")}
    options.update(spec.get("options", {}))
    with_ = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    return f"CREATE TABLE {name} ({', '.join(parts)}) WITH ({with_})"


def load_cases(data_root: Path, only: Optional[str] = None) -> list[Case]:
    cases = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        group = path.stem
        spec = yaml.safe_load(path.read_text())
        tables = spec.get("tables", {})
        statements = []
        for name, table in tables.items():
            directory = data_root / group / name
            write_table(directory, table)
            statements.append(ddl(name, table, directory))
        data = json.dumps(tables, sort_keys=True, default=str)
        for item in spec.get("cases", []):
            own = [_with_table_paths(with_udf_jar(s), data_root / group) for s in item.get("statements", [])]
            case = Case(item["name"], group, item["query"].strip(), statements + own,
                        item.get("time_zone", "UTC"), item.get("note", ""),
                        known_difference=item.get("known_difference", ""), ordered=bool(item.get("ordered")))
            case.fingerprint = _fingerprint(case, data, str(data_root))
            if only is None or only in case.id:
                cases.append(case)
    return cases


def _with_table_paths(statement: str, tables_dir: Path) -> str:
    """``statement`` with ``${PATH:name}`` replaced by the data directory of the case
    file's table ``name`` (a case's own CREATE TABLE over the same files)."""
    import re

    return re.sub(r"\$\{PATH:(\w+)\}", lambda m: str(tables_dir / m.group(1)), statement)


def flink_identity() -> str:
    """Which Flink answers: the PyFlink installed in Flink's virtualenv (its distribution's
    name carries the version), so an upgraded Flink is asked again."""
    venv = ROOT / ".services" / "flink-venv"
    return " ".join(sorted(p.name for p in venv.glob("lib/python*/site-packages/apache_flink*.dist-info")))


_FLINK = flink_identity()


def _fingerprint(case: Case, data: str, root: str) -> str:
    """A digest of everything Flink's answer to ``case`` depends on: its statements and
    query (data paths aside), the tables' rows, the oracle's own code and Flink's version."""
    import hashlib

    digest = hashlib.sha256()
    for part in (case.id, case.query, case.time_zone, str(case.ordered), data, *(s.replace(root, "<data>") for s in case.statements),
                 ORACLE.read_text(), (ORACLE.parent / "canonical.py").read_text(), _FLINK):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


# --------------------------------------------------------------------------- engines

# Beside Flink's virtualenv under .services/: a checkout that has run the suite before asks
# Flink only for the cases that are new or changed (CI's clean clone asks for all of them).
CACHE_DIR = ROOT / ".services" / "flink-oracle"

# How long one case may take before the oracle is taken to be stuck: the slowest, the
# first (Flink's planner warming up), takes about 15 s on a loaded 2-core machine; a case
# that never ends is a broken case, not a slow one.
STUCK_AFTER_S = 180


class FlinkRun:
    """Flink's result for each of ``cases``, computed in the background.

    Results are kept in .services/flink-oracle/ under the case's fingerprint, so an unchanged
    case does not start Flink again (STREAMSQL_FLINK_CACHE=0 turns that off). The others
    go to one oracle process (tests/flink/oracle.py) started here, which runs beside
    whatever the caller does next. It writes each case's result as soon as that case ends,
    and :meth:`result` waits for that one case only: the job runs a case while Flink runs the
    next ones, instead of after Flink has run them all."""

    def __init__(self, cases: list[Case], cache: bool = True):
        import tempfile

        self.cache = cache and os.environ.get("STREAMSQL_FLINK_CACHE", "1") != "0"
        self.cached: dict[str, dict] = {}
        self.todo: list[Case] = []
        for c in cases:
            path = CACHE_DIR / f"{c.fingerprint}.json"
            if self.cache and c.fingerprint and path.exists():
                self.cached[c.id] = json.loads(path.read_text())
            else:
                self.todo.append(c)
        self.fresh: dict[str, dict] = {}
        self._read_upto = 0
        self.proc = None
        if self.todo:
            spec = {"cases": [{"name": c.id, "statements": c.statements, "query": c.query,
                               "time_zone": c.time_zone, "ordered": c.ordered} for c in self.todo]}
            # Files, not pipes: a pipe nobody reads while the tests run would fill and stop it.
            self.out = tempfile.TemporaryFile("w+b")
            self.err = tempfile.TemporaryFile("w+")
            from tests.support.jvm import flink_env

            python = flink_python()
            self.proc = subprocess.Popen([python, str(ORACLE)], stdin=subprocess.PIPE, stdout=self.out,
                                         stderr=self.err, text=True, cwd=ROOT, env=flink_env(python))
            self.proc.stdin.write(json.dumps(spec))
            self.proc.stdin.close()

    def result(self, case_id: str) -> dict:
        """Flink's result for one case, waiting until the oracle has written it."""
        import time

        if case_id in self.cached:
            return self.cached[case_id]
        done, since = -1, time.monotonic()
        while True:
            ended = self.proc is None or self.proc.poll() is not None
            self._read_fresh()
            if case_id in self.fresh:
                return self.fresh[case_id]
            if ended:
                code = None if self.proc is None else self.proc.returncode
                raise RuntimeError(f"the Flink oracle ended ({code}) without a result for case {case_id}; "
                                   f"its last lines:\n{self._stderr()[-3000:] if self.proc else ''}")
            finished = self._stderr().count("\noracle: ")  # one line per case it ends
            if finished != done:
                done, since = finished, time.monotonic()
            elif time.monotonic() - since > STUCK_AFTER_S:
                self.stop()
                stuck = self.todo[min(done, len(self.todo) - 1)].id
                raise RuntimeError(f"the Flink oracle ran case {stuck} for {STUCK_AFTER_S} s without an end; "
                                   f"its last lines:\n{self._stderr()[-3000:]}")
            time.sleep(0.2)

    def _read_fresh(self) -> None:
        """The whole lines the oracle has written since the last read (a line it is still
        writing is left for the next)."""
        self.out.seek(self._read_upto)
        data = self.out.read()
        complete = data[:data.rfind(b"\n") + 1]
        self._read_upto += len(complete)
        for line in complete.decode().splitlines():
            r = json.loads(line)
            self.fresh[r["name"]] = r
            case = next(c for c in self.todo if c.id == r["name"])
            if self.cache and case.fingerprint:
                CACHE_DIR.mkdir(parents=True, exist_ok=True)
                (CACHE_DIR / f"{case.fingerprint}.json").write_text(json.dumps(r, default=str))

    def _stderr(self) -> str:
        self.err.seek(0)
        return "\n" + self.err.read()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Outcome:
    status: str          # same | different | refused | error | flink-rejects
    detail: str = ""


def run_ours(spark, case: Case, checkpoint: str) -> tuple[Optional[list], Optional[str], Optional[str]]:
    """(rows, refusal, crash) of the job on a case: the final rows, or for an ``ordered``
    case the rows in the order the job emitted them."""
    from job.api import collect
    from job.errors import PipelineError

    statements = list(case.statements)
    if case.time_zone != "UTC":
        statements.append(f"SET 'table.local-time-zone' = '{case.time_zone}'")
    try:
        result = collect(statements, case.query, spark=spark, checkpoint_dir=checkpoint)
    except PipelineError as exc:
        return None, exc.render(), None
    except Exception as exc:  # noqa: BLE001 - a crash is a finding, reported as such
        return None, None, f"{type(exc).__name__}: {str(exc)[:600]}"
    changes = [(kind, canonical.row(values)) for kind, values in result.changes]
    if case.ordered:
        return json.loads(json.dumps(canonical.sequence(changes), default=str)), None, None
    return json.loads(json.dumps(canonical.final_rows(changes), default=str)), None, None


def compare(flink: dict, ours: Optional[list], refusal: Optional[str], crash: Optional[str],
            ordered: bool = False) -> Outcome:
    if "error" in flink:
        return Outcome("flink-rejects", flink["error"])
    if crash is not None:
        return Outcome("error", crash)
    if refusal is not None:
        return Outcome("refused", refusal)
    if ordered:
        expected = json.loads(json.dumps(flink["sequence"], default=str))
        if ours == expected:
            return Outcome("same")
        return Outcome("different", f"in order, Flink's rows: {expected[:12]}; ours: {ours[:12]} "
                                    f"(Flink {len(expected)} rows, ours {len(ours)})")
    expected = json.loads(json.dumps(flink["rows"], default=str))
    if _sorted(ours) == _sorted(expected):
        return Outcome("same")
    missing = [r for r in expected if r not in ours]
    extra = [r for r in ours if r not in expected]
    return Outcome("different", f"Flink's rows missing from ours: {missing[:8]}; ours not in Flink's: {extra[:8]} "
                                f"(Flink {len(expected)} rows, ours {len(ours)})")


def _sorted(rows):
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def checkpoint_dir(base: Path, case: Case) -> str:
    return os.path.join(str(base), case.group, case.name)
