#!/usr/bin/env bash
# Apache Flink 2.3 (PyFlink from PyPI) in a virtualenv of its own: the oracle the
# differential tests compare the job with, and the peer of the benchmarks.
#
#   scripts/flink.sh install     create .services/flink-venv (apache-flink==2.3.0) and fetch
#                                Flink's Kafka SQL connector and its Avro formats ('avro',
#                                'avro-confluent') into .services/flink-jars/
#   scripts/flink.sh python      print the venv's python (exit 3 if not installed)
#   scripts/flink.sh jars        print the connector jars, one per line
#   scripts/flink.sh iceberg     fetch Iceberg's Flink runtime and the Hadoop client it needs
#                                into .services/flink-iceberg-jars/ and print them, one per
#                                line (kept apart: only the iceberg differential tests load
#                                them, the Hadoop ones on the JVM's classpath)
#
# Idempotent and locked against concurrent callers; the venv is kept (CI caches
# .services/), so a second install costs a second.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.services/flink-venv"
JARS="$ROOT/.services/flink-jars"
FLINK_VERSION="${FLINK_VERSION:-2.3.0}"
KAFKA_CONNECTOR="${FLINK_KAFKA_CONNECTOR:-org.apache.flink:flink-sql-connector-kafka:5.0.0-2.2}"
# Flink's own SQL jars of the Avro formats, at Flink's version (Maven Central).
FORMAT_JARS=("org.apache.flink:flink-sql-avro:$FLINK_VERSION" "org.apache.flink:flink-sql-avro-confluent-registry:$FLINK_VERSION")
ICEBERG_JARS="$ROOT/.services/flink-iceberg-jars"
# The newest Iceberg runtime for Flink 2.x on Maven Central (built for 2.1; runs on 2.3),
# and the shaded Hadoop client its Hadoop catalog needs.
ICEBERG_ARTIFACTS="org.apache.iceberg:iceberg-flink-runtime-2.1:1.11.0 org.apache.hadoop:hadoop-client-api:3.4.1 org.apache.hadoop:hadoop-client-runtime:3.4.1"
PYTHON="${PYTHON:-python3}"

log() { echo "flink.sh: $*" >&2; }

install() {
  mkdir -p "$ROOT/.services"
  exec 9>"$ROOT/.services/.flink.lock"
  flock 9
  if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c "import pyflink" 2>/dev/null; then
    log "installing apache-flink==$FLINK_VERSION into $VENV (a few minutes, once) ..."
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q "apache-flink==$FLINK_VERSION"
  fi
  if ! ls "$JARS"/flink-sql-connector-kafka-*.jar >/dev/null 2>&1; then
    log "fetching $KAFKA_CONNECTOR into $JARS ..."
    mkdir -p "$JARS"
    mvn -q -B dependency:copy -Dartifact="$KAFKA_CONNECTOR" -DoutputDirectory="$JARS" -Dtransitive=false
  fi
  for artifact in "${FORMAT_JARS[@]}"; do
    local name="${artifact#*:}"; name="${name%%:*}"
    if ! ls "$JARS/$name-$FLINK_VERSION.jar" >/dev/null 2>&1; then
      log "fetching $artifact into $JARS ..."
      mkdir -p "$JARS"
      mvn -q -B dependency:copy -Dartifact="$artifact" -DoutputDirectory="$JARS" -Dtransitive=false
    fi
  done
  log "Flink $FLINK_VERSION ready: $VENV"
}

iceberg() {
  mkdir -p "$ROOT/.services"
  exec 9>"$ROOT/.services/.flink.lock"
  flock 9
  mkdir -p "$ICEBERG_JARS"
  for artifact in $ICEBERG_ARTIFACTS; do
    IFS=: read -r _group name version <<<"$artifact"
    if [[ ! -f "$ICEBERG_JARS/$name-$version.jar" ]]; then
      log "fetching $artifact into $ICEBERG_JARS ..."
      mvn -q -B dependency:copy -Dartifact="$artifact" -DoutputDirectory="$ICEBERG_JARS" -Dtransitive=false >&2
    fi
  done
  ls "$ICEBERG_JARS"/*.jar
}

case "${1:-}" in
  install) install ;;
  iceberg) iceberg ;;
  python)
    [[ -x "$VENV/bin/python" ]] || { log "not installed: run scripts/flink.sh install"; exit 3; }
    echo "$VENV/bin/python" ;;
  jars) ls "$JARS"/*.jar 2>/dev/null ;;
  *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;;
esac
