"""Flink's built-in functions: each one mapped to Spark with Flink's meaning, or refused
by name.

The library is a registry of :class:`Function` entries, one module per category of
Flink's documentation (comparison and logical operators live in the translator):

=============  ===============================================
module         Flink's category
=============  ===============================================
arithmetic     arithmetic functions
string         string functions (regexp: regular expressions; encoding: charsets,
               URLs, PRINTF, STR_TO_MAP, JSON_QUOTE)
temporal       temporal functions
conditional    conditional functions
conversion     type conversion functions
collection     collection functions
json           JSON functions
value          value construction and value access functions
hashing        hash functions
aggregate      aggregate functions
=============  ===============================================

A scalar function is a ``translate(call) -> Typed`` that builds Spark SQL computing
Flink's result (a Spark function that merely shares the name is used only when its
meaning is the same, which its tests against Flink show). An aggregate function
declares its result type and the engine's aggregate that computes it; the planner
evaluates it. Every other function Flink documents is registered with
:func:`not_supported` and refused by name where it is called, before anything runs.
``scripts/gen_docs.py`` writes docs/functions.md from this registry.
"""
from __future__ import annotations

import difflib
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, NoReturn, Optional, Sequence

from sqlglot import exp

from job.sql.flink.typed import lambda_var, let, refuse_untyped_null  # noqa: F401 - used by the categories
from job.sql.types import LogicalType

SCALAR, AGGREGATE, WINDOW, TABLE, OPERATOR = "scalar", "aggregate", "window", "table", "operator"

CATEGORIES = ("comparison", "logical", "arithmetic", "string", "temporal", "conditional", "conversion",
              "collection", "json", "value", "hash", "grouping", "aggregate", "window", "table", "catalog", "other")


@dataclass(frozen=True)
class Function:
    """One Flink function. ``translate`` is None when it is refused (``refusal`` says why)."""

    name: str
    category: str
    signature: str
    description: str = ""
    kind: str = SCALAR
    translate: Optional[Callable] = field(default=None, compare=False, repr=False)
    refusal: Optional[str] = None
    # Aggregates: the Flink result type for the argument types, and the engine's name.
    result: Optional[Callable[[Sequence[LogicalType]], LogicalType]] = field(default=None, compare=False, repr=False)
    engine: Optional[str] = None
    notes: str = ""

    @property
    def supported(self) -> bool:
        return self.refusal is None


REGISTRY: dict[str, Function] = {}

# Where a supported function's answer can still differ from Flink's, found by the
# differential cases and left as they are; docs/functions.md lists them.
DIFFERENCES = [
    "Characters beyond U+FFFF (emoji) count as one character everywhere; Flink's LPAD, RPAD, OVERLAY and "
    "SPLIT(s, '') count them as two (Java strings) and can cut them in half.",
    "Text read with an explicit pattern (TO_TIMESTAMP(s, p), TO_DATE(s, p), UNIX_TIMESTAMP(s, p)) must match the "
    "pattern completely; Flink's reading is lenient (it ignores trailing text and can turn garbage into a date). "
    "Without a pattern the job reads text exactly as Flink does.",
    "Years before 1583: Flink's SimpleDateFormat uses the Julian calendar, the job the proleptic Gregorian one.",
    "IS JSON and the JSON_* readers treat text with a duplicate key or trailing text after the JSON value as not "
    "JSON; Flink accepts both.",
    "JSON_QUERY fails the query (with the reason) for a result holding a number written with an exponent or as "
    "-0, which Flink rewrites (1E+2); JSON_VALUE returns those as Flink does.",
    "REGEXP_EXTRACT / REGEXP_EXTRACT_ALL of a group that may take no part in a match are refused: Spark cannot "
    "tell that group's NULL from an empty match.",
    "FLOAT and DOUBLE meeting in CASE or ARRAY[…]: Flink's type is the first operand's (FLOAT), the job's DOUBLE.",
]


def register(fn: Function, aliases: Sequence[str] = ()) -> Function:
    for name in (fn.name, *aliases):
        if name in REGISTRY and REGISTRY[name].supported and fn.supported:
            raise AssertionError(f"Flink function {name} is registered twice")
        if name not in REGISTRY or fn.supported:
            REGISTRY[name] = fn
    return fn


def scalar(name: str, category: str, signature: str, description: str = "", aliases: Sequence[str] = (),
           notes: str = ""):
    """Register ``translate(call) -> Typed`` as the Flink scalar function ``name``."""

    def wrap(translate):
        register(Function(name, category, signature, description, SCALAR, translate, notes=notes), aliases)
        return translate

    return wrap


def aggregate(name: str, category: str, signature: str, description: str, *, result, engine: str,
              aliases: Sequence[str] = (), notes: str = "") -> Function:
    return register(Function(name, category, signature, description, AGGREGATE, result=result, engine=engine,
                             notes=notes), aliases)


def planned(name: str, category: str, signature: str, description: str, where: str, kind: str = WINDOW,
            aliases: Sequence[str] = ()) -> Function:
    """A function the planner runs where it belongs (``where``: e.g. "in the GROUP BY of a
    window aggregation"); called anywhere else it is refused with that."""

    def translate(call):
        call.refuse(f"{name} is only allowed {where}")

    return register(Function(name, category, signature, description, kind, translate, notes=where), aliases)


def operator(name: str, category: str, description: str, supported: bool = True, why: str = "") -> Function:
    """An operator or special syntax (``=``, ``LIKE``, ``CASE``, ``CAST``…), documented with the
    functions; the translator runs it (see job.sql.flink.translate)."""
    refusal = None if supported else f"{name} is not supported yet" + (f" ({why})" if why else "")
    fn = Function(name, category, name, description, OPERATOR, refusal=refusal)
    OPERATORS.append(fn)
    return fn


OPERATORS: list[Function] = []


def not_supported(name: str, category: str, signature: str = "", why: str = "",
                  kind: str = SCALAR, aliases: Sequence[str] = ()) -> Function:
    """A function Flink has and the job does not run yet: refused by name."""
    reason = f"Flink function {name} is not supported yet" + (f" ({why})" if why else "")
    return register(Function(name, category, signature or f"{name}(…)", kind=kind, refusal=reason), aliases)


def lookup(name: str) -> Optional[Function]:
    _load()
    return REGISTRY.get(name.upper())


# The settings of the query being planned (a Planner sets them): whether a call names a
# user-defined aggregate function (CREATE FUNCTION of an AggregateFunction class) depends
# on the pipeline's declarations, which the callers of is_aggregate do not carry.
PLANNING: ContextVar = ContextVar("planning", default=None)


def _user(node: exp.Anonymous):
    """The user-defined function (job.sql.flink.functions.user.UserFunction) a call means, as
    Flink resolves its name, or None."""
    settings = PLANNING.get()
    return settings.user_function(node.name, builtin=lookup(node.name) is not None) if settings else None


def user_aggregate(node: exp.Expression):
    """The user-defined aggregate function a call means, or None."""
    user = _user(node) if isinstance(node, exp.Anonymous) else None
    return user if user is not None and user.kind == AGGREGATE else None


def is_aggregate(node: exp.Expression) -> bool:
    """Is ``node`` a call of an aggregate function (COUNT, SUM, LISTAGG …, or a user's)?"""
    if isinstance(node, exp.Anonymous):
        user = _user(node)
        if user is not None:
            return user.kind == AGGREGATE
        fn = lookup(node.name)
        return fn is not None and fn.kind == AGGREGATE
    return False


# --------------------------------------------------------------------------- calls


class Call:
    """One call being translated: its arguments, translated on demand, and helpers for
    the checks every function makes (arity, argument families, constant arguments)."""

    def __init__(self, tr, node: exp.Anonymous, function: Function) -> None:
        self.tr = tr
        self.node = node
        self.function = function
        self.name = function.name
        self.raw: list[exp.Expression] = list(node.expressions)
        self._typed: dict[int, object] = {}

    # -- arguments -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.raw)

    def arg(self, i: int):
        """Argument ``i`` translated (a Typed)."""
        if i not in self._typed:
            self._typed[i] = self.tr.expr(self.raw[i])
        return self._typed[i]

    def args(self, *counts: int) -> list:
        """All arguments translated, after checking their number is one of ``counts``."""
        if counts:
            self.arity(*counts)
        return [self.arg(i) for i in range(len(self.raw))]

    def arity(self, *counts: int) -> None:
        if len(self.raw) not in counts:
            wanted = " or ".join(str(c) for c in counts)
            self.refuse(f"{self.name} takes {wanted} argument{'s' if counts != (1,) else ''}, "
                        f"got {len(self.raw)}", hint=f"Flink's signature: {self.function.signature}")

    def constant_string(self, i: int, what: str = "") -> str:
        node = self.raw[i]
        if isinstance(node, exp.Literal) and node.is_string:
            return node.this
        self.refuse(f"argument {i + 1} of {self.name} must be a string literal{' (' + what + ')' if what else ''}",
                    node=node)

    def constant_int(self, i: int, what: str = "") -> int:
        node = self.raw[i]
        negative = False
        if isinstance(node, exp.Neg):
            node, negative = node.this, True
        if isinstance(node, exp.Literal) and not node.is_string and node.this.lstrip("-").isdigit():
            return -int(node.this) if negative else int(node.this)
        self.refuse(f"argument {i + 1} of {self.name} must be an integer literal{' (' + what + ')' if what else ''}",
                    node=self.raw[i])

    def unit(self, i: int) -> str:
        """A time unit argument (``DAY`` in ``TIMESTAMPADD(DAY, …)``) in upper case."""
        node = self.raw[i]
        if isinstance(node, (exp.Var, exp.Column)) and not (isinstance(node, exp.Column) and node.table):
            return node.name.upper()
        self.refuse(f"argument {i + 1} of {self.name} must be a time unit such as DAY or SECOND", node=node)

    def need(self, i: int, *families: str):
        """Argument ``i``, checked to be of one of ``families``: 'string', 'numeric',
        'integer', 'exact', 'boolean', 'temporal', 'timestamp', 'date', 'binary',
        'array', 'map', 'row', 'any'. NULL literals pass."""
        value = self.arg(i)
        x = value.type
        ok = x.is_null or "any" in families or any(_family(x, f) for f in families)
        if not ok:
            self.refuse(f"{self.name}: argument {i + 1} must be {' or '.join(families)}, not {x}",
                        node=self.raw[i], hint=f"Flink's signature: {self.function.signature}")
        return value

    # -- results ----------------------------------------------------------------
    def refuse(self, message: str, node: Optional[exp.Expression] = None, hint: Optional[str] = None) -> NoReturn:
        self.tr.refuse(node if node is not None else self.node, message, hint)

    def nullable(self, *values) -> bool:
        values = values or tuple(self.arg(i) for i in range(len(self.raw)))
        return any(v.type.nullable for v in values)


def _family(x: LogicalType, family: str) -> bool:
    return {
        "string": x.is_character,
        "numeric": x.is_numeric,
        "integer": x.is_integral,
        "exact": x.is_exact,
        "boolean": x.name == "BOOLEAN",
        "temporal": x.name in ("DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ"),
        "timestamp": x.is_timestamp,
        "date": x.name == "DATE",
        "time": x.name == "TIME",
        "binary": x.is_binary,
        "array": x.name == "ARRAY",
        "map": x.name == "MAP",
        "row": x.name == "ROW",
        "interval": x.is_interval,
    }.get(family, False)


def call(tr, node: exp.Anonymous):
    """Translate a function call (the translator's handler for exp.Anonymous)."""
    name = node.name.upper()
    fn = lookup(name)
    user = tr.settings.user_function(name, builtin=fn is not None)
    if user is not None:
        from job.sql.flink.functions.user import call_user_function

        return call_user_function(Call(tr, node, _user_entry(user)), user)
    if fn is None:
        close = difflib.get_close_matches(name, [n for n, f in REGISTRY.items() if f.supported], n=1, cutoff=0.75)
        tr.refuse(node, f"'{name}' is not a Flink function (no match found for function signature {name}(…))",
                  hint=f"did you mean {close[0]}?" if close else
                  "see docs/functions.md for the functions the job supports")
    if not fn.supported:
        tr.refuse(node, fn.refusal)
    if fn.kind == AGGREGATE:
        tr.refuse(node, f"the aggregate function {name} is not allowed here",
                  hint="aggregates go in the select list or HAVING of a query with GROUP BY (or none)")
    if fn.kind != SCALAR:
        if fn.translate is not None:  # planned elsewhere: says where it belongs
            return fn.translate(Call(tr, node, fn))
        tr.refuse(node, f"{name} is not allowed here")
    if name not in NULL_ARGUMENTS:
        refuse_untyped_null(tr, *node.expressions)
    return fn.translate(Call(tr, node, fn))


def _user_entry(user) -> Function:
    return Function(user.name.upper(), "user-defined", f"{user.name}(…)", kind=SCALAR)


def call_table(tr, node: exp.Anonymous, user):
    """``LATERAL TABLE(f(…))``'s call of the user's function ``user`` (job.plan.lateral),
    checked and typed as Flink checks a table function's call."""
    from job.sql.flink.functions.user import call_table_function

    return call_table_function(Call(tr, node, _user_entry(user)), user)


# Functions Flink accepts an untyped NULL argument of (its newer functions, with their own
# type inference); the others are Calcite's and reject it ("Illegal use of 'NULL'").
NULL_ARGUMENTS = frozenset({
    "COALESCE", "NULLIF", "IFNULL", "TYPEOF", "UUID", "ARRAY_CONTAINS", "ARRAY_APPEND", "ARRAY_PREPEND",
    "ARRAY_REMOVE", "ARRAY_POSITION", "ARRAY_JOIN", "SPLIT", "STARTSWITH", "ENDSWITH", "BTRIM", "REGEXP_COUNT",
    "REGEXP_INSTR", "REGEXP_SUBSTR", "REGEXP_EXTRACT_ALL", "PRINTF", "URL_ENCODE", "URL_DECODE", "JSON_STRING",
    "UNHEX", "MAP",
})


_loaded = False
MODULES = ("operators", "arithmetic", "string", "regexp", "encoding", "temporal", "conditional", "conversion",
           "collection", "json", "json_writing", "value", "hashing", "aggregate", "other")


def _load() -> None:
    """Import the category modules (each registers its functions)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    for module in MODULES:
        importlib.import_module(f"{__name__}.{module}")
