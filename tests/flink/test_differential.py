"""Every case of tests/flink/cases/ on Flink 2.3 and on the job, final rows compared.

A case whose rows differ fails; a case the job refuses (exit 2 with a reason, in
Flink's terms) is skipped with the reason; a case Flink itself rejects is a broken case
and fails. Totals are printed at the end of the run.
"""
from __future__ import annotations

import pytest

from tests.flink import harness

pytestmark = pytest.mark.slow

def _ids():
    import tempfile
    from pathlib import Path

    return [c.id for c in harness.load_cases(Path(tempfile.mkdtemp(prefix="flink-case-ids-")))]


@pytest.mark.parametrize("case_id", _ids())
def test_same_rows_as_flink(spark, flink_data, flink_results, outcomes, case_id, tmp_path):
    _root, cases = flink_data
    case = cases[case_id]
    rows, refusal, crash = harness.run_ours(spark, case, str(tmp_path / "checkpoint"))
    outcome = harness.compare(flink_results.result(case_id), rows, refusal, crash, case.ordered)
    outcomes[case_id] = outcome
    if outcome.status == "refused":
        pytest.skip(f"refused by the job: {outcome.detail}")
    if case.known_difference:
        assert outcome.status == "different", f"known difference gone ({case.known_difference}): drop the marker"
        pytest.xfail(f"known difference: {case.known_difference}: {outcome.detail}")
    assert outcome.status == "same", f"{outcome.status}: {outcome.detail}\nquery: {case.query}"
