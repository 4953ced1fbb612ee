"""The test suite's own Flink user-defined functions (tests/flink/udf/, Java against Flink's
function API in jars/flink/) built into one jar, which both Flink and the job load.

Built with javac on first use and kept under build/test-udf/<hash of the sources>/, so a
changed source makes a new jar (and new Flink results in the differential cache)."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "tests" / "flink" / "udf"
FLINK_JARS = ROOT / "jars" / "flink"
PLACEHOLDER = "${UDF_JAR}"


def udf_jar() -> Path:
    sources = sorted(SOURCES.rglob("*.java"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:12]
    jar = ROOT / "build" / "test-udf" / digest / "test-functions.jar"
    if jar.exists():
        return jar
    classpath = ":".join(str(p) for p in sorted(FLINK_JARS.glob("*.jar")))
    if not classpath:
        raise RuntimeError("jars/flink/ is empty: run ./scripts/jars.sh flink")
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        subprocess.run(["javac", "-d", str(classes), "-cp", classpath, *map(str, sources)], check=True)
        built = Path(tmp) / "test-functions.jar"
        subprocess.run(["jar", "cf", str(built), "-C", str(classes), "."], check=True)
        jar.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(built), str(jar))
    return jar


def with_udf_jar(statement: str) -> str:
    """``statement`` with ``${UDF_JAR}`` replaced by the built jar's path."""
    return statement.replace(PLACEHOLDER, str(udf_jar())) if PLACEHOLDER in statement else statement


def people_table(root: Path, rows: list) -> str:
    """The CREATE TABLE of ``people`` (id INT, name STRING, n INT), its ``rows`` written
    under ``root``: the table the user-function tests call their functions on."""
    import json

    (root / "part-0").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return (f"CREATE TABLE people (id INT, name STRING, n INT) WITH ('connector' = 'filesystem', "
            f"'path' = '{root}', 'format' = 'json')")


def refusal(spark, statements, query):
    """The PipelineError collecting ``query`` after ``statements`` raises (it must raise)."""
    import pytest

    from job.api import collect
    from job.errors import PipelineError

    with pytest.raises(PipelineError) as info:
        collect(statements, query, spark=spark)
    return info.value
