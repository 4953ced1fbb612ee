#!/usr/bin/env bash
# Run the pipeline job (job/main.py) with spark-submit, wired up for this repo:
#   --jars            every jar in jars/spark/ (Kafka connector, JDBC driver; fetched on demand)
#   --py-files        a zip of the job/ package, so executors on other machines can import it
#   --properties-file conf/spark-defaults.conf
#   log4j2            conf/log4j2.properties for the driver (absolute path)
#
#   ./spark-submit.sh [spark-submit options] [--] [job arguments] [spark-submit options]
#
# spark-submit's options go to spark-submit, the rest to the job (`--help` lists the job's).
# Without `--`, spark-submit's options are recognised by name (--master, --name, --conf,
# --driver-memory, --executor-memory, --packages, --jars, --py-files, ... with their values)
# wherever they are, before the job's arguments or after them: the job takes none of them,
# and under plain spark-submit one given after the job's file would reach the job, not
# spark-submit. With `--`, every option before it is spark-submit's, known or not:
#   ./spark-submit.sh --master spark://127.0.0.1:7077 --conf spark.ui.enabled=true -- pipeline.sql
#   ./spark-submit.sh --driver-memory 2g pipeline.sql --name nightly --master local[4]
# Your --jars/--py-files are added to ours; your --properties-file replaces ours.
#
# spark-submit is $SPARK_HOME/bin/spark-submit, else the one of $STREAMSQL_VENV (a virtualenv
# with another PySpark, e.g. Spark 4.2's), else the one on PATH, else .venv/bin's. Python
# (driver and local workers) is the virtualenv's too.
# Exits with the run's exit code (docs/operations.md), or spark-submit's if the run never got one.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() { echo "spark-submit.sh: $*" >&2; exit 1; }

# --- which spark-submit ---------------------------------------------------------------
VENV="${STREAMSQL_VENV:-$ROOT/.venv}"
if [[ -n "${SPARK_HOME:-}" && -x "$SPARK_HOME/bin/spark-submit" ]]; then
  SUBMIT="$SPARK_HOME/bin/spark-submit"
elif [[ -n "${STREAMSQL_VENV:-}" && -x "$VENV/bin/spark-submit" ]]; then
  SUBMIT="$VENV/bin/spark-submit"
elif command -v spark-submit >/dev/null; then
  SUBMIT="$(command -v spark-submit)"
elif [[ -x "$VENV/bin/spark-submit" ]]; then
  SUBMIT="$VENV/bin/spark-submit"
else
  die "spark-submit not found: run ./scripts/setup.sh, or set SPARK_HOME"
fi

# The job imports third-party packages (sqlglot, ...) that only the repo's venv has; without
# this the driver and local executors would run plain `python3`. On a real cluster set
# PYSPARK_PYTHON to the executors' interpreter yourself.
if [[ -z "${PYSPARK_PYTHON:-}" && -x "$VENV/bin/python" ]]; then
  export PYSPARK_PYTHON="$VENV/bin/python"
fi
# Bind the driver (and its block manager / RPC) to loopback unless told otherwise.
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"

# --- split the arguments ----------------------------------------------------------------
# spark-submit options that take a value and are recognised without `--`; the job has none
# of them (its own --master, for runs without spark-submit, means the same). --class is not
# one (a Python job has no main class); before `--` it still goes to spark-submit.
value_opts=(--master --name --deploy-mode --conf -c --driver-memory --driver-cores --driver-java-options
  --driver-class-path --driver-library-path --executor-memory --executor-cores --num-executors
  --total-executor-cores --packages --repositories --exclude-packages --jars --py-files --files
  --archives --properties-file --queue --proxy-user --principal --keytab)
VALUE_OPTS=" ${value_opts[*]} "
# Not --verbose/-v: the job has its own --verbose. Put spark-submit's before `--`.
FLAG_OPTS=" --supervise "

# With a `--` somewhere, every option before it is spark-submit's, known or not.
have_dashdash=0
for a in "$@"; do [[ "$a" == "--" ]] && { have_dashdash=1; break; }; done
is_spark_value_opt() { [[ "$VALUE_OPTS" == *" $1 "* ]] || { [[ $have_dashdash == 1 ]] && [[ "$1" == --class ]]; }; }
is_spark_flag() { [[ "$FLAG_OPTS" == *" $1 "* ]] || { [[ $have_dashdash == 1 ]] && [[ "$1" == -* ]]; }; }

SPARK_ARGS=() JOB_ARGS=() USER_JARS="" USER_PYFILES="" PROPS="$ROOT/conf/spark-defaults.conf"
# add_opt NAME VALUE: keep the option, except the three we merge with our own.
add_opt() {
  case "$1" in
    --jars) USER_JARS="${USER_JARS:+$USER_JARS,}$2" ;;
    --py-files) USER_PYFILES="${USER_PYFILES:+$USER_PYFILES,}$2" ;;
    --properties-file) PROPS="$2" ;;
    *) SPARK_ARGS+=("$1" "$2") ;;
  esac
}
while [[ $# -gt 0 ]]; do
  a="$1"
  if [[ "$a" == "--" ]]; then shift; JOB_ARGS=("$@"); break; fi
  if [[ "$a" == --*=* ]] && { is_spark_value_opt "${a%%=*}" || is_spark_flag "$a"; }; then
    add_opt "${a%%=*}" "${a#*=}"; shift; continue
  fi
  if is_spark_value_opt "$a"; then
    [[ $# -ge 2 ]] || die "$a needs a value"
    add_opt "$a" "$2"; shift 2; continue
  fi
  if is_spark_flag "$a"; then SPARK_ARGS+=("$a"); shift; continue; fi
  # The first job argument: it and everything after it (even a later `--`) go to the job,
  # except spark-submit's known options among them (below).
  JOB_ARGS=("$@"); break
done
# spark-submit's known options among the job's arguments are spark-submit's as well: the
# job could not use them (the driver's master and name are fixed before the job starts).
rest=("${JOB_ARGS[@]}") JOB_ARGS=() i=0
while ((i < ${#rest[@]})); do
  a="${rest[i]}"
  if [[ "$a" == --*=* && "$VALUE_OPTS" == *" ${a%%=*} "* ]]; then
    add_opt "${a%%=*}" "${a#*=}"; i=$((i + 1))
  elif [[ "$VALUE_OPTS" == *" $a "* ]]; then
    ((i + 1 < ${#rest[@]})) || die "$a needs a value"
    add_opt "$a" "${rest[i + 1]}"; i=$((i + 2))
  elif [[ "$FLAG_OPTS" == *" $a "* ]]; then
    SPARK_ARGS+=("$a"); i=$((i + 1))
  else
    JOB_ARGS+=("$a"); i=$((i + 1))
  fi
done

MAIN="$ROOT/job/main.py"
[[ -f "$MAIN" ]] || die "$MAIN not found"
[[ -f "$PROPS" ]] || die "properties file $PROPS not found"

# --- jars -------------------------------------------------------------------------------
# Cheap when up to date (compares a pom hash); fetches with Maven on first use / pom change.
"$ROOT/scripts/jars.sh" spark --quiet
JARS="$(find -H "$ROOT/jars/spark" -maxdepth 1 -name '*.jar' | sort | paste -sd, -)"  # -H: jars/spark may be a link
[[ -n "$JARS" ]] || die "no jars in jars/spark (scripts/jars.sh spark --force)"
# The changelog engine's operators (engine/, built by scripts/build_engine.sh against the
# PySpark of $STREAMSQL_VENV).
ENGINE_JAR="$("$ROOT/scripts/build_engine.sh" --print-jar)"
JARS="$JARS,$ENGINE_JAR${USER_JARS:+,$USER_JARS}"

# --- job package for executors ------------------------------------------------------------
# Deterministic zip (fixed timestamps, sorted), named by content hash: rebuilding unchanged
# code yields the same file, and concurrent runs never overwrite a zip another run is serving.
PY="$VENV/bin/python"; [[ -x "$PY" ]] || PY=python3
PYZIP="$("$PY" - "$ROOT" "$ROOT/build/pyfiles" <<'EOF'
import hashlib, io, os, sys, zipfile
root, out_dir = sys.argv[1], sys.argv[2]
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    for d, dirs, files in os.walk(os.path.join(root, "job")):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__" and not x.startswith("."))
        for f in sorted(files):
            if f.startswith(".") or f.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(d, f)
            info = zipfile.ZipInfo(os.path.relpath(path, root), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as fh:
                z.writestr(info, fh.read())
data = buf.getvalue()
name = os.path.join(out_dir, "job-%s.zip" % hashlib.sha256(data).hexdigest()[:16])
if not os.path.exists(name):
    os.makedirs(out_dir, exist_ok=True)
    tmp = "%s.%d.tmp" % (name, os.getpid())
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, name)
print(name)
EOF
)"
# Old zips are tiny; drop those untouched for a week (a running job keeps its own).
find "$ROOT/build/pyfiles" -name 'job-*.zip' -mtime +7 -delete 2>/dev/null || true
touch "$PYZIP"
PYFILES="$PYZIP${USER_PYFILES:+,$USER_PYFILES}"

# spark.driver.defaultJavaOptions is prepended to spark.driver.extraJavaOptions, so a user's
# --driver-java-options adds to it instead of replacing it (and a later -D wins).
LOG4J="-Dlog4j2.configurationFile=\"file:$ROOT/conf/log4j2.properties\""
# The driver JVM's own options (job/run/driver_jvm.py): the class-data-sharing archive
# scripts/setup.sh writes (a faster start; the JVM ignores a stale one by itself), and the
# parallel collector unless your options or the JVM's environment choose a collector.
DRIVER_JVM="$("$PY" "$ROOT/job/run/driver_jvm.py" --properties-file "$PROPS" "${SPARK_ARGS[@]}")"

# A quiet terminal: the JVM's start-up notice and spark-submit's remarks on the job's own
# (non-Spark) settings say nothing to a user; --verbose shows everything. The filter
# ignores SIGINT/SIGTERM so that it outlives the job's graceful stop and passes on its
# last lines; the wrapper waits for it before exiting, so that no line of the run comes
# after the shell's prompt.
QUIET=1 FILTER=""
for a in "${JOB_ARGS[@]}"; do [[ "$a" == "--verbose" || "$a" == "-v" ]] && QUIET=0; done
if [[ $QUIET == 1 ]]; then
  exec 3>&2 2> >(trap '' INT TERM; exec grep --line-buffered -v \
    -e '^WARNING: Using incubator modules: jdk.incubator.vector$' \
    -e '^Warning: Ignoring non-Spark config property: ' >&2)
  FILTER=$!
fi

# --- run, and bound the exit ------------------------------------------------------------
# The driver writes the run's exit code to STREAMSQL_RESULT_FILE and sends this wrapper
# SIGUSR1 once the result is known (job/run/shutdown.py). That code is the wrapper's: the
# JVM's own is 143 after a graceful stop by SIGTERM, where the run's is 0 as documented.
# Should the JVM not exit within the bound the driver writes beside it (seconds; its
# default and STREAMSQL_EXIT_TIMEOUT_S are the driver's), the wrapper ends it and says so.
# Without a result (the driver never got that far) the JVM's exit code stands.
RESULT_FILE="$(mktemp "${TMPDIR:-/tmp}/streamsql-result.XXXXXX")"
trap 'rm -f "$RESULT_FILE"' EXIT
export STREAMSQL_RESULT_FILE="$RESULT_FILE" STREAMSQL_WRAPPER_PID=$$
FINISHED=0
trap 'FINISHED=1' USR1

# Job control gives the JVM a process group of its own, in which SIGINT is not ignored (a
# background command of a script ignores it otherwise). A signal to the wrapper goes on to
# the JVM alone, whose shutdown hook stops the run at a batch boundary: Ctrl-C no longer
# reaches the Python workers of the run's sources, which it killed mid-batch. A second
# signal goes to the whole group, as a terminal sends it: the driver then stops at once.
set -m
"$SUBMIT" \
  --properties-file "$PROPS" \
  --jars "$JARS" \
  --py-files "$PYFILES" \
  --conf "spark.driver.defaultJavaOptions=${DRIVER_JVM:+$DRIVER_JVM }$LOG4J" \
  "${SPARK_ARGS[@]}" \
  "$MAIN" "${JOB_ARGS[@]}" &
JVM=$!
set +m
SIGNALS=0
pass_on() {
  SIGNALS=$((SIGNALS + 1))
  if ((SIGNALS == 1)); then kill -s "$1" "$JVM"; else kill -s "$1" -- -"$JVM"; fi 2>/dev/null || true
}
for sig in INT TERM HUP; do trap "pass_on $sig" "$sig"; done

set +e
while :; do
  wait "$JVM"; rc=$?
  kill -0 "$JVM" 2>/dev/null || break            # the JVM has exited: rc is its code
  [[ $FINISHED == 1 ]] || continue               # a signal interrupted the wait
  read -r _ EXIT_TIMEOUT _ <"$RESULT_FILE" 2>/dev/null
  [[ "${EXIT_TIMEOUT:-}" =~ ^[0-9]+([.][0-9]*)?$ ]] || EXIT_TIMEOUT=0
  deadline=$((SECONDS + ${EXIT_TIMEOUT%.*}))
  while kill -0 "$JVM" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  if kill -0 "$JVM" 2>/dev/null; then
    kill -KILL -- -"$JVM" 2>/dev/null || kill -KILL "$JVM" 2>/dev/null
    wait "$JVM" 2>/dev/null
    HUNG=1
  else
    wait "$JVM"; rc=$?
  fi
  break
done
read -r result _ <"$RESULT_FILE" 2>/dev/null
result="$(printf '%s' "${result:-}" | tr -dc 0-9)"
[[ -n "$result" ]] && rc="$result"
if [[ -n "${HUNG:-}" ]]; then
  echo "streamsql: the run ended (exit $rc) but the Spark driver JVM (pid $JVM) had not exited" \
    "${EXIT_TIMEOUT} s later; stopped it" >&2
fi
if [[ -n "$FILTER" ]]; then
  exec 2>&3 3>&-
  # The filter ends once every writer of its pipe is gone; Python workers that outlive a
  # stopped JVM are given a moment.
  for _ in $(seq 50); do kill -0 "$FILTER" 2>/dev/null || break; sleep 0.1; done
  kill "$FILTER" 2>/dev/null
  wait "$FILTER" 2>/dev/null
fi
exit "$rc"
