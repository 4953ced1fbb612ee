"""Changing a pipeline's SQL and restarting on the same checkpoint (job/run/compat.py).

A stateless change (another projection or filter of an append query) keeps working and
loses nothing; a changed stateful query, or a query reading another source, is refused
before it runs with a message saying the checkpoint is incompatible and how to start
fresh — never silently wrong results.
"""
from __future__ import annotations

import json
import shutil

import pytest

from job.run.compat import FINGERPRINT_FILE
from tests.support.runs import run_inline

pytestmark = [pytest.mark.slow]


def write_json(directory, name, rows):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def source_ddl(path, name="src"):
    return (f"CREATE TABLE {name} (id INT, account STRING, amount INT) WITH ('connector' = 'filesystem', "
            f"'path' = '{path}', 'format' = 'json')")


def lake_rows(spark, path):
    return sorted(tuple(r) for r in spark.read.json(str(path)).select("id", "label").collect())


def test_a_stateless_change_keeps_the_checkpoint_and_loses_nothing(spark, tmp_path):
    src, out, ck = tmp_path / "in", tmp_path / "out", tmp_path / "ck"
    write_json(src, "1.json", [{"id": 1, "account": "a", "amount": 5}, {"id": 2, "account": "b", "amount": 7}])
    sink = f"CREATE TABLE lake (id INT, label STRING) WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json')"
    first = [source_ddl(src), sink, "INSERT INTO lake SELECT id, account AS label FROM src"]
    r = run_inline(statements=first, once=True, checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    assert lake_rows(spark, out) == [(1, "a"), (2, "b")]

    # New projection and a filter: no state, so the checkpoint stays valid.
    write_json(src, "2.json", [{"id": 3, "account": "c", "amount": 1}, {"id": 4, "account": "d", "amount": 9}])
    second = [source_ddl(src), sink, "INSERT INTO lake SELECT id, UPPER(account) AS label FROM src WHERE amount > 2"]
    r = run_inline(statements=second, once=True, checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    assert lake_rows(spark, out) == [(1, "a"), (2, "b"), (4, "D")]    # old rows once, new rows by the new SQL
    fingerprint = json.loads(next(ck.glob(f"*/{FINGERPRINT_FILE}")).read_text())
    assert fingerprint["stateful"] is False


def count_pipeline(src, sql):
    return [source_ddl(src),
            "CREATE TABLE counts (account STRING, n BIGINT, PRIMARY KEY (account) NOT ENFORCED) WITH ("
            "'connector' = 'print', 'print-identifier' = 'counts')",
            sql]


def test_a_changed_stateful_query_is_refused_with_how_to_start_fresh(spark, tmp_path, capsys):
    src, ck = tmp_path / "in", tmp_path / "ck"
    write_json(src, "1.json", [{"id": 1, "account": "a", "amount": 5}, {"id": 2, "account": "a", "amount": 7}])
    original = "INSERT INTO counts SELECT account, COUNT(*) AS n FROM src GROUP BY account"
    r = run_inline(statements=count_pipeline(src, original), once=True, checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    assert "+I[a, 2]" in capsys.readouterr().out

    write_json(src, "2.json", [{"id": 3, "account": "a", "amount": 1}])
    changed = "INSERT INTO counts SELECT account, COUNT(*) AS n FROM src WHERE amount > 2 GROUP BY account"
    for dry_run in (True, False):
        r = run_inline(statements=count_pipeline(src, changed), once=True, checkpoint_dir=str(ck), dry_run=dry_run)
        assert r.code == 2, r.err
        line = r.error_line
        assert "incompatible" in line and "the query's SQL" in line, line
        assert f"delete {ck}" in line and "--checkpoint-dir" in line, line
        assert "counts>" not in capsys.readouterr().out     # nothing ran

    # The same query as before (reformatted) still runs on its checkpoint and continues.
    r = run_inline(statements=count_pipeline(src, original.replace(" ", "  ").lower().replace("insert into", "INSERT INTO")),
                   once=True, checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    printed = capsys.readouterr().out
    assert "-U[a, 2]" in printed and "+U[a, 3]" in printed

    # Starting fresh, as the hint says: the new query over everything.
    shutil.rmtree(next(p for p in ck.iterdir() if p.is_dir()))
    r = run_inline(statements=count_pipeline(src, changed), once=True, checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    assert "+I[a, 2]" in capsys.readouterr().out


def test_reading_another_source_on_the_same_checkpoint_is_refused(spark, tmp_path):
    ck = tmp_path / "ck"
    write_json(tmp_path / "in1", "1.json", [{"id": 1, "account": "a", "amount": 5}])
    write_json(tmp_path / "in2", "1.json", [{"id": 2, "account": "b", "amount": 5}])
    sink = "CREATE TABLE out1 (id INT) WITH ('connector' = 'blackhole')"
    r = run_inline(statements=[source_ddl(tmp_path / "in1"), sink, "INSERT INTO out1 SELECT id FROM src"], once=True,
                   checkpoint_dir=str(ck))
    assert r.code == 0, r.err
    r = run_inline(statements=[source_ddl(tmp_path / "in2"), sink, "INSERT INTO out1 SELECT id FROM src"], once=True,
                   checkpoint_dir=str(ck))
    assert r.code == 2 and "the sources changed" in r.error_line and "in2" in r.error_line, r.err
