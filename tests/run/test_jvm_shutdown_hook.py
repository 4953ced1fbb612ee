"""The JVM shutdown hook that turns a signal to spark-submit into a graceful stop."""
from __future__ import annotations

from job.run.stop import StopSignal


def test_the_hook_is_gone_from_the_jvm_once_the_run_has_ended(spark):
    """Hadoop finds a hook to remove by the Java reference it was given. Removing the
    Python hook itself never matched (py4j makes a new Java proxy each time a Python
    object crosses), so the JVM still ran it at exit, after Python had gone: a "ShutdownHook
    failed … Cannot obtain a new communication channel" warning ended every --verbose run."""
    manager = spark._jvm.org.apache.hadoop.util.ShutdownHookManager.get()
    stop = StopSignal()
    stop.install_jvm_hook(spark, timeout=5)
    hook = stop._jvm_hook
    assert manager.hasShutdownHook(hook)
    stop.finished()
    assert not manager.hasShutdownHook(hook)
