"""Flink's operators and special syntax, listed with the functions (docs/functions.md):
comparison and logical operators, arithmetic operators, CASE, CAST, the value
constructors and accessors. The translator (job.sql.flink.translate) runs them; here
they are only described, with what is not supported yet."""
from __future__ import annotations

from job.sql.flink.functions import operator

_COMPARISON = [
    ("value1 = value2", "TRUE if equal; NULL if either is NULL. Values of different families need a CAST (a DATE "
                        "and a TIMESTAMP too), as in Flink."),
    ("value1 <> value2", "TRUE if not equal; NULL if either is NULL."),
    ("value1 > value2", "Greater than (NULL if either is NULL); likewise >=, <, <=."),
    ("value IS [NOT] NULL", "Whether the value is (not) NULL."),
    ("value1 IS [NOT] DISTINCT FROM value2", "Null-safe (in)equality: NULL equals NULL."),
    ("value1 [NOT] BETWEEN [ ASYMMETRIC | SYMMETRIC ] value2 AND value3",
     "Range test, both ends included; SYMMETRIC accepts the ends either way round."),
    ("string1 [NOT] LIKE string2 [ ESCAPE char ]", "SQL pattern match (% and _)."),
    ("value1 [NOT] IN (value2 [, value3]*)", "Membership in a list (NULL in the list: TRUE or NULL)."),
    ("value [NOT] IN (sub-query) / EXISTS (sub-query)", "Subquery tests, as conditions of WHERE (planned as joins)."),
]
for _sig, _doc in _COMPARISON:
    operator(_sig, "comparison", _doc)
operator("string1 [NOT] SIMILAR TO string2 [ ESCAPE char ]", "comparison", "SQL regular expression match.",
         supported=False, why="use REGEXP or LIKE")

for _sig, _doc in [("boolean1 OR boolean2", "Three-valued OR."), ("boolean1 AND boolean2", "Three-valued AND."),
                   ("NOT boolean", "Three-valued NOT."),
                   ("boolean IS [NOT] TRUE / FALSE / UNKNOWN", "Tests that are never NULL.")]:
    operator(_sig, "logical", _doc)

for _sig, _doc in [
        ("+ numeric / - numeric", "Sign; the negation of the smallest integer is itself (Java)."),
        ("numeric1 + numeric2 / - / *", "Java arithmetic: integers wrap around on overflow, DECIMAL follows Flink's "
                                         "precision rules (NULL when it does not fit), FLOAT/DOUBLE are IEEE."),
        ("numeric1 / numeric2", "INT / INT is an INT (truncated); a DOUBLE divided by 0 is ±Infinity or NaN; exact "
                                "numbers divided by 0 fail the query, as in Flink."),
        ("numeric1 % numeric2", "Remainder of exact numbers (the sign of the dividend)."),
        ("timepoint ± interval / interval ± interval / interval * numeric", "Date and time arithmetic."),
        ("string1 || string2", "Concatenation."),
]:
    operator(_sig, "arithmetic", _doc)

for _sig, _doc in [
        ("CASE value WHEN value1 [, value1b]* THEN result1 … [ELSE result] END", "Simple CASE."),
        ("CASE WHEN condition1 THEN result1 … [ELSE result] END", "Searched CASE."),
]:
    operator(_sig, "conditional", _doc)

for _sig, _doc in [
        ("CAST(value AS type)", "Flink's conversions: text to numbers and times as Flink reads them, DOUBLE to "
                                "integers saturating, TIMESTAMP_LTZ through table.local-time-zone; a failing "
                                "conversion fails the query."),
        ("TRY_CAST(value AS type)", "CAST, NULL where it fails."),
]:
    operator(_sig, "conversion", _doc)

for _sig, _doc in [
        ("ROW(value1, …) / (value1, value2, …)", "A row (fields EXPR$0, EXPR$1 …)."),
        ("ARRAY[value1, …]", "An array."),
        ("MAP[key1, value1, …]", "A map (a later key wins)."),
        ("array[index]", "1-based; NULL outside the array; a constant index below 1 is refused as in Flink."),
        ("map[key]", "NULL for a missing key."),
        ("row.field / row[position]", "A field of a row."),
]:
    operator(_sig, "value", _doc)
operator("tableName.compositeType.*", "value", "All fields of a composite value as columns.", supported=False)

operator("(timepoint1, temporal1) OVERLAPS (timepoint2, temporal2)", "temporal",
         "Whether two periods (start, end or start, interval) overlap, ends included.")
operator("value IS [NOT] JSON [ VALUE | SCALAR | ARRAY | OBJECT ]", "json",
         "Whether the text is JSON (of that kind); FALSE for NULL.")
