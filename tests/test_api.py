"""The library: compile a pipeline without Spark, then run what was compiled."""
from __future__ import annotations

import io

import pytest

from job.api import RunOptions, compile, run
from job.errors import EXIT_INVALID, EXIT_OK, PipelineError

STATEMENTS = [
    "CREATE TABLE src (id BIGINT, n INT) WITH ('connector' = 'datagen', 'number-of-rows' = '5')",
    "CREATE TABLE out1 (id BIGINT, n INT) WITH ('connector' = 'blackhole')",
    "INSERT INTO out1 SELECT id, n FROM src WHERE n > 0",
]


def test_compile_reads_and_checks_a_pipeline_without_spark():
    program = compile(RunOptions(statements=STATEMENTS))
    assert sorted(program.catalog.tables) == ["out1", "src"]
    assert [i.table for i in program.inserts] == ["out1"]
    assert program.reads == {0: {"src"}}
    # Each SELECT is parsed once, when its statement is read: the INSERT carries it.
    assert program.inserts[0].parsed.tables


def test_compile_raises_what_the_command_line_reports():
    with pytest.raises(PipelineError) as caught:
        compile(RunOptions(statements=["CREATE TABLE t (a STRING) WITH ('connector' = 'print')"]))
    assert caught.value.exit_code == EXIT_INVALID
    assert "no INSERT INTO" in caught.value.message


def test_run_takes_a_compiled_program(spark, tmp_path):
    options = RunOptions(statements=STATEMENTS, dry_run=True, checkpoint_dir=str(tmp_path / "ck"))
    out, err = io.StringIO(), io.StringIO()
    assert run(options, out, err, program=compile(options)) == EXIT_OK, err.getvalue()
    assert "query " in out.getvalue() and "INSERT INTO out1" in out.getvalue()
