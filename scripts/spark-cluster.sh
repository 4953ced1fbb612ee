#!/usr/bin/env bash
# A local Spark standalone cluster: one master on 127.0.0.1:7077 and two workers (1 core and
# 1 GB each), run from the pip-installed pyspark (its sbin/spark-daemon.sh and jars; no Spark
# download). For trying the job on a real cluster and for the cluster test:
#
#   scripts/spark-cluster.sh start     # returns once both workers are registered
#   ./spark-submit.sh --master spark://127.0.0.1:7077 --executor-memory 512m -- --pipeline p.yaml --once
#   scripts/spark-cluster.sh status    # prints the master URL; exit 0 running, 3 not running
#   scripts/spark-cluster.sh stop
#
# Logs, pid files and the workers' scratch space live in .services/spark-cluster/ (gitignored).
# Settings (environment): SPARK_MASTER_PORT (7077), SPARK_MASTER_WEBUI_PORT (8080; Spark moves
# to the next free port if taken), SPARK_WORKERS (2), SPARK_WORKER_CORES (1),
# SPARK_WORKER_MEMORY (1g), SPARK_CLUSTER_TIMEOUT (120 s for start).
# Everything binds to 127.0.0.1. `start` is a no-op when the cluster already runs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.services/spark-cluster"
log() { echo "spark-cluster.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }

CMD="${1:-}"; [[ -n "$CMD" ]] || usage

PY="$ROOT/.venv/bin/python"; [[ -x "$PY" ]] || PY=python3
export SPARK_HOME="${SPARK_HOME:-$("$PY" -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')}"
[[ -x "$SPARK_HOME/sbin/spark-daemon.sh" ]] || die "no sbin/spark-daemon.sh under SPARK_HOME=$SPARK_HOME"
# spark-daemon.sh runs bin/spark-class; the pip wheel does not always keep it executable.
chmod +x "$SPARK_HOME/sbin/"*.sh "$SPARK_HOME/bin/"* 2>/dev/null || true

export SPARK_LOCAL_IP=127.0.0.1 SPARK_MASTER_HOST=127.0.0.1 SPARK_PUBLIC_DNS=127.0.0.1
export SPARK_LOG_DIR="$DIR/logs" SPARK_PID_DIR="$DIR/pids" SPARK_IDENT_STRING=streamsql
# Daemons must not pick up a user's spark-env.sh / conf dir from elsewhere.
export SPARK_CONF_DIR="$DIR/conf"
PORT="${SPARK_MASTER_PORT:-7077}"
WEBUI="${SPARK_MASTER_WEBUI_PORT:-8080}"
WORKERS="${SPARK_WORKERS:-2}"
CORES="${SPARK_WORKER_CORES:-1}"
MEMORY="${SPARK_WORKER_MEMORY:-1g}"
TIMEOUT="${SPARK_CLUSTER_TIMEOUT:-120}"
MASTER_URL="spark://127.0.0.1:$PORT"
MASTER_CLASS=org.apache.spark.deploy.master.Master
WORKER_CLASS=org.apache.spark.deploy.worker.Worker
DAEMON="$SPARK_HOME/sbin/spark-daemon.sh"

# The pid recorded by spark-daemon.sh for CLASS instance N, if that process still runs it.
daemon_pid() {
  local file="$SPARK_PID_DIR/spark-$SPARK_IDENT_STRING-$1-$2.pid" pid
  [[ -f "$file" ]] || return 1
  pid="$(cat "$file" 2>/dev/null)"
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$1" || return 1
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

registered_workers() {
  # The master logs one line per worker registration (and a re-registration after a restart).
  local f="$SPARK_LOG_DIR/spark-$SPARK_IDENT_STRING-$MASTER_CLASS-1-$(hostname).out"
  [[ -f "$f" ]] || { echo 0; return; }
  grep -c "Registering worker" "$f" 2>/dev/null || true
}

running() { daemon_pid "$MASTER_CLASS" 1 >/dev/null; }

case "$CMD" in
  start)
    mkdir -p "$SPARK_LOG_DIR" "$SPARK_PID_DIR" "$SPARK_CONF_DIR" "$DIR/work"
    if running; then
      [[ -f "$DIR/master-url" ]] && MASTER_URL="$(cat "$DIR/master-url")"
      log "already running at $MASTER_URL"
      echo "$MASTER_URL"
      exit 0
    fi
    port_open "$PORT" && die "port $PORT is taken by another process"
    # Fresh logs, so that counting registrations below counts this start only.
    rm -f "$SPARK_LOG_DIR"/*.out* "$SPARK_PID_DIR"/*.pid
    "$DAEMON" start "$MASTER_CLASS" 1 --host 127.0.0.1 --port "$PORT" --webui-port "$WEBUI" >/dev/null
    for ((i = 1; i <= WORKERS; i++)); do
      "$DAEMON" start "$WORKER_CLASS" "$i" "$MASTER_URL" --host 127.0.0.1 --cores "$CORES" --memory "$MEMORY" \
        --webui-port 0 --work-dir "$DIR/work/worker-$i" >/dev/null
    done
    deadline=$((SECONDS + TIMEOUT))
    while (( SECONDS < deadline )); do
      n="$(registered_workers)"
      if (( n >= WORKERS )); then
        echo "$MASTER_URL" >"$DIR/master-url"
        log "master $MASTER_URL with $WORKERS workers ($CORES core(s), $MEMORY each); logs in $SPARK_LOG_DIR"
        echo "$MASTER_URL"
        exit 0
      fi
      running || die "the master exited; see $SPARK_LOG_DIR"
      sleep 1
    done
    die "only $(registered_workers) of $WORKERS workers registered within ${TIMEOUT}s; see $SPARK_LOG_DIR"
    ;;
  stop)
    for ((i = WORKERS; i >= 1; i--)); do
      "$DAEMON" stop "$WORKER_CLASS" "$i" >/dev/null 2>&1 || true
    done
    "$DAEMON" stop "$MASTER_CLASS" 1 >/dev/null 2>&1 || true
    rm -f "$DIR/master-url"
    log "stopped"
    ;;
  status)
    if running; then
      [[ -f "$DIR/master-url" ]] && MASTER_URL="$(cat "$DIR/master-url")"
      echo "master $MASTER_URL (pid $(daemon_pid "$MASTER_CLASS" 1)), $(registered_workers) worker registration(s)"
      exit 0
    fi
    echo "not running"
    exit 3
    ;;
  -h|--help) usage ;;
  *) log "unknown command: $CMD"; usage ;;
esac
