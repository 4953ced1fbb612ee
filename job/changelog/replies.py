"""What the engine answers: the other half of the typed contract (job.changelog.specs
holds what it reads).

Each reply is written by Jackson from the Java record of the same name
(engine/…/spec/*.java, Specs.write) and read here by :func:`from_json` into a frozen
dataclass, field for field: a field one side has and the other does not fails the read
at once (and tests/changelog/test_spec_contract.py before that), instead of a key
looked up in a dict somewhere later.
"""
from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class JavaValue:
    """A parameter or the result of a user function's ``eval`` method."""
    class_name: str              # its Java class (Class.getName(): int, java.lang.Integer, [Ljava.lang.String;)
    hint: Optional[str]          # its @DataTypeHint type text; "" for a hint without one, None for no hint


@dataclass(frozen=True)
class EvalMethod:
    """One public ``eval`` method of a user function's class."""
    method: str                  # its signature (Method.toGenericString()), the name ScalarFunction.method gives back
    varargs: bool
    function_hint: bool          # its @FunctionHint declares more than the output (or there are several)
    hinted_output: Optional[str]  # the type text of its @FunctionHint's output (None: none)
    params: tuple[JavaValue, ...]
    returns: JavaValue


@dataclass(frozen=True)
class AggregateDescription:
    """What a user's aggregate function class declares beyond its accumulate methods."""
    accumulator: JavaValue       # the Java class AggregateFunction<T, ACC> binds ACC to (None: left open), and the
                                 # class's @FunctionHint(accumulator = …) type text as its hint
    accumulator_fields: tuple[JavaValue, ...]  # the accumulator class's non-static, non-transient fields
    value: Optional[JavaValue]   # getValue's return class and @DataTypeHint (None: no getValue)
    retracts: tuple[str, ...]    # the signatures (Method.toGenericString()) of its public retract methods


@dataclass(frozen=True)
class FunctionDescription:
    """What a user's Flink function class is (FlinkFunctions.describe): the planner types
    its calls from this (job.plan.user_functions)."""
    kind: str                    # Flink's: scalar, table, aggregate, table aggregate, async scalar,
                                 # async table, process table; other: no Flink function
    missing: Optional[str]       # why the class cannot be loaded (None: it loads)
    no_instance: Optional[str]   # why it cannot be made with no arguments (None: it can)
    abstract_class: bool
    function_hint: bool          # the class's @FunctionHint declares more than the output (or there are several)
    hinted_output: Optional[str]  # the type text of the class's @FunctionHint's output (None: none)
    custom_inference: bool       # it overrides getTypeInference, getResultType or getParameterTypes
    deterministic: bool          # its isDeterministic()
    output: Optional[JavaValue]  # a table (aggregate) function's T: the Java class TableFunction<T>
                                 # (AggregateFunction<T, ACC>) is bound to (class name None: left open) and the
                                 # class's @DataTypeHint; None for other kinds
    finishes: bool               # it overrides finish(), which Flink calls at the end of a bounded input
    evals: tuple[EvalMethod, ...]  # an aggregate function's: its accumulate methods (the accumulator first)
    aggregate: Optional[AggregateDescription] = None  # an aggregate function's accumulator, value and retract


@dataclass(frozen=True)
class QueryEvent:
    """One event of the session's streaming queries, as the engine's ProgressQueue hands
    it to the progress reporter (job.run.progress)."""
    kind: str                    # started, progress, terminated, or closed (nothing more comes)
    id: Optional[str]            # the query's id
    name: Optional[str]          # its name (None: unnamed, or not told)
    progress: Optional[str]      # on progress only: Spark's StreamingQueryProgress JSON (Spark's fields)


REPLIES = (FunctionDescription, QueryEvent)
PARTS = (EvalMethod, JavaValue, AggregateDescription)


def from_json(cls, text: str):
    """The reply ``cls`` the engine wrote as ``text``."""
    if cls not in REPLIES:
        raise TypeError(f"not a reply of the engine: {cls!r}")
    return _read(cls, json.loads(text))


def _read(hint, value):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:  # Optional[X]
        return None if value is None else _read(next(a for a in args if a is not type(None)), value)
    if origin is tuple:
        return tuple(_read(args[0], v) for v in value)
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        names = {f.name for f in dataclasses.fields(hint)}
        if set(value) != names:
            raise ValueError(f"malformed {hint.__name__} reply: fields {sorted(set(value) ^ names)} "
                             f"are known to one side only")
        return hint(**{name: _read(hints[name], value[name]) for name in names})
    if not isinstance(value, hint):
        raise ValueError(f"malformed reply: {value!r} is not a {hint.__name__}")
    return value
