"""The library: what the command line, Airflow, the benchmarks and the tests call.

* :func:`run` runs a pipeline (statements, ``.sql`` files, a YAML pipeline) as the
  command line does and returns its exit code (:class:`~job.run.runner.RunOptions` has
  the same options as the CLI).
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
from job.run.runner import RunOptions
from job.run.runner import run as _run_cli


def run(options: RunOptions, out=None, err=None) -> int:
    """Run a pipeline; returns the documented exit code (never raises for user errors)."""
    return _run_cli(options, out=out, err=err)


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
    from job.catalog import Catalog
    from job.errors import Origin
    from job.pipeline.load import load_statements
    from job.plan.planner import Execution, Planner
    from job.plan.relation import SIGN
    from job.run.end_of_input import EndOfInput, max_event_time, write_markers
    from job.run.sources import OpenedSources, open_source
    from job.sql.flink.query import parse_query
    from job.sql.flink.translate import Settings
    from job.sql.parse import parse_statement
    from job.sql.statements import CreateTable, CreateView, SetOption

    loaded = load_statements(args=list(statements))
    catalog = Catalog()
    settings_conf = dict(conf or {})
    for st in loaded.statements:
        statement = parse_statement(st)
        if isinstance(statement, CreateTable):
            catalog.add_table(statement)
        elif isinstance(statement, CreateView):
            catalog.add_view(statement)
        elif isinstance(statement, SetOption):
            settings_conf[statement.key] = statement.value
        elif statement is not None:
            raise PipelineError("collect() takes CREATE TABLE, CREATE VIEW and SET statements and one query",
                                origin=st.origin)
    if spark is None:
        from job.run.session import build_session

        spark = build_session("collect", {})
    parsed = parse_query(query, Origin("query"), query)
    checkpoint = checkpoint_dir or tempfile.mkdtemp(prefix="streamsql-collect-")
    opened = OpenedSources()
    end_of_input = EndOfInput()

    def open_(table, ordered=True):
        return open_source(spark, table, once=True, opened=opened, checkpoint=checkpoint, end_of_input=end_of_input,
                           ordered=ordered)

    planner = Planner(spark, catalog, open_, Settings.from_conf(settings_conf), Execution.from_conf(settings_conf))
    rel = planner.settle(planner.plan(parsed))
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
    if planner.event_time_span_ms is not None and end_of_input.tables:
        end_of_input.span_ms = planner.event_time_span_ms
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
