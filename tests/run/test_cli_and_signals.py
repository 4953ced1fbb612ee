"""Command-line options of issue 4 and the stop signal (no Spark)."""
from __future__ import annotations

import subprocess
import sys
import threading
import textwrap

from job.cli import parse_args, parser
from job.run.stop import StopSignal


def test_production_options():
    o = parse_args(["-f", "p.sql", "--once", "--metrics-port", "9108", "--metrics-file", "m.jsonl",
                    "--stop-timeout", "30"])
    assert (o.once, o.metrics_port, o.metrics_file, o.stop_timeout) == (True, 9108, "m.jsonl", 30.0)
    assert parse_args(["x"]).metrics_port is None and parse_args(["x"]).stop_timeout == 120.0
    assert parse_args(["x"]).metrics_host == "127.0.0.1"  # this host only, unless told
    assert parse_args(["x", "--metrics-port", "9108", "--metrics-host", "0.0.0.0"]).metrics_host == "0.0.0.0"


def test_help_documents_exit_codes():
    text = parser().format_help()
    for line in ("0  ok", "1  any other failure", "2  invalid pipeline", "3  a source or sink cannot be reached",
                 "4  a bad record"):
        assert line in text


def test_an_external_event_requests_a_graceful_stop(capsys):
    event = threading.Event()
    stop = StopSignal(external=event)
    assert not stop.requested
    event.set()
    assert stop.requested
    assert "stopping at the next batch boundary" in capsys.readouterr().err


def test_first_signal_requests_a_stop_the_second_exits_at_once():
    script = textwrap.dedent("""
        import os, signal, sys, time
        from job.run.stop import StopSignal
        stop = StopSignal()
        stop.install()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        print("requested", stop.requested, flush=True)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        print("still running", flush=True)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert proc.stdout == "requested True\n"
    assert proc.returncode == 128 + 2  # SIGINT
    assert "received SIGTERM, stopping at the next batch boundary" in proc.stderr
    assert "received SIGINT again, stopping at once" in proc.stderr


def test_a_signal_prints_its_message_off_the_main_thread():
    """The handler interrupts the main thread, possibly inside a py4j call awaiting the JVM's
    answer: printing through the JVM from there re-entered that call's socket."""
    script = textwrap.dedent("""
        import os, signal, threading, time
        from job.run.stop import StopSignal

        class Err:
            def write(self, text):
                if text.strip():
                    print("main" if threading.current_thread() is threading.main_thread() else "other", text.strip(),
                          flush=True)
            def flush(self):
                pass

        stop = StopSignal(Err())
        stop.install()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 128 + 15
    assert proc.stdout.splitlines() == [
        "other streamsql: received SIGTERM, stopping at the next batch boundary (send it again to stop at once)",
        "other streamsql: received SIGTERM again, stopping at once"]
