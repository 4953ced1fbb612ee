"""One streaming query per INSERT, all in one Spark application (Flink's statement set):
planning them, before anything starts.

Planning chooses, per INSERT, between Spark's native operators (append-only inputs, no
join, no GROUP BY other than event-time windows) and the changelog engine, and builds its
sink. A query opens its own tables (job.plan.sources: the connector's stream, the
bad-record policy, the end-of-input markers of ``--once``) and writes through a sink
that counts its output and keeps the graceful stop's gate (job.plan.sink_watch).
Starting, watching and stopping the queries is the run's (:mod:`job.run`), which reads
those counts and closes that gate; planning takes nothing from it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from job.catalog import short_name
from job.connectors.base import SinkContext
from job.errors import PipelineError
from job.plan.analyze import check_streaming
from job.plan.nodes import has_engine, is_stateful
from job.plan.program import Program
from job.plan.real_time import real_time_setting
from job.plan.sink_watch import watched_sink


@dataclass
class QueryPlan:
    name: str
    insert_index: int
    sink_table: str
    sink_mode: str
    checkpoint: str
    nodes: tuple                       # the typed plan (job.plan.nodes.PlanNode), each step after its inputs
    append_only: bool                  # the query's result only inserts rows
    writer: object = None
    dead_letters: list = field(default_factory=list)   # (name, writer, checkpoint)
    observed: list = field(default_factory=list)
    end_of_input: object = None        # for queries with event-time state: how --once closes their windows
    bounded: bool = False              # every table the query reads ends (it runs to completion)

    @property
    def engine(self) -> str:
        """'changelog' when a step runs on the engine or the result is a changelog (its
        rows are updated or retracted), else 'native': Spark's own operators only."""
        return "changelog" if not self.append_only or has_engine(self.nodes) else "native"

    @property
    def stateful(self) -> bool:
        """Does a step keep state across micro-batches (the engine's or Spark's own)?"""
        return is_stateful(self.nodes)

    @property
    def steps(self) -> list[str]:
        """The steps ``--explain`` lists, as it words them."""
        return [str(n) for n in self.nodes if n.shown]

    once: bool = False                 # planned for --once (availableNow)
    real_time_setting: str = "off"     # SET 'streamsql.real-time-mode' (job.plan.real_time)
    # Why a query that qualifies for real-time mode still runs micro-batch (too few task
    # slots on a cluster: job.run.real_time.fit), or "".
    real_time_blocked: str = ""

    def mode(self) -> str:
        """How the query runs: 'micro-batch' or 'real-time' (job.plan.real_time.choose)."""
        return self.mode_reason()[0]

    def mode_reason(self) -> tuple[str, str]:
        """(mode, why), read from the nodes: real-time when every step can run record by record."""
        from job.plan.real_time import choose

        return choose(self)


def query_name(program: Program, index: int, table: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", f"{program.name}-{index + 1}-{short_name(table)}")


def new_planner(spark, catalog, conf, open_source: Callable):
    """A planner with the pipeline's SET options that change a plan."""
    from job.plan.execution import Execution
    from job.plan.planner import Planner
    from job.plan.user_functions import PipelineFunctions
    from job.sql.flink.translate import Settings

    functions = PipelineFunctions(spark, catalog, conf) if catalog.functions else None
    return Planner(spark, catalog, open_source, Settings.from_conf(conf, functions), Execution.from_conf(conf))


def plan_query(spark, catalog, conf, query, checkpoint: str, *, tables=(), once: bool = False,
               offline: bool = False, real_time: bool = False):
    """One query (a parsed SELECT) planned over the catalog's tables, as every INSERT of a
    pipeline and api.collect() plan theirs: (planner, relation, how it opened its tables).
    ``tables``: the bound tables it reads (how many hold its batches back)."""
    from job.connectors.registry import waiting_tables
    from job.plan.sources import QuerySources

    from job.plan.processing_time import PlanAgain

    for table_watermarks in (True, False):
        reading = QuerySources(spark, checkpoint, once, offline, waiting_tables=waiting_tables(tables),
                               real_time=real_time, table_watermarks=table_watermarks)
        planner = new_planner(spark, catalog, conf, reading.open)
        planner.table_watermarks = table_watermarks
        reading.settings = planner.settings
        try:
            return planner, planner.plan(query), reading
        except PlanAgain:  # a window on processing time: without the tables' watermarks
            continue
    raise AssertionError("planned without the tables' watermarks and asked for that again")


def closing(planner, reading):
    """How ``--once`` closes the query's event-time state at the end of its input: its
    end-of-input markers (job.plan.end_of_input), or None when it has no such state."""
    end_of_input = reading.end_of_input
    if planner.event_time_span_ms is None or not end_of_input.tables:
        return None
    end_of_input.span_ms = planner.event_time_span_ms
    return end_of_input


def plan_queries(spark, program: Program, *, checkpoint_dir: str, once: bool = False, offline: bool = False,
                 real_time_blocked: str = "") -> list[QueryPlan]:
    """Plan (not start) every INSERT's query. ``once``: the sources are read up to what
    they hold now (``--once``); ``offline``: contact no external system (``--dry-run``);
    ``real_time_blocked``: why no query may run in real-time mode here."""
    from job.plan.real_time import spark_without_it

    real_time_blocked = real_time_blocked or spark_without_it(spark)
    plans = []
    for i, insert in enumerate(program.inserts):
        try:
            plan = plan_insert(spark, program, i, checkpoint_dir=checkpoint_dir, once=once, offline=offline)
            plan.real_time_blocked = real_time_blocked
            if plan.mode() == "real-time":  # again, with the sources real-time mode accepts
                plan = plan_insert(spark, program, i, checkpoint_dir=checkpoint_dir, once=once,
                                   offline=offline, real_time=True)
                plan.real_time_blocked = real_time_blocked
            plans.append(plan)
        except PipelineError as err:
            raise err.located(insert.query_origin, insert.source.text if insert.source else None)
    return plans


def plan_insert(spark, program: Program, index: int, *, checkpoint_dir: str, once: bool = False,
                offline: bool = False, real_time: bool = False) -> QueryPlan:
    from job.plan.sink import plan_sink

    insert = program.inserts[index]
    bound = program.catalog.bound_table(insert.sink_table, "sink")
    table, connector, options = bound.table, bound.connector, dict(bound.options)
    name = query_name(program, index, insert.table)
    checkpoint = str(Path(checkpoint_dir) / name)
    reads = [program.catalog.bound_table(n, "source") for n in sorted(program.reads.get(index, ()))]
    planner, rel, reading = plan_query(spark, program.catalog, program.conf, insert.parsed, checkpoint, tables=reads,
                                       once=once, offline=offline, real_time=real_time)
    sink = watched_sink(connector.create_sink(SinkContext(spark, table, options, checkpoint, offline=offline)), checkpoint)
    sink_plan = plan_sink(planner, rel, table, connector, sink, insert.column_names)
    if rel.append_only:
        check_streaming(spark, rel.df, insert.query_origin, insert.query,
                        insert.source.text if insert.source else None, f"the query of INSERT INTO {insert.table}")
    opened = reading.opened
    plan = QueryPlan(name, index, table.name, sink_plan.mode, checkpoint, tuple(rel.steps + sink_plan.steps),
                     rel.append_only, sink_plan.writer, observed=opened.observed, bounded=not opened.unbounded)
    plan.end_of_input = closing(planner, reading)
    plan.once, plan.real_time_setting = once, real_time_setting(program.conf)
    for j, (dl_table_name, letters) in enumerate(opened.dead_letters):
        plan.dead_letters.append(dead_letter_writer(spark, program, dl_table_name, letters,
                                                    f"{checkpoint}-dead-letter-{j}", offline))
    return plan


def dead_letter_writer(spark, program: Program, table_name: str, letters, checkpoint: str,
                       offline: bool = False):
    from pyspark.sql import functions as F

    bound = program.catalog.bound_table(table_name, "sink")
    if bound is None:
        raise PipelineError(f"'dead-letter.table' names '{table_name}', which is not a table of this pipeline",
                            option="dead-letter.table")
    table, connector, options = bound.table, bound.connector, dict(bound.options)
    persisted = [c for c in table.columns if c.is_persisted]
    cols = [(letters[c.name] if c.name in letters.columns else
             F.current_timestamp() if "timestamp" in c.spark_type else F.lit(None)).cast(c.spark_type).alias(c.name)
            for c in persisted]
    sink = watched_sink(connector.create_sink(SinkContext(spark, table, options, checkpoint, offline=offline)), checkpoint)
    return (f"dead-letter-{short_name(table.name)}", sink.write_stream(letters.select(*cols)), checkpoint)
