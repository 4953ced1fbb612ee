"""How a failed run ends: one line on stderr saying which exit code and why, secrets
masked, a Java failure told by its chain of causes rather than its stack trace."""
from __future__ import annotations

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
    Secrets are masked before anything is cut short."""
    from job.plan.analyze import first_line

    mask = masker.mask if masker is not None else (lambda t: t)
    causes = [shorten(mask(c)) for c in java_causes(exc)]
    if len(causes) > 4:
        causes = causes[:2] + ["…"] + causes[-2:]
    if causes:
        return "; caused by: ".join(causes)
    try:
        text = mask(str(exc))
    except Exception:  # noqa: BLE001 - a py4j error whose JVM is gone cannot even describe itself
        text = "the Spark driver JVM is gone"
    return f"{type(exc).__name__}: {shorten(first_line(text))}" if text else type(exc).__name__


def shorten(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
    return out
