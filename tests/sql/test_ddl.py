"""CREATE TABLE: the Flink DDL grammar, validation, and error positions."""
from __future__ import annotations

import pytest

from job.errors import Origin, PipelineError
from job.sql.parse import parse_statement
from job.sql.statements import Column, CreateTable, StatementText, Watermark

USERS = """CREATE TABLE users (
  uid STRING,
  accountId STRING,
  id INT,
  fullName STRING,
  op STRING,
  eventTime TIMESTAMP(3) METADATA,
  properties MAP<STRING, STRING> METADATA ,
  topic STRING METADATA VIRTUAL,
  sequenceId BIGINT METADATA VIRTUAL,
  PRIMARY KEY (uid) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'users',
  'key.format' = 'raw',
  'value.format' = 'json',
  'properties.bootstrap.servers' = 'localhost:9092'
)"""

USER_FAVORITE_COLOR = """CREATE TABLE user_favorite_color (
  userUid STRING,
  favoriteColor STRING,
  PRIMARY KEY (userUid) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'user_favorite_color',
  'key.format' = 'raw',
  'value.format' = 'json',
  'properties.bootstrap.servers' = 'localhost:9092'
)"""

WITH = "WITH ('connector' = 'datagen')"


def table(text: str, origin: Origin = Origin("p.sql")) -> CreateTable:
    result = parse_statement(StatementText(text, origin))
    assert isinstance(result, CreateTable)
    return result


def fail(text: str, origin: Origin = Origin("p.sql")) -> PipelineError:
    with pytest.raises(PipelineError) as info:
        parse_statement(StatementText(text, origin))
    err = info.value
    assert err.statement == text
    return err


def at(text: str, line: int, column: int) -> str:
    """The text from 1-based (line, column) on, to check what an error points at."""
    return text.split("\n")[line - 1][column - 1 :]


def assert_error(text: str, line: int, column: int, message: str, token: str = "") -> PipelineError:
    err = fail(text)
    assert message in err.message, err.message
    assert (err.origin.source, err.origin.line, err.origin.column) == ("p.sql", line, column), str(err)
    assert at(text, line, column).startswith(token)
    return err


# --------------------------------------------------------------------------- seed tables


def test_seed_users_table():
    t = table(USERS)
    assert t.name == "users"
    assert [c.name for c in t.columns] == [
        "uid", "accountId", "id", "fullName", "op", "eventTime", "properties", "topic", "sequenceId",
    ]
    assert t.column("uid") == Column("uid", "string", "STRING", nullable=False)  # key ⇒ NOT NULL
    assert t.column("id") == Column("id", "int", "INT")
    assert t.column("eventTime") == Column(
        "eventTime", "timestamp", "TIMESTAMP(3)", kind="metadata", metadata_key="eventTime",
    )
    assert t.column("properties") == Column(
        "properties", "map<string,string>", "MAP<STRING, STRING>", kind="metadata", metadata_key="properties",
    )
    assert t.column("topic") == Column(
        "topic", "string", "STRING", kind="metadata", metadata_key="topic", virtual=True,
    )
    assert t.column("sequenceId").virtual and t.column("sequenceId").spark_type == "bigint"
    assert [c.name for c in t.physical_columns] == ["uid", "accountId", "id", "fullName", "op"]
    assert [c.name for c in t.columns if c.is_persisted] == [
        "uid", "accountId", "id", "fullName", "op", "eventTime", "properties",
    ]
    assert t.primary_key == ("uid",)
    assert t.watermark is None and t.partitioned_by == ()
    assert not t.temporary and not t.if_not_exists
    assert dict(t.options) == {
        "connector": "upsert-kafka",
        "topic": "users",
        "key.format": "raw",
        "value.format": "json",
        "properties.bootstrap.servers": "localhost:9092",
    }
    assert list(t.options) == list(t.option_origins)
    assert t.option_origins["connector"] == Origin("p.sql", 13, 3)
    assert t.option_origins["properties.bootstrap.servers"] == Origin("p.sql", 17, 3)
    assert t.source == StatementText(USERS, Origin("p.sql"))


def test_seed_user_favorite_color_table():
    t = table(USER_FAVORITE_COLOR)
    assert t.name == "user_favorite_color"
    assert t.columns == (
        Column("userUid", "string", "STRING", nullable=False),
        Column("favoriteColor", "string", "STRING"),
    )
    assert t.primary_key == ("userUid",)
    assert t.options["topic"] == "user_favorite_color"


def test_option_origins_follow_the_statement_origin():
    t = table(USERS, Origin("pipeline.sql", 40, 1))
    assert t.option_origins["topic"] == Origin("pipeline.sql", 53, 3)


# --------------------------------------------------------------------------- names and clauses


def test_temporary_if_not_exists_and_qualified_names():
    t = table(f"create temporary table if not exists cat.db.`my.table` (`a b` INT) {WITH}")
    assert t.temporary and t.if_not_exists
    assert t.name == "cat.db.`my.table`"  # a dotted part stays quoted, so splitting is unambiguous
    assert t.columns[0].name == "a b"
    assert table(f"CREATE TABLE db.t (a INT) {WITH}").name == "db.t"
    assert table(f"CREATE TABLE `Users` (a INT) {WITH}").name == "Users"


def test_identifiers_keep_their_case_and_keywords_do_not_care():
    t = table("create table MyTable (MyCol int) with ('Connector' = 'X')")
    assert t.name == "MyTable" and t.columns[0].name == "MyCol"
    assert t.options == {"Connector": "X"}


def test_comments_strings_and_escapes():
    t = table(
        "CREATE TABLE t ( -- line comment\n"
        "  a STRING COMMENT 'it''s a, (tricky) comment', /* block, ) */\n"
        "  b INT\n"
        ") COMMENT 'table comment' WITH ('k' = 'v''s', 'empty' = '')"
    )
    assert t.columns[0].comment == "it's a, (tricky) comment"
    assert [c.name for c in t.columns] == ["a", "b"]
    assert t.options == {"k": "v's", "empty": ""}


def test_not_null_columns():
    t = table(f"CREATE TABLE t (a INT NOT NULL, b STRING NULL, c ARRAY<INT> NOT NULL) {WITH}")
    assert [c.nullable for c in t.columns] == [False, True, False]
    assert t.column("a").flink_type == "INT NOT NULL"


def test_partitioned_by():
    t = table(f"CREATE TABLE t (a INT, dt STRING, hr STRING) PARTITIONED BY (dt, HR) {WITH}")
    assert t.partitioned_by == ("dt", "hr")  # stored with the declared spelling


def test_empty_with_clause_is_accepted():
    # Missing connector options are the connector layer's business.
    assert table("CREATE TABLE t (a INT) WITH ()").options == {}


# --------------------------------------------------------------------------- column kinds


def test_computed_columns_keep_the_expression_verbatim():
    t = table(
        "CREATE TABLE t (\n"
        "  a INT,\n"
        "  b AS a + 1,\n"
        "  c AS COALESCE(CAST(a AS STRING), 'x, (y)') COMMENT 'the c',\n"
        "  d AS MAP['k', a],\n"
        "  e AS CASE WHEN a > 1 THEN 'comment' ELSE \"q\" END\n"
        f") {WITH}"
    )
    b, c, d, e = t.columns[1:]
    assert b == Column("b", "", "", kind="computed", expression="a + 1")
    assert c.expression == "COALESCE(CAST(a AS STRING), 'x, (y)')" and c.comment == "the c"
    assert d.expression == "MAP['k', a]"
    assert e.expression == "CASE WHEN a > 1 THEN 'comment' ELSE \"q\" END"
    assert not any(col.is_persisted for col in t.columns[1:])


def test_metadata_columns():
    t = table(
        "CREATE TABLE t (\n"
        "  ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,\n"
        "  off BIGINT METADATA FROM 'offset',\n"
        "  headers MAP<STRING, BYTES> METADATA COMMENT 'all headers',\n"
        "  `partition` INT METADATA VIRTUAL\n"
        f") {WITH}"
    )
    ts, off, headers, partition = t.columns
    assert ts == Column("ts", "timestamp", "TIMESTAMP_LTZ(3)", kind="metadata", metadata_key="timestamp", virtual=True)
    assert (off.metadata_key, off.virtual, off.is_persisted) == ("offset", False, True)
    assert (headers.metadata_key, headers.comment) == ("headers", "all headers")
    assert (partition.name, partition.metadata_key, partition.virtual) == ("partition", "partition", True)


def test_primary_key_forms():
    inline = table(f"CREATE TABLE t (id BIGINT PRIMARY KEY NOT ENFORCED, v STRING) {WITH}")
    assert inline.primary_key == ("id",) and not inline.column("id").nullable
    named = table(f"CREATE TABLE t (id BIGINT CONSTRAINT pk PRIMARY KEY NOT ENFORCED COMMENT 'x') {WITH}")
    assert named.primary_key == ("id",) and named.column("id").comment == "x"
    composite = table(f"CREATE TABLE t (a INT, b INT, c INT, CONSTRAINT pk PRIMARY KEY (b, A) NOT ENFORCED) {WITH}")
    assert composite.primary_key == ("b", "a")
    assert [c.nullable for c in composite.columns] == [False, False, True]
    # The key may come before the columns it names.
    assert table(f"CREATE TABLE t (PRIMARY KEY (a) NOT ENFORCED, a INT) {WITH}").primary_key == ("a",)


# --------------------------------------------------------------------------- watermarks


@pytest.mark.parametrize(
    "expression, delay",
    [
        ("ts - INTERVAL '5' SECOND", "5 seconds"),
        ("ts - INTERVAL '5' SECONDS", "5 seconds"),
        ("ts - INTERVAL '1' SECOND", "1 second"),
        ("ts - INTERVAL '0.5' SECOND", "500 milliseconds"),
        ("ts - INTERVAL '1.5' MINUTE", "90 seconds"),
        ("ts - INTERVAL '2' MINUTE", "2 minutes"),
        ("ts - INTERVAL '3' HOUR", "3 hours"),
        ("ts - INTERVAL '1' DAY", "1 day"),
        ("ts - INTERVAL '250' MILLISECOND", "250 milliseconds"),
        ("ts - interval '10' second", "10 seconds"),
        ("ts - INTERVAL 7 SECOND", "7 seconds"),
        ("ts - INTERVAL '0' SECOND", "0 seconds"),
        ("TS - INTERVAL '5' SECOND", "5 seconds"),
        ("(ts - INTERVAL '5' SECOND)", "5 seconds"),
        ("ts", "0 seconds"),
        ("`ts`", "0 seconds"),
    ],
)
def test_watermark_delays(expression, delay):
    t = table(f"CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS {expression}) {WITH}")
    assert t.watermark == Watermark("ts", expression, delay)


def test_watermark_on_computed_and_metadata_columns():
    computed = table(
        "CREATE TABLE t (ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), "
        f"WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) {WITH}"
    )
    assert computed.watermark.column == "ts"
    metadata = table(
        "CREATE TABLE t (eventTime TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', "
        f"WATERMARK FOR EventTime AS EventTime) {WITH}"
    )
    assert metadata.watermark == Watermark("eventTime", "EventTime", "0 seconds")


# --------------------------------------------------------------------------- errors


def test_missing_with_clause():
    """Raised when the table is declared outside an Iceberg catalog (job.catalog), where
    Flink allows a CREATE TABLE without WITH."""
    from job.catalog import Catalog

    text = "CREATE TABLE t (\n  a INT\n)"
    with pytest.raises(PipelineError) as info:
        Catalog().add_table(parse_statement(StatementText(text, Origin("p.sql"))))
    err = info.value
    assert "missing WITH clause" in err.message and err.statement == text and "connector" in err.hint
    assert (err.origin.source, err.origin.line, err.origin.column) == ("p.sql", 3, 2)


def test_misspelled_with():
    err = assert_error("CREATE TABLE t (a INT) WTIH ('k' = 'v')", 1, 24, "expected 'WITH' but found 'WTIH'", "WTIH")
    assert "connector" in err.hint


def test_missing_closing_parenthesis():
    text = "CREATE TABLE t (\n  a INT\n  WITH ('k' = 'v')"
    assert_error(text, 3, 3, "expected ',' or ')' but found 'WITH'", "WITH")


def test_truncated_statement_points_after_the_last_token():
    text = "CREATE TABLE t (\n  a INT,   -- trailing comment"
    assert_error(text, 2, 9, "expected a column definition but found end of statement")


@pytest.mark.parametrize(
    "text, line, column, message, token",
    [
        ("CREATE TABLE t () WITH ('k'='v')", 1, 17, "expected a column definition but found ')'", ")"),
        ("CREATE TABLE t (a INT,) WITH ('k'='v')", 1, 23, "expected a column definition but found ')'", ")"),
        ("CREATE TABLE t (a, b INT) WITH ('k'='v')", 1, 18, "expected a type for column 'a' but found ','", ","),
        ("CREATE TABLE t (\n  a INT,\n  b STRNG\n) WITH ('k'='v')", 3, 5, "unknown type 'STRNG'", "STRNG"),
        ("CREATE TABLE t (a DECIMAL(50, 2)) WITH ('k'='v')", 1, 27, "DECIMAL precision", "50"),
        ("CREATE TABLE t (`` INT) WITH ('k'='v')", 1, 17, "empty backquoted identifier", "``"),
        ("CREATE TABLE (a INT) WITH ('k'='v')", 1, 14, "expected a table name but found '('", "("),
        ("CREATE TABLE t a INT WITH ('k'='v')", 1, 16, "expected '(' and the column list but found 'a'", "a"),
        ("CREATE TABLE t (a INT) WITH 'k'='v'", 1, 29, "expected '(' after WITH but found string 'k'", "'k'"),
        ("CREATE TABLE t (a INT) WITH ('k'='v' 'x'='y')", 1, 38,
         "expected ',' or ')' in the WITH options but found string 'x'", "'x'"),
        ("CREATE TABLE t (a INT) WITH ('k'='v',)", 1, 38, "expected an option key but found ')'", ")"),
        ("CREATE TABLE t (a INT) WITH ('k' 'v')", 1, 34, "expected '=' after option 'k' but found string 'v'", "'v'"),
        ("CREATE TABLE t (a INT) WITH ('k'='v') extra", 1, 39, "unexpected 'extra' after the WITH clause", "extra"),
        ("CREATE TABLE t (a INT) PARTITIONED (a) WITH ('k'='v')", 1, 36, "expected 'BY' but found '('", "("),
        ("CREATE TABLE t (a INT METADATA FROM offset) WITH ('k'='v')", 1, 37,
         "expected a metadata key string after FROM but found 'offset'", "offset"),
        ("CREATE TABLE t (a INT COMMENT) WITH ('k'='v')", 1, 30,
         "expected a comment string after COMMENT but found ')'", ")"),
        ("CREATE TABLE t (a AS) WITH ('k'='v')", 1, 21,
         "expected an expression for computed column 'a' but found ')'", ")"),
        ("CREATE TABLE t (a INT) WITH ('k'='v\n)", 1, 34, "unterminated string literal", "'v"),
        ("CREATE TABLE t (a INT /* oops) WITH ('k'='v')", 1, 23, "unterminated comment", "/*"),
        ("CREATE TABLE t (`a INT) WITH ('k'='v')", 1, 17, "unterminated backquoted identifier", "`a"),
        ("CREATE TABLE t (a INT, UNIQUE (a)) WITH ('k'='v')", 1, 24, "UNIQUE constraints are not supported", "UNIQUE"),
        ("CREATE TABLE t (a INT, CONSTRAINT u UNIQUE (a)) WITH ('k'='v')", 1, 37,
         "UNIQUE constraints are not supported", "UNIQUE"),
    ],
)
def test_syntax_errors(text, line, column, message, token):
    assert_error(text, line, column, message, token)


def test_duplicate_columns_are_found_without_case():
    text = "CREATE TABLE t (\n  id INT,\n  name STRING,\n  ID BIGINT\n) WITH ('k'='v')"
    assert_error(text, 4, 3, "duplicate column 'ID' (first defined at line 2, column 3)", "ID")


def test_duplicate_option_keys():
    text = "CREATE TABLE t (a INT) WITH (\n  'topic' = 'a',\n  'topic' = 'b'\n)"
    err = assert_error(text, 3, 3, "duplicate option 'topic' (first set at line 2, column 3)", "'topic'")
    assert err.option == "topic"


@pytest.mark.parametrize(
    "options, column, found",
    [("connector = 'kafka'", 30, "'connector'"), ("`connector` = 'kafka'", 30, "'`connector`'"),
     ("\"connector\" = 'kafka'", 30, "'\"connector\"'")],
)
def test_option_keys_must_be_string_literals(options, column, found):
    err = assert_error(f"CREATE TABLE t (a INT) WITH ({options})", 1, column,
                       f"option keys must be 'single-quoted' string literals, found {found}")
    assert "'connector' = 'kafka'" in err.hint


def test_option_values_must_be_string_literals():
    err = assert_error("CREATE TABLE t (a INT) WITH ('parallelism' = 4)", 1, 46,
                       "option values must be 'single-quoted' string literals, found '4'", "4")
    assert err.option == "parallelism"


def test_primary_key_column_must_exist():
    text = "CREATE TABLE t (\n  uid STRING,\n  PRIMARY KEY (uid, accountId) NOT ENFORCED\n) WITH ('k'='v')"
    err = assert_error(text, 3, 21, "PRIMARY KEY column 'accountId' is not a column of the table", "accountId")
    assert err.hint == "columns: uid."


def test_primary_key_column_suggestion():
    text = "CREATE TABLE t (userUid STRING, PRIMARY KEY (userId) NOT ENFORCED) WITH ('k'='v')"
    err = assert_error(text, 1, 46, "PRIMARY KEY column 'userId'", "userId")
    assert err.hint == "did you mean 'userUid'?"


def test_primary_key_requires_not_enforced():
    text = "CREATE TABLE t (\n  uid STRING,\n  PRIMARY KEY (uid)\n) WITH ('k'='v')"
    err = assert_error(text, 4, 1, "PRIMARY KEY must be declared NOT ENFORCED, found ')'", ")")
    assert "NOT ENFORCED" in err.hint and "Flink" in err.hint


@pytest.mark.parametrize(
    "text, column, message, token",
    [
        ("CREATE TABLE t (a INT, PRIMARY KEY (a) ENFORCED) WITH ('k'='v')", 40,
         "PRIMARY KEY must be declared NOT ENFORCED, found 'ENFORCED'", "ENFORCED"),
        ("CREATE TABLE t (a INT, PRIMARY KEY (a) NOT NULL) WITH ('k'='v')", 44,
         "expected 'ENFORCED' but found 'NULL'", "NULL"),
        ("CREATE TABLE t (a INT PRIMARY KEY, b INT) WITH ('k'='v')", 34,
         "PRIMARY KEY must be declared NOT ENFORCED, found ','", ","),
        ("CREATE TABLE t (a INT, PRIMARY KEY () NOT ENFORCED) WITH ('k'='v')", 37,
         "expected a primary key column but found ')'", ")"),
        ("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, A) NOT ENFORCED) WITH ('k'='v')", 47,
         "column 'A' is listed twice", "A"),
        ("CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED, PRIMARY KEY (a) NOT ENFORCED) WITH ('k'='v')", 49,
         "a table can have only one PRIMARY KEY", "PRIMARY"),
        ("CREATE TABLE t (a INT, m STRING METADATA, PRIMARY KEY (m) NOT ENFORCED) WITH ('k'='v')", 56,
         "PRIMARY KEY column 'm' is a metadata column", "m"),
        ("CREATE TABLE t (a INT, c AS a + 1, PRIMARY KEY (c) NOT ENFORCED) WITH ('k'='v')", 49,
         "PRIMARY KEY column 'c' is a computed column", "c"),
    ],
)
def test_primary_key_errors(text, column, message, token):
    assert_error(text, 1, column, message, token)


def test_watermark_column_must_exist():
    text = "CREATE TABLE t (\n  ts TIMESTAMP(3),\n  WATERMARK FOR event_time AS event_time\n) WITH ('k'='v')"
    assert_error(text, 3, 17, "WATERMARK column 'event_time' is not a column of the table", "event_time")


@pytest.mark.parametrize(
    "watermark, column, message, token",
    [
        ("WATERMARK FOR s AS s", 58, "watermark column 's' has type STRING; it must be TIMESTAMP(3)", "s AS"),
        ("WATERMARK FOR ts AS ts + INTERVAL '5' SECOND", 64, "unsupported watermark expression", "ts +"),
        ("WATERMARK FOR ts AS s - INTERVAL '5' SECOND", 64, "unsupported watermark expression", "s -"),
        ("WATERMARK FOR ts AS ts - INTERVAL '5' SECOND - INTERVAL '1' SECOND", 64,
         "unsupported watermark expression", "ts -"),
        ("WATERMARK FOR ts AS TO_TIMESTAMP(ts)", 64, "unsupported watermark expression", "TO_TIMESTAMP"),
        ("WATERMARK FOR ts AS ts - INTERVAL '5' WEEK", 82, "unsupported interval unit 'WEEK'", "WEEK"),
        ("WATERMARK FOR ts AS ts - INTERVAL '1:30' MINUTE", 78, "invalid interval value '1:30'", "'1:30'"),
        ("WATERMARK FOR ts AS ts - INTERVAL '-5' SECOND", 78, "invalid interval value '-5'", "'-5'"),
        ("WATERMARK FOR ts AS ts - INTERVAL '0.0001' SECOND", 78, "finer than a millisecond", "'0.0001'"),
        ("WATERMARK FOR ts AS", 63, "expected a watermark expression but found ')'", ")"),
        ("WATERMARK FOR ts ts", 61, "expected 'AS' but found 'ts'", "ts"),
        ("WATERMARK FOR r.ts AS r.ts", 59, "a watermark on a nested field is not supported", "."),
        ("WATERMARK FOR ts AS ts, WATERMARK FOR ts AS ts", 68, "a table can have only one WATERMARK", "WATERMARK"),
    ],
)
def test_watermark_errors(watermark, column, message, token):
    text = f"CREATE TABLE t (s STRING, ts TIMESTAMP(3), {watermark}) WITH ('k'='v')"
    assert_error(text, 1, column, message, token)


def test_partition_columns_must_exist_and_be_unique():
    text = "CREATE TABLE t (a INT, dt STRING)\nPARTITIONED BY (dt, hour)\nWITH ('k'='v')"
    assert_error(text, 2, 21, "PARTITIONED BY column 'hour' is not a column of the table", "hour")
    text = "CREATE TABLE t (a INT, dt STRING)\nPARTITIONED BY (dt, DT)\nWITH ('k'='v')"
    assert_error(text, 2, 21, "column 'DT' is listed twice", "DT")


def test_like_parses_the_base_name_and_flinks_merge_strategies():
    derived = table("CREATE TABLE t (a INT) WITH ('k'='v') LIKE base (EXCLUDING ALL INCLUDING GENERATED OVERWRITING OPTIONS)")
    assert derived.like.table == "base"
    assert derived.like.strategies == {"CONSTRAINTS": "EXCLUDING", "DISTRIBUTION": "EXCLUDING", "GENERATED": "INCLUDING",
                                       "METADATA": "EXCLUDING", "OPTIONS": "OVERWRITING", "PARTITIONS": "EXCLUDING",
                                       "WATERMARKS": "EXCLUDING"}
    # Flink's default: INCLUDING ALL OVERWRITING OPTIONS; INCLUDING ALL makes options INCLUDING too
    assert table("CREATE TABLE t LIKE base").like.strategies["OPTIONS"] == "OVERWRITING"
    assert table("CREATE TABLE t LIKE base (INCLUDING ALL)").like.strategies["OPTIONS"] == "INCLUDING"


@pytest.mark.parametrize("text, column, message, token", [
    ("CREATE TABLE t LIKE base (OVERWRITING ALL)", 27, "illegal merging strategy 'OVERWRITING' for 'ALL' option", "OVERWRITING"),
    ("CREATE TABLE t LIKE base (INCLUDING OPTIONS, EXCLUDING OPTIONS)", 56, "declared only once", "OPTIONS"),
    ("CREATE TABLE t LIKE base (KEEPING ALL)", 27, "expected INCLUDING, EXCLUDING or OVERWRITING", "KEEPING"),
    ("CREATE TABLE t WITH ('k'='v')", 16, "expected '(' and the column list", "WITH"),
])
def test_like_clause_errors(text, column, message, token):
    assert_error(text, 1, column, message, token)
def test_create_table_as_select_is_unsupported():
    err = assert_error("CREATE TABLE t WITH ('k'='v') AS SELECT 1", 1, 16,
                       "expected '(' and the column list but found 'WITH'", "WITH")
    assert "AS SELECT is not supported" in err.hint


def test_error_origin_is_in_the_users_file():
    # The statement starts on line 10, column 5 of the user's file.
    text = "CREATE TABLE t (a INT, PRIMARY KEY (b) NOT ENFORCED) WITH ('k'='v')"
    err = fail(text, Origin("pipeline.sql", 10, 5))
    assert str(err.origin) == "pipeline.sql:10:41"
    text = "CREATE TABLE t (\n  a INT,\n  PRIMARY KEY (b) NOT ENFORCED) WITH ('k'='v')"
    err = fail(text, Origin("pipeline.sql", 10, 5))
    assert str(err.origin) == "pipeline.sql:12:16"
    assert err.render().startswith('pipeline.sql:12:16: in statement "CREATE TABLE t (":')
