#!/usr/bin/env bash
# End-to-end test of examples/airflow/: a real Apache Airflow runs the DAG
# (`airflow dags test`), whose SparkSubmitOperator submits the job in local mode; the
# pipeline's output for the run's logical date is then checked.
#
#   scripts/test-airflow.sh            # exit 0 when the output is right
#   scripts/test-airflow.sh --install  # only create the virtualenv (CI, while it sets up the rest)
#
# Airflow lives in its own virtualenv, .services/airflow-venv (created on first use and kept;
# AIRFLOW_VERSION, default below, picks the release), never in the project's .venv. Its home
# (sqlite metadata DB) is .services/airflow-home; data goes to a fresh temporary directory.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AIRFLOW_VERSION="${AIRFLOW_VERSION:-3.3.2}"
VENV="$ROOT/.services/airflow-venv"
log() { echo "test-airflow.sh: $*" >&2; }
die() { log "FAILED: $*"; exit 1; }

PYTHON="${AIRFLOW_PYTHON:-$(command -v python3.11 || command -v python3)}"
if [[ ! -x "$VENV/bin/airflow" ]] || ! "$VENV/bin/pip" show apache-airflow 2>/dev/null | grep -qx "Version: $AIRFLOW_VERSION"; then
  log "installing apache-airflow $AIRFLOW_VERSION into $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q "apache-airflow==$AIRFLOW_VERSION" apache-airflow-providers-apache-spark
fi
[[ "${1:-}" != --install ]] || exit 0
[[ -x "$ROOT/.venv/bin/spark-submit" ]] || die "no $ROOT/.venv/bin/spark-submit (run scripts/setup.sh)"

export AIRFLOW_HOME="$ROOT/.services/airflow-home"
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/examples/airflow"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__UNIT_TEST_MODE=False
export AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[2]"}'
export STREAMSQL_HOME="$ROOT"
export SPARK_LOCAL_IP=127.0.0.1
DATA="$(mktemp -d /tmp/streamsql-airflow.XXXXXX)"
trap '[[ -n "${KEEP_DATA:-}" ]] || rm -rf "$DATA"' EXIT
export STREAMSQL_DATA_DIR="$DATA"
mkdir -p "$AIRFLOW_HOME"

DAY=2024-01-31
mkdir -p "$DATA/events/dt=$DAY" "$DATA/events/dt=2024-01-30"
cat >"$DATA/events/dt=$DAY/part-0.json" <<'JSON'
{"user_id": "u1", "action": "purchase", "amount": 12.5}
{"user_id": "u2", "action": "view", "amount": 0}
{"user_id": "u3", "action": "purchase", "amount": 3.0}
not json at all
{"user_id": "u1", "action": "purchase", "amount": 7.25}
JSON
# another day's file, which the run for $DAY must not read
echo '{"user_id": "u9", "action": "purchase", "amount": 99.0}' >"$DATA/events/dt=2024-01-30/part-0.json"

log "airflow db migrate"
"$VENV/bin/airflow" db migrate >"$DATA/db-migrate.log" 2>&1 || { cat "$DATA/db-migrate.log" >&2; die "airflow db migrate"; }
# forget earlier test runs of the DAG (same logical date each time)
"$VENV/bin/airflow" dags delete -y streamsql_daily_purchases >/dev/null 2>&1 || true
log "airflow dags test streamsql_daily_purchases $DAY"
if ! "$VENV/bin/airflow" dags test streamsql_daily_purchases "$DAY" >"$DATA/dags-test.log" 2>&1; then
  tail -60 "$DATA/dags-test.log" >&2
  die "airflow dags test"
fi
grep -q -- "--var run_date=$DAY" "$DATA/dags-test.log" || { tail -60 "$DATA/dags-test.log" >&2; die "no spark-submit with --var run_date=$DAY in the task log"; }

"$ROOT/.venv/bin/python" - "$DATA/purchases/dt=$DAY" "$DAY" <<'PY' || { tail -60 "$DATA/dags-test.log" >&2; die "output check"; }
import glob, json, os, sys
directory, day = sys.argv[1], sys.argv[2]
rows = [json.loads(line) for f in sorted(glob.glob(os.path.join(directory, "*.json")))
        for line in open(f) if line.strip()]
got = sorted((r["run_date"], r["user_id"], r["amount"]) for r in rows)
want = [(day, "u1", 7.25), (day, "u1", 12.5), (day, "u3", 3.0)]
if got != want:
    sys.exit(f"purchases for {day}: got {got}, want {want}")
print(f"purchases for {day}: {len(rows)} rows as expected")
PY
grep -o "\[daily_purchases-[^]]*\] \(batch\|ok:\).*" "$DATA/dags-test.log" >&2 || true

# --- parsing a DAG file writes nothing (the job's zip is built when a task runs) -------------
PARSE_HOME="$DATA/parse-home"
mkdir -p "$PARSE_HOME/examples" && ln -s "$ROOT/job" "$PARSE_HOME/job" && ln -s "$ROOT/examples/airflow" "$PARSE_HOME/examples/airflow"
STREAMSQL_HOME="$PARSE_HOME" "$VENV/bin/python" - "$ROOT/examples/airflow" <<'PY' || die "parsing the DAG files"
import importlib, sys
sys.path.insert(0, sys.argv[1])
for name in ("streamsql_dag", "streamsql_kafka_dag"):
    importlib.import_module(name)
PY
[[ ! -e "$PARSE_HOME/build" ]] || die "parsing the DAG files wrote $(find "$PARSE_HOME/build" -type f | head -3)"
log "parsing the DAG files wrote nothing"

# --- exit 2 (invalid pipeline) fails the task without retrying; exit 3 is retried ------------
"$VENV/bin/python" - "$ROOT/examples/airflow" "$DATA" <<'PY' >"$DATA/retries.log" 2>&1 || { tail -40 "$DATA/retries.log" >&2; die "retry policy"; }
import sys
sys.path.insert(0, sys.argv[1])
from airflow.sdk.exceptions import AirflowFailException
from streamsql_operator import StreamsqlSubmitOperator

def outcome(*args):
    task = StreamsqlSubmitOperator(task_id="t", pipeline_name="t", application_args=list(args), retries=2)
    try:
        task.execute({})
    except AirflowFailException as exc:
        return "fail", str(exc)
    except Exception as exc:
        return "retry", str(exc)
    return "ok", ""

kind, text = outcome("--pipline", "p.yaml")
assert kind == "fail" and "streamsql exited 2 (invalid pipeline): retrying cannot fix it" in text, (kind, text)
unreachable = ("CREATE TABLE s (a INT) WITH ('connector' = 'kafka', 'topic' = 't', 'format' = 'json', "
               "'properties.bootstrap.servers' = '127.0.0.1:1')")
kind, text = outcome("--once", unreachable, "CREATE TABLE o (a INT) WITH ('connector' = 'blackhole')",
                     "INSERT INTO o SELECT a FROM s", "--checkpoint-dir", sys.argv[2] + "/ck-unreachable")
assert kind == "retry" and "Error code is: 3" in text, (kind, text)
print("exit 2: failed without retries; exit 3: left to the retries")
PY
log "$(tail -1 "$DATA/retries.log")"

# --- a Kafka topic drained every 15 minutes: two runs read each event once ------------------
BOOTSTRAP="$("$ROOT/scripts/kafka.sh" start --port 19092 --name test)"
TOPIC="airflow-events-$$-$RANDOM"
produce() {  # produce VALUES...: events into $TOPIC, written by the job itself
  "$ROOT/.venv/bin/python" -m job.main --checkpoint-dir "$DATA/ck-produce-$RANDOM" \
    "CREATE TABLE ev (user_id STRING, action STRING, amount DOUBLE) WITH ('connector' = 'kafka', 'topic' = '$TOPIC', 'properties.bootstrap.servers' = '$BOOTSTRAP', 'format' = 'json')" \
    "INSERT INTO ev VALUES $1" >"$DATA/produce.log" 2>&1 || { cat "$DATA/produce.log" >&2; die "producing to $TOPIC"; }
}
export STREAMSQL_KAFKA_BOOTSTRAP="$BOOTSTRAP" STREAMSQL_KAFKA_TOPIC="$TOPIC"
"$VENV/bin/airflow" dags delete -y streamsql_kafka_purchases >/dev/null 2>&1 || true
produce "('u1', 'purchase', 12.5), ('u2', 'view', 0.0), ('u3', 'purchase', 3.0)"
for RUN in 2024-01-31T00:00:00+00:00 2024-01-31T00:15:00+00:00; do
  log "airflow dags test streamsql_kafka_purchases $RUN"
  "$VENV/bin/airflow" dags test streamsql_kafka_purchases "$RUN" >"$DATA/kafka-dags-test.log" 2>&1 \
    || { tail -60 "$DATA/kafka-dags-test.log" >&2; die "airflow dags test (kafka, $RUN)"; }
  grep -o "\[kafka_purchases-[^]]*\] \(batch\|ok:\).*" "$DATA/kafka-dags-test.log" >&2 || true
  [[ $RUN == *T00:15* ]] || produce "('u1', 'purchase', 7.25), ('u4', 'view', 1.0)"
done
"$ROOT/.venv/bin/python" - "$DATA/kafka_purchases" <<'PY' || die "kafka output check"
import glob, json, os, sys
rows = [json.loads(line) for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))) for line in open(f) if line.strip()]
got = sorted((r["user_id"], r["amount"]) for r in rows)
want = [("u1", 7.25), ("u1", 12.5), ("u3", 3.0)]
if got != want or len({r["event_offset"] for r in rows}) != 3:
    sys.exit(f"kafka purchases: got {sorted((r['user_id'], r['amount'], r['event_offset']) for r in rows)}, want {want}")
print(f"kafka purchases over two runs: {len(rows)} rows as expected")
PY
log "ok"
