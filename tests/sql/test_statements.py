"""SET, INSERT, CREATE VIEW, statement-set markers and unsupported statements."""
from __future__ import annotations

import pytest

from job.errors import Origin, PipelineError
from job.sql.parse import parse_statement
from job.sql.statements import AddJar, CreateFunction, CreateTable, CreateView, Insert, SetOption, StatementText


def parse(text: str, origin: Origin = Origin("p.sql")):
    return parse_statement(StatementText(text, origin))


def assert_error(text: str, line: int, column: int, message: str) -> PipelineError:
    with pytest.raises(PipelineError) as info:
        parse(text)
    err = info.value
    assert message in err.message, err.message
    assert (err.origin.line, err.origin.column) == (line, column), str(err)
    assert err.statement == text
    return err


# --------------------------------------------------------------------------- SET


@pytest.mark.parametrize(
    "text, key, value",
    [
        ("SET 'pipeline.name' = 'my job'", "pipeline.name", "my job"),
        ("set 'k'='v'", "k", "v"),
        ("SET 'k' = 'it''s'", "k", "it's"),
        ("SET 'k' = ''", "k", ""),
        ("SET 'k' = 'v' -- trailing comment", "k", "v"),
        ("SET\n  'table.exec.state.ttl' =\n  '1 h'", "table.exec.state.ttl", "1 h"),
        ("SET table.exec.mini-batch.enabled = true", "table.exec.mini-batch.enabled", "true"),
        ("SET parallelism.default=4", "parallelism.default", "4"),
        ("SET pipeline.name = my streaming job ", "pipeline.name", "my streaming job"),
        ("SET k = 'quoted value'", "k", "quoted value"),
        ("SET 'k' = unquoted value", "k", "unquoted value"),
        ("SET 'k' = a=b", "k", "a=b"),
    ],
)
def test_set(text, key, value):
    assert parse(text) == SetOption(key, value, StatementText(text, Origin("p.sql")))


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("SET", 1, "SET without a key (listing all options) is not supported"),
        ("  set  ", 3, "SET without a key"),
        ("SET 'k'", 8, "expected '=' after the key 'k' but found end of statement"),
        ("SET 'k' 'v'", 9, "expected '=' after the key 'k' but found string 'v'"),
        ("SET 'k' =", 10, "missing value for option 'k'"),
        ("SET k =   ", 8, "missing value for option 'k'"),
        ("SET k", 5, "expected '=' after the option key"),
        ("SET = v", 5, "missing option key before '='"),
        ("SET my key = v", 5, "invalid option key 'my key'"),
        ("SET '' = 'v'", 5, "the option key is empty"),
    ],
)
def test_set_errors(text, column, message):
    err = assert_error(text, 1, column, message)
    assert err.hint == "write SET 'key' = 'value'."


def test_set_value_errors():
    assert_error("SET 'k' = 'v' 'w'", 1, 15, "unexpected string 'w' after the value")
    assert_error("SET 'k' = 'v", 1, 11, "unterminated string literal")


@pytest.mark.parametrize("text", ["RESET", "RESET 'pipeline.name'", "reset pipeline.name"])
def test_reset_is_unsupported(text):
    err = assert_error(text, 1, 1, "unsupported statement 'RESET'")
    assert "did you mean" not in err.hint


# --------------------------------------------------------------------------- INSERT


def test_insert_into_select():
    text = "INSERT INTO enriched SELECT u.uid, c.favoriteColor FROM users u JOIN colors c ON u.uid = c.userUid"
    result = parse(text, Origin("p.sql", 30, 1))
    assert result == Insert(
        table="enriched",
        query="SELECT u.uid, c.favoriteColor FROM users u JOIN colors c ON u.uid = c.userUid",
        query_origin=Origin("p.sql", 30, 22),
        source=StatementText(text, Origin("p.sql", 30, 1)),
    )


def test_insert_query_origin_across_lines():
    text = "INSERT INTO t\n  -- the query:\n  SELECT *\n  FROM users   \n"
    result = parse(text, Origin("p.sql", 12, 3))
    assert result.query == "SELECT *\n  FROM users"
    assert result.query_origin == Origin("p.sql", 14, 3)


@pytest.mark.parametrize(
    "text, table, columns, overwrite, query",
    [
        ("INSERT INTO t (a, b) SELECT 1, 2", "t", ("a", "b"), False, "SELECT 1, 2"),
        ("insert into table t select 1", "t", (), False, "select 1"),
        ("INSERT INTO db.`my sink` (`a b`) VALUES (1)", "db.my sink", ("a b",), False, "VALUES (1)"),
        ("INSERT INTO cat.db.t WITH x AS (SELECT 1) SELECT * FROM x", "cat.db.t", (), False,
         "WITH x AS (SELECT 1) SELECT * FROM x"),
        ("INSERT INTO t (SELECT 1)", "t", (), False, "(SELECT 1)"),
        ("INSERT INTO t ((SELECT 1) UNION ALL (SELECT 2))", "t", (), False, "((SELECT 1) UNION ALL (SELECT 2))"),
        ("INSERT INTO t (a) (SELECT 1)", "t", ("a",), False, "(SELECT 1)"),
        ("INSERT OVERWRITE t SELECT 1", "t", (), True, "SELECT 1"),
        ("INSERT OVERWRITE TABLE t (x) SELECT 1", "t", ("x",), True, "SELECT 1"),
        # The query is kept verbatim (and parsed as Flink SQL: '' is the only escape in a string).
        ("INSERT INTO t SELECT 'it''s', `x`", "t", (), False, "SELECT 'it''s', `x`"),
    ],
)
def test_insert_forms(text, table, columns, overwrite, query):
    result = parse(text)
    assert isinstance(result, Insert)
    assert (result.table, result.column_names, result.overwrite, result.query) == (table, columns, overwrite, query)
    assert result.query_origin == Origin("p.sql", 1, text.index(query) + 1)


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("INSERT t SELECT 1", 8, "expected INTO or OVERWRITE after INSERT but found 't'"),
        ("INSERT INTO", 12, "expected a table name but found end of statement"),
        ("INSERT INTO t", 14, "expected a query (SELECT, WITH, VALUES or '(') but found end of statement"),
        ("INSERT INTO t FROM users", 15, "expected a query (SELECT, WITH, VALUES or '(') but found 'FROM'"),
        ("INSERT INTO t (a, b)", 21, "expected a query (SELECT, WITH, VALUES or '(') but found end of statement"),
        ("INSERT INTO t (a,) SELECT 1", 18, "expected a column name but found ')'"),
        ("INSERT INTO t (a b) SELECT 1", 18, "expected ',' or ')' but found 'b'"),
        ("INSERT INTO t (a, A) SELECT 1", 19, "column 'A' is listed twice"),
        ("INSERT INTO t PARTITION (dt = 'x') SELECT 1", 15, "INSERT … PARTITION (…) is not supported"),
    ],
)
def test_insert_errors(text, column, message):
    assert_error(text, 1, column, message)


# --------------------------------------------------------------------------- CREATE VIEW


def test_create_view():
    text = "CREATE VIEW enriched AS\nSELECT *\nFROM users"
    result = parse(text, Origin("p.sql", 3, 1))
    assert result == CreateView(
        name="enriched",
        query="SELECT *\nFROM users",
        query_origin=Origin("p.sql", 4, 1),
        source=StatementText(text, Origin("p.sql", 3, 1)),
    )


@pytest.mark.parametrize(
    "text, name, columns, temporary, query",
    [
        ("create temporary view v as select 1", "v", (), True, "select 1"),
        ("CREATE VIEW IF NOT EXISTS db.v (a, `b c`) AS SELECT 1, 2", "db.v", ("a", "b c"), False, "SELECT 1, 2"),
        ("CREATE VIEW v COMMENT 'a view' AS WITH x AS (SELECT 1) SELECT * FROM x", "v", (), False,
         "WITH x AS (SELECT 1) SELECT * FROM x"),
        ("CREATE VIEW v AS (SELECT 1)", "v", (), False, "(SELECT 1)"),
        ("CREATE VIEW v AS VALUES (1), (2)", "v", (), False, "VALUES (1), (2)"),
    ],
)
def test_create_view_forms(text, name, columns, temporary, query):
    result = parse(text)
    assert isinstance(result, CreateView)
    assert (result.name, result.column_names, result.temporary, result.query) == (name, columns, temporary, query)
    assert result.query_origin == Origin("p.sql", 1, text.index(query) + 1)


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("CREATE VIEW v SELECT 1", 15, "expected 'AS' and the view's query but found 'SELECT'"),
        ("CREATE VIEW v AS", 17, "expected a query (SELECT, WITH, VALUES or '(') but found end of statement"),
        ("CREATE VIEW v AS users", 18, "expected a query (SELECT, WITH, VALUES or '(') but found 'users'"),
        ("CREATE VIEW v () AS SELECT 1", 16, "expected a view column name but found ')'"),
        ("CREATE VIEW IF EXISTS v AS SELECT 1", 16, "expected 'NOT EXISTS' but found 'EXISTS'"),
    ],
)
def test_create_view_errors(text, column, message):
    assert_error(text, 1, column, message)


# --------------------------------------------------------------------------- statement sets and no-ops


@pytest.mark.parametrize(
    "text",
    ["BEGIN STATEMENT SET", "begin statement set", "EXECUTE STATEMENT SET BEGIN", "END", "end",
     "", "   \n ", "-- only a comment", "/* block */"],
)
def test_no_op_statements_return_none(text):
    assert parse(text) is None


def test_first_insert_glued_to_execute_statement_set_begin():
    # The splitter cuts at ';', so the first INSERT arrives attached to the marker.
    text = "EXECUTE STATEMENT SET\nBEGIN\n  INSERT INTO a SELECT * FROM users"
    result = parse(text, Origin("p.sql", 20, 1))
    assert isinstance(result, Insert)
    assert (result.table, result.query) == ("a", "SELECT * FROM users")
    assert result.query_origin == Origin("p.sql", 22, 17)
    assert result.source.text == text


def test_execute_insert():
    result = parse("EXECUTE INSERT INTO t SELECT 1")
    assert isinstance(result, Insert) and result.table == "t"


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("BEGIN STATEMENT SET CREATE VIEW v AS SELECT 1", 21,
         "only INSERT statements may follow a statement-set BEGIN, found 'CREATE'"),
        ("END x", 5, "unexpected 'x' after END"),
        ("BEGIN", 1, "unsupported statement 'BEGIN'"),
        ("EXECUTE STATEMENT SET", 1, "unsupported statement 'EXECUTE'"),
    ],
)
def test_statement_set_errors(text, column, message):
    assert_error(text, 1, column, message)


# --------------------------------------------------------------------------- unsupported


@pytest.mark.parametrize(
    "text, keyword",
    [
        ("ALTER TABLE users RENAME TO u", "ALTER"),
        ("LOAD MODULE hive", "LOAD"),
        ("CREATE MODEL m", "CREATE MODEL"),
        ("select * from users", "SELECT"),
        ("WITH x AS (SELECT 1) SELECT * FROM x", "WITH"),
        ("VALUES (1)", "VALUES"),
        ("(SELECT 1)", "("),
    ],
)
def test_unsupported_statements(text, keyword):
    err = assert_error(text, 1, 1, f"unsupported statement '{keyword}'")
    assert err.hint


def test_create_function():
    f = parse("CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar'")
    assert isinstance(f, CreateFunction)
    assert (f.name, f.class_name, f.language, f.jars, f.temporary, f.system) == (
        "count_char", "com.github.nexmark.flink.udf.CountChar", "JAVA", (), False, False)
    f = parse("CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS cat.db.`F` AS 'x.F' LANGUAGE scala "
              "USING JAR '/a.jar', JAR 'file:///b.jar'")
    assert (f.name, f.language, f.jars, f.temporary, f.system, f.if_not_exists) == (
        "F", "SCALA", ("/a.jar", "file:///b.jar"), True, True, True)
    assert parse("ADD JAR '/tmp/f.jar'") == AddJar("/tmp/f.jar", parse("ADD JAR '/tmp/f.jar'").source)


@pytest.mark.parametrize("text,line,column,message", [
    ("CREATE FUNCTION f AS 'x' LANGUAGE PYTHON", 1, 35, "Python user-defined functions (LANGUAGE PYTHON) are not "
                                                       "supported yet"),
    ("CREATE FUNCTION f AS 'x' LANGUAGE COBOL", 1, 35, "unknown function language 'COBOL'"),
    ("CREATE SYSTEM FUNCTION f AS 'x'", 1, 1, "a SYSTEM function must be TEMPORARY"),
    ("CREATE FUNCTION f AS x.F", 1, 22, "expected the function's class name as a string literal"),
    ("CREATE FUNCTION f AS 'x' USING '/a.jar'", 1, 32, "expected JAR 'path' after USING"),
    ("ADD JAR /tmp/a.jar", 1, 9, "expected the jar's path as a string literal"),
])
def test_create_function_errors(text, line, column, message):
    assert_error(text, line, column, message)


def test_unsupported_statement_hints():
    assert "INSERT INTO <table> SELECT" in assert_error("SELECT 1", 1, 1, "unsupported").hint
    drop = assert_error("ALTER TABLE t RENAME TO u", 1, 1, "unsupported").hint
    assert "CREATE TABLE" in drop and "CREATE VIEW" in drop and "INSERT INTO" in drop and "SET" in drop
    assert assert_error("INSRET INTO t SELECT 1", 1, 1, "unsupported statement 'INSRET'").hint.startswith(
        "did you mean INSERT?"
    )


def test_unsupported_statement_position_skips_leading_comments():
    text = "-- alter it\n  ALTER TABLE t RENAME TO u"
    err = assert_error(text, 2, 3, "unsupported statement 'ALTER'")
    assert err.render().startswith('p.sql:2:3: in statement "-- alter it":')


def test_create_needs_a_kind():
    assert_error("CREATE", 1, 7, "expected TABLE or VIEW after CREATE but found end of statement")
    assert_error("CREATE 'x'", 1, 8, "expected TABLE or VIEW after CREATE but found string 'x'")


def test_dispatch_returns_the_right_kind():
    assert isinstance(parse("CREATE TABLE t (a INT) WITH ('connector' = 'x')"), CreateTable)
    assert isinstance(parse("CREATE VIEW v AS SELECT 1"), CreateView)
    assert isinstance(parse("SET 'a' = 'b'"), SetOption)
    assert isinstance(parse("INSERT INTO t SELECT 1"), Insert)


def test_byte_order_mark_is_blank():
    assert isinstance(parse("\ufeffSET 'a' = 'b'"), SetOption)
