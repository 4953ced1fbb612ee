"""Iceberg written by the job and by Flink 2.3 (Iceberg's Flink runtime) from the same
input and query, compared: Flink reads the job's table and its own, and both equal the
table pyiceberg reads from the job's; the job's source reads its table as Flink's does. Needs scripts/flink.sh install (and fetches
scripts/flink.sh iceberg's jars)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from chispa import assert_df_equality

from tests.connectors.test_iceberg import read_table
from tests.support.runs import ROOT, run_inline

pytestmark = pytest.mark.slow
FLINK_PYTHON = ROOT / ".services" / "flink-venv" / "bin" / "python"


def iceberg_with(wh, table, **extra) -> str:
    opts = {"connector": "iceberg", "catalog-name": "lake", "catalog-type": "hadoop", "warehouse": f"file://{wh}",
            "catalog-database": "db", "catalog-table": table, "format-version": "2",
            "write.upsert.enabled": "true", **extra}
    return ", ".join(f"'{k}' = '{v}'" for k, v in opts.items())


def test_job_and_flink_write_the_same_iceberg_table(spark, tmp_path):
    if not FLINK_PYTHON.exists():
        if os.environ.get("CI"):
            pytest.fail("Flink is not installed: .ci/run runs scripts/flink.sh install")
        pytest.skip("Flink is not installed here: run scripts/flink.sh install")
    jars = subprocess.run([str(ROOT / "scripts" / "flink.sh"), "iceberg"], check=True, capture_output=True,
                          text=True, timeout=900).stdout.split()
    src, wh = tmp_path / "events", tmp_path / "wh"
    src.mkdir()
    # A count per account over events, and its total by parity: updates of both, and a
    # second-level aggregation whose old rows are retracted as counts move.
    events = [{"id": i, "accountId": f"a{i * 7 % 5}"} for i in range(40)]
    (src / "events.json").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    source = f"CREATE TABLE events (id INT, accountId STRING) WITH ('connector' = 'filesystem', 'path' = '{src}', " \
             "'format' = 'json')"
    columns = "accountId STRING, n BIGINT, PRIMARY KEY (accountId) NOT ENFORCED"
    query = "SELECT accountId, COUNT(*) AS n FROM events WHERE id % 3 <> 0 GROUP BY accountId"

    def pipeline(sink_table):
        return [source, f"CREATE TABLE counts ({columns}) WITH ({iceberg_with(wh, sink_table)})",
                f"INSERT INTO counts {query}"]

    r = run_inline(statements=[";\n".join(pipeline("job_counts")) + ";"], once=True,
                   checkpoint_dir=str(tmp_path / "ck"))
    assert r.code == 0, r.err
    hadoop = [j for j in jars if "/hadoop-" in j]
    spec = {"jars": [j for j in jars if j not in hadoop], "statements": pipeline("flink_counts"),
            "read": {name: f"CREATE TABLE {name} (accountId STRING, n BIGINT) WITH ({iceberg_with(wh, name)})"
                     for name in ("job_counts", "flink_counts")}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    from tests.support.jvm import flink_env

    env = {**flink_env(str(FLINK_PYTHON)), "HADOOP_CLASSPATH": ":".join(hadoop)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYSPARK_GATEWAY_SECRET", None)
    proc = subprocess.run([str(FLINK_PYTHON), str(ROOT / "tests" / "support" / "flink_iceberg.py"),
                           str(tmp_path / "spec.json")], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    read = json.loads(proc.stdout.strip().splitlines()[-1])
    schema = "accountId string, n bigint"
    flink_own = spark.createDataFrame([tuple(r) for r in read["flink_counts"]], schema)
    flink_reads_job = spark.createDataFrame([tuple(r) for r in read["job_counts"]], schema)
    job_table = read_table(spark, wh, ("db", "job_counts"), schema)
    assert job_table.count() == 5
    assert_df_equality(job_table, flink_own, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(flink_reads_job, flink_own, ignore_row_order=True, ignore_nullable=True)
    # The job's source reads the job's table as Flink's source does (a bounded scan).
    from job.errors import PipelineError
    from tests.connectors.test_iceberg import ddl, make_sink, read_source
    reader = "CREATE TABLE {0} (accountId STRING, n BIGINT) WITH ({1})"
    _, job_reads_job = read_source(spark, ddl(reader.format("job_counts", iceberg_with(wh, "job_counts"))),
                                   tmp_path / "read", columns=("accountId", "n"))
    assert job_reads_job == sorted(tuple(r) for r in read["job_counts"])
    # Flink's upserts left equality deletes: scanning its table, or upserting into it, is refused by name.
    with pytest.raises(PipelineError) as e:
        read_source(spark, ddl(reader.format("flink_counts", iceberg_with(wh, "flink_counts"))), tmp_path / "r2")
    assert "equality delete files" in e.value.message
    t = ddl(f"CREATE TABLE counts ({columns}) WITH ({iceberg_with(wh, 'flink_counts')})")
    with pytest.raises(PipelineError) as e:
        make_sink(spark, t, tmp_path / "ck2")
    assert "equality delete files" in e.value.message
