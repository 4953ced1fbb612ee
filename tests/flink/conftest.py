"""Session fixtures of the differential suite: the cases' data, and Flink's results
computed once (one Flink JVM for all cases)."""
from __future__ import annotations

import os

import pytest

from tests.flink import harness

OUTCOMES: dict[str, "harness.Outcome"] = {}


@pytest.fixture(scope="session")
def outcomes() -> dict:
    """Where each case's outcome goes for the summary at the end. A fixture, not an import:
    pytest loads this file under its own module name, and the test module importing it
    would get a second copy whose dict the summary never sees."""
    return OUTCOMES


@pytest.fixture(scope="session")
def flink_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("flink-cases")
    cases = harness.load_cases(root)
    return root, {c.id: c for c in cases}


@pytest.fixture(scope="session")
def flink_results(request, flink_data):
    if harness.flink_python() is None:
        if os.environ.get("CI"):
            pytest.fail("Flink is not installed: .ci/run runs scripts/flink.sh install")
        pytest.skip("Flink is not installed here: run scripts/flink.sh install")
    _root, cases = flink_data
    # Only the cases this run selected (-k) go to Flink.
    selected = {item.callspec.params["case_id"] for item in request.session.items
                if hasattr(item, "callspec") and "case_id" in item.callspec.params}
    return harness.run_flink([c for case_id, c in cases.items() if case_id in selected])


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
