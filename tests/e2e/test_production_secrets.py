"""No secret value in anything the job prints: the plan (--explain), progress, printed rows,
error messages — including Kafka/Spark error text that quotes an option value."""
from __future__ import annotations

import pytest

from tests.support.kafka_io import produce, topic_name
from tests.support.runs import job_env, run_cli, run_inline

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

SECRET = "Sup3r-S3cret-Value-42"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" '
        'password="{{ env(\'KAFKA_PASSWORD\') }}";')


def source(bootstrap: str, topic: str, extra: str = "") -> str:
    return (f"CREATE TABLE src (uid STRING, n INT) WITH ('connector' = 'kafka', 'topic' = '{topic}', "
            f"'properties.bootstrap.servers' = '{bootstrap}', 'format' = 'json', "
            f"'scan.startup.mode' = 'earliest-offset', 'properties.sasl.jaas.config' = '{JAAS}', "
            f"'properties.client.id' = 'app-{{{{ env(\"KAFKA_PASSWORD\") }}}}'{extra})")


SINK = "CREATE TABLE out1 (uid STRING, n INT) WITH ('connector' = 'print', 'print-identifier' = '{{ env(\"KAFKA_PASSWORD\") }}')"
INSERT = "INSERT INTO out1 SELECT uid, n FROM src"


def test_explain_progress_and_rows_never_show_the_secret(spark, kafka_bootstrap, tmp_path):
    topic = topic_name("sec")
    produce(spark, kafka_bootstrap, topic, [("a", {"uid": "a", "n": 1}), ("b", {"uid": "b", "n": 2})])
    r = run_cli(source(kafka_bootstrap, topic), SINK, INSERT, "--explain", "--once",
                "--checkpoint-dir", str(tmp_path / "ck"), env=job_env(KAFKA_PASSWORD=SECRET))
    assert r.code == 0, r.err
    everything = r.out + r.err
    assert SECRET not in everything
    assert "properties.sasl.jaas.config=****" in r.out          # masked by name
    assert "properties.client.id=app-****" in r.out             # masked by value
    assert "****> +I[a, 1]" in r.out and "****> +I[b, 2]" in r.out  # printed rows
    assert "batch 0" in r.err
    # and nothing but our own lines: no Spark INFO/WARN, no JVM or Python-worker chatter
    assert [l for l in r.err.splitlines() if not l.startswith("[sql-pipeline-1-out1] ")] == [], r.err


def test_error_text_from_kafka_never_shows_the_secret(tmp_path, kafka_bootstrap):
    ssl = (", 'properties.security.protocol' = 'SSL', "
           "'properties.ssl.truststore.location' = '/nonexistent/{{ env(\"KAFKA_PASSWORD\") }}.jks', "
           "'properties.ssl.truststore.password' = '{{ env(\"KAFKA_PASSWORD\") }}'")
    r = run_cli(source(kafka_bootstrap, "t", ssl), SINK, INSERT, "--explain", "--once",
                "--checkpoint-dir", str(tmp_path / "ck"), env=job_env(KAFKA_PASSWORD=SECRET))
    assert r.code != 0
    assert SECRET not in r.out + r.err
    assert "Failed to load SSL keystore /nonexistent/****.jks" in r.error_line  # Kafka's own words, masked


def test_error_messages_never_show_the_secret(spark, capfd, monkeypatch):
    monkeypatch.setenv("KAFKA_PASSWORD", SECRET)
    bad_insert = "INSERT INTO out1 SELECT uid, n FROM src WHERE uid <> '{{ env(\"KAFKA_PASSWORD\") }}' AND nope = 1"
    r = run_inline(statements=[source("127.0.0.1:1", "t"), SINK, bad_insert], dry_run=True)
    captured = capfd.readouterr()
    assert r.code == 2
    assert "in statement \"INSERT INTO out1 SELECT uid, n FROM src WHERE uid <> '****' AND nope" in r.error_line
    assert SECRET not in r.out + r.err + captured.out + captured.err
