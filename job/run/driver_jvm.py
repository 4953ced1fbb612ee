"""The driver JVM's own options: a class-data-sharing archive, a throughput collector, a
later C2 compiler, no metadata collection at start-up and RocksDB's library in place.

Both are for the driver, which in local mode (cron, Airflow, the benchmarks) is the whole
job. ``spark-submit.sh`` and :func:`job.run.session.build_session` pass them through
``spark.driver.defaultJavaOptions``, which Spark puts before a user's
``spark.driver.extraJavaOptions`` / ``--driver-java-options``.

**The archive.** A fresh JVM spends seconds finding Spark's classes in some 250 jars,
parsing and verifying them, and then compiling the class-loading code it ran so much of.
A cron or Airflow run with ``--once`` pays that every time. JDK 17's dynamic CDS archive
(``-XX:ArchiveClassesAtExit``) keeps the classes a run loaded pre-parsed in one file that
the next JVM maps at start. Measured on the 2-core machine: session start 6.0 → 3.9 s,
the first query 2.6 → 1.2 s (docs/tuning.md). ``scripts/build_jvm_archive.py``
(run by ``scripts/setup.sh``) writes it. The JVM checks the file itself (the same JDK
build and class path as when it was written) and, finding it stale, starts without it:
the options switch off that warning, so a stale archive only costs the speed-up, never a
run.

**The collector.** A micro-batch allocates a great deal of short-lived garbage (decoded
records, JSON rows, Arrow buffers) and waits for all of it anyway, so pause times matter
less than the CPU the collector and its write barriers take. JDK 17 picks G1 on this
machine; over five interleaved pairs of 1M-event joins the parallel collector saved 2.3
of 38 CPU-s and 0.9 s of wall time on average (docs/tuning.md). It is chosen only
when nothing else names a collector: two are a fatal JVM error ("Multiple garbage
collectors selected"), and a user's choice wins.

**The compiler.** Every micro-batch runs a great deal of Spark's code once or a few times
(planning, task set-up, state store commits), and HotSpot's default thresholds send much
of it to the optimizing compiler (C2), whose compilations took half the CPU of a count
pipeline at 1k events/s between 30 and 90 s after its start (JFR: 5,700 compilations,
13 s of 25 CPU-s). With C2's thresholds ten times higher, code that runs per record still
reaches C2 within milliseconds, and the rest stays with the fast C1 compiler: CPU at
1k events/s 0.49 → 0.40 ms/event, and never slower in the throughput benchmarks (500k
events 8.8 → 8.2 s, 5M 13.0 → 12.3 s, the join's CPU −7%; docs/tuning.md). A user's own
``-XX:Tier4…`` options come later on the command line and win.

**The first metadata collection.** The JVM collects the whole heap, once, when the class
metadata first passes ``MetaspaceSize`` (21 MB by default), which every run's classes
(Spark's, then the code it generates) pass while the first query is planned: a young and
a full collection, 140 ms of a short ``--once`` run. A 256 MB threshold, which Spark's
classes do not reach, leaves that collection out (the count over one event, six
interleaved pairs: 6.02 → 5.88 s). It reserves no memory; a user's own value comes
later and wins.

**RocksDB's library.** The state store's native library (15 MB) sits in RocksDB's jar,
and RocksDB copies it into /tmp at every JVM start to load it; the copy is deleted at
exit, except when the JVM is killed, and a killed driver (a crash loop, a ``kill -9``)
leaves 15 MB behind each time. ``scripts/setup.sh`` extracts it once into
``build/native/<jar>/``, and the driver's ``java.library.path`` starts there, so RocksDB
loads it in place. The directory is named after the jar, so a new PySpark (a new
RocksDB) is never given an old library: until ``setup.sh`` runs again, RocksDB copies its
own as before. A user's own ``-Djava.library.path`` comes later and wins.

Kept free of imports from the job package: ``spark-submit.sh`` runs this file directly
(``python job/run/driver_jvm.py [its spark-submit options]``) before any Spark code exists.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Iterable, Optional

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE_DIR = ROOT / "build" / "jvm"
NATIVE_DIR = ROOT / "build" / "native"
# The JDK's own library path on Linux (after LD_LIBRARY_PATH), which -Djava.library.path replaces.
JDK_LIBRARY_PATH = ("/usr/java/packages/lib", "/usr/lib64", "/lib64", "/lib", "/usr/lib")
# The library RocksDB loads on x86-64 Linux with glibc (its NativeLibraryLoader's name).
ROCKSDB_LIBRARY = "librocksdbjni-linux64.so"
# The JVM's own messages about an archive it cannot use (another JDK build, another class
# path) go to stdout, into a print sink's output: silenced, the JVM just starts without it.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
PARALLEL_GC = "-XX:+UseParallelGC"
LATER_C2 = ("-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
            "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000")
METASPACE = "-XX:MetaspaceSize=256m"
EXTRA_OPTIONS = "spark.driver.extraJavaOptions"
# -XX:+UseG1GC, -XX:+UseZGC, -XX:+UseShenandoahGC, -XX:+UseSerialGC, -XX:+UseParallelGC …
NAMES_A_COLLECTOR = re.compile(r"-XX:\+Use\w+GC\b")
# Where else a driver JVM's options come from: variables the java launcher and Spark's
# scripts read, and the one PySpark turns into the spark-submit it starts.
JVM_ENVIRONMENT = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS",
                   "PYSPARK_SUBMIT_ARGS")


def java_binary() -> str | None:
    """The java Spark's launcher runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def archive_path() -> Path | None:
    """Where the archive for this JDK and this PySpark lives (None without a java).

    The name carries a hash of the JDK's identity (its path and ``release`` file, which
    names the exact build) and of PySpark's (its version and when its jars were written):
    a JDK update or a reinstalled PySpark gets a new archive from the next ``setup.sh``
    rather than a stale one."""
    java = java_binary()
    if java is None:
        return None
    real = Path(java).resolve()
    release = real.parents[1] / "release"
    try:
        from importlib.metadata import version

        pyspark = version("pyspark")
        # A reinstall of the same version writes new jar files, which the JVM would find
        # newer than the archive's and refuse it: their directory's time is in the name.
        jars = os.stat(pyspark_jars()).st_mtime_ns
    except Exception:  # noqa: BLE001 - no PySpark installed: nothing to archive for
        return None
    identity = f"{real}\n{release.read_text() if release.exists() else ''}\n{pyspark}\n{jars}"
    return ARCHIVE_DIR / f"spark-{pyspark}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}.jsa"


def archive_options() -> str:
    """The options that map the archive, or '' when there is none."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def pyspark_jars() -> Path:
    """PySpark's jars directory (raises without PySpark)."""
    from importlib.util import find_spec

    return Path(find_spec("pyspark").submodule_search_locations[0]) / "jars"


def rocksdb_library() -> tuple[Path, Path] | None:
    """RocksDB's jar among PySpark's and where its library is extracted (named after the
    jar); None without PySpark, or on a platform other than x86-64 Linux with glibc (there
    RocksDB copies its own library, as always)."""
    import platform

    if sys.platform != "linux" or platform.machine() != "x86_64" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        found = sorted(pyspark_jars().glob("rocksdbjni-*.jar"))
    except Exception:  # noqa: BLE001 - no PySpark installed
        return None
    return (found[-1], NATIVE_DIR / found[-1].stem / ROCKSDB_LIBRARY) if found else None


def extract_rocksdb() -> Path | None:
    """Extract RocksDB's library from its jar (scripts/setup.sh); the library's path."""
    import zipfile

    found = rocksdb_library()
    if found is None:
        return None
    jar, target = found
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{ROCKSDB_LIBRARY}.{os.getpid()}")
        with zipfile.ZipFile(jar) as z, z.open(ROCKSDB_LIBRARY) as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out)
        os.replace(tmp, target)  # whole or not at all: a JVM may be starting meanwhile
    return target


def native_options() -> str:
    """``-Djava.library.path`` starting at the extracted RocksDB library, or '' when there
    is none (LD_LIBRARY_PATH and the JDK's own directories follow, as without it)."""
    found = rocksdb_library()
    if found is None or not found[1].is_file():
        return ""
    dirs = [str(found[1].parent), *(d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d),
            *JDK_LIBRARY_PATH]
    return "-Djava.library.path=" + ":".join(dirs)


def names_a_collector(user_options: Iterable[Optional[str]]) -> bool:
    """Whether the user's driver JVM options, or the JVM's environment, choose a collector."""
    texts = [*(o or "" for o in user_options), *(os.environ.get(v, "") for v in JVM_ENVIRONMENT)]
    return any(NAMES_A_COLLECTOR.search(t) for t in texts)


def java_options(user_options: Iterable[Optional[str]] = ()) -> str:
    """Our driver JVM options, given the user's own (``spark.driver.extraJavaOptions``
    values from wherever they come): the archive, the parallel collector unless the
    user chose one, the compiler's thresholds, the metadata threshold and RocksDB's
    library."""
    gc = "" if names_a_collector(user_options) else PARALLEL_GC
    return " ".join(part for part in (archive_options(), gc, LATER_C2, METASPACE, native_options()) if part)


def with_defaults(options: Optional[str], user_options: Iterable[Optional[str]] = ()) -> str:
    """``options`` (a JVM option string, may be empty) with ours first; a collector named
    in ``options`` counts as the user's choice too."""
    return " ".join(part for part in (java_options([*user_options, options]), options or "") if part)


def submit_java_options(args: list[str]) -> list[str]:
    """The driver JVM options among spark-submit arguments: ``--driver-java-options V``,
    ``--conf spark.driver.extraJavaOptions=V`` and that key in ``--properties-file F``."""
    found = []
    for flag, value in zip(args, args[1:]):
        if flag == "--driver-java-options":
            found.append(value)
        elif flag in ("--conf", "-c") and value.split("=", 1)[0].strip() == EXTRA_OPTIONS:
            found.append(value.split("=", 1)[1] if "=" in value else "")
        elif flag == "--properties-file" and os.path.isfile(value):
            with open(value, encoding="utf-8", errors="replace") as f:
                # Java properties: the key, then whitespace, '=' or ':' before the value.
                found += [line for line in f if re.match(rf"\s*{re.escape(EXTRA_OPTIONS)}[\s=:]", line)]
    return found


if __name__ == "__main__":  # spark-submit.sh: prints our options, given its spark-submit options
    print(java_options(submit_java_options(sys.argv[1:])))
