"""JVM options for the JVMs the tests start: Spark's (the session, every spark-submit and
``python job/main.py`` run) and Flink's (the differential oracle, the format tests).

The suite starts a few hundred JVMs, most of them for a few seconds of small data, on a
2-core machine where CPU time is what bounds the run. Tiered compilation's second
compiler (C2) spends its threads optimizing code that such a JVM runs too few times to
gain back: with C1 alone (``-XX:TieredStopAtLevel=1``) a ``--once`` run of a small
aggregation took about a quarter less CPU, and Flink's oracle a third less time per case,
here. What a test asserts (rows, offsets, exit codes, messages) does not depend on which
compiler ran the code. The job itself keeps the JVM's defaults (job/run/driver_jvm.py):
a production run lives long enough for C2 to pay.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

C1_ONLY = "-XX:TieredStopAtLevel=1"
# SPARK_SUBMIT_OPTS as the test run found it, for the one JVM that lives as long as the run.
_found: dict[str, str | None] = {}


def with_c1_only(options: str) -> str:
    """``options`` with C1-only compilation added, unless it already names a tier."""
    return options if "TieredStopAtLevel" in options or "TieredCompilation" in options else f"{C1_ONLY} {options}".strip()


def spark_c1_only() -> None:
    """Spark's launcher adds SPARK_SUBMIT_OPTS to the driver JVM's command line: every job
    run started from here inherits it."""
    _found.setdefault("SPARK_SUBMIT_OPTS", os.environ.get("SPARK_SUBMIT_OPTS"))
    os.environ["SPARK_SUBMIT_OPTS"] = with_c1_only(os.environ.get("SPARK_SUBMIT_OPTS", ""))


@contextlib.contextmanager
def both_compilers():
    """SPARK_SUBMIT_OPTS as found, while the shared session's JVM starts: that one runs
    every in-process test, the differential cases among them, for the whole run, where C2
    pays (the same CPU as C1 alone over 173 differential cases, in 15% less time)."""
    if "SPARK_SUBMIT_OPTS" not in _found:
        yield
        return
    ours = os.environ.get("SPARK_SUBMIT_OPTS")
    found = _found["SPARK_SUBMIT_OPTS"]
    if found is None:
        os.environ.pop("SPARK_SUBMIT_OPTS", None)
    else:
        os.environ["SPARK_SUBMIT_OPTS"] = found
    try:
        yield
    finally:
        if ours is not None:
            os.environ["SPARK_SUBMIT_OPTS"] = ours


def flink_env(flink_python: str) -> dict:
    """The environment for a PyFlink interpreter (``flink_python``) whose JVM compiles
    with C1 only. PyFlink's gateway takes FLINK_ENV_JAVA_OPTS instead of its config's
    ``env.java.default-opts.all`` (the --add-opens Flink needs on Java 17), so those come
    along from the config of that PyFlink."""
    env = dict(os.environ)
    if "FLINK_ENV_JAVA_OPTS" in env:
        env["FLINK_ENV_JAVA_OPTS"] = with_c1_only(env["FLINK_ENV_JAVA_OPTS"])
        return env
    venv = Path(flink_python).parent.parent
    configured = []
    for config in venv.glob("lib/python*/site-packages/pyflink/conf/config.yaml"):
        import yaml

        java = ((yaml.safe_load(config.read_text()) or {}).get("env") or {}).get("java") or {}
        configured += [str((java.get(key) or {}).get("all") or "") for key in ("default-opts", "opts")]
    env["FLINK_ENV_JAVA_OPTS"] = with_c1_only(" ".join(o for o in configured if o))
    return env
