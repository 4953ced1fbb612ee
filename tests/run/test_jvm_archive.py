"""The class-data-sharing archive (job/run/jvm_archive.py): named per JDK and PySpark,
passed to the driver JVM by both ways of starting it, and really mapped by that JVM.

``-Xshare:on`` turns the JVM's silent fallback into a start-up failure: a run that exits
0 with it proves that the archive matched the JVM and its class path."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from job.run import jvm_archive

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}


def test_the_name_changes_with_the_jdk_build(tmp_path, monkeypatch):
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    (home / "bin" / "java").chmod(0o755)
    (home / "release").write_text('JAVA_RUNTIME_VERSION="17.0.15+6"\n')
    monkeypatch.setenv("JAVA_HOME", str(home))
    first = jvm_archive.archive_path()
    (home / "release").write_text('JAVA_RUNTIME_VERSION="17.0.16+8"\n')
    second = jvm_archive.archive_path()
    assert first.parent == second.parent == jvm_archive.ARCHIVE_DIR
    assert first != second and first.name.startswith("spark-4.")


def test_the_name_changes_when_pyspark_is_reinstalled(tmp_path, monkeypatch):
    # A reinstall of the same version writes new jars, which the JVM would find newer than
    # the archive's: the name carries their directory's time.
    import importlib.util
    from types import SimpleNamespace

    (tmp_path / "jars").mkdir()
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: SimpleNamespace(submodule_search_locations=[str(tmp_path)]))
    first = jvm_archive.archive_path()
    os.utime(tmp_path / "jars", ns=(1, 1))
    assert jvm_archive.archive_path() != first


def test_no_archive_no_options(tmp_path, monkeypatch):
    monkeypatch.setattr(jvm_archive, "ARCHIVE_DIR", tmp_path)
    assert jvm_archive.java_options() == ""
    assert jvm_archive.with_archive("-Dx=1") == "-Dx=1"
    jvm_archive.archive_path().write_bytes(b"")
    assert jvm_archive.with_archive("-Dx=1") == (
        f"-XX:SharedArchiveFile={jvm_archive.archive_path()} -Xlog:cds=off -Xlog:cds+dynamic=off -Dx=1")


@pytest.fixture(scope="module")
def archive():
    path = jvm_archive.archive_path()
    assert path is not None and path.is_file(), (
        f"no JVM archive at {path}: scripts/setup.sh writes it (scripts/build_jvm_archive.py)")
    return path


@pytest.mark.slow
def test_spark_submit_sh_starts_the_driver_from_the_archive(archive):
    run = subprocess.run([str(ROOT / "spark-submit.sh"), "--driver-java-options", "-Xshare:on", "--",
                          "--pipeline", "examples/quickstart/pipeline.yaml", "--dry-run"],
                         cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "query quickstart-1-user_count_by_account" in run.stdout


@pytest.mark.slow
def test_a_library_session_starts_its_jvm_from_the_archive(archive):
    code = ("from job.run.session import build_session\n"
            "spark = build_session('t', {'spark.driver.extraJavaOptions': '-Xshare:on'})\n"
            "jvm = spark.sparkContext._jvm\n"
            "args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())\n"
            "print(spark.range(5).count(), [a for a in args if 'SharedArchiveFile' in a])\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == f"5 ['-XX:SharedArchiveFile={archive}']"
