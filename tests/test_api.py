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


def test_collect_plans_like_a_pipeline_and_closes_every_window_at_the_end(spark, tmp_path):
    """collect() plans through the pipeline's path (plan_query) and, as --once does, closes
    the windows still open when its input ends."""
    import json

    from job.api import collect

    (tmp_path / "clicks").mkdir()
    (tmp_path / "clicks" / "1.json").write_text("".join(
        json.dumps({"user_id": u, "ts": t}) + "\n"
        for u, t in [("u1", "2024-01-01 10:00:10"), ("u2", "2024-01-01 10:00:20"), ("u1", "2024-01-01 10:03:00")]))
    result = collect([f"""CREATE TABLE clicks (user_id STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
                          WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "clicks"}', 'format' = 'json')"""],
                     "SELECT user_id, CAST(window_start AS STRING) AS ws, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE clicks, "
                     "DESCRIPTOR(ts), INTERVAL '1' MINUTES)) GROUP BY window_start, window_end, user_id",
                     spark=spark, checkpoint_dir=str(tmp_path / "ck"))
    assert sorted(result.rows) == [("u1", "2024-01-01 10:00:00.000", 1), ("u1", "2024-01-01 10:03:00.000", 1),
                                   ("u2", "2024-01-01 10:00:00.000", 1)]


def test_collect_on_a_callers_session_uses_the_engines_local_file_systems(spark, tmp_path):
    """collect() given a session switches it to the engine's local file systems, as a job
    run's session is (job.run.session.use_engine_local_files), whose checkpoint writes start
    no readlink or chmod process per file as Hadoop's do. The rows are the same either way."""
    from job.api import collect
    from job.run.session import LOCAL_FILE_SYSTEMS

    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, (hadoops, _engine) in LOCAL_FILE_SYSTEMS.items():
        hadoop_conf.set(key, hadoops)  # as a session of the caller's own has them
    try:
        (tmp_path / "t").mkdir()
        (tmp_path / "t" / "part-0").write_text('{"k": "a", "n": 1}\n{"k": "a", "n": 2}\n{"k": "b", "n": 5}\n')
        result = collect([f"CREATE TABLE t (k STRING, n INT) WITH ('connector' = 'filesystem', "
                          f"'path' = '{tmp_path / 't'}', 'format' = 'json')"],
                         "SELECT k, SUM(n) AS s FROM t GROUP BY k", spark=spark,
                         checkpoint_dir=str(tmp_path / "ck"))
        assert sorted(result.rows) == [("a", 3), ("b", 5)]
        assert {key: hadoop_conf.get(key) for key in LOCAL_FILE_SYSTEMS} == {
            key: engine for key, (_hadoops, engine) in LOCAL_FILE_SYSTEMS.items()}
    finally:
        from job.run.session import use_engine_local_files

        use_engine_local_files(spark)
