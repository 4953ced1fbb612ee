"""Starting a query in Spark 4.3's real-time mode (job.plan.real_time chose it).

Real-time mode runs long-lived tasks that hold a task slot each for the whole checkpoint
interval: one per source partition and, for every stateful stage, one per shuffle
partition (the pipelined shuffle runs producer and consumer at once): :func:`fit` gives
them before any query starts. A query is refused in our words when its checkpoint was
written by micro-batch (state checkpoint format v1, which real-time mode cannot read).
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from job.errors import PipelineError
from job.plan.real_time import INTERVAL_KEY, MODE_KEY, checkpoint_interval_ms

# Spark settings a real-time query needs, set while it starts (a query keeps the session
# settings of its start): AQE is not supported, stateful operators need RocksDB and the
# state checkpoint format v2, and a sort before a repartition is not on the allowlist.
SETTINGS = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.checkpointFormatVersion": "2",
    "spark.sql.execution.sortBeforeRepartition": "false",
}


def source_partitions(spark, plan) -> int:
    from job.connectors.kafka.admin import partitions_of
    from job.connectors.kafka.common import topics

    total = 0
    for node in plan.nodes:
        if node.kind == "scan" and node.spec is not None:
            options = dict(node.spec.options)
            names = topics(options)
            total += sum(len(p) for p in partitions_of(spark, options, names).values())
    return total


def slots_needed(plan, partitions: int, shuffle_partitions: int) -> int:
    """Source partitions, plus the shuffle partitions of every stateful stage (each stateful
    step counted as its own stage: an upper bound when two share one)."""
    stages = sum(1 for n in plan.nodes if n.stateful)
    return partitions + shuffle_partitions * stages


def local_master(master: str, slots: int) -> str:
    """``local[N]``/``local[N,F]``/``local[*]`` with ``slots`` threads, keeping its task
    attempts (F)."""
    import re

    m = re.fullmatch(r"local(?:\[\s*([0-9*]+)\s*(?:,\s*([0-9]+)\s*)?\])?", master.strip())
    failures = m.group(2) if m else None
    return f"local[{slots},{failures}]" if failures else f"local[{slots}]"


def fit(spark, plans, err, *, rebuild, replan, own_session: bool = True):
    """Give the real-time queries the task slots they hold, all at once: in local mode,
    where a slot is a thread, start the session again with as many (``rebuild(master)``,
    then ``replan(spark)``); on a cluster, whose cores are what they are, or in a session
    the run did not start (``own_session``: a library caller's, which is not ours to
    stop), run them in micro-batch mode instead, saying which setting would let them run
    in real time (``replan(spark, blocked=why)``). Returns (spark, plans)."""
    real_time = [p for p in plans if p.mode() == "real-time"]
    if not real_time:
        return spark, plans
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions"))
    needed = sum(slots_needed(p, source_partitions(spark, p), shuffle) for p in real_time)
    cores = spark.sparkContext.defaultParallelism
    if cores >= needed:
        return spark, plans
    master = spark.sparkContext.master
    if master.startswith("local") and own_session:
        # The real-time queries' slots, and as many again as the session had for
        # everything else: micro-batch queries and the run's own small jobs.
        resized = local_master(master, needed + cores)
        print(f"streamsql: real-time mode holds {needed} task slots at once (every source partition and, for each "
              f"stateful step, every shuffle partition): local mode runs with {resized} instead of {master}",
              file=err, flush=True)
        spark.stop()
        spark = rebuild(resized)
        return spark, replan(spark)
    more = f"--master local[{needed}]" if master.startswith("local") else "more executor cores"
    why = (f"real-time mode would hold {needed} task slots at once and this Spark application has {cores} cores: "
           f"give it {more}, lower SET 'spark.sql.shuffle.partitions' (now {shuffle}), or "
           f"SET '{MODE_KEY}' = 'off' to choose micro-batch yourself")
    return spark, replan(spark, blocked=why)


def check_checkpoint(plan) -> None:
    """A stateful query's checkpoint written by micro-batch (state format v1) cannot be
    read in real-time mode: refuse before Spark does."""
    commits = Path(plan.checkpoint) / "commits"
    if not plan.stateful or not commits.is_dir():
        return
    batches = sorted((int(p.name) for p in commits.iterdir() if p.name.isdigit()), reverse=True)
    if not batches:
        return
    first = (commits / str(batches[0])).read_text().split("\n", 1)[0].strip()
    if first == "v1":
        raise PipelineError(
            f"query '{plan.name}' qualifies for real-time mode, but its checkpoint {plan.checkpoint} was written "
            f"in micro-batch mode (state checkpoint format 1), which real-time mode cannot continue",
            hint=f"SET '{MODE_KEY}' = 'off' to keep running it in micro-batch mode, or start it on a new "
                 f"checkpoint directory")


# In a checkpoint a real-time run has started on (job.run.real_time.start).
MARKER = "streamsql-real-time"


def mark(plan) -> None:
    """Note in the checkpoint that a real-time run writes it (see check_continuation)."""
    from job.run.compat import local_dir

    directory = local_dir(plan.checkpoint)
    if directory is None:
        return  # a remote checkpoint (hdfs:, s3a:): not noted
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text("a real-time run writes this checkpoint\n")


def check_continuation(plans) -> None:
    """A query into an upsert sink whose checkpoint a real-time run wrote cannot continue
    in micro-batch mode (--once included): the real-time run wrote each change as it came,
    and what it wrote after its last checkpoint is read again and netted per batch, where
    a key whose changes cancel out writes nothing, leaving the sink showing a change no
    committed batch made. Refused before anything runs, never misread."""
    from job.run.compat import local_dir

    for plan in plans:
        if plan.mode() == "real-time" or not plan.sink_mode.startswith("upsert"):
            continue
        directory = local_dir(plan.checkpoint)
        if directory is not None and (directory / MARKER).is_file():
            raise PipelineError(
                f"query '{plan.name}' runs in micro-batch mode ({plan.mode_reason()[1]}), but its checkpoint "
                f"{plan.checkpoint} was written in real-time mode, whose changes since its last checkpoint would be "
                f"netted differently and could leave its upsert sink showing a change that was undone",
                hint=f"continue it in real-time mode (SET '{MODE_KEY}' = 'auto', without --once), or start it on a "
                     f"new checkpoint directory")


@contextmanager
def real_time_settings(spark):
    """The session set for a real-time query while it starts (SETTINGS), then as it was."""
    before = {k: spark.conf.get(k, None) for k in SETTINGS}
    try:
        for key, value in SETTINGS.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def start(plan, program):
    """Start ``plan`` in real-time mode: update output, a trigger every checkpoint interval."""
    writer = plan.writer
    spark = writer._spark
    interval_ms = checkpoint_interval_ms(program.conf)
    check_checkpoint(plan)   # its slots were given before it was planned the last time (fit)
    mark(plan)
    with real_time_settings(spark):
        return (writer.queryName(plan.name).option("checkpointLocation", plan.checkpoint).outputMode("update")
                .trigger(realTime=f"{interval_ms} milliseconds").start())


def could_run_in_real_time(plan) -> bool:
    """A query that runs on (not --once, a source without end): its start-up line says
    which mode runs it. A run to completion is micro-batch, and needs no line to say so."""
    return not plan.once and not plan.bounded


def startup_line(plan, program) -> str:
    mode, why = plan.mode_reason()
    if mode == "real-time":
        return (f"streamsql: query {plan.name}: real-time mode (checkpoint every "
                f"{checkpoint_interval_ms(program.conf) // 1000} s, SET '{INTERVAL_KEY}'): {why}")
    return f"streamsql: query {plan.name}: micro-batch mode: {why}"
