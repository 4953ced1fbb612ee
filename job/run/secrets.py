"""Keeping secret values out of everything the job prints.

A pipeline's secrets are the values ``{{ env('X') }}`` / ``{{ secret_file('p') }}``
returned while rendering (``LoadedPipeline.secrets``) and the values of options that a
connector declares secret or whose names look secret (``job.options.is_secret_option``:
passwords, tokens, ``sasl.jaas.config``…) whether templated or written literally. :class:`Masker` replaces
each of them with ``****`` in a text; :func:`masked_output` swaps ``sys.stdout`` and
``sys.stderr`` for :class:`MaskingStream` wrappers for the length of a run, so progress
lines, the ``--explain`` plan, error messages — including Spark error text that echoes an
option value — and Python tracebacks all go through the masker.

The JVM writes its own log lines straight to the process's file descriptors; the runner
keeps those quiet (see ``runner.quiet_jvm_logs``) and Spark exceptions reach the user only
through our own (masked) messages.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import threading
from typing import Iterable, Iterator, Optional

from job.options import MASK, SECRET_PLAIN_PAIR, SECRET_QUOTED_PAIR, is_secret_option

ELLIPSIS = "…"   # what job.errors.preview() puts where it cuts a long line
# Shorter values would mask ordinary words and digits all over the output; a one- or
# two-character "secret" protects nothing anyway.
MIN_SECRET_LENGTH = 3


def _variants(value: str) -> set[str]:
    """The value and the escaped forms an error message may show it in."""
    out = {value}
    out.add(json.dumps(value)[1:-1])                      # JSON / Java string escaping
    out.add(repr(value)[1:-1])                            # Python repr
    out.add(value.replace("\n", " "))                     # joined lines
    return {v for v in out if len(v) >= MIN_SECRET_LENGTH}


# The password of a URL's user info (scheme://user:password@host), as a schema
# registry's URL may carry it ('avro-confluent.basic-auth.credentials-source' = 'URL').
URL_PASSWORD = re.compile(r"://[^/\s:@]*:([^@\s/]+)@")


def parts_of(value: str) -> set[str]:
    """Secret pieces inside a larger secret (a JAAS config's password, a URL's token) or
    in any option's value (a URL's password): an error message may quote the piece
    without the whole."""
    found = {m.group(3) for m in SECRET_QUOTED_PAIR.finditer(value)}
    found |= {m.group(2) for m in SECRET_PLAIN_PAIR.finditer(value)}
    found |= {m.group(1) for m in URL_PASSWORD.finditer(value)}
    return {p for p in found if len(p) >= MIN_SECRET_LENGTH}


class Masker:
    """Replaces every known secret value in a text with ``****``. Thread-safe to add to."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._pattern: Optional[re.Pattern] = None
        self.add(values)

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            for value in values:
                if not isinstance(value, str) or not value:
                    continue
                for v in (value, *parts_of(value)):
                    self._values |= _variants(v)
            # Longest first, so that a secret containing another is masked whole.
            ordered = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __contains__(self, value: str) -> bool:
        return value in self._values

    def mask(self, text: str) -> str:
        pattern = self._pattern
        if pattern is None or not text:
            return text
        text = pattern.sub(MASK, text)
        if ELLIPSIS in text:  # a preview cut inside a secret shows its beginning
            text = self._mask_cut(text)
        return text

    def _mask_cut(self, text: str) -> str:
        values = sorted(self._values, key=len, reverse=True)
        pieces = text.split(ELLIPSIS)
        for i, piece in enumerate(pieces[:-1]):
            for value in values:
                cut = next((k for k in range(len(value) - 1, MIN_SECRET_LENGTH - 1, -1)
                            if piece.endswith(value[:k])), None)
                if cut is not None:
                    pieces[i] = piece[: len(piece) - cut] + MASK
                    break
        return ELLIPSIS.join(pieces)


def collect_secrets(program) -> set[str]:
    """Every value of ``program`` that must not be shown: the templated secrets, the values
    of secret-looking table options and Spark settings, and secret pieces inside them."""
    values: set[str] = set(getattr(program, "secrets", ()) or ())
    bound = program.catalog.bound_tables()
    settings = [*((k in b.secrets, k, v) for b in bound for k, v in b.options.items()),
                *((is_secret_option(k), k, v) for k, v in (program.conf or {}).items())]
    for secret, _key, value in settings:
        if not isinstance(value, str):
            continue
        if secret:
            values.add(value)
        values |= parts_of(value)
    return {v for v in values if v}


class MaskingStream(io.TextIOBase):
    """A text stream that masks secrets in whatever is written to ``target``.

    Text is passed on a line at a time (a secret is never split across two writes of
    one line); ``flush()`` passes on a partial line too.
    """

    def __init__(self, target, masker: Masker) -> None:
        super().__init__()
        self.target = target
        self.masker = masker
        self._pending = ""
        self._lock = threading.RLock()

    # -- the parts of the TextIO interface callers use --------------------------------
    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            text = str(text)
        with self._lock:
            self._pending += text
            if "\n" in self._pending:
                head, _, self._pending = self._pending.rpartition("\n")
                self.target.write(self.masker.mask(head + "\n"))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self.target.write(self.masker.mask(self._pending))
                self._pending = ""
            try:
                self.target.flush()
            except (ValueError, OSError):  # closed underneath us (interpreter shutdown)
                pass

    def isatty(self) -> bool:
        try:
            return self.target.isatty()
        except (AttributeError, ValueError):
            return False

    def fileno(self) -> int:
        return self.target.fileno()

    @property
    def encoding(self):  # type: ignore[override]
        return getattr(self.target, "encoding", "utf-8")

    @property
    def errors(self):  # type: ignore[override]
        return getattr(self.target, "errors", "strict")

    def close(self) -> None:  # never close the real stdout/stderr
        self.flush()


@contextlib.contextmanager
def masked_output(masker: Masker) -> Iterator[None]:
    """For the duration of the block, ``sys.stdout``/``sys.stderr`` mask ``masker``'s secrets."""
    saved = sys.stdout, sys.stderr
    out, err = MaskingStream(saved[0], masker), MaskingStream(saved[1], masker)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        for stream in (out, err):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - never let flushing hide the real outcome
                pass
        # Only restore what we replaced (a test harness may have swapped them meanwhile).
        if sys.stdout is out:
            sys.stdout = saved[0]
        if sys.stderr is err:
            sys.stderr = saved[1]


def wrap(stream, masker: Masker):
    """``stream`` masked with ``masker`` (unless it already is)."""
    if isinstance(stream, MaskingStream) and stream.masker is masker:
        return stream
    return MaskingStream(stream, masker)


# ------------------------------------------------------------------ file descriptors

class FdFilter:
    """Masks (and optionally thins out) everything written to file descriptors 1 and 2.

    :class:`MaskingStream` covers what Python prints; a JVM that this process launches
    afterwards (``SparkSession.builder.getOrCreate()`` outside spark-submit) inherits the
    descriptors and writes its log lines and its Python workers' output there directly.
    Each descriptor becomes a pipe whose reader thread masks whole lines, drops lines
    matching ``drop``, and writes the rest to the original descriptor.

    The reader never stops reading, even when its output fails, so writers never block.
    :meth:`stop` restores the descriptors after everything written before it has been
    passed on; the JVM keeps its copy of the pipe and stays filtered until it exits.
    """

    def __init__(self, masker: Masker, drop: Iterable[str] = (), fds: tuple = (1, 2)) -> None:
        self.masker = masker
        self.drop = tuple(drop)
        self.fds = fds
        self._pipes: list = []          # (fd, saved_fd, write_end, sentinel, done_event)

    def start(self) -> "FdFilter":
        import os
        import uuid

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        for fd in self.fds:
            saved = os.dup(fd)
            read_end, write_end = os.pipe()
            os.dup2(write_end, fd)
            sentinel = f"\x00streamsql-drained-{uuid.uuid4().hex}\x00\n".encode()
            done = threading.Event()
            threading.Thread(target=self._pump, args=(read_end, saved, sentinel, done), daemon=True,
                             name=f"streamsql-fd{fd}").start()
            self._pipes.append((fd, saved, write_end, sentinel, done))
        return self

    def _keep(self, line: str, dropped_previous: bool) -> bool:
        if any(d in line for d in self.drop):
            return False
        return not (dropped_previous and not line.strip())

    def _pump(self, read_end: int, out_fd: int, sentinel: bytes, done: threading.Event) -> None:
        import os

        pending = b""
        dropped = False
        while True:
            try:
                chunk = os.read(read_end, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            if b"\n" not in pending and len(pending) < 65536:
                continue
            lines = pending.split(b"\n")
            pending = lines.pop() if len(pending) < 65536 else b""
            out = []
            for raw in lines:
                if raw + b"\n" == sentinel:
                    self._write(out_fd, out)
                    out = []
                    done.set()
                    continue
                try:
                    text = raw.decode("utf-8", "replace")
                    keep = self._keep(text, dropped)
                    dropped = not keep
                    if keep:
                        out.append(self.masker.mask(text) + "\n")
                except Exception:  # noqa: BLE001 - never stop draining the pipe
                    continue
            self._write(out_fd, out)
        if pending:
            try:
                os.write(out_fd, self.masker.mask(pending.decode("utf-8", "replace")).encode())
            except OSError:
                pass
        done.set()

    @staticmethod
    def _write(fd: int, lines: list) -> None:
        import os

        if not lines:
            return
        data = "".join(lines).encode("utf-8", "replace")
        try:
            while data:
                data = data[os.write(fd, data):]
        except OSError:  # the reader of our output went away: keep draining
            pass

    def stop(self, timeout: float = 5.0) -> None:
        import os

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        for fd, saved, write_end, sentinel, done in self._pipes:
            try:
                os.write(write_end, sentinel)
            except OSError:
                done.set()
            done.wait(timeout)
            os.dup2(saved, fd)
            os.close(write_end)
            # ``saved`` stays open: the reader keeps passing on what the JVM writes.
        self._pipes.clear()


_active: list = []


@contextlib.contextmanager
def filtered_fds(masker: Masker, drop: Iterable[str] = (), enabled: bool = True) -> Iterator[None]:
    if not enabled:
        yield
        return
    f = FdFilter(masker, drop).start()
    _active.append(f)
    try:
        yield
    finally:
        if f in _active:
            _active.remove(f)
            f.stop()


def drain_filters(timeout: float = 2.0) -> None:
    """Pass on what the active :class:`FdFilter` holds (before ``os._exit``)."""
    while _active:
        try:
            _active.pop().stop(timeout)
        except Exception:  # noqa: BLE001 - exiting anyway
            pass
