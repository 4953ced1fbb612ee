"""The README's quick start, run as a newcomer runs it: the command from README.md, in a
subprocess, from the repository root.

Two variables are added to the README's command so that the test neither reads nor
clobbers a developer's own run: ``workdir`` (output and checkpoints, default
/tmp/streamsql-quickstart) and ``data_dir`` (a copy of examples/quickstart/data whose
files all carry the same modification time: the file source reads files oldest first, and
ties are broken by name — the case of a fresh git checkout, which writes all files within
the same millisecond).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRINTED = re.compile(r"^user_count_by_account> ([+-][IUD])\[(.*)\]$")

pytestmark = pytest.mark.slow


def readme_command() -> list[str]:
    section = (ROOT / "README.md").read_text().split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    (command,) = [b.strip() for b in blocks if "spark-submit.sh" in b]
    return shlex.split(command)


def run(command: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def printed_changes(stdout: str) -> list[str]:
    return [f"{m.group(1)}[{m.group(2)}]" for m in map(PRINTED.match, stdout.splitlines()) if m]


def assert_clean(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr[-5000:]}"
    for stream in (done.stdout, done.stderr):
        assert "Traceback" not in stream
        assert not any(line.startswith("error") for line in stream.splitlines())


def test_quickstart(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(ROOT / "examples" / "quickstart" / "data", data)
    files = sorted((data / "users").glob("*.json"))
    assert [f.name for f in files] == ["01-created.json", "02-account-changed.json", "03-deleted.json"]
    for f in reversed(files):  # the same time for all, so only the names order them
        os.utime(f, (1_700_000_000, 1_700_000_000))
    workdir = tmp_path / "work"
    command = readme_command() + ["--var", f"workdir={workdir}", "--var", f"data_dir={data}"]

    done = run(command)
    assert_clean(done)

    # stdout holds the print sink's rows and nothing else (progress goes to stderr).
    assert [line for line in done.stdout.splitlines() if line.strip() and not PRINTED.match(line)] == []

    # 1. users per account, as a changelog: one micro-batch per file.
    assert printed_changes(done.stdout) == [
        "+I[100, 2]", "+I[101, 1]",                                  # three users created
        "-U[100, 2]", "+U[100, 1]", "-U[101, 1]", "+U[101, 2]",      # 100-2 moves to account 101
        "-D[100, 1]",                                                # 100-1 deleted: account 100 is empty
    ]

    # 2. 1000 generated orders, as JSON files partitioned by category.
    orders = workdir / "orders"
    assert (orders / "_spark_metadata").is_dir()
    rows = []
    for part in sorted(orders.glob("category=*/*.json")):
        category = part.parent.name.split("=", 1)[1]
        for line in part.read_text().splitlines():
            row = json.loads(line)
            assert set(row) == {"order_id", "amount", "order_time"}  # the category is the directory
            rows.append((category, row))
    assert {c for c, _ in rows} == {"books", "games", "music"}
    assert sorted(r["order_id"] for _, r in rows) == list(range(1, 1001))
    assert all(1 <= r["amount"] <= 500 for _, r in rows)
    # microseconds, Spark's precision (a TIMESTAMP(3) column is not truncated)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}", r["order_time"]) for _, r in rows)
    assert (workdir / "checkpoints").is_dir()

    # The README: run the command again and the checkpoints remember what was read: each
    # query says it is up to date, and which checkpoint says so; the sink prints nothing.
    again = run(command)
    assert_clean(again)
    assert printed_changes(again.stdout) == []
    summaries = sorted(line for line in again.stderr.splitlines() if re.match(r"^\[quickstart-\d-\w+\] ok: ", line))
    assert summaries == [
        f"[quickstart-1-user_count_by_account] ok: up to date, nothing new to read "
        f"(checkpoint {workdir / 'checkpoints' / 'quickstart-1-user_count_by_account'})",
        f"[quickstart-2-orders_archive] ok: up to date, nothing new to read "
        f"(checkpoint {workdir / 'checkpoints' / 'quickstart-2-orders_archive'})"], again.stderr[-3000:]
    assert sum(len(p.read_text().splitlines()) for p in orders.glob("category=*/*.json")) == 1000
