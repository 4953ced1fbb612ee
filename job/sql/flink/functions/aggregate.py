"""Flink's aggregate functions: their result types and the engine's aggregate that
computes each (the planner evaluates them; see job/plan)."""
from __future__ import annotations

from job.sql.flink import rules
from job.sql.flink.functions import AGGREGATE, aggregate, not_supported, planned
from job.sql.types import STRING_TYPE, t

CATEGORY = "aggregate"


def _same(types):
    return types[0].nullable_as(True)


aggregate("COUNT", CATEGORY, "COUNT([ ALL ] expression | DISTINCT expression1 [, expression2]* ) / COUNT(*)",
          "The number of rows (COUNT(*)) or of non-NULL values.",
          result=lambda types: rules.COUNT_TYPE, engine="count")
aggregate("SUM", CATEGORY, "SUM([ ALL | DISTINCT ] expression)",
          "The sum of the non-NULL values; NULL when there are none. INT sums to INT (wrapping on overflow), "
          "DECIMAL(p, s) to DECIMAL(38, s).",
          result=lambda types: rules.sum_type(types[0]), engine="sum")
aggregate("AVG", CATEGORY, "AVG([ ALL | DISTINCT ] expression)",
          "The average of the non-NULL values, in the argument's type: an INT column averages to an INT "
          "(truncated), DECIMAL(p, s) to DECIMAL(38, max(6, s)).",
          result=lambda types: rules.avg_type(types[0]), engine="avg")
aggregate("MIN", CATEGORY, "MIN([ ALL | DISTINCT ] expression)", "The smallest non-NULL value.",
          result=_same, engine="min")
aggregate("MAX", CATEGORY, "MAX([ ALL | DISTINCT ] expression)", "The largest non-NULL value.",
          result=_same, engine="max")
aggregate("LISTAGG", CATEGORY, "LISTAGG(expression [, separator])",
          "The non-NULL values joined with SEPARATOR (default ','), in arrival order.",
          result=lambda types: STRING_TYPE.nullable_as(True), engine="listagg")
aggregate("FIRST_VALUE", CATEGORY, "FIRST_VALUE(expression)", "The first non-NULL value to arrive.",
          result=_same, engine="first_value")
aggregate("LAST_VALUE", CATEGORY, "LAST_VALUE(expression)", "The last non-NULL value to arrive.",
          result=_same, engine="last_value")

_STATISTICS = {
    "STDDEV_POP": "The population standard deviation of the non-NULL values",
    "STDDEV_SAMP": "The sample standard deviation of the non-NULL values (NULL for one value)",
    "VAR_POP": "The population variance of the non-NULL values",
    "VAR_SAMP": "The sample variance of the non-NULL values (NULL for one value)",
}
for _name, _what in _STATISTICS.items():
    aggregate(_name, CATEGORY, f"{_name}([ ALL | DISTINCT ] expression)",
              _what + ", computed from SUM and COUNT as Flink does, in AVG's result type: an INT column's is an "
              "INT (truncated), DECIMAL(p, s)'s a DECIMAL(38, max(6, s)).",
              result=lambda types: rules.avg_type(types[0]), engine="statistic",
              aliases=("VARIANCE",) if _name == "VAR_SAMP" else ())

aggregate("ARRAY_AGG", CATEGORY, "ARRAY_AGG([ ALL | DISTINCT ] expression [ RESPECT NULLS | IGNORE NULLS ])",
          "The values as an ARRAY, in arrival order (NULLs too, unless IGNORE NULLS); NULL when there are none.",
          result=lambda types: t("ARRAY", children=(types[0].nullable_as(True),), nullable=True), engine="array_agg")

aggregate("JSON_ARRAYAGG", CATEGORY, "JSON_ARRAYAGG(value [ { NULL | ABSENT } ON NULL ])",
          "A JSON array of the values as JSON_STRING writes them (a JSON_OBJECT / JSON_ARRAY value nested as "
          "JSON), in arrival order; NULLs left out (ABSENT ON NULL, the default) or written as null. A retraction "
          "removes the value's first occurrence. '[]' for no values.",
          result=lambda types: STRING_TYPE.nullable_as(False), engine="json_arrayagg")
aggregate("JSON_OBJECTAGG", CATEGORY, "JSON_OBJECTAGG([KEY] key VALUE value [ { NULL | ABSENT } ON NULL ])",
          "A JSON object of the rows' key/value pairs, keys sorted; a NULL value written as null (NULL ON NULL, "
          "the default) or left out. A key twice, or a NULL key, fails the query (as it fails Flink's job); a "
          "retraction removes its key when the value is the one held.",
          result=lambda types: STRING_TYPE.nullable_as(False), engine="json_objectagg")

for _name in ("COLLECT", "NTILE", "CUME_DIST",
              "PERCENT_RANK", "SINGLE_VALUE", "BIT_AND", "BIT_OR", "BIT_XOR", "ANY_VALUE", "PERCENTILE"):
    not_supported(_name, CATEGORY, kind=AGGREGATE)
not_supported("LEAD", CATEGORY, "LEAD(expression [, offset] [, default])",
              why="Flink does not run LEAD in streaming either", kind=AGGREGATE)

# Planned by name where they belong (job/plan/ranking.py, job/plan/over.py).
for _name in ("ROW_NUMBER", "RANK", "DENSE_RANK"):
    planned(_name, CATEGORY, f"{_name}() OVER (PARTITION BY … ORDER BY …)",
            "The row's rank in its partition: Top-N and deduplication (the outer query keeps rn <= N).",
            "in Flink's Top-N pattern: SELECT … FROM (SELECT …, " + _name + "() OVER (PARTITION BY … ORDER BY …) AS rn "
            "FROM t) WHERE rn <= N")
planned("LAG", CATEGORY, "LAG(expression [, offset] [, default]) OVER (…)",
        "The value OFFSET (default 1) rows before in the OVER window's order.", "with OVER (PARTITION BY … ORDER BY "
        "time)")
