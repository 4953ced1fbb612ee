"""JVM options for the JVMs the tests start: Spark's (every spark-submit and ``python
job/main.py`` run) and Flink's (the differential oracle, the format and iceberg tests).

The suite starts a few hundred JVMs, most of them for a few seconds of small data, on a
2-core machine where CPU time is what bounds the run. Tiered compilation's second
compiler (C2) spends its threads optimizing code that such a JVM runs too few times to
gain back: with C1 alone (``-XX:TieredStopAtLevel=1``) a ``--once`` run of a small
aggregation took about a quarter less CPU, and Flink's oracle a third less time per case,
here. What a test asserts (rows, offsets, exit codes, messages) does not depend on which
compiler ran the code. The job itself keeps both compilers (job/run/driver_jvm.py): a
production run lives long enough for C2 to pay.
"""
from __future__ import annotations

import os
from pathlib import Path

C1_ONLY = "-XX:TieredStopAtLevel=1"
# The JVM's default, both compilers: the shared session's driver JVM puts it after
# SPARK_SUBMIT_OPTS on its command line (spark.driver.extraJavaOptions), where it wins.
# That JVM runs every in-process test, the differential cases among them, for the whole
# run, where C2 pays: C1 alone took the same CPU over 173 differential cases, and 15% longer.
BOTH_COMPILERS = "-XX:TieredStopAtLevel=4"


def with_c1_only(options: str) -> str:
    """``options`` with C1-only compilation added, unless it already names a tier."""
    return options if "TieredStopAtLevel" in options or "TieredCompilation" in options else f"{C1_ONLY} {options}".strip()


def spark_c1_only() -> None:
    """Spark's launcher adds SPARK_SUBMIT_OPTS to the driver JVM's command line: every job
    run started from here inherits it."""
    os.environ["SPARK_SUBMIT_OPTS"] = with_c1_only(os.environ.get("SPARK_SUBMIT_OPTS", ""))


def flink_env(flink_python: str) -> dict:
    """The environment for a PyFlink interpreter (``flink_python``) whose JVM compiles
    with C1 only. PyFlink's gateway takes FLINK_ENV_JAVA_OPTS instead of its config's
    ``env.java`` options (``default-opts.all`` and ``opts.all``: the --add-opens Flink
    needs on Java 17), so those come along from the config of that PyFlink."""
    import yaml

    env = dict(os.environ)
    if "FLINK_ENV_JAVA_OPTS" in env:
        env["FLINK_ENV_JAVA_OPTS"] = with_c1_only(env["FLINK_ENV_JAVA_OPTS"])
        return env
    venv = Path(flink_python).parent.parent
    configured = []
    for config in venv.glob("lib/python*/site-packages/pyflink/conf/config.yaml"):
        java = ((yaml.safe_load(config.read_text()) or {}).get("env") or {}).get("java") or {}
        configured += [str((java.get(key) or {}).get("all") or "") for key in ("default-opts", "opts")]
    env["FLINK_ENV_JAVA_OPTS"] = with_c1_only(" ".join(o for o in configured if o))
    return env
