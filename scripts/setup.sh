#!/usr/bin/env bash
# One command from a fresh checkout to a working job: venv, the package, Spark's jars.
#
#   ./scripts/setup.sh                 .venv/ with PySpark 4.3.0 (the default Spark)
#   ./scripts/setup.sh --spark 4.2.0   .services/spark-4.2.0-venv/ with PySpark 4.2.0; run
#                                      with STREAMSQL_VENV=.services/spark-4.2.0-venv, or
#                                      that venv's python, the job and tests use it
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# The Spark the job runs on by default, and those it also supports (docs/operations.md).
DEFAULT_SPARK=4.3.0
SUPPORTED_SPARK="4.3.0 4.2.0"
SPARK=$DEFAULT_SPARK
while [[ $# -gt 0 ]]; do
  case "$1" in
    --spark) SPARK="${2:?--spark needs a version}"; shift 2 ;;
    *) echo "setup.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
[[ " $SUPPORTED_SPARK " == *" $SPARK "* ]] || { echo "setup.sh: Spark $SPARK is not one of: $SUPPORTED_SPARK" >&2; exit 2; }
VENV=.venv
[[ $SPARK == "$DEFAULT_SPARK" ]] || VENV=".services/spark-$SPARK-venv"
# build_engine.sh and spark-submit.sh (the archive's training run) use this venv's PySpark.
export STREAMSQL_VENV="$PWD/$VENV"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -e '.[test]' "pyspark==$SPARK"
# Bytecode for the job's own modules: an editable install compiles none, and a driver whose
# environment sets PYTHONDONTWRITEBYTECODE (or cannot write here) would compile all 130 it
# imports on every start (0.15 s of a short --once run). A module edited later is compiled
# again as usual.
"$VENV/bin/python" -m compileall -q job
# Bytecode in pyspark.zip: every Python worker imports PySpark from it (0.6 s less per worker).
"$VENV/bin/python" scripts/precompile_pyspark.py
./scripts/jars.sh all
# The changelog engine's operators (Java, engine/), compiled against this PySpark's jars,
# into jars/engine/spark-$SPARK/.
./scripts/build_engine.sh
# A class-data-sharing archive of Spark's classes (job/run/driver_jvm.py): every driver JVM
# starts 2-3 s faster. Written once per JDK and PySpark (about a minute), kept after that.
"$VENV/bin/python" scripts/build_jvm_archive.py
echo "setup done: $VENV is ready (PySpark $SPARK), jars are in jars/"
