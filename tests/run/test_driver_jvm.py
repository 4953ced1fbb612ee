"""The driver JVM's options (job/run/driver_jvm.py): the class-data-sharing archive,
named per JDK and PySpark, and the parallel collector unless the user chose one; passed
to the driver JVM by both ways of starting it, and really in effect in that JVM.

``-Xshare:on`` turns the JVM's silent fallback into a start-up failure: a run that exits
0 with it proves that the archive matched the JVM and its class path. Two collectors are
a start-up failure too ("Multiple garbage collectors selected")."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from job.run import driver_jvm

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}


def test_the_name_changes_with_the_jdk_build(tmp_path, monkeypatch):
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    (home / "bin" / "java").chmod(0o755)
    (home / "release").write_text('JAVA_RUNTIME_VERSION="17.0.15+6"\n')
    monkeypatch.setenv("JAVA_HOME", str(home))
    first = driver_jvm.archive_path()
    (home / "release").write_text('JAVA_RUNTIME_VERSION="17.0.16+8"\n')
    second = driver_jvm.archive_path()
    assert first.parent == second.parent == driver_jvm.ARCHIVE_DIR
    assert first != second and first.name.startswith("spark-4.")


def test_the_name_changes_when_pyspark_is_reinstalled(tmp_path, monkeypatch):
    # A reinstall of the same version writes new jars, which the JVM would find newer than
    # the archive's: the name carries their directory's time.
    import importlib.util
    from types import SimpleNamespace

    (tmp_path / "jars").mkdir()
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: SimpleNamespace(submodule_search_locations=[str(tmp_path)]))
    first = driver_jvm.archive_path()
    os.utime(tmp_path / "jars", ns=(1, 1))
    assert driver_jvm.archive_path() != first


@pytest.fixture
def no_jvm_environment(monkeypatch):
    for name in driver_jvm.JVM_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def test_no_archive_no_archive_options(tmp_path, monkeypatch, no_jvm_environment):
    monkeypatch.setattr(driver_jvm, "ARCHIVE_DIR", tmp_path)
    monkeypatch.setattr(driver_jvm, "NATIVE_DIR", tmp_path / "native")  # nothing extracted
    assert driver_jvm.java_options() == f"-XX:+UseParallelGC {driver_jvm.LATER_C2} {driver_jvm.METASPACE}"
    assert driver_jvm.with_defaults("-Dx=1") == f"-XX:+UseParallelGC {driver_jvm.LATER_C2} {driver_jvm.METASPACE} -Dx=1"
    driver_jvm.archive_path().write_bytes(b"")
    assert driver_jvm.with_defaults("-Dx=1") == (
        f"-XX:SharedArchiveFile={driver_jvm.archive_path()} -Xlog:cds=off -Xlog:cds+dynamic=off "
        f"-XX:+UseParallelGC {driver_jvm.LATER_C2} {driver_jvm.METASPACE} -Dx=1")


def test_a_users_compiler_thresholds_come_after_ours(no_jvm_environment):
    # HotSpot takes the last value of a -XX option: the user's.
    options = driver_jvm.with_defaults("-XX:Tier4InvocationThreshold=5000").split()
    assert options[-1] == "-XX:Tier4InvocationThreshold=5000"
    assert options.index("-XX:Tier4InvocationThreshold=50000") < len(options) - 1
    options = driver_jvm.with_defaults("-XX:MetaspaceSize=64m").split()
    assert options[-1] == "-XX:MetaspaceSize=64m" and options.index(driver_jvm.METASPACE) < len(options) - 1


@pytest.mark.parametrize("user, env, ours", [
    ([], {}, True),
    (["-Xmx2g -XX:+UseG1GC"], {}, False),
    ([None, "-XX:+UseZGC -XX:+ZGenerational"], {}, False),
    (["-XX:-UseG1GC"], {}, True),                      # switching one off chooses none
    ([], {"JAVA_TOOL_OPTIONS": "-XX:+UseSerialGC"}, False),
    ([], {"PYSPARK_SUBMIT_ARGS": '--driver-java-options "-XX:+UseShenandoahGC" pyspark-shell'}, False),
])
def test_the_parallel_collector_only_when_nothing_else_chooses_one(user, env, ours, monkeypatch, no_jvm_environment):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert ("-XX:+UseParallelGC" in driver_jvm.java_options(user)) is ours


def test_with_defaults_keeps_a_collector_in_the_options_it_extends(no_jvm_environment):
    assert "-XX:+UseParallelGC" not in driver_jvm.with_defaults("-XX:+UseSerialGC -Dx=1")
    assert driver_jvm.with_defaults("-XX:+UseSerialGC -Dx=1").endswith("-XX:+UseSerialGC -Dx=1")


@pytest.mark.parametrize("args, ours", [
    ([], True),
    (["--master", "local[2]", "--driver-java-options", "-Xmx2g -XX:+UseG1GC"], False),
    (["--conf", "spark.driver.extraJavaOptions=-XX:+UseZGC"], False),
    (["--conf", "spark.executor.extraJavaOptions=-XX:+UseZGC"], True),
])
def test_the_script_spark_submit_sh_runs(args, ours, no_jvm_environment):
    # Exactly as spark-submit.sh calls it: the file itself, with its spark-submit options.
    run = subprocess.run([sys.executable, str(ROOT / "job" / "run" / "driver_jvm.py"), "--properties-file",
                          str(ROOT / "conf" / "spark-defaults.conf"), *args],
                         cwd="/", capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert ("-XX:+UseParallelGC" in run.stdout.split()) is ours


def test_spark_submit_options_that_reach_the_driver_jvm(tmp_path):
    props = tmp_path / "spark-defaults.conf"
    props.write_text("spark.executor.extraJavaOptions  -XX:+UseG1GC\n"
                     "spark.driver.extraJavaOptions=-XX:+UseSerialGC\n")
    found = driver_jvm.submit_java_options([
        "--master", "local[2]", "--properties-file", str(props), "--driver-java-options", "-Da=1",
        "--conf", "spark.driver.extraJavaOptions=-Db=2", "-c", "spark.executor.extraJavaOptions=-Dc=3"])
    assert found == ["spark.driver.extraJavaOptions=-XX:+UseSerialGC\n", "-Da=1", "-Db=2"]
    assert driver_jvm.submit_java_options(["--properties-file", str(tmp_path / "missing")]) == []


@pytest.fixture(scope="module")
def archive():
    path = driver_jvm.archive_path()
    assert path is not None and path.is_file(), (
        f"no JVM archive at {path}: scripts/setup.sh writes it (scripts/build_driver_jvm.py)")
    return path


@pytest.mark.slow
def test_spark_submit_sh_starts_the_driver_from_the_archive(archive):
    # The user's own collector: ours must step aside, or the JVM would not start.
    run = subprocess.run([str(ROOT / "spark-submit.sh"), "--driver-java-options", "-Xshare:on -XX:+UseG1GC", "--",
                          "--pipeline", "examples/quickstart/pipeline.yaml", "--dry-run"],
                         cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "query quickstart-1-user_count_by_account" in run.stdout


LIBRARY_SESSION = (
    "import sys\n"
    "from job.run.session import build_session\n"
    "spark = build_session('t', {'spark.driver.extraJavaOptions': sys.argv[1]})\n"
    "management = spark.sparkContext._jvm.java.lang.management.ManagementFactory\n"
    "args = list(management.getRuntimeMXBean().getInputArguments())\n"
    "collectors = sorted(b.getName() for b in management.getGarbageCollectorMXBeans())\n"
    "print(spark.range(5).count(), [a for a in args if 'SharedArchiveFile' in a], collectors)\n")


def library_session(extra_java_options: str) -> str:
    run = subprocess.run([sys.executable, "-c", LIBRARY_SESSION, extra_java_options], cwd=ROOT, env=ENV,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_library_session_starts_its_jvm_from_the_archive_with_the_parallel_collector(archive):
    assert library_session("-Xshare:on") == f"5 ['-XX:SharedArchiveFile={archive}'] ['PS MarkSweep', 'PS Scavenge']"


@pytest.mark.slow
def test_a_library_session_keeps_the_users_collector(archive):
    assert library_session("-XX:+UseG1GC") == (
        f"5 ['-XX:SharedArchiveFile={archive}'] ['G1 Old Generation', 'G1 Young Generation']")


RUNNER_SESSION = (
    "from job.run.jvm_output import session_conf\n"
    "from job.run.session import build_session\n"
    "spark = build_session('t', session_conf({}, False))\n"
    "args = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()\n"
    "print(sorted(a.split('=')[0] for a in args\n"
    "             if a.startswith(('-XX:SharedArchiveFile', '-XX:MetaspaceSize', '-Dlog4j2.configurationFile'))))\n")


@pytest.mark.slow
def test_a_run_through_the_library_keeps_our_options_beside_its_log4j_file(archive):
    """The runner (Airflow's PythonOperator, ``python -m job.main``) gives its session the
    log4j file in spark.driver.defaultJavaOptions: ours stay in front of it. Replaced by
    it, as they once were, a run started 4.6 s slower (count over one event: 10.7 s
    against 6.0 s)."""
    run = subprocess.run([sys.executable, "-c", RUNNER_SESSION], cwd=ROOT, env=ENV, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == (
        "['-Dlog4j2.configurationFile', '-XX:MetaspaceSize', '-XX:SharedArchiveFile']")


def test_rocksdb_library_is_loaded_from_where_setup_extracted_it(tmp_path, monkeypatch, no_jvm_environment):
    """scripts/setup.sh extracts RocksDB's library once; the driver's java.library.path
    starts at that copy (named after the jar it came from), with LD_LIBRARY_PATH and the
    JDK's own directories after it; nothing extracted, no option."""
    monkeypatch.setattr(driver_jvm, "NATIVE_DIR", tmp_path)
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/a::/opt/b")
    found = driver_jvm.rocksdb_library()
    if found is None:
        pytest.skip("RocksDB's library is extracted only on x86-64 Linux with glibc")
    jar = found[0]
    assert driver_jvm.native_options() == ""
    library = driver_jvm.extract_rocksdb()
    assert library == tmp_path / jar.stem / driver_jvm.ROCKSDB_LIBRARY
    with zipfile.ZipFile(jar) as z:
        assert library.read_bytes() == z.read(driver_jvm.ROCKSDB_LIBRARY)
    expected = f"-Djava.library.path={tmp_path / jar.stem}:/opt/a:/opt/b:/usr/java/packages/lib:/usr/lib64:/lib64:/lib:/usr/lib"
    assert driver_jvm.native_options() == expected
    assert driver_jvm.java_options().split()[-1] == expected
    assert driver_jvm.with_defaults("-Djava.library.path=/mine").split()[-1] == "-Djava.library.path=/mine"
