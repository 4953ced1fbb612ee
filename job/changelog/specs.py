"""The typed contract between the planner and the engine: one frozen spec per operator.

Each engine operator (engine/…/Engine.java) reads exactly one of these, as JSON written
by :func:`to_json` and read by Jackson into the Java record of the same name
(engine/…/spec/*.java; Python's snake_case field names are the records' camelCase
components). The field sets are the same on both sides; tests/changelog/test_spec_contract.py
fails when one side has a field the other does not know.

A spec names the columns an operator reads (its input is one streaming DataFrame) and
what it computes. Column names the engine itself writes, and the upsert columns every
source gives, are :mod:`job.changelog.columns`, not spec fields.

Everything is a tuple, a string, a number or a nested spec, so a spec is hashable and
compares by value (the plan tree and the checkpoint fingerprint keep them).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import ClassVar, Optional

Columns = tuple[str, ...]


# ------------------------------------------------------------------ parts of specs

@dataclass(frozen=True)
class SortKey:
    """One ORDER BY key of a Top-N."""
    column: str                  # the column sorted on
    descending: bool
    nulls_first: bool


@dataclass(frozen=True)
class AggregateCall:
    """One aggregate function call of a GROUP BY or an OVER window."""
    function: str                # the engine's name: count_star, count, sum, avg, min, max, listagg, …, lag
    column: str                  # the output column of its result
    result_type: str             # the result's Spark type, as Spark's type JSON (DataType.json())
    argument: Optional[str] = None   # the input column holding its argument; None for COUNT(*)
    distinct: bool = False       # an aggregate over DISTINCT values
    separator: Optional[str] = None  # LISTAGG's separator (None: Flink's default ',')
    lag_offset: int = 1          # LAG only: how many rows back
    lag_default: Optional[str] = None  # LAG only: the column holding the default value
    class_name: Optional[str] = None  # function "user": the user's Flink AggregateFunction class; its argument
                                      # column is the struct of the call's arguments (NULL: left out by FILTER)
    accumulate: Optional[str] = None  # "user": the accumulate method called (Method.toGenericString())
    retract: Optional[str] = None     # "user": the retract method called (None: an append-only input)


@dataclass(frozen=True)
class JoinSide:
    """One input of a regular join, in the order the inputs are joined."""
    columns: Columns             # the side's own columns, as the join's output carries them
    padded: bool                 # an outer side: its rows are emitted with NULLs when nothing matches
    upsert: bool                 # raw upserts (kind and position columns), normalized by the join itself
    unique: bool                 # at most one row per join key on this side
    passes_null_key: bool        # rows whose key is NULL are passed through padded (they match nothing)


@dataclass(frozen=True)
class ConnectionProperty:
    """One JDBC connection property of a lookup join (may be a secret: never printed)."""
    name: str
    value: str = field(repr=False)


# ------------------------------------------------------------------ operators

@dataclass(frozen=True)
class Normalize:
    """An upsert table's rows (latest row per primary key) → signed changes (retractions).
    Reads the change kind and source position columns of job.changelog.columns."""
    operator: ClassVar[str] = "normalize"
    keys: Columns                # the primary key columns
    row: Columns                 # the columns of a row
    state_ttl_ms: int            # table.exec.state.ttl in milliseconds (0: kept forever)


@dataclass(frozen=True)
class Aggregate:
    """GROUP BY with retractions: (__sign, key columns, one column per call, __net).
    No keys: one global group."""
    operator: ClassVar[str] = "aggregate"
    keys: Columns                # the grouping columns
    calls: tuple[AggregateCall, ...]
    append_only: bool            # the input never retracts (min/max then keep no history)
    ordered: bool                # a call depends on the rows' order (applied by their source position)
    state_ttl_ms: int


@dataclass(frozen=True)
class Join:
    """A regular join of two or more inputs on one key, unioned into one stream with a
    side column (job.changelog.columns.SIDE): (__sign, every side's columns, __net)."""
    operator: ClassVar[str] = "join"
    keys: Columns                # the join key parts (NULL: the row matches nothing)
    sides: tuple[JoinSide, ...]
    state_ttl_ms: int


@dataclass(frozen=True)
class Materialize:
    """Changes → the latest row per sink primary key (Flink's SinkUpsertMaterializer):
    the row columns and __op ('+U' / '-D')."""
    operator: ClassVar[str] = "materialize"
    keys: Columns                # the sink's primary key
    row: Columns                 # the sink's columns
    state_ttl_ms: int


@dataclass(frozen=True)
class NetChanges:
    """A micro-batch's signed rows → at most one '+U' or '-D' per sink key; no state."""
    operator: ClassVar[str] = "netChanges"
    keys: Columns                # the sink's primary key
    row: Columns                 # the sink's columns


@dataclass(frozen=True)
class Rank:
    """Top-N (and deduplication): (__sign, row columns, __rnk, __net)."""
    operator: ClassVar[str] = "rank"
    keys: Columns                # PARTITION BY columns
    row: Columns                 # the columns of a ranked row
    sort: tuple[SortKey, ...]    # ORDER BY
    function: str                # row_number, rank or dense_rank
    lower: int                   # the first rank kept (1-based)
    upper: int                   # the last rank kept
    append_only: bool            # the input never retracts
    show_rank: bool              # the rank is a selected column
    newest_first: bool           # among equal sort keys the later row ranks first
    state_ttl_ms: int


@dataclass(frozen=True)
class CurrentWatermark:
    """CURRENT_WATERMARK: the input's columns plus each row's watermark (that of the rows
    before it). All rows pass one key, in arrival order."""
    operator: ClassVar[str] = "currentWatermark"
    keys: Columns                # one constant column: one sequence of rows
    rowtime: str                 # the table's rowtime column
    delay_ms: int                # the WATERMARK's delay
    column: str                  # the output column holding the watermark
    local: bool                  # TIMESTAMP (local) rather than TIMESTAMP_LTZ


@dataclass(frozen=True)
class Over:
    """An OVER aggregation: the row columns and one column per call; append-only."""
    operator: ClassVar[str] = "over"
    keys: Columns                # PARTITION BY columns
    row: Columns                 # the columns passed on
    rows: bool                   # a ROWS frame (False: RANGE)
    preceding: int               # the frame's PRECEDING bound (rows or ms); -1: UNBOUNDED
    calls: tuple[AggregateCall, ...]
    time: Optional[str] = None   # the event-time column in ms (BIGINT); None: processing time


@dataclass(frozen=True)
class TemporalJoin:
    """An event-time temporal join (FOR SYSTEM_TIME AS OF): the left and right columns;
    append-only. Both sides in one stream with a side column (job.changelog.columns.SIDE)."""
    operator: ClassVar[str] = "temporalJoin"
    keys: Columns                # the join key parts
    left: Columns                # the left side's columns
    right: Columns               # the versioned (right) side's columns
    time: str                    # each row's event time in ms
    retract: str                 # the right side's column marking a version's retraction
    left_outer: bool             # LEFT JOIN: a left row without a version is emitted padded


@dataclass(frozen=True)
class LookupJoin:
    """A lookup join against a database table (stateless): the passed columns, then one
    column per looked-up column (r0, r1, …)."""
    operator: ClassVar[str] = "lookupJoin"
    url: str = field(repr=False)  # the JDBC URL (may hold credentials)
    driver: Optional[str]         # the JDBC driver class (None: found by the URL)
    properties: tuple[ConnectionProperty, ...]
    table: str                    # the database table
    columns: Columns              # its columns, as the database names them (quoted)
    column_types: str             # their Spark types: a struct as Spark's type JSON
    key_columns: tuple[int, ...]  # positions in columns of the lookup key
    keys: Columns                 # input columns holding the key (of the key columns' types)
    passed: Columns               # input columns passed on
    left_outer: bool              # LEFT JOIN: a row without a match is emitted padded
    chunk: int                    # keys queried per statement


@dataclass(frozen=True)
class WindowRank:
    """Window Top-N / deduplication: the row columns (and __rnk); append-only."""
    operator: ClassVar[str] = "windowRank"
    keys: Columns                # PARTITION BY, with the window bounds
    row: Columns                 # the columns of a ranked row
    sort: tuple[SortKey, ...]
    time: str                    # the window's end − 1 ms, the time it is ranked at
    lower: int
    upper: int
    show_rank: bool


@dataclass(frozen=True)
class TemporalSort:
    """A stream sorted by event time, then the other ORDER BY keys (one group: the whole
    stream): the row columns; append-only."""
    operator: ClassVar[str] = "temporalSort"
    row: Columns                 # the columns of a sorted row
    time: str                    # the event time in ms, the first ORDER BY key
    sort: tuple[SortKey, ...]    # the ORDER BY keys after it


@dataclass(frozen=True)
class WindowJoin:
    """A window join: the left and right columns; append-only."""
    operator: ClassVar[str] = "windowJoin"
    keys: Columns                # the join key parts with the window bounds
    left: Columns
    right: Columns
    time: str                    # the window's end − 1 ms, the time it is joined at
    pad_left: bool               # LEFT or FULL: a left row without a match is emitted padded
    pad_right: bool              # RIGHT or FULL


@dataclass(frozen=True)
class SessionRows:
    """The rows of a SESSION window table function: row columns, __start, __end (ms);
    append-only."""
    operator: ClassVar[str] = "sessionRows"
    keys: Columns                # the PARTITION BY columns
    row: Columns
    time: str                    # each row's event time in ms
    gap_ms: int                  # the session gap


@dataclass(frozen=True)
class NumberRows:
    """Each row's index within its partition, as one more BIGINT column (stateless): a
    file split is read in order by one task, so this orders a file's lines (job.connectors.filesystem)."""
    operator: ClassVar[str] = "numberRows"
    column: str                  # the output column


# ------------------------------------------------------------------ expressions

@dataclass(frozen=True)
class DecodedColumn:
    """One column the fast JSON decoder reads."""
    name: str                    # its field name in the record
    kind: str                    # Spark's name of its type: string, byte, short, integer, long, float,
                                 # double, boolean or decimal(p,s)


@dataclass(frozen=True)
class JsonDecoding:
    """The engine's fast JSON decoder (engine/…/formats/FastJson.java), a column
    expression rather than an operator: job.formats.fast_json."""
    envelope: str                # row (the json format) or debezium (debezium-json)
    payload: bool                # Debezium's schema-include: the change is inside "payload"
    columns: tuple[DecodedColumn, ...]


@dataclass(frozen=True)
class ScalarFunction:
    """A user's Flink scalar function registered as a Spark function
    (engine/…/udf/FlinkFunctions.java; job.plan.user_functions)."""
    name: str                    # the Spark function's name
    class_name: str              # the Flink function's class
    method: str                  # its eval method, as Java's Method.toGenericString() writes it
    result_type: str             # the result's Spark type (DDL)
    deterministic: bool          # the function's isDeterministic()


@dataclass(frozen=True)
class TableFunction:
    """A user's Flink table function registered as a Spark function returning, per call, the
    array of the rows its eval collected (engine/…/udf/FlinkFunctions.java; job.plan.lateral)."""
    name: str                    # the Spark function's name
    class_name: str              # the Flink function's class
    method: str                  # its eval method, as Java's Method.toGenericString() writes it
    output_type: str             # the Spark type (DDL) of one output row: a struct, a field per output column
    row_output: bool             # it collects Flink Rows (False: one atomic value per output row)
    deterministic: bool          # the function's isDeterministic()


OPERATORS = (Normalize, Aggregate, Join, Materialize, NetChanges, Rank, CurrentWatermark, Over, TemporalJoin,
             LookupJoin, WindowRank, WindowJoin, SessionRows, NumberRows, TemporalSort)
EXPRESSIONS = (JsonDecoding, ScalarFunction, TableFunction)
PARTS = (SortKey, AggregateCall, JoinSide, ConnectionProperty, DecodedColumn)


def to_json(spec) -> str:
    """The one serialization of a spec (nested specs as objects, tuples as arrays)."""
    if not dataclasses.is_dataclass(spec) or type(spec) not in OPERATORS + EXPRESSIONS:
        raise TypeError(f"not a spec the engine reads: {spec!r}")
    return json.dumps(dataclasses.asdict(spec), separators=(",", ":"))
