"""The pipeline's user-defined functions (``CREATE FUNCTION``) in the session.

Flink runs a Java class extending its ``ScalarFunction``; so does the job, on Spark: the
class's jar and Flink's function API (jars/flink/, fetched by scripts/jars.sh) are added to
the session, the engine's bridge (engine/…/udf/FlinkFunctions.java) says what the class
is, and each ``eval`` method a query calls is registered as a Spark function that makes
the class's instance on each executor, opens it once and calls it row by row.

A function is looked up when a query first calls it, so, as in Flink, a declared function
no query calls costs nothing and its class need not load. Where its jar comes from, as
Flink takes it: ``USING JAR '…'``, ``ADD JAR '…'``, or the ``pipeline.jars`` setting
(``SET 'pipeline.jars' = 'file:///…/functions.jar'``, ``;``-separated).

Refused by name, before anything runs: Python functions (at parsing), a class that is not
found, is not a scalar function (table, aggregate, async functions), declares its types
with ``@FunctionHint`` or its own type inference, or calls for types the job cannot pass
(see job.sql.flink.functions.user).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional
from urllib.parse import urlparse

from job.changelog.jvm import add_jar, static_call
from job.changelog.replies import EvalMethod, FunctionDescription, from_json
from job.changelog.specs import ScalarFunction, to_json
from job.errors import PipelineError
from job.sql.flink.functions.user import MAX_ARGS, Overload, UserFunction, java_type

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
        if kind != "scalar":
            raise PipelineError(
                f"{what}: {declared.class_name} is " + (f"a Flink {kind} function, which the job does not run yet"
                                                        if kind != "other" else "not a Flink function class"),
                hint="a class extending org.apache.flink.table.functions.ScalarFunction runs on the job")
        for flag, why in ((described.abstract_class, "the class is abstract"),
                          (described.function_hint, "its types are declared with @FunctionHint, which the job "
                                                    "does not read yet"),
                          (described.custom_inference, "it declares its own type inference (getTypeInference, "
                                                       "getResultType), which the job does not run yet")):
            if flag:
                raise PipelineError(f"{what} ({declared.class_name}): {why}")
        if described.no_instance is not None:
            raise PipelineError(f"{what}: {declared.class_name} cannot be instantiated with no arguments "
                                f"({described.no_instance})")
        overloads = tuple(self._overload(declared, i, e) for i, e in enumerate(sorted(
            described.evals, key=lambda e: e.method)))
        if not overloads:
            raise PipelineError(f"{what}: {declared.class_name} has no public eval method")
        deterministic = described.deterministic
        return UserFunction(declared.name, declared.class_name, declared.system, overloads,
                            register=lambda overload: self._register(declared, overload, deterministic))

    @staticmethod
    def _overload(declared, index: int, described: EvalMethod) -> Overload:
        params = described.params
        spark_name = "flink_udf_" + re.sub(r"\W", "_", declared.class_name) + f"_{index}"
        base = dict(method=described.method, arity=len(params), spark_name=spark_name, varargs=described.varargs)
        if described.varargs:
            return Overload(**base, refusal=f"eval with variable arguments ({described.method}) is not "
                                            f"supported yet")
        if described.function_hint:
            return Overload(**base, refusal=f"eval with @FunctionHint ({described.method}) is not supported yet")
        if len(params) > MAX_ARGS or not params:
            return Overload(**base, refusal=f"eval of {len(params)} arguments is not supported (1 to {MAX_ARGS})")
        try:
            types = tuple(java_type(p.class_name, p.hint, f"parameter {i + 1} of {described.method}")
                          for i, p in enumerate(params))
            result = java_type(described.returns.class_name, described.returns.hint,
                               f"the result of {described.method}")
        except ValueError as exc:
            return Overload(**base, refusal=str(exc))
        return Overload(**base, params=types, result=result)

    def _register(self, declared, overload: Overload, deterministic: bool) -> None:
        if overload.spark_name in self._registered:
            return
        spec = ScalarFunction(name=overload.spark_name, class_name=declared.class_name, method=overload.method,
                              result_type=overload.result.spark, deterministic=deterministic)
        static_call(self.spark, BRIDGE, "register", (SESSION, self.spark._jsparkSession),
                    ("java.lang.String", to_json(spec)))
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


def split_jars(value: str) -> list[str]:
    """Flink's ``pipeline.jars``: URLs (or paths) separated by ``;``."""
    return [part.strip() for part in str(value).split(";") if part.strip()]


def local_path(path: str) -> Optional[str]:
    """The file a jar's path or file: URL names, None for a remote URL (hdfs:, s3a: …)."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else path
    return None
