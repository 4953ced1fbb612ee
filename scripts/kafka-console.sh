#!/usr/bin/env bash
# Console producer/consumer (Kafka's own tools from jars/kafka/) with keys, in the
# "key|value" line format used throughout the docs.
#
#   scripts/kafka-console.sh produce TOPIC [ConsoleProducer options...]
#       reads "key|value" lines from stdin, e.g.
#       printf 'k1|{"id":1}\nk2|{"id":2}\n' | scripts/kafka-console.sh produce orders
#       Tombstones (null value): add --property null.marker=NULL and send "k1|NULL".
#   scripts/kafka-console.sh consume TOPIC [ConsoleConsumer options...]
#       prints "key|value" from the beginning of the topic ("null" for a null key/value);
#       e.g. --max-messages 10, --property print.partition=true, --timeout-ms 5000 (exit when
#       idle; Kafka then logs a harmless "ERROR ... TimeoutException" and still exits 0)
#
# --bootstrap-server defaults to $KAFKA_BOOTSTRAP or 127.0.0.1:9092 (scripts/kafka.sh's default).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
mode="$1"; shift
args=()
if [[ $# -gt 0 && "$1" != -* ]]; then args+=(--topic "$1"); shift; fi
args+=("$@")
if [[ " $* " != *" --bootstrap-server"* ]]; then
  args=(--bootstrap-server "${KAFKA_BOOTSTRAP:-127.0.0.1:9092}" "${args[@]}")
fi

case "$mode" in
  produce)
    main=org.apache.kafka.tools.ConsoleProducer
    args+=(--property parse.key=true --property "key.separator=|")
    ;;
  consume)
    main=org.apache.kafka.tools.consumer.ConsoleConsumer
    # --from-beginning conflicts with an explicit --offset.
    if [[ " $* " != *" --offset"* && " $* " != *" --from-beginning "* ]]; then args+=(--from-beginning); fi
    args+=(--property print.key=true --property "key.separator=|" --property null.literal=null)
    ;;
  -h|--help|help) usage ;;
  *) echo "kafka-console.sh: unknown mode '$mode' (produce|consume)" >&2; usage ;;
esac

[[ -n "$(ls "$ROOT"/jars/kafka/kafka-tools-*.jar 2>/dev/null)" ]] \
  || "$ROOT/scripts/jars.sh" >&2
exec "$JAVA" -Xmx256m -Dlog4j2.configurationFile="$ROOT/conf/log4j2.properties" \
  -cp "$ROOT/jars/kafka/*" "$main" "${args[@]}"
