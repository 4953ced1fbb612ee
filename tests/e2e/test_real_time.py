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
def test_too_few_slots_are_refused_in_our_words(spark, kafka_bootstrap, tmp_path):
    from tests.support.kafka_io import topic_name

    path = tmp_path / "p.sql"
    path.write_text(AUTO + "SET 'spark.sql.shuffle.partitions' = '2';\n" + COUNT)
    err = io.StringIO()
    code = run(RunOptions(files=[str(path)], checkpoint_dir=str(tmp_path / "ckpt"),
                          variables={"bootstrap": kafka_bootstrap, "users_topic": topic_name("rt_users"),
                                     "counts_topic": topic_name("rt_counts")}), out=io.StringIO(), err=err)
    text = err.getvalue()
    assert code != 0
    assert "runs in real-time mode, which holds a task slot" in text and "--master local[" in text, text
    assert "'spark.sql.shuffle.partitions' (now 2)" in text and "CONCURRENT_SCHEDULER" not in text, text


@pytest.mark.kafka
@pytest.mark.slow
def test_seed_count_runs_in_real_time(kafka_bootstrap, tmp_path):
    """The seed count in real-time mode (its own process: local[4]): each change is
    written as it comes, and the physical plan is real-time's, without the key-grouping,
    reduction or sort nodes that would block a long-running task."""
    done = subprocess.run([sys.executable, "-m", "tests.support.real_time_run", kafka_bootstrap, str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=400)
    result = json.loads((tmp_path / "result.json").read_text())
    assert "error" not in result, result.get("error")
    assert result["code"] == 0, done.stderr[-3000:]
    assert "real-time mode (checkpoint every 5 s" in done.stderr
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
