"""What a connector is: its declaration (identifier, roles, changelog mode, options), the
two small interfaces it implements to read and write, the hooks the run asks it (the
addresses it talks to, the failures that mean "unreachable", session settings, what a
source's read position refers to, whether a batch waits for its records), and a table
bound to it (:class:`BoundTable`).

Modelled on Flink's DynamicTableFactory: a connector states its options in one place, and
validation, did-you-mean errors and the option tables of docs/connectors.md all come from that
statement. Adding a connector is one new module (or package) under ``job/connectors/`` (or a
Python entry point in the ``streamsql.connectors`` group) and nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from job.errors import PipelineError
# Connectors (and plugins) import these from here, as they always did.
from job.options import APPEND, CHANGELOG, UPSERT, Option, split_list  # noqa: F401

if TYPE_CHECKING:  # Spark objects only appear at run time, never at parse time.
    from pyspark.sql import DataFrame, SparkSession

    from job.formats.base import Format
    from job.sql.statements import CreateTable


@dataclass(frozen=True)
class SourceStream:
    """What a source hands to the planner.

    ``df`` is a streaming DataFrame with the table's declared columns (physical,
    metadata and computed) plus control columns:

    * ``__kind``: for ``upsert`` streams ``'U'`` (the row is the key's latest) or
      ``'D'`` (the key was deleted); for ``changelog`` streams ``'+I'``, ``'-U'``,
      ``'+U'`` or ``'-D'``; absent for ``append`` streams.
    * ``__seq_major`` (string) and ``__seq_minor`` (long): the record's position in the
      source (Kafka partition + offset, file + row), so per-key order follows the source
      and not arrival order inside a micro-batch. Present for keyed streams.
    """

    df: "DataFrame"
    mode: str = APPEND
    bounded: bool = False


@dataclass(frozen=True)
class SourceContext:
    spark: "SparkSession"
    table: "CreateTable"
    options: Mapping[str, Any]        # validated, typed, with defaults filled in
    once: bool = False                # run with Trigger.AvailableNow
    offline: bool = False             # --dry-run: build the plan, contact no external system
    # The reading query's checkpoint directory, for sources that keep state tied to it
    # (postgres-cdc records there that it created its replication slot). None in tests.
    checkpoint: Optional[str] = None
    # Does the plan need each record's position in the source (a changelog normalized by
    # key)? A source may skip numbering its records when it does not.
    ordered: bool = True
    # How many of the reading query's tables wait for records before a micro-batch
    # (Kafka's 'scan.min-offsets-per-trigger'): each waits for its share of the minimum.
    waiting_tables: int = 1
    # Started in Spark's real-time mode (job.plan.real_time): no per-trigger offset limits.
    real_time: bool = False


@dataclass(frozen=True)
class SinkContext:
    spark: "SparkSession"
    table: "CreateTable"
    options: Mapping[str, Any]
    checkpoint: str                   # this query's checkpoint directory
    offline: bool = False             # --dry-run: contact no external system


class SinkError(PipelineError):
    """A micro-batch write failed and the sink has said why, in one paragraph.

    Raised inside ``foreachBatch``, it reaches the runner only as the text of Spark's
    StreamingQueryException (a Python traceback); its ``str`` carries the exit code so
    that ``job.run.queries.query_failure`` can tell it as it was raised."""

    def __str__(self) -> str:
        return f"[exit {self.exit_code}] {self.render()}"


class Sink:
    """Writes a query's result to an external system.

    Append-only queries call :meth:`write_stream` (so a connector can use Spark's native,
    exactly-once streaming sink). Updating queries call :meth:`write_changes` once per
    micro-batch with the batch's changes, collapsed to one row per primary key.
    """

    def __init__(self, ctx: SinkContext) -> None:
        self.ctx = ctx

    def write_stream(self, df: "DataFrame"):
        """Return a configured ``DataStreamWriter`` for an append-only stream.

        The default writes each micro-batch with :meth:`write_append`."""
        return df.writeStream.foreachBatch(lambda batch, batch_id: self.write_append(batch, batch_id))

    def write_append(self, batch: "DataFrame", batch_id: int) -> None:
        """Write one micro-batch of inserted rows."""
        raise NotImplementedError

    def write_upsert_stream(self, df: "DataFrame"):
        """A ``DataStreamWriter`` for a stream of upserts: the sink's persisted columns plus
        ``__op`` ('+U' replaces the row with this primary key, '-D' deletes it; at most one
        per key and micro-batch). None (the default): the sink takes them per micro-batch
        in :meth:`write_changes`. A sink that can write them as a stream saves a Python
        call and a Spark job per micro-batch (lower latency)."""
        return None

    def write_change_stream(self, df: "DataFrame"):
        """A ``DataStreamWriter`` for the raw stream of signed changes (the sink's columns
        plus ``__sign``: +n inserts n copies of the row, -n retracts them), for a sink that
        consumes a changelog without looking at its row kinds (blackhole). None (the
        default): the changes are labelled +I/-U/+U/-D per micro-batch for
        :meth:`write_changes`."""
        return None

    def write_changes(self, batch: "DataFrame", batch_id: int) -> None:
        """Write one micro-batch of changes.

        ``batch`` has the sink's persisted columns plus ``__op``: ``'+I'``/``'+U'``
        (insert or replace the row with this primary key), ``'-U'``/``'-D'`` (retract or
        delete it). Upsert sinks receive only ``'+U'`` and ``'-D'``, one per key, already
        collapsed; sinks that declare ``accepts_retractions`` receive every change.
        """
        raise NotImplementedError


@dataclass(frozen=True)
class Endpoint:
    """A network address a table's connector talks to, as the table wrote it: the run
    checks that something listens there before it starts (and, while it runs, watches it)."""

    option: str                               # the option that names it
    value: str                                # its value, e.g. 'broker1:9092,broker2:9092'
    addresses: tuple[tuple[str, int], ...]    # (host, port) pairs; any one answering will do
    kind: str = "server"                      # what listens there, in messages ('broker')


@dataclass(frozen=True)
class Connector:
    """A connector's declaration. See the module docstring."""

    identifier: str
    description: str
    options: tuple[Option, ...] = ()
    source_mode: Optional[str] = None          # None: cannot be a source
    sink_modes: tuple[str, ...] = ()           # () : cannot be a sink
    requires_primary_key: bool = False
    # The option whose value names a format, and the prefixes format options live under.
    format_options: tuple[str, ...] = ()
    create_source: Optional[Callable[[SourceContext], SourceStream]] = None
    create_sink: Optional[Callable[[SinkContext], Sink]] = None
    # Called after option validation with the table and typed options, for checks that
    # span options and schema (e.g. "key.fields must be columns"). Raises PipelineError.
    check: Optional[Callable[["CreateTable", Mapping[str, Any], str], None]] = None
    accepts_retractions: bool = False          # print: shows -U/-D instead of collapsing
    # The table's changelog mode when it depends on the table rather than the connector
    # alone (jdbc: upsert with a PRIMARY KEY, append without). None: ``source_mode``.
    mode_for: Optional[Callable[["CreateTable"], str]] = None
    module: str = field(default="", compare=False)

    # Hooks: what running a pipeline asks of the connector, so that the run itself knows
    # no connector's options. Each may be left out.
    # The addresses a table talks to, checked for a listener before the run starts.
    endpoints: Optional[Callable[["BoundTable"], Sequence[Endpoint]]] = None
    # Does this failure text (a query's, as Spark reports it) say the system is unreachable?
    is_unreachable: Optional[Callable[[str], bool]] = None
    # Spark settings the session needs for these tables (all of this connector's tables
    # in the pipeline, possibly none) and the pipeline's conf; static ones, so they are
    # asked for before the session exists.
    session_conf: Optional[Callable[[Sequence["BoundTable"], Mapping[str, str]], Mapping[str, str]]] = None
    # Called with the new session (spark, pipeline conf, verbose) before any table is used.
    prepare_session: Optional[Callable[["SparkSession", Mapping[str, str], bool], None]] = None
    # Called once the queries are planned, before they start (spark, pipeline conf, the
    # stream for messages): services the connector offers beside its tables.
    start_services: Optional[Callable[["SparkSession", Mapping[str, str], Any], None]] = None
    # What a source's read position refers to (its topic, its directory…), recorded with
    # the query's checkpoint: a checkpoint of another identity is refused on restart.
    # Without it the identity is the connector alone.
    source_identity: Optional[Callable[["BoundTable"], Mapping[str, Any]]] = None
    # Does a running query's micro-batch wait for a minimum of this table's new records?
    # The tables of a query that do share that minimum (SourceContext.waiting_tables).
    waits_for_records: Optional[Callable[["BoundTable"], bool]] = None

    @property
    def can_source(self) -> bool:
        return self.create_source is not None and self.source_mode is not None

    @property
    def can_sink(self) -> bool:
        return self.create_sink is not None and bool(self.sink_modes)


@dataclass(frozen=True)
class BoundTable:
    """A CREATE TABLE bound to its connector, as :func:`job.connectors.registry.bind`
    makes it: options checked once and typed (defaults filled in), the formats they name
    resolved, the changelog mode known. Everything after validation takes this."""

    table: "CreateTable"
    connector: Connector
    options: Mapping[str, Any]                # validated, typed, with defaults filled in
    formats: Mapping[str, "Format"]           # format option ('format', 'key.format'…) → Format
    mode: str                                 # APPEND, UPSERT or CHANGELOG
    role: Optional[str] = None                # 'source', 'sink' or None (declared, unused)
    # The options whose values are never shown: declared secret, or named like a secret.
    secrets: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def value_format(self) -> Optional["Format"]:
        return self.formats.get("value.format") or self.formats.get("format")


def addresses(value: str, default_port: int) -> tuple[tuple[str, int], ...]:
    """'host:port[,host:port]' (';' too, 'scheme://' ignored) → (host, port) pairs."""
    out = []
    for item in str(value).replace(";", ",").split(","):
        item = item.strip()
        if "://" in item:
            item = item.split("://", 1)[1]
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            host, port = item, str(default_port)
        out.append((host.strip("[]"), int(port)))
    return tuple(out)


# Options every table accepts, whatever its connector (bad-record policy).
COMMON_OPTIONS: tuple[Option, ...] = (
    Option("connector", required=True, description="The connector's identifier."),
    Option(
        "on-error", "enum", default="fail", choices=("fail", "skip", "dead-letter"),
        description="What to do with a record that cannot be decoded: stop the job, "
        "drop it (counted in metrics) or send it to 'dead-letter.table'.",
    ),
    Option("dead-letter.table", description="The table that receives bad records when 'on-error' = 'dead-letter'."),
)


def columns_named(table: "CreateTable", names: Sequence[str]) -> list[str]:
    """Resolve names case-insensitively to the table's own column spelling."""
    out = []
    for n in names:
        col = table.column(n)
        out.append(col.name if col else n)
    return out
