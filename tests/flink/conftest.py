"""Session fixtures of the differential suite: the cases' data, and Flink's results
computed once (one Flink JVM for all cases).

Flink starts on the selected cases as soon as pytest has collected the tests, and runs
in the background while the other tests run. The differential cases run last, in the
order Flink runs them: each waits for its own case's result only, so the job compares one
case while Flink runs the next."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.flink import harness

OUTCOMES: dict[str, "harness.Outcome"] = {}
# (data root, cases by id, FlinkRun or None) once collection has ended
STARTED: dict[str, object] = {}


def _case_id(item):
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("case_id") if callspec is not None else None


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: _case_id(item) is not None)  # stable: the rest keep their order


def pytest_collection_finish(session):
    selected = {case_id for item in session.items if (case_id := _case_id(item)) is not None}
    if not selected:
        return
    root = Path(tempfile.mkdtemp(prefix="streamsql-flink-cases-"))
    cases = {c.id: c for c in harness.load_cases(root)}
    run = None
    if harness.flink_python() is not None:
        run = harness.FlinkRun([c for case_id, c in cases.items() if case_id in selected])
    STARTED.update(root=root, cases=cases, run=run)


def pytest_sessionfinish(session):
    if STARTED:
        if STARTED["run"] is not None:
            STARTED["run"].stop()
        shutil.rmtree(STARTED["root"], ignore_errors=True)


@pytest.fixture(scope="session")
def outcomes() -> dict:
    """Where each case's outcome goes for the summary at the end. A fixture, not an import:
    pytest loads this file under its own module name, and the test module importing it
    would get a second copy whose dict the summary never sees."""
    return OUTCOMES


@pytest.fixture(scope="session")
def flink_data():
    return STARTED["root"], STARTED["cases"]


@pytest.fixture(scope="session")
def flink_results() -> "harness.FlinkRun":
    """Flink's results: ``flink_results.result(case_id)`` waits for that case only."""
    if STARTED["run"] is None:
        if os.environ.get("CI"):
            pytest.fail("Flink is not installed: .ci/run runs scripts/flink.sh install")
        pytest.skip("Flink is not installed here: run scripts/flink.sh install")
    return STARTED["run"]


def pytest_terminal_summary(terminalreporter):
    if not OUTCOMES:
        return
    counts: dict[str, int] = {}
    for outcome in OUTCOMES.values():
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    total = len(OUTCOMES)
    same = counts.get("same", 0)
    terminalreporter.section("Flink differential suite")
    terminalreporter.write_line(
        f"{total} cases: {same} same as Flink ({100.0 * same / max(total, 1):.0f}%), "
        f"{counts.get('different', 0)} different, {counts.get('refused', 0)} refused by the job, "
        f"{counts.get('error', 0)} errors, {counts.get('flink-rejects', 0)} rejected by Flink")
    for case_id, outcome in sorted(OUTCOMES.items()):
        if outcome.status in ("refused", "flink-rejects"):
            terminalreporter.write_line(f"  {outcome.status}: {case_id}: {outcome.detail[:300]}")
