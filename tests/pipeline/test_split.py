"""split_statements: where ';' separates statements, and exact origins."""
import pytest

from job.errors import Origin, PipelineError
from job.pipeline.split import split_statements


def split(text, source="t.sql"):
    return [(s.text, s.origin.line, s.origin.column) for s in split_statements(text, Origin(source))]


def texts(text):
    return [s.text for s in split_statements(text, Origin("t.sql"))]


def test_simple_statements_and_optional_trailing_semicolon():
    assert texts("SELECT 1; SELECT 2;") == ["SELECT 1", "SELECT 2"]
    assert texts("SELECT 1; SELECT 2") == ["SELECT 1", "SELECT 2"]


def test_empty_and_comment_only_statements_are_dropped():
    assert texts(";;  ;\n; -- just a comment\n; /* block */ ;") == []
    assert texts("") == []
    assert texts("SELECT 1;; ;SELECT 2;;") == ["SELECT 1", "SELECT 2"]


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT 'it''s; fine'",
        "SELECT 'a -- not a comment'",
        "SELECT '/* not a comment */ ;'",
        "SELECT `a;b` FROM t",
        'SELECT "a;b" FROM t',
        "SELECT `we``ird;` FROM t",
        'SELECT "we""ird;" FROM t',
        "SELECT ''''",
        "SELECT '{\"a\": \"b;c\"}'",
        "SELECT 1 /* ; inside a block comment */ + 2",
        "SELECT /*+ BROADCAST(t) */ a FROM t",
        "SELECT 1 -- ; in a line comment\n + 2",
        "SELECT 1 - -2",
        "SELECT 'no\\'",  # a backslash is no escape in Flink SQL
        "SELECT 3 /*/ still a comment ; */ + 1",
    ],
)
def test_semicolons_inside_literals_and_comments_do_not_split(statement):
    script = f"{statement};\nSELECT 'after';"
    assert texts(script) == [statement, "SELECT 'after'"]


def test_leading_and_trailing_comments_are_trimmed_inner_kept():
    script = "-- intro\n/* block */\n  SELECT a, -- inner\n b FROM t  -- trailing\n;"
    assert split(script) == [("SELECT a, -- inner\n b FROM t", 3, 3)]


def test_exact_origins_multi_line():
    script = (
        "-- a header comment\n"      # line 1
        "\n"                          # line 2
        "CREATE TABLE a (x INT);\n"  # line 3
        "   INSERT INTO a\n"         # line 4
        "   SELECT 1; SELECT 2;\n"   # line 5
        "/* c */ SET 'k' = 'v'"      # line 6
    )
    assert split(script) == [
        ("CREATE TABLE a (x INT)", 3, 1),
        ("INSERT INTO a\n   SELECT 1", 4, 4),
        ("SELECT 2", 5, 14),
        ("SET 'k' = 'v'", 6, 9),
    ]


def test_origin_is_relative_to_the_given_origin():
    statements = split_statements("SELECT 1;\n  SELECT 2", Origin("p.yaml", 10, 7))
    assert [s.origin for s in statements] == [Origin("p.yaml", 10, 7), Origin("p.yaml", 11, 3)]


def test_indent_shifts_columns_of_continuation_lines_only():
    statements = split_statements("SELECT 1; SELECT 2;\nSELECT 3", Origin("p.yaml", 5, 5), indent=4)
    assert [s.origin for s in statements] == [
        Origin("p.yaml", 5, 5),
        Origin("p.yaml", 5, 15),
        Origin("p.yaml", 6, 5),
    ]


def test_crlf_line_endings():
    script = "-- c\r\nSELECT 1;\r\n\r\n  SELECT\r\n 2;\r\n"
    assert split(script) == [("SELECT 1", 2, 1), ("SELECT\r\n 2", 4, 3)]


def test_origin_of_each_statement_points_at_its_text():
    script = "SELECT 1;\n\n  -- x\n  SELECT 'a;b' ;\tSELECT\n`c;d`"
    lines = script.split("\n")
    for s in split_statements(script, Origin("t.sql")):
        line = lines[s.origin.line - 1]
        assert line[s.origin.column - 1 :].startswith(s.text.split("\n")[0])


FLINK_SCRIPT = """\
-- Orders from Kafka to a filesystem sink.
CREATE TABLE orders (
  order_id BIGINT,
  price DECIMAL(10, 2),
  buyer ROW<name STRING, city STRING>,
  ts TIMESTAMP(3) METADATA FROM 'timestamp',
  proc AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  PRIMARY KEY (order_id) NOT ENFORCED
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders;v1',
  'properties.bootstrap.servers' = 'localhost:9092',
  'scan.startup.mode' = 'earliest-offset', -- a comment; with a semicolon
  'format' = 'json',
  'json.ignore-parse-errors' = 'true'
);

CREATE TABLE sink WITH ('connector' = 'filesystem', 'path' = '/tmp/out', 'format' = 'csv')
LIKE orders (EXCLUDING ALL);

SET 'pipeline.name' = 'orders; to lake';
SET 'table.exec.state.ttl' = '1 h';

BEGIN STATEMENT SET;
INSERT INTO sink SELECT order_id, price FROM orders WHERE price > 10;
INSERT INTO sink SELECT order_id, price * 2 FROM orders /* doubled; */;
END;
"""


def test_realistic_flink_script():
    result = split(FLINK_SCRIPT)
    assert [(line, col) for _, line, col in result] == [
        (2, 1), (19, 1), (22, 1), (23, 1), (25, 1), (26, 1), (27, 1), (28, 1)
    ]
    texts_ = [t for t, _, _ in result]
    assert texts_[0].startswith("CREATE TABLE orders (") and texts_[0].endswith("'json.ignore-parse-errors' = 'true'\n)")
    assert "'topic' = 'orders;v1'" in texts_[0]
    assert texts_[1] == (
        "CREATE TABLE sink WITH ('connector' = 'filesystem', 'path' = '/tmp/out', 'format' = 'csv')\n"
        "LIKE orders (EXCLUDING ALL)"
    )
    assert texts_[2:] == [
        "SET 'pipeline.name' = 'orders; to lake'",
        "SET 'table.exec.state.ttl' = '1 h'",
        "BEGIN STATEMENT SET",  # sqlparse would merge these four into one statement
        "INSERT INTO sink SELECT order_id, price FROM orders WHERE price > 10",
        "INSERT INTO sink SELECT order_id, price * 2 FROM orders",  # trailing comment trimmed
        "END",
    ]


def test_seed_like_pipeline_in_one_arg():
    arg = (
        "CREATE TABLE src (id BIGINT, name STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '10'); "
        "CREATE TABLE snk (id BIGINT, name STRING) WITH ('connector' = 'print'); "
        "INSERT INTO snk SELECT id, name FROM src"
    )
    statements = split_statements(arg, Origin("arg 1"))
    assert [s.text.split(" ")[0:3] for s in statements] == [
        ["CREATE", "TABLE", "src"],
        ["CREATE", "TABLE", "snk"],
        ["INSERT", "INTO", "snk"],
    ]
    assert [str(s.origin) for s in statements] == ["arg 1:1:1", "arg 1:1:100", "arg 1:1:172"]
    assert arg[99:].startswith("CREATE TABLE snk") and arg[171:].startswith("INSERT")


def test_dollar_signs_and_begin_end_are_plain_text():
    assert texts("SELECT '$$'; SELECT $$ ; BEGIN; END") == ["SELECT '$$'", "SELECT $$", "BEGIN", "END"]


@pytest.mark.parametrize(
    "script, line, column, what",
    [
        ("SELECT 1;\nSELECT 'abc;\nSELECT 2;", 2, 8, "unterminated string literal"),
        ("SELECT 1; SELECT `abc", 1, 18, "unterminated backtick-quoted identifier"),
        ('SELECT "abc', 1, 8, "unterminated double-quoted identifier"),
        ("SELECT 1;\n  /* never closed; SELECT 2;", 2, 3, "unterminated block comment"),
        ("SELECT 'it''s", 1, 8, "unterminated string literal"),
    ],
)
def test_unterminated_literals_and_comments_raise_with_origin(script, line, column, what):
    with pytest.raises(PipelineError) as info:
        split_statements(script, Origin("t.sql"))
    err = info.value
    assert what in err.message
    assert err.origin == Origin("t.sql", line, column)
    assert err.hint
    assert str(err).startswith(f"t.sql:{line}:{column}:")
