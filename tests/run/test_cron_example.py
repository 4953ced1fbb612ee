"""examples/cron/crontab: a valid line that runs --once under `flock -n`."""
from __future__ import annotations

import re
import shlex
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def crontab_lines() -> list[str]:
    text = (ROOT / "examples" / "cron" / "crontab").read_text()
    return [l for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#")]


def test_the_line_is_a_valid_crontab_entry():
    [line] = crontab_lines()
    fields = line.split(None, 5)
    assert len(fields) == 6 and all(re.fullmatch(r"[\d*/,-]+", f) for f in fields[:5])
    command = fields[5]
    assert re.search(r"(?<!\\)%", command) is None, "unescaped % ends a crontab command"
    assert "flock -n" in command and "--once" in command and "./spark-submit.sh" in command


def test_flock_as_written_skips_a_run_while_the_previous_one_holds_the_lock(tmp_path):
    [line] = crontab_lines()
    words = shlex.split(line.split(None, 5)[5].split("&&", 1)[1])
    flock = words[: words.index("./spark-submit.sh")]
    assert flock[:2] == ["flock", "-n"]
    lock = str(tmp_path / "pipeline.lock")
    flock[-1] = lock
    first = subprocess.Popen([*flock, "sleep", "3"])
    time.sleep(0.5)
    started = time.monotonic()
    second = subprocess.run([*flock, "echo", "second run"], capture_output=True, text=True, timeout=10)
    assert second.returncode == 0 and second.stdout == "" and time.monotonic() - started < 2
    assert first.wait(10) == 0
    third = subprocess.run([*flock, "echo", "third run"], capture_output=True, text=True, timeout=10)
    assert third.stdout == "third run\n"
