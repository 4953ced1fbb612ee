#!/usr/bin/env bash
# End-to-end test of examples/airflow/: a real Apache Airflow runs the DAG
# (`airflow dags test`), whose SparkSubmitOperator submits the job in local mode; the
# pipeline's output for the run's logical date is then checked.
#
#   scripts/test-airflow.sh            # exit 0 when the output is right
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
log "ok"
