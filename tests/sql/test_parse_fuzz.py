"""Malformed input never crashes the parser: it returns a statement/None or raises PipelineError."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from job.errors import Origin, PipelineError
from job.sql.parse import parse_statement
from job.sql.statements import CreateTable, CreateView, Insert, SetOption, StatementText
from job.sql.types import parse_flink_type

VALID = [
    """CREATE TABLE users (
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
)""",
    """CREATE TEMPORARY TABLE IF NOT EXISTS cat.db.`my events` (
  `id` BIGINT NOT NULL COMMENT 'the id',
  amount DECIMAL(10, 2),
  tags ARRAY<STRING>, scores INT ARRAY, bag MULTISET<STRING>,
  nested ROW<a INT, `b c` ROW(d STRING COMMENT 'x')>,
  ts TIMESTAMP(3) WITHOUT TIME ZONE,
  ltz TIMESTAMP(3) WITH LOCAL TIME ZONE,
  part AS UPPER(CAST(id AS STRING)) COMMENT 'computed',
  m AS MAP['a', 1],
  off BIGINT METADATA FROM 'offset' VIRTUAL,
  -- a comment
  CONSTRAINT pk PRIMARY KEY (`id`) NOT ENFORCED,
  /* block */ WATERMARK FOR ts AS ts - INTERVAL '0.5' SECOND
) COMMENT 'events' PARTITIONED BY (part) WITH ('connector' = 'kafka', 'it''s' = 'ok')""",
    "CREATE VIEW IF NOT EXISTS v (a, b) COMMENT 'x' AS SELECT a, b FROM t WHERE c = 'it''s'",
    "INSERT INTO db.t (a, b) SELECT a, b FROM users",
    "INSERT OVERWRITE TABLE t (SELECT 1)",
    "SET 'pipeline.name' = 'my job'",
    "SET table.exec.mini-batch.enabled = true",
    "EXECUTE STATEMENT SET BEGIN INSERT INTO t VALUES (1)",
    "BEGIN STATEMENT SET",
    "END",
]

TOKENS = [
    "CREATE", "TEMPORARY", "TABLE", "VIEW", "IF", "NOT", "EXISTS", "(", ")", ",", ".", "<", ">",
    "=", "-", "'x'", "'connector'", "`q`", "``", "a", "ts", "INT", "STRING", "DECIMAL", "ROW",
    "ARRAY", "MAP", "MULTISET", "TIMESTAMP", "WITH", "WITHOUT", "LOCAL", "TIME", "ZONE", "NULL",
    "PRIMARY", "KEY", "ENFORCED", "CONSTRAINT", "WATERMARK", "FOR", "AS", "INTERVAL", "'5'",
    "'0.5'", "'-1'", "SECOND", "HOUR", "METADATA", "FROM", "VIRTUAL", "COMMENT", "PARTITIONED",
    "BY", "LIKE", "INSERT", "INTO", "OVERWRITE", "SELECT", "VALUES", "SET", "RESET", "BEGIN",
    "STATEMENT", "EXECUTE", "END", "DROP", "3", "99999999999999999999", "1e999", "[", "]",
    "--", "/*", "*/", "'", "`", '"', ";", "\n", "é", "\u0663", "²", "\x00",
]

ALLOWED = (CreateTable, CreateView, SetOption, Insert, type(None))


def check(text: str) -> None:
    try:
        result = parse_statement(StatementText(text, Origin("fuzz.sql", 2, 5)))
    except PipelineError as error:
        assert error.origin is not None and error.origin.line >= 2
        assert error.statement == text
        str(error)  # rendering must not fail either
        return
    assert isinstance(result, ALLOWED)


@pytest.mark.parametrize("text", VALID)
def test_valid_inputs_parse(text):
    assert parse_statement(StatementText(text, Origin("f.sql"))) is not None or text in ("BEGIN STATEMENT SET", "END")


@pytest.mark.parametrize("text", VALID)
def test_every_truncation(text):
    for end in range(len(text) + 1):
        check(text[:end])
        check(text[end:])


@pytest.mark.parametrize("text", VALID)
def test_every_single_character_deletion(text):
    for i in range(len(text)):
        check(text[:i] + text[i + 1 :])


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_random_unicode(text):
    check(text)


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.sampled_from([" ", "", "\n"]))
def test_random_tokens(tokens, sep):
    check(sep.join(tokens))


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(VALID),
    st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(TOKENS)), min_size=1, max_size=4),
)
def test_valid_statements_with_random_tokens_inserted(text, inserts):
    for position, token in inserts:
        position %= len(text) + 1
        text = text[:position] + " " + token + " " + text[position:]
    check(text)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=20))
def test_type_parser_never_crashes(tokens):
    try:
        parse_flink_type(" ".join(tokens))
    except PipelineError:
        pass


def test_deep_nesting_is_an_error_not_a_recursion_error():
    with pytest.raises(PipelineError, match="nested too deeply"):
        parse_flink_type("ARRAY<" * 500 + "INT" + ">" * 500)
