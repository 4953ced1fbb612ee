"""Opening a table for reading: the connector's stream, its bad-record policy, its
watermark.

The policy is per table ('on-error'): ``fail`` stops the query at the first bad record
with its position and a preview; ``skip`` drops bad records and counts them;
``dead-letter`` sends them, with the error and the position, to another table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from job.connectors.base import APPEND, BoundTable, SourceContext, SourceStream
from job.options import parse_duration_ms

BAD_RECORD_MARKER = "[STREAMSQL_BAD_RECORD]"
DEAD_LETTER_COLUMNS = ("raw", "error", "position", "source_table")


@dataclass
class OpenedSources:
    """Per query: the bad-record streams to dead-letter, and the metrics to observe."""

    dead_letters: list = field(default_factory=list)     # (dead-letter table name, DataFrame)
    observed: list = field(default_factory=list)         # observation names
    unbounded: list = field(default_factory=list)        # names of the tables read that never end


def policy_of(options) -> str:
    for key, value in options.items():
        if key.endswith("ignore-parse-errors") and value is True:
            return "skip"
    return options.get("on-error", "fail")


def open_source(spark, bound: BoundTable, *, once: bool, offline: bool = False,
                opened: Optional[OpenedSources] = None, checkpoint: Optional[str] = None,
                end_of_input=None, ordered: bool = True, waiting_tables: int = 1) -> SourceStream:
    """The stream of ``bound`` (a table bound for reading, the catalog's)."""
    from pyspark.sql import functions as F

    table = bound.table
    options = bound.options
    stream = bound.connector.create_source(SourceContext(spark, table, dict(options), once=once, offline=offline,
                                                         checkpoint=checkpoint, ordered=ordered,
                                                         waiting_tables=waiting_tables))
    if opened is not None and not stream.bounded:
        opened.unbounded.append(table.name)
    df = stream.df
    if "__error" in df.columns:
        policy = policy_of(options)
        bad = F.col("__error").isNotNull()
        # Spark would push these filters below the projection that decodes the record and
        # substitute the decoding into the condition, once per CASE branch that mentions it
        # (a Debezium event was parsed up to six times). A nondeterministic conjunct keeps
        # the filter above that projection, where every use of the decoded record shares one
        # parse (with spark.sql.optimizer.enableJsonExpressionOptimization off, see
        # conf/spark-defaults.conf). Source decoding CPU: 16 s → 4.4 s per 500k events.
        here = F.spark_partition_id() >= 0
        if policy == "fail":
            message = F.concat(F.lit(f"{BAD_RECORD_MARKER} table '{table.name}': "), F.col("__error"),
                               F.lit(" at "), F.coalesce(F.col("__position"), F.lit("?")), F.lit(": "),
                               F.coalesce(F.substring(F.col("__raw"), 1, 200), F.lit("<null>")), F.lit(f" {BAD_RECORD_MARKER}"))
            df = df.filter(F.when(bad & here, F.raise_error(message)).isNull())
        else:
            if opened is not None:
                name = f"bad_records_{table.name}".replace(".", "_")
                df = df.observe(name, F.count(F.when(bad, 1)).alias("bad_records"))
                opened.observed.append(name)
                if policy == "dead-letter":
                    letters = df.filter(bad).select(
                        F.col("__raw").alias("raw"), F.col("__error").alias("error"),
                        F.col("__position").alias("position"), F.lit(table.name).alias("source_table"))
                    opened.dead_letters.append((options["dead-letter.table"], letters))
            df = df.filter(~(bad & here))
    if "__kind" in df.columns:
        # A changelog record with no change and no error is a Kafka tombstone that follows
        # a Debezium delete: it carries nothing for the table.
        df = df.filter(F.col("__kind").isNotNull())
    df = df.drop("__error", "__raw", "__position")
    if table.watermark is not None and stream.mode == APPEND:
        from job.run.end_of_input import with_marker

        # With the end-of-input marker stream (job.run.end_of_input): --once closes every window.
        df = with_marker(spark, df, table, None if offline else checkpoint,
                         parse_duration_ms(table.watermark.delay) or 0, end_of_input)
    return SourceStream(df, stream.mode, stream.bounded)


# ------------------------------------------------------------------ reachability

CONNECT_TIMEOUT_S = 5.0


def tables_in_use(program) -> list[BoundTable]:
    """The tables a run reads or writes, dead-letter tables included, in catalog order
    (the catalog's bound tables)."""
    from job.catalog import short_name

    names: set[str] = {short_name(i.table).lower() for i in program.inserts}
    for reads in program.reads.values():
        names |= {n.lower() for n in reads}
    for name in list(names):
        bound = program.catalog.bound_table(name)
        options = bound.options if bound is not None else {}
        if options.get("on-error") == "dead-letter" and options.get("dead-letter.table"):
            names.add(short_name(options["dead-letter.table"]).lower())
    return [program.catalog.bound_table(key) for key in program.catalog.tables if key in names]


def check_endpoints(program, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Fail fast (exit 3) when none of the addresses of a table's endpoint (its
    connector's, e.g. Kafka's brokers) accepts a TCP connection.

    Kafka's own clients retry an unreachable broker until their timeouts expire (15 s for
    the admin preflight, a minute for a producer), and a sink is not contacted before its
    first write; one connect per address answers "is anything listening there" at once.
    Systems that accept the connection but misbehave are left to the clients.
    """
    import socket

    from job.connectors.registry import endpoints
    from job.errors import EXIT_UNREACHABLE
    from job.options import table_error

    tested: dict[str, Optional[str]] = {}
    for bound, endpoint in endpoints(tables_in_use(program)):
        value = endpoint.value
        if value not in tested:
            errors = []
            for host, port in endpoint.addresses:
                try:
                    socket.create_connection((host, port), timeout=timeout).close()
                    errors = []
                    break
                except OSError as exc:
                    errors.append(f"{host}:{port}: {exc.strerror or exc}")
            tested[value] = "; ".join(errors) if errors else None
        if tested[value]:
            raise table_error(bound.table, f"table '{bound.name}': '{endpoint.option}' = '{value}' cannot be reached "
                                           f"({tested[value]})", option=endpoint.option, exit_code=EXIT_UNREACHABLE,
                              hint=f"check that the {endpoint.kind} is running and the address is right")
