"""Kafka's AdminClient, reached through the JVM Spark already runs: is the broker there,
create the topics a source reads, which partitions exist, what a consumer group
committed, and so where a new query starts ('scan.startup.mode').
"""
from __future__ import annotations

import json

from job.connectors.kafka.common import client_properties, topics
from job.errors import EXIT_UNREACHABLE, PipelineError
from job.options import table_error


def admin_call(spark, options, what: str, fn):
    """Run ``fn(admin)`` with a short-lived Kafka AdminClient; unreachable → exit 3."""
    jvm = spark._jvm
    props = jvm.java.util.Properties()
    for k, v in client_properties(options).items():
        props.put(k, v)
    props.put("request.timeout.ms", "10000")
    props.put("default.api.timeout.ms", "15000")
    admin = jvm.org.apache.kafka.clients.admin.AdminClient.create(props)
    try:
        return fn(admin, jvm)
    except Exception as exc:  # py4j wraps the Java exception; keep only its message
        servers = options.get("properties.bootstrap.servers")
        raise PipelineError(
            f"Kafka at '{servers}' could not be reached while {what}: {_java_message(exc)}",
            option="properties.bootstrap.servers", exit_code=EXIT_UNREACHABLE,
            hint="check that the broker is running and the address is right",
        ) from None
    finally:
        admin.close(jvm.java.time.Duration.ofSeconds(2))


def _java_message(exc: Exception) -> str:
    text = str(exc)
    for line in text.splitlines():
        if "Exception:" in line:
            return line.split("Exception:", 1)[1].strip()[:300]
    return text.splitlines()[0][:300] if text else type(exc).__name__


def check_reachable(spark, options) -> None:
    admin_call(spark, options, "listing topics",
               lambda admin, jvm: admin.listTopics().names().get(15, jvm.java.util.concurrent.TimeUnit.SECONDS))


def ensure_topics(spark, options, names: list[str]) -> None:
    """Create source topics that do not exist yet, with the broker's default partitions and
    replication. Spark's Kafka source fails on a missing topic where Flink's waits for it;
    creating it empty gives Flink's behaviour (a pipeline may start before its producers)."""
    def create(admin, jvm):
        unit = jvm.java.util.concurrent.TimeUnit.SECONDS
        existing = set(admin.listTopics().names().get(15, unit))
        missing = [n for n in names if n not in existing]
        if missing:
            empty = jvm.java.util.Optional.empty()
            topics = jvm.java.util.ArrayList([jvm.org.apache.kafka.clients.admin.NewTopic(n, empty, empty) for n in missing])
            try:
                admin.createTopics(topics).all().get(15, unit)
            except Exception as exc:  # created concurrently by someone else: fine
                if "TopicExistsException" not in str(exc):
                    raise
    admin_call(spark, options, f"creating missing topics {names}", create)


def partitions_of(spark, options, names: list[str]) -> dict[str, list[int]]:
    def describe(admin, jvm):
        result = admin.describeTopics(jvm.java.util.ArrayList(names)).allTopicNames().get(
            15, jvm.java.util.concurrent.TimeUnit.SECONDS)
        return {t: sorted(p.partition() for p in result.get(t).partitions()) for t in names}
    return admin_call(spark, options, f"describing topics {names}", describe)


def committed_offsets(spark, options, group: str) -> dict[tuple[str, int], int]:
    def fetch(admin, jvm):
        offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(
            15, jvm.java.util.concurrent.TimeUnit.SECONDS)
        return {(tp.topic(), tp.partition()): offsets.get(tp).offset() for tp in offsets.keySet()}
    return admin_call(spark, options, f"reading committed offsets of group '{group}'", fetch)



def starting_offsets(spark, table, options) -> dict[str, str]:
    """Flink's scan.startup.mode → Spark's startingOffsets/startingTimestamp."""
    mode = options.get("scan.startup.mode", "group-offsets")
    if mode == "earliest-offset":
        return {"startingOffsets": "earliest"}
    if mode == "latest-offset":
        return {"startingOffsets": "latest"}
    if mode == "timestamp":
        ts = options.get("scan.startup.timestamp-millis")
        if ts is None:
            raise PipelineError("'scan.startup.mode' = 'timestamp' needs 'scan.startup.timestamp-millis'",
                                origin=table.option_origins.get("scan.startup.mode"), option="scan.startup.timestamp-millis",
                                statement=table.source.text if table.source else None)
        return {"startingTimestamp": str(ts)}
    names = topics(options)
    parts = partitions_of(spark, options, names)
    reset = -2 if options.get("properties.auto.offset.reset", "earliest") == "earliest" else -1
    if mode == "specific-offsets":
        given = _parse_specific_offsets(table, options.get("scan.startup.specific-offsets", ""))
        chosen = {t: {str(p): given.get(p, reset) for p in ps} for t, ps in parts.items()}
    else:  # group-offsets: what the group committed, else auto.offset.reset
        group = options.get("properties.group.id")
        committed = committed_offsets(spark, options, group) if group else {}
        chosen = {t: {str(p): committed.get((t, p), reset) for p in ps} for t, ps in parts.items()}
    return {"startingOffsets": json.dumps(chosen)}


def _parse_specific_offsets(table, text: str) -> dict[int, int]:
    """'partition:0,offset:42;partition:1,offset:300' → {0: 42, 1: 300}."""
    out = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        try:
            fields = {k.strip(): v.strip() for k, v in (kv.split(":", 1) for kv in part.split(","))}
            out[int(fields["partition"])] = int(fields["offset"])
        except (ValueError, KeyError):
            raise table_error(table, f"cannot read '{part}' in 'scan.startup.specific-offsets'",
                              option="scan.startup.specific-offsets",
                              hint="write 'partition:0,offset:42;partition:1,offset:300'") from None
    return out
