"""The pipeline's user-defined functions (``CREATE FUNCTION``) in the session.

Flink runs a Java class extending its ``ScalarFunction``, ``TableFunction`` or
``AggregateFunction``; so does the job, on Spark: the class's jar and Flink's function API
(jars/flink/, fetched by scripts/jars.sh) are added to the session, the engine's bridge
(engine/…/udf/FlinkFunctions.java) says what the class is, and each ``eval`` method a
query calls is registered as a Spark function that makes the class's instance on each
executor, opens it once and calls it row by row (a table function's returns the rows
``eval`` collected, which job.plan.lateral turns into rows). An aggregate function is not
registered: the engine's group aggregation calls its ``accumulate``/``retract`` and
``getValue`` (job.plan.aggregates, engine/…/udf/FlinkAggregate.java).

A function is looked up when a query first calls it, so, as in Flink, a declared function
no query calls costs nothing and its class need not load. Where its jar comes from, as
Flink takes it: ``USING JAR '…'``, ``ADD JAR '…'``, or the ``pipeline.jars`` setting
(``SET 'pipeline.jars' = 'file:///…/functions.jar'``, ``;``-separated).

Refused by name, before anything runs: Python functions (at parsing), a class that is not
found, is no scalar, table or aggregate function (table aggregate, async functions …),
declares its types with ``@FunctionHint`` (other than a table function's output, an
aggregate function's output and accumulator) or its own type inference, a table function
that overrides ``finish()``, or calls for types the job cannot pass (see
job.sql.flink.functions.user).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional
from urllib.parse import urlparse

from job.changelog.jvm import add_jar, static_call
from job.changelog.replies import EvalMethod, FunctionDescription, from_json
from job.changelog.specs import ScalarFunction, TableFunction, to_json
from job.errors import PipelineError
from job.sql.flink.functions.user import (MAX_ARGS, Overload, UserFunction, aggregate_output, check_accumulator,
                                          java_type, table_output)

ROOT = Path(__file__).resolve().parents[2]
FLINK_JARS = ROOT / "jars" / "flink"
BRIDGE = "streamsql.engine.udf.FlinkFunctions"
SESSION = "org.apache.spark.sql.SparkSession"

# Jars already added to a session, by application id: ADD JAR is for the application's life.
_added: dict[str, set[str]] = {}


class PipelineFunctions:
    """``lookup(name, builtin)``: the :class:`UserFunction` a query's call ``name(…)`` means,
    or None when it means no user-defined function (the translator's ``Settings.functions``)."""

    def __init__(self, spark, catalog, conf) -> None:
        self.spark = spark
        self.catalog = catalog
        self.conf = conf
        self._known: dict[str, UserFunction] = {}
        self._registered: set[str] = set()

    def lookup(self, name: str, builtin: bool) -> Optional[UserFunction]:
        """``builtin``: Flink has a built-in function of this name. Flink resolves a temporary
        system function before the built-in ones, a catalog function (CREATE [TEMPORARY]
        FUNCTION) after them: such a declaration is then never loaded."""
        declared = self.catalog.functions.get(name.lower())
        if declared is None or (builtin and not declared.system):
            return None
        if name.lower() not in self._known:
            try:
                self._known[name.lower()] = self._resolve(declared)
            except PipelineError as err:
                source = declared.source
                raise err.located(source.origin if source else None, source.text if source else None) from None
        return self._known[name.lower()]

    # ------------------------------------------------------------------ the class
    def _resolve(self, declared) -> UserFunction:
        self._add_jars()
        spark = self.spark
        described = from_json(FunctionDescription, static_call(
            spark, BRIDGE, "describe", (SESSION, spark._jsparkSession), ("java.lang.String", declared.class_name)))
        what = f"function '{declared.name}'"
        if described.missing is not None:
            raise PipelineError(f"{what}: class '{declared.class_name}' cannot be loaded ({described.missing})",
                                hint="give its jar with USING JAR '…', ADD JAR '…' or SET 'pipeline.jars'")
        kind = described.kind
        if kind not in ("scalar", "table", "aggregate"):
            raise PipelineError(
                f"{what}: {declared.class_name} is " + (f"a Flink {kind} function, which the job does not run yet"
                                                        if kind != "other" else "not a Flink function class"),
                hint="a class extending org.apache.flink.table.functions.ScalarFunction, TableFunction or "
                     "AggregateFunction runs on the job")
        table = kind == "table"
        aggregate = kind == "aggregate"
        hinted = described.function_hint or (described.hinted_output is not None and kind == "scalar")
        for flag, why in ((described.abstract_class, "the class is abstract"),
                          (hinted, "its types are declared with @FunctionHint, which the job does not read yet"
                                   + (" (only a table function's output = @DataTypeHint(…))" if table else
                                      " (only an aggregate function's output and accumulator)" if aggregate else "")),
                          (described.custom_inference, "it declares its own type inference (getTypeInference, "
                                                       "getResultType, getAccumulatorType), which the job does not "
                                                       "run yet"),
                          (table and described.finishes, "it overrides finish(), whose rows (collected at the end "
                                                         "of a bounded input) the job does not emit")):
            if flag:
                raise PipelineError(f"{what} ({declared.class_name}): {why}")
        if described.no_instance is not None:
            raise PipelineError(f"{what}: {declared.class_name} cannot be instantiated with no arguments "
                                f"({described.no_instance})")
        if aggregate:
            overloads = self._aggregate_overloads(declared, described)
        else:
            overloads = tuple(self._overload(declared, i, e, described if table else None)
                              for i, e in enumerate(sorted(described.evals, key=lambda e: e.method)))
        if not overloads:
            raise PipelineError(f"{what}: {declared.class_name} has no public "
                                f"{'accumulate' if aggregate else 'eval'} method")
        deterministic = described.deterministic
        if aggregate:  # run by the engine's aggregation, not registered as a Spark function
            return UserFunction(declared.name, declared.class_name, declared.system, overloads, kind=kind)
        return UserFunction(declared.name, declared.class_name, declared.system, overloads, kind=kind,
                            register=lambda overload: self._register(declared, overload, deterministic, table))

    @staticmethod
    def _overload(declared, index: int, described: EvalMethod, table=None) -> Overload:
        """One eval method typed; ``table``: the table function's FunctionDescription (None:
        a scalar function)."""
        params = described.params
        spark_name = "flink_udf_" + re.sub(r"\W", "_", declared.class_name) + f"_{index}"
        base = dict(method=described.method, arity=len(params), spark_name=spark_name, varargs=described.varargs)
        if described.varargs:
            return Overload(**base, refusal=f"eval with variable arguments ({described.method}) is not "
                                            f"supported yet")
        if described.function_hint or (described.hinted_output is not None and table is None):
            return Overload(**base, refusal=f"eval with @FunctionHint ({described.method}) is not supported yet"
                                            + (" (only its output = @DataTypeHint(…))" if table is not None else ""))
        if len(params) > MAX_ARGS or not params:
            return Overload(**base, refusal=f"eval of {len(params)} arguments is not supported (1 to {MAX_ARGS})")
        try:
            types = tuple(java_type(p.class_name, p.hint, f"parameter {i + 1} of {described.method}")
                          for i, p in enumerate(params))
            if table is None:
                result, rows = java_type(described.returns.class_name, described.returns.hint,
                                         f"the result of {described.method}"), False
            else:
                result, rows = table_output(table.output.class_name, _output_hint(table, described),
                                            f"the output of {declared.class_name}")
        except ValueError as exc:
            return Overload(**base, refusal=str(exc))
        return Overload(**base, params=types, result=result, row_output=rows)

    @staticmethod
    def _aggregate_overloads(declared, described: FunctionDescription) -> tuple[Overload, ...]:
        """An aggregate function's accumulate methods typed: the parameters after the
        accumulator as a scalar function's, the result (getValue's) and the accumulator as
        Flink extracts them (job.sql.flink.functions.user); each with the retract method of
        the same parameters, if the class has one."""
        agg = described.aggregate
        what = f"the aggregate function {declared.name} ({declared.class_name})"
        try:
            if agg.value is None:
                raise ValueError(f"{what} has no public getValue method")
            if described.output.hint:
                raise ValueError(f"{what}: a @DataTypeHint on the class is not read for an aggregate function yet "
                                 f"(declare the result with @FunctionHint(output = …) or on getValue)")
            result = aggregate_output(described.output.class_name, described.hinted_output, agg.value.hint,
                                      f"the result of {declared.class_name}")
            check_accumulator(agg.accumulator.class_name, agg.accumulator.hint, agg.accumulator_fields, what)
        except ValueError as exc:
            raise PipelineError(str(exc)) from None
        overloads = []
        for method in sorted(described.evals, key=lambda e: e.method):
            params = method.params[1:]
            retract = method.method.replace(".accumulate(", ".retract(", 1)
            base = dict(method=method.method, arity=len(params), varargs=method.varargs,
                        retract=retract if retract in agg.retracts else None)
            if method.varargs:
                overloads.append(Overload(**base, refusal=f"accumulate with variable arguments ({method.method}) "
                                                          f"is not supported yet"))
            elif method.function_hint or method.hinted_output is not None:
                overloads.append(Overload(**base, refusal=f"accumulate with @FunctionHint ({method.method}) is not "
                                                          f"supported yet"))
            elif len(params) > MAX_ARGS or not params:
                overloads.append(Overload(**base, refusal=f"accumulate of {len(params)} arguments after the "
                                                          f"accumulator is not supported (1 to {MAX_ARGS})"))
            else:
                try:
                    types = tuple(java_type(p.class_name, p.hint, f"parameter {i + 2} of {method.method}")
                                  for i, p in enumerate(params))
                except ValueError as exc:
                    overloads.append(Overload(**base, refusal=str(exc)))
                    continue
                overloads.append(Overload(**base, params=types, result=result))
        return tuple(overloads)

    def _register(self, declared, overload: Overload, deterministic: bool, table: bool = False) -> None:
        if overload.spark_name in self._registered:
            return
        if table:
            spec = TableFunction(name=overload.spark_name, class_name=declared.class_name, method=overload.method,
                                 output_type=output_struct(overload.result), row_output=overload.row_output,
                                 deterministic=deterministic)
        else:
            spec = ScalarFunction(name=overload.spark_name, class_name=declared.class_name, method=overload.method,
                                  result_type=overload.result.spark, deterministic=deterministic)
        static_call(self.spark, BRIDGE, "registerTable" if table else "register",
                    (SESSION, self.spark._jsparkSession), ("java.lang.String", to_json(spec)))
        self._registered.add(overload.spark_name)

    # ------------------------------------------------------------------ jars
    def _add_jars(self) -> None:
        """Flink's function API, then the pipeline's jars, into the session's class loader."""
        flink = sorted(str(p) for p in FLINK_JARS.glob("*.jar")) if FLINK_JARS.exists() else []
        if not flink:
            raise PipelineError("Flink's function API (jars/flink/) is missing, which Flink functions need",
                                hint="run ./scripts/jars.sh flink (./scripts/setup.sh does)")
        wanted = [(path, None) for path in flink]
        wanted += [(path, None) for path in split_jars(self.conf.get("pipeline.jars", ""))]
        wanted += [(added.path, added.source) for added in self.catalog.jars]
        wanted += [(path, f.source) for f in self.catalog.functions.values() for path in f.jars]
        added = _added.setdefault(self.spark.sparkContext.applicationId, set())
        for path, source in wanted:
            local = local_path(path)
            if local is not None and not Path(local).is_file():
                raise PipelineError(f"jar '{path}' does not exist", option=None if source else "pipeline.jars",
                                    origin=source.origin if source else None,
                                    statement=source.text if source else None)
            if path not in added:
                add_jar(self.spark, path)
                added.add(path)


def _output_hint(table: FunctionDescription, method: EvalMethod) -> Optional[str]:
    """The hint that types a table function's output for one eval method, in Flink's order:
    a @FunctionHint output on the method or the class (two different ones: Flink's error),
    then one @DataTypeHint on the method or the class (two different ones: Flink's error)."""
    if method.hinted_output is not None and table.hinted_output is not None \
            and method.hinted_output != table.hinted_output:
        raise ValueError(f"{method.method}: its @FunctionHint's output and the class's differ (Flink: Function "
                         f"hints that lead to ambiguous results are not allowed)")
    if method.hinted_output is not None or table.hinted_output is not None:
        return method.hinted_output if method.hinted_output is not None else table.hinted_output
    hints = {h for h in (method.returns.hint, table.output.hint) if h}
    if len(hints) > 1:
        raise ValueError("More than one data type hint found for output of function (Flink: Please use a function "
                         "hint instead)")
    return hints.pop() if hints else None


def output_struct(output) -> str:
    """The Spark struct of one output row of a table function of output type ``output``: a
    ROW's fields under their own names, an atomic type's one field (``f0``)."""
    if output.name == "ROW":
        return output.spark
    return f"struct<f0:{output.spark}>"


def split_jars(value: str) -> list[str]:
    """Flink's ``pipeline.jars``: URLs (or paths) separated by ``;``."""
    return [part.strip() for part in str(value).split(";") if part.strip()]


def local_path(path: str) -> Optional[str]:
    """The file a jar's path or file: URL names, None for a remote URL (hdfs:, s3a: …)."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else path
    return None
