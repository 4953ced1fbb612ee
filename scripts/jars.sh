#!/usr/bin/env bash
# Fetch the extra jars from Maven Central into jars/ (gitignored):
#   jars/spark/  <- conf/pom.xml        (Kafka connector + PostgreSQL driver for Spark)
#   jars/kafka/  <- conf/pom-kafka.xml  (a real Kafka broker + CLI tools, never on Spark's classpath)
#   jars/flink/  <- conf/pom-flink.xml  (Flink's function API, added to a session only when a
#                                        pipeline declares a Java user-defined function)
#
# Usage: scripts/jars.sh [spark|kafka|flink|all] [--force] [--quiet]
# Idempotent: each dir carries a stamp with the sha256 of the pom that produced it and is
# skipped while that pom is unchanged (--force: fetch anyway; --quiet: say nothing then).
# Safe to run concurrently (flock). Needs mvn + java only when something must be fetched.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JARS="$ROOT/jars"
FORCE=0 QUIET=0 WHICH=all
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    --quiet|-q) QUIET=1 ;;
    spark|kafka|flink|all) WHICH="$arg" ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "jars.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

log() { echo "jars.sh: $*" >&2; }

mkdir -p "$JARS"
# Several test processes may call this at once; only one may download.
exec 9>"$JARS/.lock"
flock 9

# Where pip-installed (or SPARK_HOME) Spark keeps its jars, for the duplicate check.
pyspark_jars_dir() {
  if [[ -n "${SPARK_HOME:-}" && -d "$SPARK_HOME/jars" ]]; then echo "$SPARK_HOME/jars"; return; fi
  local py="$ROOT/.venv/bin/python"
  [[ -x "$py" ]] || py="$(command -v python3 || true)"
  [[ -n "$py" ]] || return 0
  "$py" - <<'EOF' 2>/dev/null || true
import os, pyspark
print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))
EOF
}

# "kafka-clients-3.9.2.jar" -> "kafka-clients", "hive-exec-2.3.10-core.jar" -> "hive-exec"
artifact_name() {
  local f="$1"
  if [[ "$f" =~ ^(.+)-([0-9][A-Za-z0-9.]*)(-[A-Za-z][A-Za-z0-9._-]*)?\.jar$ ]]; then
    echo "${BASH_REMATCH[1]}"
  else
    echo "${f%.jar}"
  fi
}

# Refuse jars that Spark already ships in another (or the same) version.
check_no_duplicates() {
  local dir="$1" spark_jars dupes=""
  spark_jars="$(pyspark_jars_dir)"
  if [[ -z "$spark_jars" || ! -d "$spark_jars" ]]; then
    log "warning: pyspark jars dir not found, skipped the duplicate check"
    return 0
  fi
  declare -A shipped=()
  local j
  for j in "$spark_jars"/*.jar; do shipped["$(artifact_name "$(basename "$j")")"]=1; done
  for j in "$dir"/*.jar; do
    if [[ -n "${shipped[$(artifact_name "$(basename "$j")")]:-}" ]]; then dupes+=" $(basename "$j")"; fi
  done
  if [[ -n "$dupes" ]]; then
    log "ERROR: already shipped in $spark_jars:$dupes (add exclusions to conf/pom.xml)"
    return 1
  fi
}

# fetch NAME POM: (re)populate jars/NAME from POM unless the stamp matches.
fetch() {
  local name="$1" pom="$ROOT/$2" dest="$JARS/$1" hash
  hash="$(sha256sum "$pom" | cut -d' ' -f1)"
  if [[ $FORCE == 0 && -f "$dest/.stamp" && "$(cat "$dest/.stamp")" == "$hash" ]]; then
    [[ $QUIET == 1 ]] || log "jars/$name up to date ($(ls "$dest"/*.jar | wc -l) jars, ${2} unchanged)"
    return 0
  fi
  command -v mvn >/dev/null || { log "ERROR: mvn not found (apt-get install maven)"; return 1; }
  log "fetching jars/$name from $2 ..."
  local tmp="$JARS/.tmp-$name"
  rm -rf "$tmp"
  local start=$SECONDS
  # -B: no colour/progress noise; a failed download leaves the old dir untouched.
  if ! mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$tmp" >"$JARS/.mvn-$name.log" 2>&1; then
    cat "$JARS/.mvn-$name.log" >&2
    log "ERROR: mvn failed for $2 (log above, also in jars/.mvn-$name.log)"
    rm -rf "$tmp"
    return 1
  fi
  if [[ "$name" == spark || "$name" == flink ]]; then check_no_duplicates "$tmp" || { rm -rf "$tmp"; return 1; }; fi
  echo "$hash" >"$tmp/.stamp"
  rm -rf "$dest"
  mv "$tmp" "$dest"
  log "jars/$name: $(ls "$dest"/*.jar | wc -l) jars in $((SECONDS - start))s"
  if [[ "$name" == spark ]]; then (cd "$dest" && printf '  %s\n' ./*.jar | sed 's|\./||' >&2); fi
}

if [[ $WHICH == spark || $WHICH == all ]]; then fetch spark conf/pom.xml; fi
if [[ $WHICH == kafka || $WHICH == all ]]; then fetch kafka conf/pom-kafka.xml; fi
if [[ $WHICH == flink || $WHICH == all ]]; then fetch flink conf/pom-flink.xml; fi
