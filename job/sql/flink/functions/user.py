"""Calls of Flink user-defined scalar, table and aggregate functions (``CREATE FUNCTION f AS
'com.example.F'``).

A :class:`UserFunction` is what the planner learnt of the class (job.plan.user_functions
reads it in the JVM): its ``eval`` methods, each typed here the way Flink's reflective
extraction types it — a parameter's Java class gives its Flink type
(``long`` → ``BIGINT NOT NULL``, ``Integer`` → ``INT``, ``String`` → ``STRING``,
``LocalDateTime`` → ``TIMESTAMP(9)`` …), and a ``@DataTypeHint("…")`` replaces it
(``StringData`` needs one; ``BigDecimal`` without one is ``DECIMAL(38, 18)``).

A call is checked as Flink checks it: each argument must convert implicitly to its
parameter, nullability included (a nullable column is no argument for a primitive
``long``: Flink rejects ``BIGINT NOT NULL expected but BIGINT passed``). When several
overloads accept the arguments, the one whose parameters are the arguments' own types is
taken; a call Flink would have to choose for by its own ranking is refused, as is a call
that could mean an overload whose types the job cannot pass (an ``ARRAY``, a ``Row`` …).

A table function's output (:func:`table_output`) is typed as Flink extracts it: a
``@FunctionHint(output = @DataTypeHint("ROW<…>"))`` on the method or the class, else a
``@DataTypeHint`` on the method or the class, else the Java class its ``TableFunction<T>``
binds T to (``String`` → ``STRING``, ``Integer`` → ``INT`` …); a ``Row`` needs a hint.

An aggregate function's signatures are its ``accumulate`` methods, their parameters after
the accumulator typed and checked as ``eval``'s; its result (:func:`aggregate_output`) and
accumulator (:func:`check_accumulator`) as Flink extracts them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from job.errors import PipelineError
from job.sql.flink.typed import Typed
from job.sql.logical_types import BYTES_TYPE, DATE_TYPE, STRING_TYPE, LogicalType, decimal, t, timestamp
from job.sql.types import logical_type

MAX_ARGS = 10

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_NUMERIC_ORDER = _INTEGERS + ("DECIMAL", "FLOAT", "DOUBLE")

# Java class → (Flink type, the type families a @DataTypeHint on it may name).
_JAVA = {
    "java.lang.String": (STRING_TYPE, ("CHAR", "VARCHAR")),
    "org.apache.flink.table.data.StringData": (None, ("CHAR", "VARCHAR")),
    "java.math.BigDecimal": (decimal(38, 18), ("DECIMAL",)),
    "java.time.LocalDate": (DATE_TYPE, ("DATE",)),
    "java.time.LocalDateTime": (timestamp(9), ("TIMESTAMP",)),
    "java.time.Instant": (timestamp(9, ltz=True), ("TIMESTAMP_LTZ",)),
    "[B": (BYTES_TYPE, ("BINARY", "VARBINARY")),
}
# A primitive is its type NOT NULL, its box the nullable type.
for _primitive, _box, _flink in (("boolean", "Boolean", "BOOLEAN"), ("byte", "Byte", "TINYINT"),
                                 ("short", "Short", "SMALLINT"), ("int", "Integer", "INT"),
                                 ("long", "Long", "BIGINT"), ("float", "Float", "FLOAT"),
                                 ("double", "Double", "DOUBLE")):
    _JAVA[_primitive] = (t(_flink, nullable=False), (_flink,))
    _JAVA[f"java.lang.{_box}"] = (t(_flink), (_flink,))


ROW_CLASS = "org.apache.flink.types.Row"
# The types of a table function's output fields: those the job passes from a function.
_PASSED = frozenset({"CHAR", "VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
                     "DECIMAL", "DATE", "TIMESTAMP", "TIMESTAMP_LTZ", "BINARY", "VARBINARY"})


def java_type(java_class: str, hint: Optional[str], what: str) -> LogicalType:
    """The Flink type of a parameter or result of Java class ``java_class`` with the
    ``@DataTypeHint`` text ``hint`` (None: no hint); raises ValueError saying why not."""
    known = _JAVA.get(java_class)
    if known is None:
        raise ValueError(f"{what} is a {java_class}, which the job cannot pass to or from a function yet "
                         f"(supported: {', '.join(sorted(c for c in _JAVA if '.' in c))}, byte[] and Java's "
                         f"primitive types)")
    default, families = known
    if not hint:
        if default is None:
            raise ValueError(f"{what} is a {java_class} without a @DataTypeHint, which Flink cannot type either")
        return default
    try:
        hinted = logical_type(hint)
    except PipelineError as exc:
        raise ValueError(f"{what}: @DataTypeHint(\"{hint}\") is not a type the job knows ({exc.message})") from None
    if hinted.name not in families:
        raise ValueError(f"{what}: @DataTypeHint(\"{hint}\") does not fit its Java class {java_class}")
    primitive = "." not in java_class and java_class != "[B"
    return hinted.nullable_as(False) if primitive else hinted


def table_output(generic: Optional[str], hint: Optional[str], what: str) -> tuple[LogicalType, bool]:
    """A table function's output type — a ROW, or an atomic type for one column — and
    whether it collects Flink ``Row``s, from the Java class its ``TableFunction<T>`` binds T
    to (``generic``; None: left open) and the hint that types it (None: none); raises
    ValueError saying why not."""
    if hint:
        try:
            hinted = logical_type(hint)
        except PipelineError as exc:
            raise ValueError(f"{what}: @DataTypeHint(\"{hint}\") is not a type the job knows ({exc.message})") \
                from None
        if hinted.name == "ROW":
            if generic not in (None, ROW_CLASS, "java.lang.Object"):
                raise ValueError(f"{what}: @DataTypeHint(\"{hint}\") does not fit its Java class {generic}")
            for name, field in zip(hinted.field_names, hinted.children):
                if field.name not in _PASSED:
                    raise ValueError(f"{what}: its field {name} is {field}, which the job cannot pass from a "
                                     f"function yet")
            return hinted, True
        if generic in (None, "java.lang.Object"):
            if hinted.name not in _PASSED:
                raise ValueError(f"{what} is {hinted}, which the job cannot pass from a function yet")
            return hinted, False
        return java_type(generic, hint, what), False
    if generic == ROW_CLASS:
        raise ValueError(f"{what}: could not extract a data type from 'class {ROW_CLASS}' (Flink: Cannot extract "
                         f"a data type from a pure '{ROW_CLASS}' class. Please use annotations to define field "
                         f"names and field types)")
    if generic is None:
        raise ValueError(f"{what}: the class leaves TableFunction's type parameter open, which Flink cannot "
                         f"type without a hint")
    return java_type(generic, None, what), False


BIG_DECIMAL = "java.math.BigDecimal"


def aggregate_output(generic: Optional[str], class_hint: Optional[str], value_hint: Optional[str],
                     what: str) -> LogicalType:
    """An aggregate function's result type, as Flink extracts it: the class's
    ``@FunctionHint(output = …)`` (``class_hint``), else getValue's ``@DataTypeHint``
    (``value_hint``), else the Java class its ``AggregateFunction<T, ACC>`` binds T to
    (``generic``); raises ValueError saying why not."""
    hint = class_hint or value_hint
    if generic == ROW_CLASS and not hint:
        raise ValueError(f"{what}: could not extract a data type from 'class {ROW_CLASS}' (Flink: Cannot extract "
                         f"a data type from a pure '{ROW_CLASS}' class. Please use annotations to define field "
                         f"names and field types)")
    if generic in (None, "java.lang.Object", ROW_CLASS):
        if not hint:
            raise ValueError(f"{what}: the class leaves AggregateFunction's type parameter T open, which Flink "
                             f"cannot type without a hint")
        try:
            hinted = logical_type(hint)
        except PipelineError as exc:
            raise ValueError(f"{what}: @DataTypeHint(\"{hint}\") is not a type the job knows ({exc.message})") \
                from None
        if hinted.name not in _PASSED:
            raise ValueError(f"{what} is {hinted}, which the job cannot pass from a function yet")
        return hinted
    return java_type(generic, hint, what)


def check_accumulator(generic: Optional[str], hint: Optional[str], fields, what: str) -> None:
    """Refuses, as Flink's extraction does, an accumulator it cannot type: ACC left open
    without an ``accumulator`` hint, a ``Row`` without one, a ``BigDecimal`` field without a
    ``@DataTypeHint`` (``fields``: the accumulator's JavaValues). The job keeps any other
    accumulator as it is (engine/…/udf/FlinkAggregate.java), not as Flink's type of it."""
    if hint:
        return
    if generic is None:
        raise ValueError(f"{what}: the class leaves AggregateFunction's accumulator type ACC open, which Flink "
                         f"cannot type without @FunctionHint(accumulator = …)")
    if generic == ROW_CLASS:
        raise ValueError(f"{what}: could not extract a data type from 'class {ROW_CLASS}' (Flink: Cannot extract "
                         f"a data type from a pure '{ROW_CLASS}' class. Please use annotations to define field "
                         f"names and field types)")
    if any(f.class_name == BIG_DECIMAL and not f.hint for f in fields):
        raise ValueError(f"{what}: Values of '{BIG_DECIMAL}' need fixed precision and scale (Flink's error for "
                         f"a BigDecimal field of the accumulator {generic} without a @DataTypeHint(\"DECIMAL(p, "
                         f"s)\"))")


@dataclass(frozen=True)
class Overload:
    """One public ``eval`` method: its Flink parameter and result types, or why the job
    cannot call it (``refusal``)."""

    method: str                               # Java's Method.toGenericString(), its identity
    arity: int
    params: tuple[LogicalType, ...] = ()
    result: Optional[LogicalType] = None      # a table function's: its output type (a ROW or atomic)
    refusal: Optional[str] = None
    spark_name: str = ""                      # the Spark function it is registered as
    varargs: bool = False
    row_output: bool = False                  # a table function collecting Flink Rows (result: a ROW)
    retract: Optional[str] = None             # an aggregate's accumulate: its retract method (None: none)

    def takes(self, n: int) -> bool:
        return self.arity == n or (self.varargs and n >= self.arity - 1)


@dataclass(frozen=True)
class UserFunction:
    name: str
    class_name: str
    system: bool                               # TEMPORARY SYSTEM: before the built-in functions
    overloads: tuple[Overload, ...]
    declared_at: str = ""                      # "file:line:col" of its CREATE FUNCTION
    kind: str = "scalar"                       # Flink's kind: scalar, table or aggregate
    register: Callable[[Overload], None] = field(default=lambda overload: None, compare=False, repr=False)


def implicit_cast(src: LogicalType, dst: LogicalType) -> bool:
    """Does Flink pass a value of ``src`` for a parameter of ``dst`` (its implicit casts,
    as its function-call check applies them, with nullability)?"""
    if src.is_null:
        return dst.nullable
    if src.nullable and not dst.nullable:
        return False
    a, b = src.name, dst.name
    if src.is_character and dst.is_character:
        return True
    if src.is_binary and dst.is_binary:
        return True
    if a in _NUMERIC_ORDER and b in _NUMERIC_ORDER:
        if a == b == "DECIMAL":
            return True
        return _NUMERIC_ORDER.index(a) <= _NUMERIC_ORDER.index(b) and not (a == "FLOAT" and b == "DECIMAL")
    if a == b and a in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return True
    return src.nullable_as(dst.nullable) == dst


def _same_types(args: list[LogicalType], params: tuple[LogicalType, ...]) -> bool:
    """Every argument already of its parameter's type (lengths, precision and nullability
    aside): the overload Flink's own ranking would choose too."""
    return all(a.name == p.name or (a.is_character and p.is_character) for a, p in zip(args, params))


def call_user_function(call, fn: UserFunction) -> Typed:
    """``fn(args…)`` (``call``: the library's :class:`Call`) as a call of the Spark function
    registered for the chosen ``eval`` method."""
    if fn.kind == "aggregate":
        call.refuse(f"the aggregate function {fn.name} is not allowed here",
                    hint="aggregates go in the select list or HAVING of a query with GROUP BY (or none)")
    if fn.kind != "scalar":
        call.refuse(f"Cannot call table function here: '{fn.name}'",
                    hint="a table function is called in FROM: FROM t, LATERAL TABLE(f(…))")
    chosen, passed = _chosen(call, fn)
    return Typed(f"`{chosen.spark_name}`({', '.join(passed)})", chosen.result)


def call_table_function(call, fn: UserFunction) -> Typed:
    """``LATERAL TABLE(fn(args…))``'s call: the Spark function registered for the chosen
    ``eval`` method, whose value is the array of the rows it collected; typed as the
    function's output (a ROW, or the one column's type)."""
    if fn.kind != "table":
        call.refuse(f"Function '{fn.name}' cannot be used as a table function",
                    hint=f"{fn.class_name} is a Flink {fn.kind} function; a table function extends "
                         f"org.apache.flink.table.functions.TableFunction")
    chosen, passed = _chosen(call, fn)
    return Typed(f"`{chosen.spark_name}`({', '.join(passed)})", chosen.result)


def call_aggregate_function(call, fn: UserFunction) -> tuple[Overload, list[str]]:
    """An aggregate call ``fn(args…)`` (``call``: the library's :class:`Call` over its
    arguments): the accumulate method it means, checked as a scalar function's call, and
    the arguments' Spark SQL, each cast to its parameter where Flink casts it implicitly."""
    return _chosen(call, fn)


def _chosen(call, fn: UserFunction) -> tuple[Overload, list[str]]:
    """The ``eval`` method a call means, as Flink checks the call, registered; and the
    arguments' Spark SQL, each cast to its parameter where Flink casts it implicitly."""
    n = len(call)
    method = "accumulate" if fn.kind == "aggregate" else "eval"
    args = [call.arg(i) for i in range(n)]
    types = [a.type for a in args]
    shown = ", ".join(str(x) for x in types)
    candidates = [o for o in fn.overloads if o.takes(n)]
    blocked = [o for o in candidates if o.refusal]
    if blocked:
        call.refuse(f"{fn.name} ({fn.class_name}): {blocked[0].refusal}")
    fitting = [o for o in candidates if all(implicit_cast(a, p) for a, p in zip(types, o.params))]
    if len(fitting) > 1:
        exact = [o for o in fitting if _same_types(types, o.params)]
        if len(exact) == 1:
            fitting = exact
        else:
            call.refuse(f"{fn.name}({shown}) fits {len(fitting)} {method} methods of {fn.class_name}; the job does not "
                        f"choose among them as Flink would", hint="CAST the arguments to one method's parameter types")
    if not fitting:
        signatures = "; ".join(f"{fn.name}({', '.join(str(p) for p in o.params)})" for o in fn.overloads) or "none"
        call.refuse(f"invalid function call {fn.name}({shown}): no {method} method of {fn.class_name} takes these "
                    f"argument types", hint=f"its signatures: {signatures}. Flink passes an argument only by an "
                                            f"implicit cast, and a nullable one never to a primitive parameter")
    chosen = fitting[0]
    fn.register(chosen)
    passed = []
    for value, param in zip(args, chosen.params):
        same = value.type.nullable_as(param.nullable) == param or (value.type.is_character and param.is_character)
        passed.append(value.sql if same else call.tr.cast(value, param.nullable_as(value.type.nullable)).sql)
    return chosen, passed
