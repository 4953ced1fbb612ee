"""Restarting a query that failed for a reason that is the machine's, not the pipeline's.

Spark starts a Python process for Python code that runs in tasks (a sink's micro-batch
function, a Python data source), and waits a fixed 10 s for it to connect back. On an
overloaded machine that wait can expire: the query fails with "Python worker failed to
connect back" although nothing is wrong with the pipeline or the data (the crash loop of
tests/reliability found this under a load average of 14 on 2 cores). Task retries do not
help when it happens on the driver.

Such a query is started again from its checkpoint, in the same application — it redoes
the uncommitted micro-batch, so nothing is lost or duplicated — at most
``MAX_RESTARTS`` times per query, after a short pause. Any other failure ends the run
as before.
"""
from __future__ import annotations

import sys
import time

TRANSIENT_MARKERS = (
    "Python worker failed to connect back",
)
MAX_RESTARTS = 3
PAUSE_S = 2.0


def is_transient(exc) -> bool:
    try:
        text = str(getattr(exc, "desc", None) or exc)
    except Exception:  # noqa: BLE001 - the JVM is gone: nothing to restart on
        return False
    return any(marker in text for marker in TRANSIENT_MARKERS)


class Restarter:
    """Knows the configured writer of every query a run started (main and dead-letter)."""

    def __init__(self, plans, err=None) -> None:
        self.writers = {}
        for plan in plans:
            self.writers[plan.name] = plan.writer
            for name, writer, _checkpoint in plan.dead_letters:
                self.writers[f"{plan.name}-{name}"] = writer
        self.real_time = {plan.name for plan in plans if plan.mode() == "real-time"}
        self.checkpoints = {plan.name: plan.checkpoint for plan in plans}
        self.counts: dict[str, int] = {}
        self.err = err or sys.stderr
        self.started: list = []        # every replacement query, for the caller to stop at the end

    def restart(self, query):
        """A new query in place of ``query`` if its failure is transient and retries are
        left, else None."""
        name = query.name
        writer = self.writers.get(name)
        if writer is None or not is_transient(query.exception()) or self.counts.get(name, 0) >= MAX_RESTARTS:
            return None
        self.counts[name] = self.counts.get(name, 0) + 1
        first = str(getattr(query.exception(), "desc", query.exception())).strip().splitlines()[0][:200]
        print(f"streamsql: query '{name}' failed transiently ({first}); restarting it from its checkpoint "
              f"({self.counts[name]}/{MAX_RESTARTS})", file=self.err, flush=True)
        time.sleep(PAUSE_S)
        if name in self.checkpoints:
            from job.run.queries import clear_state_of_no_batch

            clear_state_of_no_batch(self.checkpoints[name])
        if name in self.real_time:  # with the session settings a real-time query starts with
            from job.run.real_time import real_time_settings

            with real_time_settings(writer._spark):
                replacement = writer.start()
        else:
            replacement = writer.start()   # the writer keeps its name, checkpoint, mode and trigger
        self.started.append(replacement)
        return replacement
