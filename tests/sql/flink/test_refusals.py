"""What the function library refuses, and where: every Flink function it does not run is
refused by name at its line and column, before anything runs; so are the expressions
Flink itself rejects (an untyped NULL operand, a DATE compared with a TIMESTAMP …) and the
forms whose Flink answer Spark cannot give (a regex group that may not take part)."""
from __future__ import annotations

import pytest

from job.errors import PipelineError
from job.sql.flink import functions
from tests.sql.flink.support import translate

COLUMNS = {"a": "INT", "d": "DOUBLE", "s": "STRING", "dt": "DATE", "ts": "TIMESTAMP(3)", "arr": "ARRAY<INT>"}


def refusal(expression: str) -> PipelineError:
    with pytest.raises(PipelineError) as caught:
        translate(expression, COLUMNS)
    return caught.value


def where(error: PipelineError) -> tuple[int, int]:
    return error.origin.line, error.origin.column


def refused_scalars():
    functions._load()
    return sorted({fn.name for fn in functions.REGISTRY.values() if not fn.supported})


@pytest.mark.parametrize("name", refused_scalars())
def test_every_refused_function_is_refused_by_name(name):
    # "SELECT " is 7 characters: the call starts at column 8 (after two blanks, at 10).
    error = refusal(f"  {name}(a)")
    assert str(error).startswith(f"Flink function {name} is not supported yet") or \
        f"Flink function {name} is not supported yet" in error.message, error.render()
    assert where(error) == (1, 10), error.render()


@pytest.mark.parametrize("arguments", ["", "a, 0.5", "a, s, 3"])
def test_a_refused_scalar_is_refused_by_name_whatever_its_arguments(arguments):
    for name in refused_scalars():
        error = refusal(f"{name}({arguments})")
        assert f"Flink function {name} is not supported yet" in error.message, error.render()


def refused_aggregates():
    functions._load()
    return sorted({fn.name for fn in functions.REGISTRY.values()
                   if not fn.supported and fn.kind == functions.AGGREGATE})


def test_a_refused_aggregate_is_refused_by_name_before_its_arguments_are_counted(spark):
    """PERCENTILE(amount, 0.5) is Flink's own call: the refusal names PERCENTILE, it does
    not complain about the argument count (Flink's PERCENTILE takes two)."""
    from tests.support.runs import run_inline

    assert "PERCENTILE" in refused_aggregates()
    for name in refused_aggregates():
        for arguments in ("amount, 0.5", "amount"):
            r = run_inline(statements=[
                "CREATE TABLE src (k INT, amount DOUBLE) WITH ('connector' = 'datagen', 'number-of-rows' = '3')",
                "CREATE TABLE out1 (k INT, p DOUBLE) WITH ('connector' = 'print')",
                f"INSERT INTO out1 SELECT k, {name}({arguments}) FROM src GROUP BY k"], dry_run=True)
            assert r.code == 2, r.err
            assert f"Flink function {name} is not supported yet" in r.error_line, r.error_line
            assert "argument" not in r.error_line, r.error_line
            assert r.error_line.startswith("error (exit 2, invalid pipeline): arg 3:1:28:"), r.error_line


def test_the_refusal_points_at_the_call_on_its_line():
    error = refusal("a +\n    COLLECT(a)")
    assert "Flink function COLLECT is not supported yet" in error.message
    assert where(error) == (2, 5)


def test_a_name_that_is_no_flink_function_is_refused_with_a_suggestion():
    error = refusal("REGEXP_EXTRAKT(s, 'a')")
    assert "'REGEXP_EXTRAKT' is not a Flink function" in error.message
    assert "REGEXP_EXTRACT" in (error.hint or "")


@pytest.mark.parametrize("expression, message", [
    ("UPPER(NULL)", "Illegal use of 'NULL'"),
    ("a + NULL", "Illegal use of 'NULL'"),
    ("NOT NULL", "Illegal use of 'NULL'"),
    ("dt < ts", "Cannot apply '<' to arguments of type '<DATE> < <TIMESTAMP(3)>'"),
    ("arr[0]", "Array element access needs an index starting at 1 but was 0."),
    ("MOD(d, 2)", "MOD takes exact numbers"),
    ("d % 2", "Flink's MOD takes exact numbers"),
    ("99999999999999999999", "Numeric literal '99999999999999999999' out of range"),
    ("1234567890123456789.5", "Numeric literal '1234567890123456789.5' out of range"),
    ("DATE_FORMAT(dt, 'yyyy')", "DATE_FORMAT: argument 1 must be timestamp or string"),
    ("REGEXP_EXTRACT(s, '(a)|(b)', 2)", "may take no part in a match"),
    ("REGEXP_EXTRACT_ALL(s, '(x)?y', 1)", "may take no part in a match"),
    ("REGEXP_EXTRACT(s, s, 1)", "needs a constant pattern"),
    ("JSON_VALUE(s, '$.a[*]')", "is not supported yet (only $, .name, ['name'] and [n] steps are)"),
    ("JSON_VALUE(s, '$.a' RETURNING BIGINT)", "Unsupported type 'BIGINT' for RETURNING in JSON_VALUE()."),
    ("JSON_OBJECT('k' VALUE dt)", "is not scalar or cannot be converted into JSON"),
    ("ENCODE(s, 'EBCDIC')", "unsupported charset 'EBCDIC'"),
    ("PRINTF('%s', arr)", "PRINTF of a ARRAY<INT> value is not supported"),
    ("PRINTF(s, a)", "the format of PRINTF must be a string literal"),
    ("ELT(-1, s)", "Index must be an integer starting from '0', but was '-1'"),
    ("s SIMILAR TO 'a'", "SIMILAR TO is not supported yet"),
    ("TUMBLE_START(ts, INTERVAL '1' MINUTE)", "TUMBLE_START is only allowed in the select list of a query grouped by"),
    ("ROW_NUMBER()", "ROW_NUMBER is only allowed in Flink's Top-N pattern"),
    ("TUMBLE_PROCTIME(ts, INTERVAL '1' MINUTE)", "processing-time windows are not supported yet"),
])
def test_what_flink_rejects_or_spark_cannot_answer_is_refused(expression, message):
    error = refusal(expression)
    assert message in error.message, error.render()
    assert error.origin is not None and error.origin.line == 1 and error.origin.column >= 8, error.render()


def test_refused_functions_say_so_in_the_function_list():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "functions.md").read_text()
    for name in refused_scalars():
        assert f"| `{name}" in text, name


def test_a_refusal_stops_the_pipeline_with_exit_2_and_its_position(spark):
    from tests.support.runs import run_inline

    r = run_inline(statements=[
        "CREATE TABLE src (a INT, s STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '3')",
        "CREATE TABLE out1 (x STRING) WITH ('connector' = 'print')",
        "INSERT INTO out1\nSELECT\n  INET_NTOA(a) FROM src"], dry_run=True)
    assert r.code == 2, r.err
    assert r.error_line.startswith("error (exit 2, invalid pipeline): arg 3:3:3:"), r.error_line
    assert "Flink function INET_NTOA is not supported yet" in r.error_line


@pytest.mark.parametrize("query, column", [
    ("SELECT NULL FROM t", 8),
    ("SELECT a, NULL AS x FROM t", 11),
    ("SELECT a, (NULL) AS x FROM t", 12),
    ("SELECT x FROM (SELECT NULL AS x, a FROM t)", 23),
    ("SELECT 1 AS z FROM t UNION ALL SELECT NULL FROM t", 39),
    ("SELECT * FROM (VALUES (1, NULL), (2, 'a')) AS v(a, c)", 27),
])
def test_an_untyped_null_column_is_refused_where_it_is_written(query, column):
    # Flink: "Illegal use of 'NULL'" — a NULL has no type as a whole column (it has one
    # in CASE, COALESCE or a comparison, which are fine).
    from job.errors import Origin
    from job.sql.flink.query import parse_query

    with pytest.raises(PipelineError) as caught:
        parse_query(query, Origin("query"))
    assert "Illegal use of 'NULL'" in caught.value.message
    assert where(caught.value) == (1, column), caught.value.render()
