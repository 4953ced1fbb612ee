#!/usr/bin/env bash
# The engine's Java unit tests (engine/src/test/java: JUnit 5, each operator on Spark's
# in-memory StatefulProcessor harness), run by Maven Surefire. Prints Surefire's summary
# line (and on failure the failing tests); exits non-zero when a test fails. CI runs it
# beside the Python tests (.ci/run).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
status=0
# Against the installed PySpark's jars, as the engine is built (scripts/build_engine.sh
# writes the manifest-only jar naming them beside the engine's jar).
ENGINE_JAR="$("$ROOT/scripts/build_engine.sh" --print-jar)"
OUT="$(dirname "$ENGINE_JAR")"
mvn -B -f "$ROOT/engine/pom.xml" test -Dspark.version="${OUT##*/spark-}" \
  -Dspark.classpath.jar="$OUT/pyspark-classpath.jar" >"$LOG" 2>&1 || status=$?
summary="$(grep -E '^\[[A-Z]+\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' "$LOG" | tail -1 || true)"
if [[ $status -ne 0 ]]; then
  grep -E '<<< (FAILURE|ERROR)!|^\[ERROR\] (Failures|Errors|  )' "$LOG" | head -40 >&2 || tail -40 "$LOG" >&2
  echo "test_engine.sh: the engine's Java tests failed ${summary:+(${summary#\[*\] })}" >&2
  exit "$status"
fi
echo "test_engine.sh: engine Java tests: ${summary#\[*\] }"
