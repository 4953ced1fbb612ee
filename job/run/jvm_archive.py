"""A class-data-sharing archive of Spark's classes, so that a driver JVM starts faster.

A fresh JVM spends seconds finding Spark's classes in some 250 jars, parsing and
verifying them, and then compiling the class-loading code it ran so much of. A cron or
Airflow run with ``--once`` pays that every time. JDK 17's dynamic CDS archive
(``-XX:ArchiveClassesAtExit``) keeps the classes a run loaded pre-parsed in one file that
the next JVM maps at start. Measured on the 2-core machine: session start 6.0 → 3.9 s,
the first query 2.6 → 1.2 s (``README.md``, Quick start).

``scripts/build_jvm_archive.py`` (run by ``scripts/setup.sh``) writes the archive;
:func:`java_options` names it for the driver JVM when it exists. The JVM checks the file
itself (the same JDK build and class path as when it was written) and, finding it stale,
starts without it: the options switch off that warning, so a stale archive only costs
the speed-up, never a run. Only the driver uses it; executors of a standalone cluster
start as before.

Kept free of imports from the job package: ``spark-submit.sh`` runs this file directly
(``python job/run/jvm_archive.py``) to get the options, before any Spark code exists.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE_DIR = ROOT / "build" / "jvm"
# The JVM's own messages about an archive it cannot use (another JDK build, another class
# path) go to stdout, into a print sink's output: silenced, the JVM just starts without it.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


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
        from importlib.util import find_spec

        pyspark = version("pyspark")
        # A reinstall of the same version writes new jar files, which the JVM would find
        # newer than the archive's and refuse it: their directory's time is in the name.
        jars = os.stat(Path(find_spec("pyspark").submodule_search_locations[0]) / "jars").st_mtime_ns
    except Exception:  # noqa: BLE001 - no PySpark installed: nothing to archive for
        return None
    identity = f"{real}\n{release.read_text() if release.exists() else ''}\n{pyspark}\n{jars}"
    return ARCHIVE_DIR / f"spark-{pyspark}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}.jsa"


def java_options() -> str:
    """Driver JVM options that use the archive, or '' when there is none."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def with_archive(options: str | None) -> str:
    """``options`` (a JVM option string, may be empty) with the archive's options first."""
    ours = java_options()
    return " ".join(part for part in (ours, options or "") if part)


if __name__ == "__main__":  # spark-submit.sh: `python job/run/jvm_archive.py` prints the options
    print(java_options())
