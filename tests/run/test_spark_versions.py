"""One checkout, several Sparks (4.3 by default, 4.2 from its own virtualenv): the
engine's jar and the driver's class-data archive are each kept per Spark version."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from job.changelog.jvm import ENGINE_DIR, engine_jar

ROOT = Path(__file__).resolve().parents[2]


def load_archive_script():
    spec = importlib.util.spec_from_file_location("build_jvm_archive", ROOT / "scripts" / "build_jvm_archive.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_engine_jar_is_the_one_built_for_the_installed_pyspark():
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    (core,) = [p.name for p in jars.glob("spark-core_*.jar")]
    version = re.fullmatch(r"spark-core_[0-9.]+-(.+)\.jar", core).group(1)
    assert engine_jar() == ENGINE_DIR / f"spark-{version}" / "streamsql-engine.jar"
    # build_engine.sh names it the same way, for the PySpark of the virtualenv running this.
    built = subprocess.run([str(ROOT / "scripts" / "build_engine.sh"), "--print-jar"], capture_output=True,
                           text=True, check=True, env={"PATH": "/usr/bin:/bin", "STREAMSQL_VENV": sys.prefix})
    assert built.stdout.strip() == str(engine_jar())
    assert engine_jar().is_file()


def test_a_new_archive_replaces_only_its_own_spark_versions(tmp_path):
    module = load_archive_script()
    for name in ("spark-4.3.0-aaaaaaaaaaaa.jsa", "spark-4.3.0-bbbbbbbbbbbb.jsa", "spark-4.2.0-cccccccccccc.jsa"):
        (tmp_path / name).write_bytes(b"")
    target = tmp_path / "spark-4.3.0-bbbbbbbbbbbb.jsa"
    assert [p.name for p in module.replaced_archives(target)] == [
        "spark-4.3.0-aaaaaaaaaaaa.jsa", "spark-4.3.0-bbbbbbbbbbbb.jsa"]
    assert [p.name for p in module.replaced_archives(tmp_path / "spark-4.2.0-dddddddddddd.jsa")] == [
        "spark-4.2.0-cccccccccccc.jsa"]


def test_the_archive_is_trained_on_a_workload_that_is_not_the_benchmarks_sql(tmp_path):
    """The archive holds the classes its training run loaded: trained on the benchmark
    queries it would favour them. The training pipeline reads none of their tables, and
    its input is made by the script itself."""
    module = load_archive_script()
    training = module.TRAINING.lower()
    benchmark_tables = {name.lower() for sql in (ROOT / "benchmarks" / "pipelines").glob("*.sql")
                        for name in re.findall(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)", sql.read_text(), re.I)}
    assert benchmark_tables and not any(re.search(rf"\b{t}\b", training) for t in benchmark_tables)
    assert "from benchmarks" not in Path(module.__file__).read_text()  # nor its generator
    module.write_training_data(tmp_path)
    for table in ("orders", "customers", "views"):
        assert len(list((tmp_path / table).glob("*.json"))) == 3
