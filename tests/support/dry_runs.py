"""A query checked with --dry-run against a few declared tables, as the plan tests do:
its exit code and everything it printed, and where a refusal points."""
from __future__ import annotations

import io

from job.run.runner import RunOptions, run

SINK = "out_rows"


def dry_run(tables: str, query: str) -> tuple[int, str]:
    """(exit code, output) of ``INSERT INTO out_rows <query>`` after ``tables``."""
    out, err = io.StringIO(), io.StringIO()
    code = run(RunOptions(statements=[tables, f"INSERT INTO {SINK} {query}"], dry_run=True), out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def assert_refused_at(tables: str, query: str, at: str, message: str) -> None:
    """The query is refused (exit 2) with ``message``, pointing at the line:column of the
    text ``at`` in its INSERT statement."""
    code, text = dry_run(tables, query)
    assert code == 2, text
    assert message in text, text
    column = f"INSERT INTO {SINK} {query}".index(at) + 1
    assert f":1:{column}:" in text, text
