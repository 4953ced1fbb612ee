"""Flink type syntax → Spark DDL type strings."""
from __future__ import annotations

import pytest

from job.errors import Origin, PipelineError
from job.sql.tokens import TokenStream
from job.sql.types import parse_flink_type, parse_type, to_spark_type


@pytest.mark.parametrize(
    "flink, spark",
    [
        ("STRING", "string"),
        ("string", "string"),
        ("VARCHAR(255)", "string"),
        ("varchar", "string"),
        ("CHAR(3)", "string"),
        ("BOOLEAN", "boolean"),
        ("TINYINT", "tinyint"),
        ("SMALLINT", "smallint"),
        ("INT", "int"),
        ("Integer", "int"),
        ("BIGINT", "bigint"),
        ("FLOAT", "float"),
        ("DOUBLE", "double"),
        ("DOUBLE PRECISION", "double"),
        ("DECIMAL", "decimal(10,0)"),
        ("DECIMAL(5)", "decimal(5,0)"),
        ("DECIMAL(10, 2)", "decimal(10,2)"),
        ("DEC(38,38)", "decimal(38,38)"),
        ("NUMERIC(12,4)", "decimal(12,4)"),
        ("DATE", "date"),
        ("TIME", "string"),
        ("TIME(3)", "string"),
        ("TIME(0) WITHOUT TIME ZONE", "string"),
        ("TIMESTAMP", "timestamp"),
        ("TIMESTAMP(3)", "timestamp"),
        ("timestamp(9) without time zone", "timestamp"),
        ("TIMESTAMP_LTZ", "timestamp"),
        ("TIMESTAMP_LTZ(3)", "timestamp"),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "timestamp"),
        ("BYTES", "binary"),
        ("BINARY(16)", "binary"),
        ("VARBINARY(100)", "binary"),
        ("ARRAY<INT>", "array<int>"),
        ("INT ARRAY", "array<int>"),
        ("ARRAY<ARRAY<STRING>>", "array<array<string>>"),
        ("STRING ARRAY ARRAY", "array<array<string>>"),
        ("MAP<STRING, BIGINT>", "map<string,bigint>"),
        ("MAP<STRING, ARRAY<MAP<INT, DOUBLE>>>", "map<string,array<map<int,double>>>"),
        ("MULTISET<STRING>", "map<string,int>"),
        ("STRING MULTISET", "map<string,int>"),
        ("ROW<a INT, b STRING>", "struct<a:int,b:string>"),
        ("ROW(a INT, b STRING)", "struct<a:int,b:string>"),
        ("row<`a b` INT, `c``d` STRING>", "struct<`a b`:int,`c``d`:string>"),
        ("ROW<a INT COMMENT 'the a', b STRING 'desc'>", "struct<a:int,b:string>"),
        ("ROW<a INT NOT NULL, b ROW<c DECIMAL(5,2)>>", "struct<a:int,b:struct<c:decimal(5,2)>>"),
        ("ROW<>", "struct<>"),
        ("ARRAY<INT NOT NULL> NOT NULL", "array<int>"),
        ("MAP<STRING NOT NULL, INT NULL>", "map<string,int>"),
        ("INT NOT NULL ARRAY", "array<int>"),
        ("  BIGINT  /* comment */ ", "bigint"),
    ],
)
def test_to_spark_type(flink, spark):
    assert to_spark_type(flink) == spark


@pytest.mark.parametrize(
    "flink, nullable",
    [
        ("INT", True),
        ("INT NULL", True),
        ("INT NOT NULL", False),
        ("int not null", False),
        ("ARRAY<INT NOT NULL>", True),
        ("ARRAY<INT> NOT NULL", False),
        ("INT NOT NULL ARRAY", True),          # the element is NOT NULL, the array is not
        ("INT ARRAY NOT NULL", False),
        ("ROW<a INT> NOT NULL", False),
    ],
)
def test_nullability(flink, nullable):
    assert parse_flink_type(flink).nullable is nullable


def test_parsed_type_keeps_text_as_written():
    parsed = parse_flink_type("Decimal(10, 2) NOT NULL")
    assert parsed.text == "Decimal(10, 2) NOT NULL"
    assert parsed.spark_type == "decimal(10,2)"


def test_parse_type_stops_at_the_end_of_the_type():
    ts = TokenStream("MAP<STRING, INT> METADATA FROM 'x'", Origin("t"))
    parsed = parse_type(ts)
    assert parsed.text == "MAP<STRING, INT>"
    assert ts.peek().value == "METADATA"


def error(flink: str, origin: Origin | None = None) -> PipelineError:
    with pytest.raises(PipelineError) as info:
        to_spark_type(flink, origin)
    return info.value


@pytest.mark.parametrize(
    "flink, column, message",
    [
        ("STRNG", 1, "unknown type 'STRNG'"),
        ("ARRAY<STRNG>", 7, "unknown type 'STRNG'"),
        ("DECIMAL(39)", 9, "DECIMAL precision must be between 1 and 38"),
        ("DECIMAL(0)", 9, "DECIMAL precision must be between 1 and 38"),
        ("DECIMAL(5, 6)", 12, "DECIMAL scale must be between 0 and the precision (5)"),
        ("DECIMAL(5, 2, 1)", 13, "expected ')' to close the DECIMAL parameters but found ','"),
        ("DECIMAL(a)", 9, "expected an integer parameter for DECIMAL but found 'a'"),
        ("DECIMAL(1.5)", 9, "expected an integer parameter for DECIMAL but found '1.5'"),
        ("VARCHAR(0)", 9, "VARCHAR length must be at least 1"),
        ("TIMESTAMP(10)", 11, "TIMESTAMP precision must be between 0 and 9"),
        ("TIMESTAMP WITH TIME ZONE", 11, "TIMESTAMP WITH TIME ZONE is not supported by Flink"),
        ("TIMESTAMP WITH LOCAL ZONE", 22, "expected 'TIME ZONE' but found 'ZONE'"),
        ("TIMESTAMP WITHOUT ZONE", 19, "expected 'TIME ZONE' but found 'ZONE'"),
        ("TIME WITH TIME ZONE", 6, "TIME WITH TIME ZONE is not a Flink type"),
        ("ARRAY<INT", 10, "expected '>' to close the ARRAY but found end of statement"),
        ("ARRAY(INT)", 6, "expected '<' but found '('"),
        ("MAP<INT>", 8, "expected ',' between the MAP key and value types but found '>'"),
        ("ROW", 4, "expected '<' or '(' after ROW but found end of statement"),
        ("ROW<a INT, a STRING>", 12, "duplicate ROW field 'a'"),
        ("ROW<a INT b STRING>", 11, "expected ',' or '>' in the ROW but found 'b'"),
        ("ROW<INT>", 8, "expected a type but found '>'"),
        ("ROW<'a' INT>", 5, "expected a ROW field name but found string 'a'"),
        ("INT NOT", 8, "expected 'NULL' but found end of statement"),
        ("INT foo", 5, "unexpected 'foo' after the type"),
        ("", 1, "expected a type but found end of statement"),
        ("42", 1, "expected a type but found '42'"),
        ("RAW('a', 'b')", 1, "Flink type RAW has no Spark equivalent"),
        ("INTERVAL DAY", 1, "Flink type INTERVAL has no Spark equivalent"),
    ],
)
def test_errors_point_at_the_offending_token(flink, column, message):
    err = error(flink)
    assert message in err.message
    assert (err.origin.line, err.origin.column) == (1, column)


@pytest.mark.parametrize(
    "flink, suggestion",
    [("STRNG", "STRING"), ("TEXT", "STRING"), ("LONG", "BIGINT"), ("BIGNT", "BIGINT"),
     ("TIMESTAMP_TZ", "TIMESTAMP_LTZ"), ("bool", "BOOLEAN"), ("DATETIME", "TIMESTAMP")],
)
def test_unknown_types_suggest_a_known_one(flink, suggestion):
    assert error(flink).hint == f"did you mean {suggestion}?"


def test_unknown_type_without_a_close_match_lists_the_types():
    hint = error("QQQQ").hint
    assert hint.startswith("supported types: STRING, ")


def test_origin_maps_into_the_user_file():
    err = error("ROW<a INT,\n    b STRNG>", Origin("p.sql", 7, 20))
    assert str(err.origin) == "p.sql:8:7"


def test_deep_nesting_is_rejected():
    with pytest.raises(PipelineError, match="nested too deeply"):
        to_spark_type("ARRAY<" * 100 + "INT" + ">" * 100)
    # Reasonable nesting is fine.
    assert to_spark_type("ARRAY<" * 20 + "INT" + ">" * 20) == "array<" * 20 + "int" + ">" * 20
