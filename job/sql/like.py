"""``CREATE TABLE … LIKE base [(options)]``: the clause, and the merge of the derived
table with its base as Flink's MergeTableLikeUtil does it.

The parser needs no catalog, so a derived table is parsed on its own (job.sql.ddl) and
merged when the statements are declared in order (job.plan.program), with every clash
the merge strategies leave reported at the derived statement's line:column.
"""
from __future__ import annotations

from job.sql.clauses import qualified_name
from job.sql.statements import CreateTable
from job.sql.tokens import Token, TokenStream

# Flink's LIKE features and what each merge strategy may be given to (SqlTableLike).
_LIKE_FEATURES = ("ALL", "CONSTRAINTS", "DISTRIBUTION", "GENERATED", "METADATA", "OPTIONS", "PARTITIONS", "WATERMARKS")
_NOT_OVERWRITABLE = ("ALL", "CONSTRAINTS", "DISTRIBUTION", "PARTITIONS")
# Without options Flink merges INCLUDING ALL OVERWRITING OPTIONS (MergeTableLikeUtil).
_LIKE_DEFAULTS = {f: "INCLUDING" for f in _LIKE_FEATURES if f != "ALL"} | {"OPTIONS": "OVERWRITING"}


def like_clause(ts: TokenStream) -> tuple[Token, str, dict[str, str]]:
    """``base [( {INCLUDING|EXCLUDING|OVERWRITING} feature … )]`` after ``LIKE``: the base
    table's name token and name, and feature → strategy with ALL applied first and the
    named features over it, as Flink computes them."""
    base_token = ts.peek()
    base_name, _ = qualified_name(ts, "the LIKE clause's source table")
    given: list[tuple[str, str]] = []
    if ts.accept("("):
        seen: set[str] = set()
        while True:
            strategy = ts.peek()
            if not strategy.is_keyword("INCLUDING", "EXCLUDING", "OVERWRITING"):
                raise ts.expected("INCLUDING, EXCLUDING or OVERWRITING", strategy)
            ts.next()
            feature = ts.peek()
            if not feature.is_keyword(*_LIKE_FEATURES):
                raise ts.expected("one of " + ", ".join(_LIKE_FEATURES), feature)
            ts.next()
            f, how = feature.value.upper(), strategy.value.upper()
            if how == "OVERWRITING" and f in _NOT_OVERWRITABLE:
                raise ts.error(f"illegal merging strategy '{how}' for '{f}' option", strategy)
            if f in seen:
                raise ts.error("each like option feature can be declared only once", feature)
            seen.add(f)
            given.append((f, how))
            if not ts.accept(","):
                if ts.peek().is_keyword("INCLUDING", "EXCLUDING", "OVERWRITING"):
                    continue  # Flink separates the options by blanks, not commas
                ts.expect(")", what="')' after the LIKE options")
                break
    strategies = dict(_LIKE_DEFAULTS)
    for f, how in given:
        if f == "ALL":
            strategies = {feature: how for feature in strategies}
    strategies.update({f: how for f, how in given if f != "ALL"})
    return base_token, base_name, strategies


def merge_base(ts: TokenStream, declared, base: CreateTable, strategies: dict[str, str], partitioned_by: list[Token]):
    """The base table's parts that ``strategies`` include, then the declared ones: Flink's
    MergeTableLikeUtil, with its errors at the declared part's position. ``declared`` is
    what the statement's element list and WITH clause hold (job.sql.ddl's table parts);
    the result is a new one of the same kind."""
    table = type(declared)()
    for column in base.columns:
        if column.is_physical or strategies[_FEATURE_OF[column.kind]] != "EXCLUDING":
            table.columns.append(column)
    by_name = {c.name.lower(): i for i, c in enumerate(table.columns)}
    for column in declared.columns:
        token = declared.column_tokens[column.name.lower()]
        at = by_name.get(column.name.lower())
        if at is None:
            by_name[column.name.lower()] = len(table.columns)
            table.columns.append(column)
            continue
        existing = table.columns[at]
        if column.is_physical or existing.kind != column.kind:
            kinds = {"computed": "computed columns", "metadata": "metadata columns"}
            only = f"; {kinds[column.kind]} can only overwrite other {kinds[column.kind]}" if not column.is_physical else ""
            raise ts.error(f"a column named '{column.name}' already exists in the base table{only}", token)
        feature = _FEATURE_OF[column.kind]
        if strategies[feature] != "OVERWRITING":
            raise ts.error(f"a {'generated' if feature == 'GENERATED' else 'metadata'} column named '{column.name}' "
                           "already exists in the base table", token,
                           hint=f"specify EXCLUDING {feature} or OVERWRITING {feature} in the LIKE clause.")
        table.columns[at] = column  # in the base column's place, as Flink's merge keeps it
    table.column_tokens = dict(declared.column_tokens)

    table.watermark = declared.watermark
    if base.watermark is not None and strategies["WATERMARKS"] != "EXCLUDING":
        if declared.watermark is None:
            table.base_watermark = base.watermark
        elif strategies["WATERMARKS"] != "OVERWRITING":
            _, token = declared.watermark
            same = token.value.lower() == base.watermark.column.lower()
            raise ts.error(f"there already exists a watermark spec for column '{base.watermark.column}' in the base table"
                           if same else "a table can have only one WATERMARK", token,
                           hint="specify EXCLUDING WATERMARKS or OVERWRITING WATERMARKS in the LIKE clause.")

    table.primary_key = declared.primary_key
    if base.primary_key and strategies["CONSTRAINTS"] == "INCLUDING":
        if declared.primary_key is not None:
            raise ts.error("the base table already has a primary key", declared.primary_key[0],
                           hint="specify EXCLUDING CONSTRAINTS in the LIKE clause.")
        table.base_primary_key = base.primary_key

    if base.partitioned_by and strategies["PARTITIONS"] == "INCLUDING":
        if partitioned_by:
            raise ts.error("the base table already has partitions defined", partitioned_by[0],
                           hint="specify EXCLUDING PARTITIONS in the LIKE clause.")
        table.partitions = base.partitioned_by

    if strategies["OPTIONS"] != "EXCLUDING":
        for key, value in base.options.items():
            if key in declared.options and strategies["OPTIONS"] == "INCLUDING":
                error = ts.error(f"there already exists an option '{key}' in the base table", declared.option_tokens[key],
                                 hint="specify EXCLUDING OPTIONS or OVERWRITING OPTIONS in the LIKE clause.")
                error.option = key
                raise error
            table.options.setdefault(key, value)
            if key in base.option_origins:
                table.option_origins.setdefault(key, base.option_origins[key])
    for key, value in declared.options.items():  # the declared ones win (OVERWRITING)
        table.options[key] = value
        table.option_origins[key] = declared.option_origins[key]
    return table


_FEATURE_OF = {"computed": "GENERATED", "metadata": "METADATA"}
