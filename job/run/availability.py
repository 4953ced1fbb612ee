"""What a running pipeline does when a broker goes away: wait for it, or fail (exit 3).

Measured on Spark 4.2 with its Kafka connector (tests/reliability/test_broker_outage.py):
a broker that disappears for 30 s or more does not fail the query. The source's
consumer and the sink's producer retry; when the broker is back the query continues
from the offsets it had reached, and nothing is lost. Spark only gives up once a Kafka
client timeout expires (the producer's ``delivery.timeout.ms``, 2 minutes by default, for
a record it could not send), and then the query fails.

That is the ``wait`` behaviour, the default. Some deployments prefer to know: under
``fail`` the job exits with code 3 (EXIT_UNREACHABLE) once a broker it uses has been
unreachable for longer than the timeout, and restarted later it resumes from its
checkpoints, again without loss. Settings (``SET`` in the pipeline)::

    SET 'streamsql.source.unavailable' = 'wait';          -- or 'fail'
    SET 'streamsql.source.unavailable.timeout' = '10 s';  -- fail: default 10 s; wait: no limit

Under ``wait`` a timeout makes the wait bounded: after it the job exits 3 as well.
Reachability is a TCP connect to the endpoints the tables' connectors declare (Kafka's
``properties.bootstrap.servers``) every couple of seconds (from a background thread: a
dead host costs a connect timeout).
"""
from __future__ import annotations

import socket
import threading
import time
from typing import Optional

from job.errors import EXIT_INVALID, EXIT_UNREACHABLE, PipelineError

MODE_KEY = "streamsql.source.unavailable"
TIMEOUT_KEY = "streamsql.source.unavailable.timeout"
MODES = ("wait", "fail")
DEFAULT_FAIL_TIMEOUT_S = 10.0
PROBE_INTERVAL_S = 2.0
CONNECT_TIMEOUT_S = 2.0


def settings(conf: dict) -> tuple[str, Optional[float]]:
    """(mode, timeout in seconds or None for no limit), validated."""
    from job.options import parse_duration_ms

    mode = str(conf.get(MODE_KEY, "wait")).strip().lower()
    if mode not in MODES:
        raise PipelineError(f"'{MODE_KEY}' = '{conf.get(MODE_KEY)}' is not one of {', '.join(MODES)}",
                            option=MODE_KEY, exit_code=EXIT_INVALID,
                            hint="'wait' keeps the job running until the broker is back; 'fail' exits with code 3")
    raw = conf.get(TIMEOUT_KEY)
    if raw is None or str(raw).strip() == "":
        return mode, (DEFAULT_FAIL_TIMEOUT_S if mode == "fail" else None)
    ms = parse_duration_ms(str(raw))
    if ms is None or ms < 0:
        raise PipelineError(f"'{TIMEOUT_KEY}' = '{raw}' is not a duration", option=TIMEOUT_KEY, exit_code=EXIT_INVALID,
                            hint="write it as '30 s', '2 min' or '500 ms'")
    return mode, ms / 1000.0


def endpoints_in_use(program) -> dict:
    """Each distinct endpoint (e.g. a 'properties.bootstrap.servers' value) of the tables
    a run uses, by its value."""
    from job.connectors.registry import endpoints
    from job.run.sources import tables_in_use

    out: dict = {}
    for _bound, endpoint in endpoints(tables_in_use(program)):
        out.setdefault(endpoint.value, endpoint)
    return out


def reachable(addresses: list[tuple[str, int]], timeout: float = CONNECT_TIMEOUT_S) -> bool:
    for host, port in addresses:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            return True
        except OSError:
            continue
    return False


class Watchdog:
    """Probes the brokers in the background; :meth:`check` raises once the policy says so."""

    def __init__(self, program, err, probe_interval: float = PROBE_INTERVAL_S) -> None:
        self.mode, self.timeout = settings(program.conf)
        self.endpoints = endpoints_in_use(program)
        self.err = err
        self.probe_interval = probe_interval
        self.down_since: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @classmethod
    def start(cls, program, err) -> "Watchdog":
        dog = cls(program, err)
        if dog.endpoints:
            dog._thread = threading.Thread(target=dog._loop, name="streamsql-broker-watchdog", daemon=True)
            dog._thread.start()
        return dog

    def stop(self) -> None:
        self._stop.set()

    def _say(self, text: str) -> None:
        try:
            print(f"streamsql: {text}", file=self.err, flush=True)
        except Exception:  # noqa: BLE001 - a closed stream must not kill the watchdog
            pass

    def _loop(self) -> None:
        while not self._stop.wait(self.probe_interval):
            for value, endpoint in self.endpoints.items():
                up = reachable(list(endpoint.addresses))
                with self._lock:
                    since = self.down_since.get(value)
                    if not up and since is None:
                        self.down_since[value] = time.monotonic()
                        limit = f"at most {self.timeout:g} s" if self.timeout is not None else "until it is back"
                        action = "then exiting with code 3" if self.mode == "fail" else "resuming when it is back"
                        self._say(f"{endpoint.kind} {value} cannot be reached; waiting {limit} ({MODE_KEY} = {self.mode}), "
                                  f"{action}")
                    elif up and since is not None:
                        del self.down_since[value]
                        self._say(f"{endpoint.kind} {value} is reachable again after {time.monotonic() - since:.0f} s; resuming")

    def check(self) -> None:
        """Raise PipelineError (exit 3) if a broker has been down longer than the timeout."""
        if self.timeout is None:
            return
        with self._lock:
            expired = [(v, t) for v, t in self.down_since.items() if time.monotonic() - t > self.timeout]
        if expired:
            value, since = expired[0]
            raise PipelineError(
                f"{self.endpoints[value].kind} {value} has been unreachable for {time.monotonic() - since:.0f} s "
                f"('{MODE_KEY}' = '{self.mode}', timeout {self.timeout:g} s); the queries were stopped",
                option=TIMEOUT_KEY if self.mode == "wait" else MODE_KEY, exit_code=EXIT_UNREACHABLE,
                hint="start the job again once the broker is back: it resumes from its checkpoints and loses nothing "
                     f"(or SET '{MODE_KEY}' = 'wait' to keep the job waiting)")
