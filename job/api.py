"""The library: what the command line, Airflow, the benchmarks and the tests call.

* :func:`compile` reads a pipeline (statements, ``.sql`` files, a YAML pipeline) and
  checks it without Spark: its tables, views, settings and INSERTs as a
  :class:`~job.plan.program.Program`, or the :class:`~job.errors.PipelineError` the
  command line would report (exit code 2).
* :func:`run` runs a pipeline as the command line does and returns its exit code
  (:class:`RunOptions` has the same options as the CLI).
* :func:`collect` runs one query over the pipeline's tables to the end of its input and
  returns its result as Flink's ``TableResult.collect()`` would: the changelog (row kinds
  +I/-U/+U/-D with typed values) and the rows it leaves. Tests compare it with Flink;
  a notebook can look at a query without a sink.
"""
from __future__ import annotations

import tempfile
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional, Sequence

from job.errors import PipelineError
from job.plan.program import Program
from job.run.runner import DEFAULT_STOP_TIMEOUT_S, RunOptions
from job.run.runner import run as _run

__all__ = ["DEFAULT_STOP_TIMEOUT_S", "Program", "Result", "RunOptions", "collect", "compile", "run"]


def compile(options: RunOptions) -> Program:  # noqa: A001 - the library's verb, as in "compile a pipeline"
    """Read and check the pipeline ``options`` name (statements, files, YAML pipeline,
    template variables): no Spark, no data. Raises PipelineError for an invalid one."""
    from job.pipeline.load import load_statements
    from job.plan.program import build_program

    return build_program(load_statements(args=options.statements, files=options.files, pipeline=options.pipeline,
                                         variables=options.variables))


def run(options: RunOptions, out=None, err=None, *, program: Optional[Program] = None) -> int:
    """Run a pipeline; returns the documented exit code (never raises for user errors).
    ``program``: one :func:`compile` returned, run instead of reading the pipeline again."""
    return _run(options, out=out, err=err, program=program)


@dataclass
class Result:
    """A query's result: its columns (name, Flink type), its changelog and final rows."""

    columns: list = field(default_factory=list)          # [(name, LogicalType)]
    changes: list = field(default_factory=list)          # [(kind, tuple)] in emission order
    append_only: bool = True

    @property
    def rows(self) -> list[tuple]:
        """The rows the changelog leaves (+I/+U add a row, -U/-D take one away)."""
        counts: Counter = Counter()
        for kind, row in self.changes:
            counts[_key(row)] += 1 if kind in ("+I", "+U") else -1
        originals = {_key(row): row for _kind, row in self.changes}
        out = []
        for key, n in counts.items():
            if n < 0:
                raise PipelineError(f"the changelog retracts a row it never inserted: {originals[key]}")
            out += [originals[key]] * n
        return out


def _key(row: tuple):
    return repr(row)


def collect(statements: Sequence[str], query: str, *, spark=None, checkpoint_dir: Optional[str] = None,
            conf: Optional[dict] = None, timeout: float = 300.0) -> Result:
    """Run ``query`` (a SELECT) over the tables and views ``statements`` declare, to the
    end of the input (``--once`` semantics: every window closes), and return its result.

    Raises PipelineError for SQL the job refuses, as the command line would report it."""
    from job.errors import Origin
    from job.pipeline.load import load_statements
    from job.plan.program import declare, tables_read
    from job.plan.queries import closing, plan_query
    from job.plan.relation import SIGN
    from job.sql.flink.query import parse_query

    loaded = load_statements(args=list(statements))
    catalog, settings_conf, inserts = declare(loaded.statements, conf)
    if inserts:
        raise PipelineError("collect() takes CREATE TABLE, CREATE VIEW and SET statements and one query",
                            origin=inserts[0].source.origin if inserts[0].source else None)
    if spark is None:
        from job.run.session import build_session

        spark = build_session("collect", {})
    else:  # the caller's session, with the local file systems a job run's session has
        from job.run.session import use_engine_local_files

        use_engine_local_files(spark)
    parsed = parse_query(query, Origin("query"), query)
    for synthetic, written, hint in parsed.table_hints:  # OPTIONS hints: their tables, as declare() adds them
        catalog.add_hinted(synthetic, written, hint, None)
    checkpoint = checkpoint_dir or tempfile.mkdtemp(prefix="streamsql-collect-")
    reads = [catalog.bound_table(name, "source") for name in sorted(tables_read(catalog, parsed))]
    planner, rel, reading = plan_query(spark, catalog, settings_conf, parsed, checkpoint, tables=reads, once=True)
    rel = planner.settle(rel)
    result = Result([(f.name, f.type) for f in rel.fields], [], rel.append_only)
    cols = rel.cols()
    df = planner.signed(rel)

    def gather(batch, _batch_id):
        from job.plan.sink import label_changes

        if rel.append_only:
            for r in batch.collect():
                values = tuple(r[c] for c in cols)
                result.changes += [("+I", values)] * int(r[SIGN])
            return
        key = sorted(rel.unique_key) if rel.unique_key else cols
        for r in label_changes(batch, key, cols).collect():
            result.changes.append((r["__op"], tuple(r[c] for c in cols)))

    name = f"collect_{uuid.uuid4().hex[:12]}"
    writer = (df.writeStream.foreachBatch(gather).queryName(name).option("checkpointLocation", checkpoint)
              .outputMode("append").trigger(availableNow=True))
    query_ = writer.start()
    _await(query_, timeout)
    end_of_input = closing(planner, reading)
    if end_of_input is not None:  # --once: closed as a pipeline's query is (job.run.end_of_input)
        from job.run.end_of_input import max_event_time, write_markers

        seen = max_event_time(query_)
        if seen is not None:
            write_markers(end_of_input, seen)
            _await(writer.start(), timeout)
    return result


def _await(query, timeout: float) -> None:
    from job.run.queries import query_failure

    finished = query.awaitTermination(timeout)
    if not finished:
        query.stop()
        raise PipelineError(f"the query did not finish within {timeout:.0f} s")
    if query.exception() is not None:
        raise query_failure(query)
