#!/usr/bin/env bash
# Build the changelog engine (engine/: Java operators against Spark's transformWithState
# API) with Maven, against the jars of the installed PySpark, into
# jars/engine/spark-<version>/streamsql-engine.jar, which ./spark-submit.sh and library
# sessions put on Spark's class path (job/changelog/jvm.py finds it by PySpark's version).
#
#   scripts/build_engine.sh [--force] [--print-jar]
#
# The PySpark is the one in $STREAMSQL_VENV (default .venv), so one checkout holds an
# engine for each Spark it runs on (CI's second pass runs on Spark 4.2 from its own venv).
# Skipped while the sources and that PySpark are unchanged (a stamp holds their hash);
# --force builds anyway; --print-jar prints the jar's path. Safe to run concurrently (flock).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FORCE=0 PRINT=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    --print-jar) PRINT=1 ;;
    *) echo "build_engine.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done
VENV="${STREAMSQL_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"; [[ -x "$PY" ]] || PY=python3
# PySpark's jars directory, found without importing PySpark (this runs before every
# spark-submit), and the Spark version its spark-core jar carries.
SPARK_JARS="$("$PY" -c 'import importlib.util as u, os; print(os.path.join(u.find_spec("pyspark").submodule_search_locations[0], "jars"))' 2>/dev/null)" \
  || { echo "build_engine.sh: no PySpark in $VENV (run ./scripts/setup.sh)" >&2; exit 1; }
CORE="$(cd "$SPARK_JARS" && ls spark-core_*.jar 2>/dev/null | head -1)"
[[ "$CORE" =~ ^spark-core_[0-9.]+-(.+)\.jar$ ]] || { echo "build_engine.sh: no spark-core jar in $SPARK_JARS" >&2; exit 1; }
SPARK_VERSION="${BASH_REMATCH[1]}"
OUT="$ROOT/jars/engine/spark-$SPARK_VERSION"
JAR="$OUT/streamsql-engine.jar"
mkdir -p "$OUT"
exec 9>"$ROOT/jars/engine/.lock"
flock 9
HASH="$( { cd "$ROOT/engine" && find pom.xml src -type f | sort | xargs sha256sum; echo "$SPARK_JARS"; ls -l --time-style=+%s "$SPARK_JARS"; } | sha256sum | cut -c1-16)"
if [[ $FORCE == 0 && -f "$JAR" && "$(cat "$OUT/.stamp" 2>/dev/null)" == "$HASH" ]]; then
  [[ $PRINT == 0 ]] || echo "$JAR"
  exit 0
fi
echo "build_engine.sh: building the changelog engine (engine/) against Spark $SPARK_VERSION with Maven ..." >&2
# A jar holding only a manifest whose Class-Path names every PySpark jar (engine/pom.xml).
# Manifest lines are at most 72 bytes; longer values continue on lines starting with a space.
CLASSPATH_JAR="$OUT/pyspark-classpath.jar"
"$PY" - "$SPARK_JARS" "$CLASSPATH_JAR" <<'EOF'
import sys, zipfile
from pathlib import Path
jars, target = Path(sys.argv[1]), Path(sys.argv[2])
entry = ("Class-Path: " + " ".join(p.resolve().as_uri() for p in sorted(jars.glob("*.jar")))).encode()
lines = [entry[:72]] + [b" " + entry[i:i + 71] for i in range(72, len(entry), 71)]
manifest = b"Manifest-Version: 1.0\r\n" + b"".join(line + b"\r\n" for line in lines) + b"\r\n"
with zipfile.ZipFile(target, "w") as z:
    z.writestr("META-INF/MANIFEST.MF", manifest)
EOF
# clean: classes compiled against another Spark must not be reused.
mvn -q -B -f "$ROOT/engine/pom.xml" clean package -DskipTests \
  -Dspark.version="$SPARK_VERSION" -Dspark.classpath.jar="$CLASSPATH_JAR" >&2
cp "$ROOT/engine/target/streamsql-engine.jar" "$JAR.tmp"
mv "$JAR.tmp" "$JAR"
echo "$HASH" > "$OUT/.stamp"
[[ $PRINT == 0 ]] || echo "$JAR"
