"""Real-time mode (Spark 4.3), chosen per INSERT from the typed plan: which queries qualify
and why the others do not, the slot refusal, and the seed count run end to end in it."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from job.api import RunOptions, run

ROOT = Path(__file__).resolve().parents[2]
COUNT = (ROOT / "examples" / "user_count_by_account" / "pipeline.sql").read_text()
AUTO = "SET 'streamsql.real-time-mode' = 'auto';\n"


def modes(tmp_path, sql: str, **options) -> list[tuple[str, str]]:
    path = tmp_path / "p.sql"
    path.write_text(sql)
    out, err = io.StringIO(), io.StringIO()
    code = run(RunOptions(files=[str(path)], dry_run=True, explain_format="json", **options), out=out, err=err)
    assert code == 0, err.getvalue()
    return [(q["mode"], q["mode_reason"]) for q in json.loads(out.getvalue())["queries"]]


def test_which_mode_and_why(spark, tmp_path):
    assert modes(tmp_path, AUTO + COUNT) == [("real-time", "unbounded Kafka in and out, every step record by record")]
    # off by default, and never under --once
    assert modes(tmp_path, COUNT) == [
        ("micro-batch", "real-time mode is off; SET 'streamsql.real-time-mode' = 'auto' to turn it on")]
    assert modes(tmp_path, AUTO + COUNT, once=True) == [
        ("micro-batch", "--once reads what is available now and stops")]
    to_print = COUNT[:COUNT.index("CREATE TABLE user_count_by_account")] + (
        "CREATE TABLE counts (accountId STRING, userCount BIGINT) WITH ('connector' = 'print');\n"
        "INSERT INTO counts SELECT accountId, COUNT(1) FROM users GROUP BY accountId;")
    assert modes(tmp_path, AUTO + to_print) == [("micro-batch", "sink 'print' is not Kafka")]


@pytest.mark.kafka
def test_a_session_too_small_runs_micro_batch_and_says_what_to_set(spark, kafka_bootstrap, tmp_path):
    """In a session the run did not start (the tests' shared local[2]: not ours to stop and
    start again with more threads), a query that would hold more task slots than it has
    runs in micro-batch mode, and the start-up line names what to set; never Spark's
    CONCURRENT_SCHEDULER_INSUFFICIENT_SLOT. (The stop is asked for before any query starts.)"""
    import threading

    from tests.support.kafka_io import topic_name

    path = tmp_path / "p.sql"
    path.write_text(AUTO + "SET 'spark.sql.shuffle.partitions' = '2';\n" + COUNT)
    err, stop = io.StringIO(), threading.Event()
    stop.set()
    code = run(RunOptions(files=[str(path)], checkpoint_dir=str(tmp_path / "ckpt"), stop_event=stop,
                          variables={"bootstrap": kafka_bootstrap, "users_topic": topic_name("rt_users"),
                                     "counts_topic": topic_name("rt_counts")}), out=io.StringIO(), err=err)
    text = err.getvalue()
    assert code == 0, text
    assert ": micro-batch mode: real-time mode would hold" in text and "give it --master local[" in text, text
    assert "'spark.sql.shuffle.partitions' (now 2)" in text and "CONCURRENT_SCHEDULER" not in text, text


def test_local_masters_are_resized_keeping_their_task_attempts():
    from job.run.real_time import local_master

    assert local_master("local[2,4]", 6) == "local[6,4]"
    assert local_master("local[*]", 5) == "local[5]"
    assert local_master("local", 3) == "local[3]"


@pytest.mark.kafka
@pytest.mark.slow
def test_seed_count_runs_in_real_time(kafka_bootstrap, tmp_path):
    """The seed count in real-time mode (its own process, started on local[2,4] and resized
    to the task slots the query holds): each change is
    written as it comes, and the physical plan is real-time's, without the key-grouping,
    reduction or sort nodes that would block a long-running task."""
    done = subprocess.run([sys.executable, "-m", "tests.support.real_time_run", kafka_bootstrap, str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=400)
    result = json.loads((tmp_path / "result.json").read_text())
    assert "error" not in result, result.get("error")
    assert result["code"] == 0, done.stderr[-3000:]
    assert "real-time mode (checkpoint every 5 s" in result["stderr"], result["stderr"]
    # local[2,4] has too few threads for the slots the query holds: the run starts its session again with more
    assert "local mode runs with local[" in result["stderr"] and ",4] instead of local[2,4]" in result["stderr"]
    assert [(k, json.loads(v)["userCount"]) for k, v in result["records"]] == [("100", 1), ("100", 2), ("101", 1)]
    operators = set(result["operators"])
    assert {"RealTimeStreamScan", "TransformWithState"} <= operators, operators
    assert not [o for o in operators if "Sort" in o or "KeyGroup" in o or "Reduce" in o], operators


def test_a_micro_batch_checkpoint_is_refused_in_our_words(tmp_path):
    """Real-time mode cannot continue state written by micro-batch (checkpoint format v1):
    refused before Spark's CHECKPOINT_FORMAT_V1_NOT_SUPPORTED, naming the option."""
    from types import SimpleNamespace

    from job.errors import PipelineError
    from job.plan import nodes
    from job.run.real_time import check_checkpoint, slots_needed

    commits = tmp_path / "q" / "commits"
    commits.mkdir(parents=True)
    (commits / "0").write_text('v2\n{"nextBatchWatermarkMs":0}')
    (commits / "1").write_text('v1\n{"nextBatchWatermarkMs":0}')
    steps = (nodes.scan("scan users"), nodes.engine("normalize", "normalize", "n", ""),
             nodes.engine("aggregate", "aggregate", "a", ""), nodes.sink("upsert", nodes.UPSERT))
    plan = SimpleNamespace(name="q", checkpoint=str(tmp_path / "q"), stateful=True, nodes=steps)
    with pytest.raises(PipelineError) as refused:
        check_checkpoint(plan)
    assert "was written in micro-batch mode" in str(refused.value)
    assert "'streamsql.real-time-mode' = 'off'" in refused.value.hint
    (commits / "2").write_text('v2\n{"nextBatchWatermarkMs":0}')
    check_checkpoint(plan)  # a real-time mode checkpoint continues
    assert slots_needed(plan, partitions=2, shuffle_partitions=2) == 6  # the seed count: 2 + 2 x 2


def test_state_of_a_first_batch_without_offsets_is_removed(tmp_path):
    """A run killed during its first batch, before Spark wrote that batch's offsets (in
    real-time mode, the end of the checkpoint interval), leaves state files Spark refuses
    to start over (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY): they are removed; state with
    a batch in the offset log is kept."""
    from job.run.queries import clear_state_of_no_batch

    fresh, running = tmp_path / "fresh", tmp_path / "running"
    for root in (fresh, running):
        (root / "state" / "0" / "0").mkdir(parents=True)
        (root / "state" / "0" / "0" / "1.changelog").write_text("x")
        (root / "offsets").mkdir()
    (running / "offsets" / "0").write_text("v1")
    clear_state_of_no_batch(str(fresh))
    clear_state_of_no_batch(str(running))
    assert not (fresh / "state").exists() and (running / "state" / "0" / "0" / "1.changelog").exists()


def test_a_real_time_checkpoint_into_an_upsert_sink_is_not_continued_in_micro_batch(tmp_path):
    """Real-time mode writes each change as it comes; continued by --once, the changes it
    wrote after its last checkpoint would be netted per batch (a row inserted and deleted
    writes nothing) and the upsert sink could keep showing one: refused, naming what to do.
    An append sink is continued (its records were at least once either way)."""
    from types import SimpleNamespace

    from job.errors import PipelineError
    from job.run.real_time import check_continuation, mark

    def plan(name, sink_mode, mode="micro-batch"):
        return SimpleNamespace(name=name, sink_mode=sink_mode, checkpoint=str(tmp_path / name),
                               mode=lambda: mode, mode_reason=lambda: (mode, "--once reads what is available now and stops"))

    upsert, append = plan("counts", "upsert"), plan("events", "append")
    check_continuation([upsert, append])          # no real-time run yet
    mark(upsert)
    mark(append)
    check_continuation([append, plan("counts", "upsert", mode="real-time")])
    with pytest.raises(PipelineError) as refused:
        check_continuation([upsert])
    text = refused.value.render()
    assert "query 'counts' runs in micro-batch mode (--once reads" in text and "written in real-time mode" in text
    assert "start it on a new checkpoint directory" in text
