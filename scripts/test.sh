#!/usr/bin/env bash
# The whole test suite, as CI runs it: the same tests as `.venv/bin/python -m pytest`, in two
# pytest processes at once. The differential suite against Flink (tests/flink) spends most
# of its time waiting for Flink's answers (one Flink JVM works through every case while the
# other tests run), and the rest of the suite mostly waits too (JVMs starting, queries
# polling): side by side, each uses the time the other spends waiting.
# Extra options go to both (e.g. -x, -k …, -m "not slow"; to run some files, call pytest
# itself). Exit status: non-zero if either fails.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${STREAMSQL_VENV:-.venv}/bin/python"
flink_log="$(mktemp -t streamsql-flink-tests.XXXXXX)"
"$PY" -m pytest tests/flink "$@" >"$flink_log" 2>&1 &
flink=$!
# A background job of a script ignores the terminal's Ctrl-C: if the script ends first (Ctrl-C,
# a kill), the differential run is interrupted as pytest is by Ctrl-C, so that it stops its
# Flink JVM on the way out.
trap 'kill -INT "$flink" 2>/dev/null && wait "$flink"; rm -f "$flink_log"' EXIT
"$PY" -m pytest --ignore=tests/flink "$@"
status=$?
wait "$flink"
flink_status=$?
echo "==================== tests/flink (run beside the above) ===================="
cat "$flink_log"
# pytest's 5 is "no tests collected" (a selection with none in tests/flink): not a failure.
[[ $flink_status -eq 0 || $flink_status -eq 5 ]] || status=1
exit $status
