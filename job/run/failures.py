"""How a failed run ends: one line on stderr saying which exit code and why, secrets
masked, a Java failure told by its chain of causes rather than its stack trace."""
from __future__ import annotations

import re
from typing import Optional

from job.errors import EXIT_BAD_RECORD, EXIT_INVALID, EXIT_OK, EXIT_OTHER, EXIT_UNREACHABLE
from job.connectors.hadoop import java_causes
from job.run.secrets import Masker

EXIT_LABELS = {
    EXIT_OK: "ok",
    EXIT_OTHER: "failed",
    EXIT_INVALID: "invalid pipeline",
    EXIT_UNREACHABLE: "source or sink unreachable",
    EXIT_BAD_RECORD: "bad record",
}


def report_failure(code: int, message: str, err) -> int:
    text = " ".join(message.split())  # one line, whatever the message held
    print(f"error (exit {code}, {EXIT_LABELS.get(code, 'failed')}): {text}", file=err, flush=True)
    return code


def unexpected_message(exc: BaseException, masker: Optional[Masker] = None) -> str:
    """One line for an exception nobody turned into a PipelineError: its type and first
    line, and for a Java exception the chain of causes (the root cause says most).
    PySpark's own exceptions carry the Java one as ``_origin``; a Python traceback inside
    a message (a foreachBatch sink's, through py4j) is replaced by its innermost
    exception, never shown as its first 'File …py4j…' line. Secrets are masked before
    anything is cut short."""
    from job.plan.analyze import first_line
    from job.run.queries import root_cause

    mask = masker.mask if masker is not None else (lambda t: t)
    chain = java_causes(exc) or java_causes(_JavaOrigin(getattr(exc, "_origin", None)))
    causes = [shorten(mask(_before_traceback(c))) for c in chain]
    try:
        text = mask(str(exc))
    except Exception:  # noqa: BLE001 - a py4j error whose JVM is gone cannot even describe itself
        text = "the Spark driver JVM is gone" if not causes else ""
    whole = "\n".join([text, *chain])
    inner = None
    if "Python Proxy" in whole:
        root = _CAUSED_BY.findall(whole)
        inner = f"{root[-1][0]}: {root[-1][1].strip()}" if root else root_cause(whole)
    if inner:
        inner = shorten(mask(inner))
        causes = [c for c in causes if c] + ([] if any(inner in c for c in causes) else [inner])
    causes = [c for c in causes if c]
    if len(causes) > 4:
        causes = causes[:2] + ["…"] + causes[-2:]
    if causes:
        return "; caused by: ".join(causes)
    head = first_line(_before_traceback(text)) if text else ""
    return f"{type(exc).__name__}: {shorten(head)}" if head else type(exc).__name__


# The innermost Java cause quoted in a traceback's text ("Caused by: java.lang.X: …").
_CAUSED_BY = re.compile(r"^\s*Caused by: (?:[\w.$]+\.)?(\w+(?:Error|Exception)): (.+)$", re.M)


class _JavaOrigin:
    """PySpark's captured exception's Java throwable, where java_causes looks for it."""

    def __init__(self, throwable) -> None:
        self.java_exception = throwable


def _before_traceback(text: str) -> str:
    """A message without the Python traceback py4j appends to it."""
    for marker in ("Return Message: Traceback", "Traceback (most recent call last)"):
        cut = text.find(marker)
        if cut >= 0:
            text = text[:cut]
    return text.strip()


def shorten(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
    return out
