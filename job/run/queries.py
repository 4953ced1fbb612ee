"""Starting the planned queries (:mod:`job.plan.queries`), all in one Spark application
(Flink's statement set), and telling why one stopped.

Every query starts; if one fails the others are stopped and the failure is reported.
With ``once`` every source is read up to what is available now and the run ends; an
INSERT that reads a table another INSERT writes waits for that one to finish first.
"""
from __future__ import annotations

import re

from job.catalog import short_name
from job.connectors.registry import is_unreachable
from job.errors import EXIT_BAD_RECORD, EXIT_OTHER, EXIT_UNREACHABLE, PipelineError
from job.plan.analyze import spark_error
from job.plan.program import Program, trigger_interval_ms
from job.plan.queries import QueryPlan
from job.plan.sources import BAD_RECORD_MARKER

SINK_ERROR = re.compile(r"SinkError: \[exit (\d+)\] ([^\n]*)")


def trigger_args(program: Program, once: bool) -> dict:
    """AvailableNow under --once; otherwise a micro-batch every interval given by SET, in
    Flink's duration syntax ('10 s', '500 ms', '1 min'), which Spark's parser rejects."""
    if once:
        return {"availableNow": True}
    return {"processingTime": f"{trigger_interval_ms(program.conf)} milliseconds"}


def clear_state_of_no_batch(checkpoint: str) -> None:
    """State files in a checkpoint that has no batch in its offset log belong to a first
    batch that was killed before Spark wrote its offsets (in real-time mode that is at the
    end of the checkpoint interval, seconds after the state began to be written). Spark
    would start such a query as a new one, and refuses to when its state directory is not
    empty (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY): nothing in it was committed, and the
    first batch reads its input again from the start, so remove it."""
    import shutil
    from pathlib import Path

    offsets, state = Path(checkpoint) / "offsets", Path(checkpoint) / "state"
    if state.is_dir() and not (offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())):
        shutil.rmtree(state)


def start_queries(plans: list[QueryPlan], program: Program, *, once: bool):
    trigger = trigger_args(program, once)
    started = []
    for plan in plans:
        clear_state_of_no_batch(plan.checkpoint)
        if plan.mode() == "real-time":
            from job.run import real_time

            started.append(real_time.start(plan, program))
            continue
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
