#!/usr/bin/env bash
# Build the changelog engine (engine/: Java operators against Spark's transformWithState
# API) with Maven into jars/engine/streamsql-engine.jar, which ./spark-submit.sh and
# library sessions put on Spark's class path. Skipped while the sources are unchanged
# (a stamp holds their hash); --force builds anyway. Safe to run concurrently (flock).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/jars/engine"
mkdir -p "$OUT"
exec 9>"$OUT/.lock"
flock 9
HASH="$(cd "$ROOT/engine" && find pom.xml src -type f | sort | xargs sha256sum | sha256sum | cut -c1-16)"
if [[ "${1:-}" != "--force" && -f "$OUT/streamsql-engine.jar" && "$(cat "$OUT/.stamp" 2>/dev/null)" == "$HASH" ]]; then
  exit 0
fi
echo "build_engine.sh: building the changelog engine (engine/) with Maven ..." >&2
mvn -q -B -f "$ROOT/engine/pom.xml" package -DskipTests
cp "$ROOT/engine/target/streamsql-engine.jar" "$OUT/streamsql-engine.jar.tmp"
mv "$OUT/streamsql-engine.jar.tmp" "$OUT/streamsql-engine.jar"
echo "$HASH" > "$OUT/.stamp"
