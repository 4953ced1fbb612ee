"""Flink user-defined table functions (LATERAL TABLE) beyond the differential cases (which
show the answers equal Flink's, tests/flink/cases/user_table_functions.yaml): what Flink
rejects, and what the job does not run, is refused by name where it is written, before
anything runs; a pipeline with a table function runs from the command line into its sink;
outputs are typed from the class's hints and generic type as Flink types them."""
from __future__ import annotations

import re

import pytest
from chispa import assert_df_equality

from job.changelog.replies import EvalMethod, FunctionDescription, JavaValue
from job.plan.user_functions import _output_hint
from job.sql.flink.functions.user import ROW_CLASS, table_output
from tests.e2e.test_cli import job
from tests.support.user_functions import people_table, refusal, udf_jar

PKG = "streamsql.testudf"
FROM = "SELECT * FROM people, LATERAL TABLE("  # the call after it starts at column 37


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    return people_table(tmp_path_factory.mktemp("udtf-people"),
                        [{"id": 1, "name": "ada lovelace", "n": 2}, {"id": 2, "name": None, "n": None}])


@pytest.mark.parametrize("function, query, message, column", [
    # Flink: "Cannot call table function here" / "… cannot be used as a table function".
    ("SplitWords", "SELECT f(name) FROM people", "Cannot call table function here: 'f'", 8),
    ("Greet", FROM + "f(name))", "Function 'f' cannot be used as a table function", 37),
    # Arguments are checked as a scalar function's are: a nullable INT is no primitive int.
    ("Repeat", FROM + "f(name, n))", "invalid function call f(STRING, INT): no eval method", 37),
    ("SplitWords", FROM + "f(name)) AS T(a)", "List of column aliases must have same degree as table; table has "
                                              "2 columns ('word', 'len'), whereas alias list has 1 columns", 49),
    ("RowWithoutHint", FROM + "f(name))", "Cannot extract a data type from a pure 'org.apache.flink.types.Row' "
                                          "class", 37),
    ("Countdown", "SELECT * FROM people LEFT JOIN LATERAL TABLE(f(n)) AS T(x) ON x > 1",
     "LEFT JOIN LATERAL TABLE(…) needs ON TRUE (a LEFT JOIN on another condition is not supported yet)", 63),
    ("Countdown", "SELECT * FROM people RIGHT JOIN LATERAL TABLE(f(n)) ON TRUE",
     "RIGHT JOIN LATERAL TABLE(…) is not supported", 41),
    ("Countdown", "SELECT * FROM LATERAL TABLE(f(3))", "on its own in FROM it is not supported yet", 23),
    ("Countdown", FROM + "upper(name))", "Function 'UPPER' cannot be used as a table function", 37),
    ("Countdown", FROM + "g(n))", "No match found for function signature G(…)", 37),
    ("Countdown", "SELECT * FROM people, LATERAL (SELECT 1)", "LATERAL is supported as LATERAL TABLE(f(…))", 39),
])
def test_what_flink_rejects_or_the_job_does_not_run_is_refused_where_it_is(spark, people, function, query, message,
                                                                          column):
    err = refusal(spark, [people, f"CREATE FUNCTION f AS '{PKG}.{function}' USING JAR '{udf_jar()}'"], query)
    assert message in err.message, err.render()
    assert (err.origin.line, err.origin.column) == (1, column), err.render()


def test_a_table_function_runs_once_into_its_sink(spark, tmp_path):
    data, out = tmp_path / "in", tmp_path / "out"
    data.mkdir()
    (data / "part-0").write_text('{"id": 1, "s": "a bb"}\n{"id": 2, "s": null}\n')
    pipeline = tmp_path / "p.sql"
    pipeline.write_text(f"""
        CREATE TABLE t (id INT, s STRING) WITH ('connector' = 'filesystem', 'path' = '{data}', 'format' = 'json');
        CREATE TABLE o (id INT, w STRING, l INT)
          WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json');
        CREATE FUNCTION split_words AS '{PKG}.SplitWords' USING JAR '{udf_jar()}';
        INSERT INTO o SELECT id, w, l FROM t LEFT JOIN LATERAL TABLE(split_words(s)) AS T(w, l) ON TRUE;
    """)
    dry = job("--dry-run", str(pipeline), cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "left join lateral table SPLIT_WORDS(s)" in dry.stdout
    done = job("--once", str(pipeline), "--checkpoint-dir", str(tmp_path / "cp"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    written = spark.read.schema("id INT, w STRING, l INT").json(str(out))
    expected = spark.createDataFrame([(1, "a", 1), (1, "bb", 2), (2, None, None)], "id INT, w STRING, l INT")
    assert_df_equality(written, expected, ignore_row_order=True)


@pytest.mark.parametrize("generic, hint, expected", [
    ("java.lang.String", None, ("STRING", False)),
    ("java.lang.Long", None, ("BIGINT", False)),
    (ROW_CLASS, "ROW<word STRING, len INT NOT NULL>", ("ROW<`word` STRING, `len` INT NOT NULL>", True)),
    (None, "ROW<k STRING>", ("ROW<`k` STRING>", True)),   # T left open: the hint types it
    ("java.math.BigDecimal", "DECIMAL(10, 2)", ("DECIMAL(10, 2)", False)),
])
def test_an_output_is_typed_as_flink_extracts_it(generic, hint, expected):
    output, rows = table_output(generic, hint, "the output")
    assert (str(output), rows) == expected


@pytest.mark.parametrize("generic, hint, message", [
    (ROW_CLASS, None, "Cannot extract a data type from a pure 'org.apache.flink.types.Row' class"),
    (None, None, "leaves TableFunction's type parameter open"),
    ("com.example.Pojo", None, "is a com.example.Pojo, which the job cannot pass"),
    (ROW_CLASS, "ROW<a INT, b ARRAY<INT>>", "its field b is ARRAY<INT>, which the job cannot pass"),
    ("java.lang.Long", "ROW<a INT>", "does not fit its Java class java.lang.Long"),
    ("java.lang.Integer", "BIGINT", "does not fit its Java class java.lang.Integer"),
])
def test_an_output_the_job_cannot_type_says_why(generic, hint, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        table_output(generic, hint, "the output")


def _described(class_hint=None, method_hint=None, class_type_hint=None, method_type_hint=None):
    method = EvalMethod("public void F.eval(java.lang.String)", False, False, method_hint,
                        (JavaValue("java.lang.String", None),), JavaValue("void", method_type_hint))
    table = FunctionDescription("table", None, None, False, False, class_hint, False, True,
                                JavaValue(ROW_CLASS, class_type_hint), False, (method,))
    return table, method


@pytest.mark.parametrize("hints, expected", [
    (dict(class_hint="ROW<a INT>", method_type_hint="ROW<b INT>"), "ROW<a INT>"),  # a function hint first
    (dict(class_hint="ROW<a INT>", method_hint="ROW<a INT>"), "ROW<a INT>"),
    (dict(class_type_hint="ROW<a INT>"), "ROW<a INT>"),
    (dict(class_type_hint="ROW<a INT>", method_type_hint="ROW<a INT>"), "ROW<a INT>"),  # the same hint twice
    ({}, None),
])
def test_the_hint_that_types_an_output_is_found_in_flinks_order(hints, expected):
    assert _output_hint(*_described(**hints)) == expected


@pytest.mark.parametrize("hints, message", [
    (dict(class_type_hint="ROW<a INT>", method_type_hint="ROW<b INT>"),
     "More than one data type hint found for output of function"),
    (dict(class_hint="ROW<a INT>", method_hint="ROW<c INT>"),
     "Function hints that lead to ambiguous results are not allowed"),
])
def test_two_different_hints_are_refused_as_flink_refuses_them(hints, message):
    with pytest.raises(ValueError, match=message):
        _output_hint(*_described(**hints))
