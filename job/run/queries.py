"""One streaming query per INSERT, all in one Spark application (Flink's statement set).

Planning chooses, per INSERT, between Spark's native operators (append-only inputs, no
join, no GROUP BY other than event-time windows) and the changelog engine. Running
starts every query; if one fails the others are stopped and the failure is reported.
With ``once`` every source is read up to what is available now and the run ends; an
INSERT that reads a table another INSERT writes waits for that one to finish first.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from job.catalog import short_name, table_mode
from job.connectors.base import SinkContext
from job.connectors.registry import describe, is_unreachable, validate_options
from job.errors import EXIT_BAD_RECORD, EXIT_OTHER, EXIT_UNREACHABLE, PipelineError
from job.run.metrics import instrument_sink
from job.run.analyze import check_streaming, spark_error
from job.run.end_of_input import EndOfInput
from job.run.program import Program, trigger_interval_ms
from job.run.sources import BAD_RECORD_MARKER, OpenedSources, open_source

SINK_ERROR = re.compile(r"SinkError: \[exit (\d+)\] ([^\n]*)")


@dataclass
class QueryPlan:
    name: str
    insert_index: int
    sink_table: str
    engine: str                        # 'native' or 'changelog'
    sink_mode: str
    checkpoint: str
    steps: list[str]
    writer: object = None
    dead_letters: list = field(default_factory=list)   # (query name, writer)
    observed: list = field(default_factory=list)
    end_of_input: object = None        # job.run.end_of_input.EndOfInput for queries with event-time state
    bounded: bool = False              # every table the query reads ends (it runs to completion)


def query_name(program: Program, index: int, table: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", f"{program.name}-{index + 1}-{short_name(table)}")


def plan_queries(spark, program: Program, *, once: bool, checkpoint_dir: str, offline: bool = False) -> list[QueryPlan]:
    """Plan (not start) every INSERT's query."""
    plans = []
    for i, insert in enumerate(program.inserts):
        try:
            plans.append(plan_insert(spark, program, i, once=once, checkpoint_dir=checkpoint_dir,
                                     offline=offline))
        except PipelineError as err:
            raise err.located(insert.query_origin, insert.source.text if insert.source else None)
    return plans


def plan_insert(spark, program: Program, index: int, *, once: bool, checkpoint_dir: str,
                offline: bool = False) -> QueryPlan:
    from job.plan.planner import Execution, Planner
    from job.plan.sink import plan_sink
    from job.sql.flink.translate import Settings

    insert = program.inserts[index]
    table = program.catalog.table(insert.table)
    connector, options = validate_options(table, "sink")
    name = query_name(program, index, insert.table)
    checkpoint = str(Path(checkpoint_dir) / name)
    opened = OpenedSources()
    end_of_input = EndOfInput()

    def open_(t, ordered=True):
        return open_source(spark, t, once=once, offline=offline, opened=opened, checkpoint=checkpoint,
                           end_of_input=end_of_input, ordered=ordered)

    planner = Planner(spark, program.catalog, open_, Settings.from_conf(program.conf), Execution.from_conf(program.conf))
    rel = planner.plan(insert.parsed)
    sink = instrument_sink(connector.create_sink(SinkContext(spark, table, options, checkpoint, offline=offline)),
                           checkpoint)
    sink_plan = plan_sink(planner, rel, table, connector, sink, insert.column_names)
    steps = rel.steps + sink_plan.steps
    engine = "changelog" if (not rel.append_only or any("[stateful" in s for s in steps)) else "native"
    if rel.append_only:
        check_streaming(spark, rel.df, insert.query_origin, insert.query,
                        insert.source.text if insert.source else None, f"the query of INSERT INTO {insert.table}")
    plan = QueryPlan(name, index, table.name, engine, sink_plan.mode, checkpoint, steps, sink_plan.writer,
                     observed=opened.observed, bounded=not opened.unbounded)
    if planner.event_time_span_ms is not None and end_of_input.tables:
        end_of_input.span_ms = planner.event_time_span_ms
        plan.end_of_input = end_of_input
    for j, (dl_table_name, letters) in enumerate(opened.dead_letters):
        plan.dead_letters.append(dead_letter_writer(spark, program, dl_table_name, letters, f"{checkpoint}-dead-letter-{j}",
                                                       offline))
    return plan


def dead_letter_writer(spark, program: Program, table_name: str, letters, checkpoint: str, offline: bool = False):
    from pyspark.sql import functions as F

    table = program.catalog.table(table_name)
    if table is None:
        raise PipelineError(f"'dead-letter.table' names '{table_name}', which is not a table of this pipeline",
                            option="dead-letter.table")
    connector, options = validate_options(table, "sink")
    persisted = [c for c in table.columns if c.is_persisted]
    cols = [(letters[c.name] if c.name in letters.columns else
             F.current_timestamp() if "timestamp" in c.spark_type else F.lit(None)).cast(c.spark_type).alias(c.name)
            for c in persisted]
    sink = instrument_sink(connector.create_sink(SinkContext(spark, table, options, checkpoint, offline=offline)),
                           checkpoint)
    return (f"dead-letter-{short_name(table.name)}", sink.write_stream(letters.select(*cols)), checkpoint)


# ---------------------------------------------------------------------- running

def trigger_args(program: Program, once: bool) -> dict:
    """AvailableNow under --once; otherwise a micro-batch every interval given by SET, in
    Flink's duration syntax ('10 s', '500 ms', '1 min'), which Spark's parser rejects."""
    if once:
        return {"availableNow": True}
    return {"processingTime": f"{trigger_interval_ms(program.conf)} milliseconds"}


def start_queries(plans: list[QueryPlan], program: Program, *, once: bool):
    trigger = trigger_args(program, once)
    started = []
    for plan in plans:
        for name, writer, checkpoint in plan.dead_letters:
            started.append(writer.queryName(f"{plan.name}-{name}").option("checkpointLocation", checkpoint)
                           .outputMode("append").trigger(**trigger).start())
        writer = (plan.writer.queryName(plan.name).option("checkpointLocation", plan.checkpoint)
                  .outputMode("append").trigger(**trigger))
        started.append(writer.start())
    return started


def waves(plans: list[QueryPlan], program: Program) -> list[list[QueryPlan]]:
    """Split INSERTs so that one reading a table another writes runs after it."""
    out: list[list[QueryPlan]] = []
    written: set[str] = set()
    for plan in plans:
        reads = program.reads.get(plan.insert_index, set())
        if out and not (reads & written):
            out[-1].append(plan)
        else:
            out.append([plan])
            written = set()
        written.add(short_name(plan.sink_table).lower())
    return out


def query_failure(query) -> PipelineError:
    exc = query.exception()
    text = str(exc.desc if hasattr(exc, "desc") else exc)
    # The plan printed with some errors contains the raise_error() literal itself; only an
    # evaluated message (no expression ids like '__error#12') is a bad-record failure.
    pieces = text.split(BAD_RECORD_MARKER)
    evaluated = [p.strip() for p in pieces[1::2] if "#" not in p and "coalesce(" not in p]
    if evaluated:
        inner = evaluated[0]
        return PipelineError(f"query '{query.name}' stopped at a bad record: {inner}", exit_code=EXIT_BAD_RECORD,
                             hint="set 'on-error' = 'skip' or 'dead-letter' on the table to keep going past bad records")
    told = SINK_ERROR.search(text)
    if told:  # a sink's own one-paragraph account of a failed write (connectors.base.SinkError)
        return PipelineError(told.group(2).strip(), exit_code=int(told.group(1)))
    if any(s in text for s in ("TimeoutException", "Connection refused", "UnknownHostException", "Timed out waiting")) \
            or is_unreachable(text):
        err = spark_error(exc, f"query '{query.name}'", origin=None)
        err.exit_code = EXIT_UNREACHABLE
        return err
    err = spark_error(exc, f"query '{query.name}'", origin=None)
    cause = root_cause(text)
    err.message = f"query '{query.name}' failed: " + (cause or err.message.split(": ", 1)[-1])
    err.exit_code = EXIT_OTHER
    return err


_OPERATOR_REASON = re.compile(r"\[TRANSFORM_WITH_STATE_USER_FUNCTION_ERROR\].*?Reason: (.*?)(?: SQLSTATE: \w+|$)",
                              re.S)
_EXCEPTION_LINE = re.compile(r"^\s*(?:[\w.$]+\.)?(\w+(?:Error|Exception)): (.+)$", re.M)


def root_cause(text: str):
    """What went wrong, out of a failure Spark wraps in layers: an engine operator's own
    reason, or the innermost exception of a sink's Python traceback, instead of 'An
    exception was raised by the Python Proxy'. None when the text says it already."""
    reason = _OPERATOR_REASON.search(text)
    if reason:
        return "the engine's operator stopped: " + " ".join(reason.group(1).split())
    if "Python Proxy" not in text:
        return None
    causes = [m for m in _EXCEPTION_LINE.finditer(text) if m.group(1) not in ("Py4JJavaError", "Py4JException")]
    if not causes:
        return None
    name, message = causes[-1].group(1), causes[-1].group(2).strip()
    return f"{name}: {message[:400]}"


def explain_lines(program: Program, plans: list[QueryPlan], checkpoint_dir: str) -> list[str]:
    lines = [f"pipeline {program.name}: {len(program.catalog.tables)} tables, {len(program.catalog.views)} views, "
             f"{len(plans)} queries; checkpoints under {checkpoint_dir}"]
    for key, table in sorted(program.catalog.tables.items()):
        opts = describe(table.options)
        lines.append(f"  table {table.name} [{opts.get('connector')}, {table_mode(table)}]"
                     f"{' PRIMARY KEY (' + ', '.join(table.primary_key) + ')' if table.primary_key else ''}: "
                     + ", ".join(f"{k}={v}" for k, v in sorted(opts.items()) if k != "connector"))
    for plan in plans:
        lines.append(f"  query {plan.name}: INSERT INTO {plan.sink_table} — {plan.engine} engine, sink fed as {plan.sink_mode}, "
                     f"checkpoint {plan.checkpoint}")
        lines += [f"    - {s}" for s in plan.steps]
        lines += [f"    - dead letters → {name} (checkpoint {cp})" for name, _w, cp in plan.dead_letters]
    return lines
