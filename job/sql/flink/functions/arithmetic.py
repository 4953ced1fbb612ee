"""Flink's arithmetic functions (the operators + - * / % are in the translator)."""
from __future__ import annotations

from job.sql.flink import rules
from job.sql.flink.functions import scalar
from job.sql.flink.semantics import arithmetic_sql, ieee_divide
from job.sql.flink.typed import Typed, wrap_integer
from job.sql.types import DOUBLE_TYPE, INT_TYPE, STRING_TYPE, decimal, t

CATEGORY = "arithmetic"


def _double(call, fn: str, *values):
    args = values or call.args(1)
    for i in range(len(args)):
        call.need(i, "numeric")
    inner = ", ".join(f"CAST({a.sql} AS DOUBLE)" for a in args)
    return Typed(f"{fn}({inner})", DOUBLE_TYPE.nullable_as(call.nullable()))


for _name, _spark, _doc in [("SQRT", "sqrt", "The square root of NUMERIC."),
                            ("EXP", "exp", "e raised to the power of NUMERIC."),
                            ("SIN", "sin", "The sine."), ("COS", "cos", "The cosine."), ("TAN", "tan", "The tangent."),
                            ("COT", "cot", "The cotangent."), ("ASIN", "asin", "The arc sine."),
                            ("ACOS", "acos", "The arc cosine."), ("ATAN", "atan", "The arc tangent."),
                            ("SINH", "sinh", "The hyperbolic sine."), ("COSH", "cosh", "The hyperbolic cosine."),
                            ("TANH", "tanh", "The hyperbolic tangent."), ("DEGREES", "degrees", "Radians to degrees."),
                            ("RADIANS", "radians", "Degrees to radians.")]:
    scalar(_name, CATEGORY, f"{_name}(numeric)", _doc + " A DOUBLE.")(
        lambda call, _s=_spark: _double(call, _s))


def java_log(x: str, fn: str = "ln") -> str:
    """Java's logarithm of the DOUBLE ``x``: -Infinity at 0, NaN below (Spark's is NULL
    for both)."""
    return (f"(CASE WHEN {x} > 0 THEN {fn}({x}) WHEN {x} = 0 THEN CAST('-Infinity' AS DOUBLE) "
            f"WHEN {x} < 0 THEN CAST('NaN' AS DOUBLE) END)")


def _log(call, fn: str, i: int = 0) -> str:
    call.need(i, "numeric")
    return java_log(f"CAST({call.arg(i).sql} AS DOUBLE)", fn)


@scalar("LN", CATEGORY, "LN(numeric)", "The natural logarithm: -Infinity at 0, NaN for negative values.")
def ln(call):
    call.args(1)
    return Typed(_log(call, "ln"), DOUBLE_TYPE.nullable_as(call.nullable()))


@scalar("LOG10", CATEGORY, "LOG10(numeric)", "The base-10 logarithm (-Infinity at 0, NaN below).")
def log10(call):
    call.args(1)
    return Typed(_log(call, "log10"), DOUBLE_TYPE.nullable_as(call.nullable()))


@scalar("LOG2", CATEGORY, "LOG2(numeric)", "The base-2 logarithm (-Infinity at 0, NaN below).")
def log2(call):
    call.args(1)
    return Typed(_log(call, "log2"), DOUBLE_TYPE.nullable_as(call.nullable()))


@scalar("LOG", CATEGORY, "LOG(numeric2) / LOG(numeric1, numeric2)",
        "The natural logarithm of NUMERIC2, or its logarithm to the base NUMERIC1 (LN(NUMERIC2) / LN(NUMERIC1), "
        "with Java's infinities and NaN).")
def log(call):
    args = call.args(1, 2)
    if len(args) == 1:
        return Typed(_log(call, "ln"), DOUBLE_TYPE.nullable_as(call.nullable()))
    return Typed(ieee_divide(_log(call, "ln", 1), _log(call, "ln", 0)), DOUBLE_TYPE.nullable_as(call.nullable()))


@scalar("POWER", CATEGORY, "POWER(numeric1, numeric2)", "NUMERIC1 to the power NUMERIC2, a DOUBLE.",
        aliases=("POW",))
def power(call):
    return _double(call, "power", *call.args(2))


@scalar("ATAN2", CATEGORY, "ATAN2(numeric1, numeric2)", "The arc tangent of the coordinate (NUMERIC1, NUMERIC2).")
def atan2(call):
    return _double(call, "atan2", *call.args(2))


@scalar("ABS", CATEGORY, "ABS(numeric)", "The absolute value, in the argument's type.")
def abs_(call):
    x = call.args(1)[0]
    call.need(0, "numeric", "interval")
    if x.type.is_integral:  # Java: the absolute value of the smallest integer is itself
        low = {"TINYINT": -2 ** 7, "SMALLINT": -2 ** 15, "INT": -2 ** 31, "BIGINT": -2 ** 63}[x.type.name]
        return Typed(f"CAST(IF({x.sql} = {low}{'L' if low < -2 ** 31 else ''}, {x.sql}, abs({x.sql})) AS "
                     f"{x.type.spark})", x.type)
    return Typed(f"abs({x.sql})", x.type)


@scalar("SIGN", CATEGORY, "SIGN(numeric)", "-1, 0 or 1 in the argument's type.")
def sign(call):
    x = call.args(1)[0]
    call.need(0, "numeric")
    return Typed(f"CAST(sign({x.sql}) AS {x.type.spark})", x.type)


@scalar("MOD", CATEGORY, "MOD(numeric1, numeric2)",
        "The remainder of NUMERIC1 divided by NUMERIC2, negative only when NUMERIC1 is; the divisor's type.")
def mod(call):
    a, b = call.args(2)
    result = rules.arithmetic("%", a.type, b.type)
    if result is None:
        call.refuse(f"MOD takes exact numbers (integers or DECIMAL), not {a.type} and {b.type}",
                    hint="CAST the values to an integer or DECIMAL type")
    return arithmetic_sql(call.tr, "%", a, b, result, call.node)


def _round_type(x, digits: int):
    if x.name == "DECIMAL":
        if digits >= x.scale:
            return x
        scale = max(digits, 0)
        precision = min(x.precision - x.scale + scale + 1, rules.MAX_PRECISION)
        return decimal(precision, scale, x.nullable)
    return x


@scalar("ROUND", CATEGORY, "ROUND(numeric[, integer])",
        "NUMERIC rounded half-up to INTEGER (default 0) decimal places; INTEGER may be negative.")
def round_(call):
    args = call.args(1, 2)
    call.need(0, "numeric")
    digits = call.constant_int(1, "the decimal places") if len(args) == 2 else 0
    x = args[0]
    result = _round_type(x.type, digits)
    if x.type.is_integral:  # Java: rounded as a BigDecimal, then wrapped to the type's bits
        return Typed(wrap_integer(f"round(CAST({x.sql} AS DECIMAL(38, 0)), {digits})", x.type), x.type)
    return Typed(f"CAST(round({x.sql}, {digits}) AS {result.spark})", result)


@scalar("TRUNCATE", CATEGORY, "TRUNCATE(numeric1[, integer2])",
        "NUMERIC1 cut (toward zero) to INTEGER2 (default 0) decimal places.")
def truncate(call):
    args = call.args(1, 2)
    call.need(0, "numeric")
    digits = call.constant_int(1, "the decimal places") if len(args) == 2 else 0
    x = args[0]
    result = _round_type(x.type, digits)
    factor = f"POWER(10, {digits})"
    if x.type.name in ("FLOAT", "DOUBLE"):
        value = f"CAST({x.sql} AS DOUBLE)"
        return Typed(f"CAST(IF({value} >= 0, floor({value} * {factor}), ceil({value} * {factor})) / {factor} "
                     f"AS {x.type.spark})", x.type)
    # Exact types: cut the digits of the exact value (toward zero).
    exact = f"CAST({x.sql} AS DECIMAL(38, {x.type.scale if x.type.name == 'DECIMAL' else 0}))"
    cut = f"IF({exact} >= 0, floor({exact}, {digits}), ceil({exact}, {digits}))"
    return Typed(f"CAST({cut} AS {result.spark})", result)


def _ceil_floor(call, fn: str):
    call.arity(1, 2)
    if len(call) == 2:  # CEIL(ts TO unit): temporal, see functions.temporal
        from job.sql.flink.functions.temporal import ceil_floor_time

        return ceil_floor_time(call, fn)
    x = call.arg(0)
    call.need(0, "numeric")
    if x.type.is_integral:
        return Typed(x.sql, x.type)
    if x.type.name == "DECIMAL":
        result = decimal(x.type.precision, 0, x.type.nullable)
        return Typed(f"CAST({fn}({x.sql}) AS {result.spark})", result)
    # Spark's ceil/floor of a DOUBLE is a BIGINT (saturating); from 2^52 on every DOUBLE
    # is whole already, and NaN and the infinities stay as they are (Math.ceil).
    d = f"CAST({x.sql} AS DOUBLE)"
    return Typed(f"CAST(IF(isnan({d}) OR abs({d}) >= 4.503599627370496E15, {d}, CAST({fn}({d}) AS DOUBLE)) "
                 f"AS {x.type.spark})", x.type)


@scalar("CEIL", CATEGORY, "CEIL(numeric) / CEIL(timepoint TO timeintervalunit)",
        "The smallest whole number ≥ NUMERIC; a time point rounded up to the unit.", aliases=("CEILING",))
def ceil(call):
    return _ceil_floor(call, "ceil")


@scalar("FLOOR", CATEGORY, "FLOOR(numeric) / FLOOR(timepoint TO timeintervalunit)",
        "The largest whole number ≤ NUMERIC; a time point rounded down to the unit.")
def floor(call):
    return _ceil_floor(call, "floor")


@scalar("PI", CATEGORY, "PI()", "π.")
def pi(call):
    call.args(0)
    return Typed("pi()", DOUBLE_TYPE.nullable_as(False))


@scalar("E", CATEGORY, "E()", "e.")
def e(call):
    call.args(0)
    return Typed("e()", DOUBLE_TYPE.nullable_as(False))


@scalar("RAND", CATEGORY, "RAND([integer])", "A pseudorandom DOUBLE in [0, 1), seeded by INTEGER if given.")
def rand(call):
    args = call.args(0, 1)
    seed = f"{call.constant_int(0)}" if args else ""
    return Typed(f"rand({seed})", DOUBLE_TYPE.nullable_as(False))


@scalar("RAND_INTEGER", CATEGORY, "RAND_INTEGER([seed, ] bound)", "A pseudorandom INT in [0, bound).")
def rand_integer(call):
    args = call.args(1, 2)
    seed = f"{call.constant_int(0)}" if len(args) == 2 else ""
    bound = args[-1]
    return Typed(f"CAST(floor(rand({seed}) * {bound.sql}) AS INT)", INT_TYPE.nullable_as(bound.type.nullable))


@scalar("UUID", CATEGORY, "UUID()", "A random UUID string (RFC 4122 type 4).")
def uuid(call):
    call.args(0)
    return Typed("uuid()", t("CHAR", 36, nullable=False))


@scalar("BIN", CATEGORY, "BIN(integer)", "INTEGER in binary.")
def bin_(call):
    x = call.args(1)[0]
    call.need(0, "integer")
    return Typed(f"bin({x.sql})", STRING_TYPE.nullable_as(x.type.nullable))


@scalar("HEX", CATEGORY, "HEX(numeric) / HEX(string)", "An integer or a string in hexadecimal (upper case).")
def hex_(call):
    x = call.args(1)[0]
    call.need(0, "integer", "string")
    return Typed(f"hex({x.sql})", STRING_TYPE.nullable_as(x.type.nullable))


@scalar("UNHEX", CATEGORY, "UNHEX(expr)",
        "The bytes written in hexadecimal in EXPR; of an odd number of digits the first is dropped and a zero byte "
        "put in front; NULL if EXPR is not hexadecimal.")
def unhex(call):
    x = call.args(1)[0]
    call.need(0, "string")
    value = f"IF(char_length({x.sql}) % 2 = 1, concat(X'00', unhex(substring({x.sql}, 2))), unhex({x.sql}))"
    return Typed(value, t("VARBINARY", 2147483647, nullable=True))
