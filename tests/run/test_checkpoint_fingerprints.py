"""Checkpoint fingerprints read off the typed plan (job/run/compat.py), and the ones the job
wrote before its plan was typed.

data/fingerprints_before_the_typed_plan.json holds what the code before the typed plan
wrote into ``streamsql-plan.json`` for ten queries of one pipeline (aggregation, join,
stateless filters, an aggregation keyed by an array element, a windowed aggregation, OVER,
CURRENT_WATERMARK, session windows, Top-N), captured by running that code. Those checkpoints
must keep working for the same queries, and a changed stateful query must still be refused
on them.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

from job.api import RunOptions, run
from job.run import compat

BEFORE = json.loads((Path(__file__).parent / "data" / "fingerprints_before_the_typed_plan.json").read_text())


def checkpoints_of_the_old_version(root: Path, fingerprints: dict) -> None:
    """A checkpoint per query, as the old version left it: its fingerprint and an offset log entry."""
    for query, entry in fingerprints.items():
        directory = root / query
        (directory / "offsets").mkdir(parents=True)
        (directory / "offsets" / "0").write_text("v1\n{}\n")
        (directory / compat.FINGERPRINT_FILE).write_text(json.dumps(entry["fingerprint"]))


def planned(statements, checkpoint_dir: Path, monkeypatch):
    """Dry-run the statements; the program and plans the run checked its checkpoints with."""
    seen = {}
    check = compat.check_checkpoints

    def keep(program, plans, *, write=True):
        seen.update(program=program, plans=plans)
        return check(program, plans, write=write)

    monkeypatch.setattr(compat, "check_checkpoints", keep)
    out, err = io.StringIO(), io.StringIO()
    code = run(RunOptions(statements=statements, dry_run=True, checkpoint_dir=str(checkpoint_dir)), out=out, err=err)
    return code, out.getvalue() + err.getvalue(), seen


def test_checkpoints_written_before_the_typed_plan_are_kept_then_rewritten(spark, tmp_path, monkeypatch):
    checkpoints_of_the_old_version(tmp_path, BEFORE["fingerprints"])
    code, text, seen = planned(BEFORE["statements"], tmp_path, monkeypatch)
    assert code == 0, text
    plans = {plan.name: plan for plan in seen["plans"]}
    assert sorted(plans) == sorted(BEFORE["fingerprints"])
    for query, entry in BEFORE["fingerprints"].items():
        # Exactly what the old version computed, from the typed plan.
        assert compat.legacy_fingerprint(seen["program"], plans[query]) == entry["fingerprint"], entry["case"]

    # A run (not a dry run) rewrites each in the current format, which the next start accepts.
    compat.check_checkpoints(seen["program"], seen["plans"], write=True)
    for query in BEFORE["fingerprints"]:
        written = json.loads((tmp_path / query / compat.FINGERPRINT_FILE).read_text())
        assert written["format"] == compat.FORMAT
        assert written == compat.fingerprint(seen["program"], plans[query])
    compat.check_checkpoints(seen["program"], seen["plans"], write=False)


def test_the_typed_plan_says_which_queries_keep_state(spark, tmp_path, monkeypatch):
    code, text, seen = planned(BEFORE["statements"], tmp_path, monkeypatch)
    assert code == 0, text
    cases = {entry["case"]: entry for entry in BEFORE["fingerprints"].values()}
    by_case = {BEFORE["fingerprints"][plan.name]["case"]: plan for plan in seen["plans"]}
    stateful = {case for case, plan in by_case.items() if plan.stateful}
    # The old version missed the state of CURRENT_WATERMARK and of session windows' rows
    # (their steps were not marked '[stateful' and their SQL had no GROUP BY, JOIN or OVER).
    assert stateful == {"count", "join", "subscript_count", "tumble", "over", "current_watermark", "session_rows",
                        "topn"}
    assert {case for case, e in cases.items() if e["fingerprint"]["stateful"]} == stateful - {"current_watermark",
                                                                                             "session_rows"}
    # The engine label comes from the steps: a query with any engine operator runs on the engine.
    labels = {case: plan.engine for case, plan in by_case.items()}
    assert labels == {"count": "changelog", "join": "changelog", "stateless": "native", "subscript": "native",
                      "subscript_count": "changelog", "tumble": "native", "over": "changelog",
                      "current_watermark": "changelog", "session_rows": "changelog", "topn": "changelog"}


def test_a_changed_stateful_query_is_refused_on_an_old_checkpoint(spark, tmp_path, monkeypatch):
    old = {q: e for q, e in BEFORE["fingerprints"].items() if e["case"] in ("count", "subscript_count")}
    checkpoints_of_the_old_version(tmp_path, old)
    tables, count, *_ = BEFORE["statements"]
    changed = count.replace("GROUP BY accountId", "WHERE score > 1 GROUP BY accountId")
    assert changed != count
    code, text, _ = planned([tables, changed], tmp_path, monkeypatch)
    assert code == 2, text
    assert "incompatible" in text and "the query's SQL" in text, text


def test_a_changed_step_is_refused_on_a_current_checkpoint(spark, tmp_path, monkeypatch):
    tables, count, *_ = BEFORE["statements"]
    code, text, seen = planned([tables, count], tmp_path, monkeypatch)
    assert code == 0, text
    (plan,) = seen["plans"]
    (tmp_path / plan.name / "offsets").mkdir(parents=True)
    (tmp_path / plan.name / "offsets" / "0").write_text("v1\n{}\n")
    fp = compat.fingerprint(seen["program"], plan)
    assert [op["kind"] for op in fp["state"]["operators"]] == ["scan", "aggregate", "sink"]
    fp["state"]["operators"][1]["state_version"] = 1   # as if the aggregate kept another state layout
    (tmp_path / plan.name / compat.FINGERPRINT_FILE).write_text(json.dumps(fp))
    code, text, _ = planned([tables, count], tmp_path, monkeypatch)
    assert code == 2, text
    assert "the stateful operators" in text, text
