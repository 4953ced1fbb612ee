"""Flink user-defined functions on the job, beyond the differential cases (which show the
answers equal Flink's, tests/flink/cases/user_functions.yaml): the calls Flink rejects are
refused with Flink's reason before anything runs, a class the job cannot run is refused by
name at its CREATE FUNCTION, jars come from Flink's three places, and a pipeline with a
function runs from the command line into a real sink."""
from __future__ import annotations


import pytest
from chispa import assert_df_equality

from job.api import collect
from tests.e2e.test_cli import error_of, job
from tests.support.user_functions import people_table, refusal, udf_jar

PKG = "streamsql.testudf"


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    return people_table(tmp_path_factory.mktemp("udf-people"),
                        [{"id": 1, "name": "cecilia", "n": 2}, {"id": 2, "name": None, "n": None}])


@pytest.mark.parametrize("function, query, message", [
    ("PlusOne", "SELECT f(n) FROM people", "invalid function call f(INT): no eval method of streamsql.testudf.PlusOne "
                                           "takes these argument types"),
    ("PlusOne", "SELECT f(CAST(n AS BIGINT)) FROM people", "f(BIGINT)"),  # nullable into a primitive long
    ("OrZero", "SELECT f(CAST(n AS BIGINT)) FROM people", "f(BIGINT): no eval method"),  # no narrowing cast
    ("Describe", "SELECT f(NULL) FROM people", "f(NULL) fits 4 eval methods of streamsql.testudf.Describe"),
    ("Greet", "SELECT f(n) FROM people", "f(INT): no eval method"),
])
def test_calls_flink_rejects_are_refused_where_they_are(spark, people, function, query, message):
    err = refusal(spark, [people, f"CREATE FUNCTION f AS '{PKG}.{function}' USING JAR '{udf_jar()}'"], query)
    assert message in err.message
    assert str(err.origin) == "query:1:8"


@pytest.mark.parametrize("declaration, message", [
    ("CREATE FUNCTION f AS 'java.lang.String' USING JAR '{jar}'", "java.lang.String is not a Flink function class"),
    ("CREATE FUNCTION f AS 'com.example.Missing' USING JAR '{jar}'", "class 'com.example.Missing' cannot be loaded"),
    (f"CREATE FUNCTION f AS '{PKG}.Greet' USING JAR '/nonexistent/functions.jar'",
     "jar '/nonexistent/functions.jar' does not exist"),
])
def test_classes_the_job_cannot_run_are_refused_at_their_declaration(spark, people, declaration, message):
    err = refusal(spark, [people, declaration.format(jar=udf_jar())], "SELECT f(name) FROM people")
    assert message in err.message
    assert str(err.origin) == "arg 2:1:1"


def test_jars_from_add_jar_and_pipeline_jars(spark, people):
    by_add_jar = collect([people, f"ADD JAR '{udf_jar()}'", f"CREATE FUNCTION g AS '{PKG}.Greet'"],
                         "SELECT id, g(name) FROM people", spark=spark)
    by_setting = collect([people, f"SET 'pipeline.jars' = 'file://{udf_jar()}'",
                          f"CREATE TEMPORARY FUNCTION g AS '{PKG}.Greet'"],
                         "SELECT id, g(name) FROM people", spark=spark)
    assert sorted(by_add_jar.rows) == sorted(by_setting.rows) == [(1, "hello cecilia"), (2, None)]


def test_a_pipeline_with_a_function_runs_once_into_its_sink(spark, tmp_path):
    data, out = tmp_path / "in", tmp_path / "out"
    data.mkdir()
    (data / "part-0").write_text('{"id": 1, "s": "abcabc"}\n{"id": 2, "s": null}\n')
    pipeline = tmp_path / "p.sql"
    pipeline.write_text(f"""
        CREATE TABLE t (id INT, s STRING) WITH ('connector' = 'filesystem', 'path' = '{data}', 'format' = 'json');
        CREATE TABLE o (id INT, c BIGINT, g STRING)
          WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json');
        ADD JAR '{udf_jar()}';
        CREATE FUNCTION count_char AS '{PKG}.CountChar';
        CREATE TEMPORARY FUNCTION greet AS '{PKG}.Greet' LANGUAGE JAVA;
        INSERT INTO o SELECT id, count_char(s, 'b'), greet(s) FROM t;
    """)
    dry = job("--dry-run", str(pipeline), cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert f"function count_char: Java class {PKG}.CountChar [Flink user-defined function" in dry.stdout
    done = job("--once", str(pipeline), "--checkpoint-dir", str(tmp_path / "cp"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    written = spark.read.schema("id INT, c BIGINT, g STRING").json(str(out))
    expected = spark.createDataFrame([(1, 2, "hello abcabc"), (2, -1, None)], "id INT, c BIGINT, g STRING")
    assert_df_equality(written, expected, ignore_row_order=True)


def test_python_functions_are_refused_by_name(tmp_path):
    done = job("CREATE FUNCTION f AS 'mod.f' LANGUAGE PYTHON;", "INSERT INTO x SELECT 1;", cwd=tmp_path)
    assert "Python user-defined functions (LANGUAGE PYTHON) are not supported yet" in error_of(done)


def test_a_catalog_function_named_like_a_built_in_is_never_loaded(spark, people):
    # Flink resolves the built-in UPPER first, so this declaration's class is not needed.
    result = collect([people, "CREATE FUNCTION upper AS 'com.example.Missing'"], "SELECT id, UPPER(name) FROM people",
                     spark=spark)
    assert sorted(result.rows, key=lambda r: r[0]) == [(1, "CECILIA"), (2, None)]


def test_a_missing_jar_is_reported_at_the_statement_that_names_it(spark, people):
    err = refusal(spark, [people, f"CREATE FUNCTION g AS '{PKG}.Greet' USING JAR '{udf_jar()}'",
                          f"CREATE FUNCTION h AS '{PKG}.Greet' USING JAR '/nonexistent/h.jar'"],
                  "SELECT g(name) FROM people")
    assert "jar '/nonexistent/h.jar' does not exist" in err.message
    assert str(err.origin) == "arg 3:1:1"
