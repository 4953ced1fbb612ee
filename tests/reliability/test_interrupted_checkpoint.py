"""A job killed while Spark writes its first offset-log entry can start again.

Spark writes each log entry to '.N.<uuid>.tmp' and renames it into place; a SIGKILL in
between leaves the temp file, and Spark's check that a new query starts on an empty
``offsets/`` then failed on every restart (found by the crash loop). The runner removes
such leftovers before starting (job/run/compat.py).
"""
from __future__ import annotations

import json
import uuid

import pytest

from tests.support.runs import run_inline

pytestmark = [pytest.mark.slow]


def test_a_temp_file_of_an_interrupted_first_offset_write_is_cleared(spark, tmp_path):
    src, out, ck = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    src.mkdir()
    (src / "1.json").write_text(json.dumps({"id": 1}) + "\n" + json.dumps({"id": 2}) + "\n")
    statements = [f"CREATE TABLE src (id INT) WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'json')",
                  f"CREATE TABLE dst (id INT) WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json')",
                  "INSERT INTO dst SELECT id FROM src"]
    # What a SIGKILL during the first offset write leaves behind.
    offsets = ck / "sql-pipeline-1-dst" / "offsets"
    offsets.mkdir(parents=True)
    name = f".0.{uuid.uuid4()}.tmp"
    (offsets / name).write_text("v1\n")
    (offsets / f".{name}.crc").write_bytes(b"")

    r = run_inline(statements=statements, once=True, checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    assert sorted(row.id for row in spark.read.json(str(out)).collect()) == [1, 2]
    assert not list(offsets.glob("*.tmp*")) and (offsets / "0").is_file()
