#!/usr/bin/env bash
# Kafka's topic tool (org.apache.kafka.tools.TopicCommand, i.e. kafka-topics.sh) from jars/kafka/.
# --bootstrap-server defaults to $KAFKA_BOOTSTRAP or 127.0.0.1:9092 (scripts/kafka.sh's default).
#
#   scripts/kafka-topics.sh --create --topic orders --partitions 3
#   scripts/kafka-topics.sh --list
#   scripts/kafka-topics.sh --describe --topic orders
#   scripts/kafka-topics.sh --delete --topic orders
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
[[ -n "$(ls "$ROOT"/jars/kafka/kafka-tools-*.jar 2>/dev/null)" ]] \
  || "$ROOT/scripts/jars.sh" >&2

args=("$@")
if [[ " $* " != *" --bootstrap-server"* ]]; then
  args=(--bootstrap-server "${KAFKA_BOOTSTRAP:-127.0.0.1:9092}" "${args[@]}")
fi
exec "$JAVA" -Xmx256m -Dlog4j2.configurationFile="$ROOT/conf/log4j2.properties" \
  -cp "$ROOT/jars/kafka/*" org.apache.kafka.tools.TopicCommand "${args[@]}"
