#!/usr/bin/env bash
# One command from a fresh checkout to a working job: venv, the package, Spark's jars.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test]'
# Bytecode for the job's own modules: an editable install compiles none, and a driver whose
# environment sets PYTHONDONTWRITEBYTECODE (or cannot write here) would compile all 130 it
# imports on every start (0.15 s of a short --once run). A module edited later is compiled
# again as usual.
.venv/bin/python -m compileall -q job
# Bytecode in pyspark.zip: every Python worker imports PySpark from it (0.6 s less per worker).
.venv/bin/python scripts/precompile_pyspark.py
./scripts/jars.sh all
# The changelog engine's operators (Java, engine/) into jars/engine/.
./scripts/build_engine.sh
# A class-data-sharing archive of Spark's classes (job/run/driver_jvm.py): every driver JVM
# starts 2-3 s faster. Written once per JDK and PySpark (about a minute), kept after that.
.venv/bin/python scripts/build_jvm_archive.py
echo "setup done: .venv is ready, jars are in jars/"
