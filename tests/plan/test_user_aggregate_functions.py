"""Flink user-defined aggregate functions beyond the differential cases (which show the
answers equal Flink's, tests/flink/cases/user_aggregate_functions.yaml): what Flink rejects,
and what the job does not run, is refused by name where it is written, before anything
runs; accumulators survive a restart from the checkpoint; results and accumulators are
typed as Flink extracts them."""
from __future__ import annotations

import json
import re

import pytest

from job.api import collect
from job.changelog.replies import JavaValue
from job.errors import PipelineError
from job.sql.flink.functions.user import BIG_DECIMAL, ROW_CLASS, aggregate_output, check_accumulator
from tests.e2e.test_cli import job
from tests.support.user_functions import udf_jar

PKG = "streamsql.testudf"


def _table(root, name, fmt, rows) -> str:
    root.mkdir()
    (root / "part-0").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return (f"CREATE TABLE {name} (k STRING, v BIGINT, w INT, s STRING) WITH ('connector' = 'filesystem', "
            f"'path' = '{root}', 'format' = '{fmt}')")


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("udaf")
    rows = [{"k": "a", "v": 10, "w": 2, "s": "x"}, {"k": "b", "v": None, "w": None, "s": None}]
    changes = [{"before": None, "after": {"k": "a", "v": 1, "w": 1, "s": "x"}, "op": "c"},
               {"before": {"k": "a", "v": 1, "w": 1, "s": "x"}, "after": {"k": "a", "v": 3, "w": 1, "s": "yy"},
                "op": "u"}]
    return [_table(root / "t", "t", "json", rows), _table(root / "c", "c", "debezium-json", changes)]


def refusal(spark, statements, query) -> PipelineError:
    with pytest.raises(PipelineError) as info:
        collect(statements, query, spark=spark)
    return info.value


@pytest.mark.parametrize("function, query, message, column", [
    # Flink: no retract over an updating input (a debezium-json changelog).
    ("Longest", "SELECT k, f(s) FROM c GROUP BY k",
     "Could not find an implementation method 'retract' in class 'streamsql.testudf.Longest' for function 'f' that "
     "matches the following signature: void retract(streamsql.testudf.Longest.Acc, java.lang.String)", 11),
    # Arguments are checked as a scalar function's are.
    ("WeightedAvg", "SELECT f(s, w) FROM t", "invalid function call f(STRING, INT): no accumulate method of "
                                             "streamsql.testudf.WeightedAvg takes these argument types", 8),
    ("TotalPrice", "SELECT f(CAST(v AS DECIMAL(10, 2)), w) FROM t", "f(DECIMAL(10, 2), INT): no accumulate method",
     8),  # a nullable INT for the primitive int
    ("WeightedAvg", "SELECT k FROM t WHERE f(v, w) > 1 GROUP BY k", "the aggregate function f is not allowed here",
     23),
    # What the class declares is refused at its CREATE FUNCTION (the pipeline's third statement).
    ("UnhintedSum", "SELECT f(v) FROM t", "Values of 'java.math.BigDecimal' need fixed precision and scale", None),
])
def test_what_flink_rejects_or_the_job_does_not_run_is_refused_where_it_is(spark, tables, function, query, message,
                                                                          column):
    err = refusal(spark, [*tables, f"CREATE FUNCTION f AS '{PKG}.{function}' USING JAR '{udf_jar()}'"], query)
    assert message in err.message, err.render()
    if column is None:
        assert str(err.origin) == "arg 3:1:1", err.render()
    else:
        assert (str(err.origin.source), err.origin.line, err.origin.column) == ("query", 1, column), err.render()


@pytest.mark.parametrize("query, message, column", [
    ("SELECT window_start, f(v, 1) FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) "
     "GROUP BY window_start, window_end", "the user-defined aggregate function f in a window aggregation", 22),
    ("SELECT k, f(v, 1) OVER (PARTITION BY k ORDER BY ts) FROM e",
     "the user-defined aggregate function f in an OVER aggregation", 11),
])
def test_a_user_aggregate_over_a_window_is_refused_by_name(spark, tmp_path, query, message, column):
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "part-0").write_text('{"k": "a", "v": 1, "ts": "2024-01-01 00:00:01"}\n')
    table = (f"CREATE TABLE e (k STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ("
             f"'connector' = 'filesystem', 'path' = '{tmp_path / 'e'}', 'format' = 'json')")
    err = refusal(spark, [table, f"CREATE FUNCTION f AS '{PKG}.WeightedAvg' USING JAR '{udf_jar()}'"], query)
    assert message + " is not supported yet" in err.message, err.render()
    assert (err.origin.line, err.origin.column) == (1, column), err.render()


@pytest.mark.slow
def test_an_accumulator_survives_a_restart_from_the_checkpoint(tmp_path):
    data = tmp_path / "in"
    data.mkdir()
    (data / "part-0").write_text('{"k": "a", "v": 10, "w": 1}\n')
    pipeline = tmp_path / "p.sql"
    pipeline.write_text(f"""
        CREATE TABLE t (k STRING, v BIGINT, w INT) WITH ('connector' = 'filesystem', 'path' = '{data}',
          'format' = 'json');
        CREATE TABLE o (k STRING, avg_v BIGINT, n BIGINT) WITH ('connector' = 'print');
        CREATE FUNCTION wavg AS '{PKG}.WeightedAvg' USING JAR '{udf_jar()}';
        INSERT INTO o SELECT k, wavg(v, w), COUNT(*) FROM t GROUP BY k;
    """)
    checkpoint = str(tmp_path / "cp")
    first = job("--once", str(pipeline), "--checkpoint-dir", checkpoint, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "+I[a, 10, 1]" in first.stdout, first.stdout
    (data / "part-1").write_text('{"k": "a", "v": 20, "w": 3}\n')
    # A new JVM: the accumulator (sum 10, count 1) is read back from the state store.
    second = job("--once", str(pipeline), "--checkpoint-dir", checkpoint, cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "-U[a, 10, 1]" in second.stdout and "+U[a, 17, 2]" in second.stdout, second.stdout


@pytest.mark.parametrize("generic, class_hint, value_hint, expected", [
    ("java.lang.Long", None, None, "BIGINT"),
    ("long", None, None, "BIGINT NOT NULL"),
    ("java.math.BigDecimal", "DECIMAL(12, 2)", None, "DECIMAL(12, 2)"),      # @FunctionHint(output = …)
    ("java.lang.String", None, "VARCHAR(40)", "VARCHAR(40)"),                 # @DataTypeHint on getValue
    (ROW_CLASS, "INT", None, "INT"),
])
def test_a_result_is_typed_as_flink_extracts_it(generic, class_hint, value_hint, expected):
    assert str(aggregate_output(generic, class_hint, value_hint, "the result")) == expected


@pytest.mark.parametrize("generic, hint, message", [
    (ROW_CLASS, None, "Cannot extract a data type from a pure 'org.apache.flink.types.Row' class"),
    (None, None, "leaves AggregateFunction's type parameter T open"),
    ("com.example.Pojo", None, "is a com.example.Pojo, which the job cannot pass"),
    (None, "ROW<a INT>", "is ROW<`a` INT>, which the job cannot pass"),
])
def test_a_result_the_job_cannot_pass_is_refused_by_name(generic, hint, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        aggregate_output(generic, None, hint, "the result")


@pytest.mark.parametrize("generic, hint, fields, message", [
    (None, None, (), "leaves AggregateFunction's accumulator type ACC open"),
    (ROW_CLASS, None, (), "Cannot extract a data type from a pure 'org.apache.flink.types.Row' class"),
    ("com.example.Acc", None, (JavaValue(BIG_DECIMAL, None),), "need fixed precision and scale"),
])
def test_an_accumulator_flink_cannot_type_is_refused(generic, hint, fields, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check_accumulator(generic, hint, fields, "the function")


def test_an_accumulator_flink_types_passes():
    check_accumulator("com.example.Acc", None, (JavaValue(BIG_DECIMAL, "DECIMAL(20, 2)"),), "f")
    check_accumulator(ROW_CLASS, "ROW<n BIGINT>", (), "f")
    check_accumulator(None, "ROW<n BIGINT>", (), "f")
