"""The typed plan (job/plan/nodes.py): every step of a query is a frozen node with its kind,
keys, changelog mode, state and engine operator; --explain's JSON, the engine label and the
checkpoint fingerprint are read off these nodes (dry runs: nothing is read)."""
from __future__ import annotations

import dataclasses
import io
import json
import re
from pathlib import Path

import pytest

from job.api import RunOptions, run
from job.plan import nodes
from tests.plan.test_event_time_plans import TABLES

SEED = str(Path(__file__).resolve().parents[2] / "examples" / "user_favorite_color_and_cheese" / "pipeline.yaml")


def explained(**options) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(RunOptions(dry_run=True, **options), out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def test_the_seed_join_as_a_tree(spark):
    code, text = explained(pipeline=SEED, explain_format="json")
    assert code == 0, text
    (query,) = json.loads(text)["queries"]
    assert (query["engine"], query["sink_mode"], query["mode"], query["stateful"]) == \
        ("changelog", "upsert", "micro-batch", True)
    steps = [(s["kind"], s["keys"], s["mode"], s["stateful"], s["engine"], s.get("spec")) for s in query["steps"]]
    assert steps == [
        ("scan", ["uid"], "upsert", False, None, "BoundTable"),
        ("scan", ["userUid"], "upsert", False, None, "BoundTable"),
        ("join", ["u.uid"], "retract", True, "join", None),
        ("scan", ["userUid"], "upsert", False, None, "BoundTable"),
        # The second join on the same key completes the one operator: it holds the spec.
        ("join", ["u.uid"], "retract", True, "join", "Join"),
        ("sink", ["userUid"], "upsert", False, None, "BoundTable"),
    ]
    plan = query["plan"]
    assert plan["kind"] == "sink"
    (second,) = plan["inputs"]
    first, cheese = second["inputs"]
    assert [s["text"] for s in first["inputs"]] == ["scan users: upsert source keyed by (uid)",
                                                     "scan user_favorite_color: upsert source keyed by (userUid)"]
    assert cheese["text"] == "scan user_favorite_cheese: upsert source keyed by (userUid)"

    # docs/how-a-query-runs.md shows this plan: its steps as --dry-run lists them, and its tree.
    doc = (Path(__file__).resolve().parents[2] / "docs" / "how-a-query-runs.md").read_text(encoding="utf-8")
    listed, drawn = re.findall(r"```text\n(.*?)```", doc, re.S)
    code, text = explained(pipeline=SEED)
    assert code == 0, text
    assert listed in text
    assert drawn.splitlines() == drawn_tree(plan)


def drawn_tree(node: dict, indent: str = "") -> list[str]:
    lines = [indent + node["text"] + (f" [{node['note']}]" if node["note"] else "")]
    for child in node.get("inputs", []):
        lines += drawn_tree(child, indent + "  ")
    return lines


def test_current_watermark_is_labelled_as_the_engine_it_runs_on(spark):
    """The label was read from the steps' wording: '[engine: currentWatermark; stateful: …'
    has no '[stateful', so the query was called native."""
    code, text = explained(statements=[TABLES, "INSERT INTO out_rows SELECT uid, CAST(CURRENT_WATERMARK(ts) AS "
                                               "STRING), '' FROM orders"])
    assert code == 0, text
    assert "INSERT INTO out_rows — changelog engine, sink fed as append" in text, text
    code, text = explained(statements=[TABLES, "INSERT INTO out_rows SELECT uid, CAST(CURRENT_WATERMARK(ts) AS "
                                               "STRING), '' FROM orders"], explain_format="json")
    (query,) = json.loads(text)["queries"]
    (watermark,) = [s for s in query["steps"] if s["kind"] == "current_watermark"]
    assert (watermark["engine"], watermark["stateful"], watermark["spec"]) == \
        ("currentWatermark", True, "CurrentWatermark")
    assert query["stateful"] is True


@pytest.mark.parametrize("query, kind, spec", [
    ("SELECT uid, CAST(COUNT(*) AS STRING), '' FROM orders GROUP BY uid", "aggregate", "Aggregate"),
    ("SELECT uid, CAST(id AS STRING), '' FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY uid ORDER BY amount DESC) "
     "AS rn FROM orders) WHERE rn <= 3", "rank", "Rank"),
    ("SELECT uid, CAST(SUM(amount) OVER (PARTITION BY uid ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) "
     "AS STRING), '' FROM orders", "over", "Over"),
    ("SELECT o.uid, CAST(u.score AS STRING), '' FROM orders o LEFT JOIN users u ON o.uid = u.uid", "join", "Join"),
    ("SELECT uid, CAST(window_start AS STRING), CAST(id AS STRING) FROM TABLE(SESSION(TABLE orders PARTITION BY uid, "
     "DESCRIPTOR(ts), INTERVAL '1' MINUTE))", "session_windows", "SessionRows"),
    ("SELECT uid, CAST(id AS STRING), '' FROM orders ORDER BY ts, id", "temporal_sort", "TemporalSort"),
])
def test_each_engine_step_carries_the_spec_it_ran_with(spark, query, kind, spec):
    code, text = explained(statements=[TABLES, f"INSERT INTO out_rows {query}"], explain_format="json")
    assert code == 0, text
    (plan,) = json.loads(text)["queries"]
    (step,) = [s for s in plan["steps"] if s["kind"] == kind]
    assert step["spec"] == spec
    assert step["state_version"] == nodes.OPERATOR_STATE_VERSIONS.get(step["engine"], nodes.ENGINE_STATE_VERSION)
    assert plan["engine"] == "changelog"


def test_nodes_are_frozen_and_explain_their_wording():
    node = nodes.engine("aggregate", "aggregate", "aggregate by (a) computing COUNT(*)", "engine: aggregate; stateful")
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.stateful = False
    assert str(node) == "aggregate by (a) computing COUNT(*) [engine: aggregate; stateful]"
    scan = nodes.scan("scan t: append-only", mode=nodes.APPEND)
    sink = nodes.sink("write appended rows", nodes.APPEND)
    (tree,) = nodes.tree([scan, node, sink])
    assert tree.lines() == ["write appended rows", "  " + str(node), "    scan t: append-only"]
