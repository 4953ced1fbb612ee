"""Spark's own checks of a planned query, before anything reads data, and Spark's
errors told as one located paragraph: unknown tables, columns and functions, type errors
and what a streaming query may not contain, reported against the user's file at the line
and column Spark points at.
"""
from __future__ import annotations

import difflib
import re

from job.errors import Origin, PipelineError

# Hints for what Spark's streaming check refuses, by its error condition.
STREAMING_HINTS = {
    "NON_TIME_WINDOW_NOT_SUPPORTED_IN_STREAMING":
        "OVER windows (ROW_NUMBER, RANK, LAG, SUM(…) OVER …, Flink's Top-N) are not supported on streams; "
        "GROUP BY with MIN/MAX/COUNT, or an event-time window (TUMBLE/HOP/SESSION), computes most of what they do",
}


def check_streaming(spark, df, origin: Origin, sql: str, statement: str | None, what: str) -> None:
    """Spark's own check of what an append-mode streaming query may contain (OVER windows,
    ORDER BY, aggregations without a watermark…). Spark runs it only when the query
    starts; run here at planning, ``--dry-run`` reports the same error, located."""
    jvm = spark.sparkContext._jvm
    try:
        checker = jvm.org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker
        checker.checkForStreaming(df._jdf.queryExecution().analyzed(),
                                  jvm.org.apache.spark.sql.streaming.OutputMode.Append())
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException (PySpark converts it)
        error = spark_error(exc, what, origin=origin, text=sql, statement=statement)
        error.hint = STREAMING_HINTS.get(_condition(exc), error.hint)
        raise error from None


_POSITION = re.compile(r"line (\d+), pos(?:ition)? (\d+)")


def spark_error(exc: Exception, what: str, *, origin: Origin | None, text: str | None = None,
                statement: str | None = None, known_tables: list[str] | None = None) -> PipelineError:
    """A Spark exception → one located paragraph, without the JVM stack trace.

    ``known_tables`` (the pipeline's tables and views) words the hint when the query
    names a table that does not exist."""
    message = first_line(str(exc))
    hint = None
    condition = _condition(exc)
    if condition == "TABLE_OR_VIEW_NOT_FOUND":
        # Spark's text goes on about search paths, schemas and DROP … IF EXISTS, none of
        # which a pipeline has: it knows only the tables and views it declares.
        name = _parameters(exc).get("relationName") or "?"
        message = f"[{condition}] the table or view {name} is not defined in this pipeline."
        bare = name.strip("`").split("`.`")[-1]
        by_lower = {t.lower(): t for t in known_tables or []}
        guess = difflib.get_close_matches(bare.lower(), list(by_lower), n=1)
        hint = (f"did you mean '{by_lower[guess[0]]}'? Otherwise declare" if guess else "declare") \
            + " it with CREATE TABLE or CREATE VIEW first"
        if known_tables:
            hint += f" (declared: {', '.join(known_tables)})"
    located = origin
    if origin is not None and text is not None:
        index = None
        try:
            contexts = exc.getQueryContext() if hasattr(exc, "getQueryContext") else []
            if contexts and contexts[0].startIndex() >= 0:
                index = contexts[0].startIndex()
        except Exception:  # noqa: BLE001 - older exception types have no context
            index = None
        if index is None:
            m = _POSITION.search(str(exc))
            if m:
                line, pos = int(m.group(1)), int(m.group(2))
                lines = text.split("\n")
                index = sum(len(l) + 1 for l in lines[: line - 1]) + pos
        if index is not None and 0 <= index <= len(text):
            located = origin.offset(text, index)
    return PipelineError(f"Spark rejects {what}: {message}", origin=located, statement=statement, hint=hint)


def _condition(exc: Exception) -> str | None:
    try:
        return exc.getCondition() if hasattr(exc, "getCondition") else None
    except Exception:  # noqa: BLE001
        return None


def _parameters(exc: Exception) -> dict:
    try:
        return dict(exc.getMessageParameters() or {}) if hasattr(exc, "getMessageParameters") else {}
    except Exception:  # noqa: BLE001
        return {}


def first_line(text: str) -> str:
    """The message part of a Spark/Java error: no SQLSTATE, no plan, no stack."""
    text = text.strip()
    for marker in ("\n== SQL", "\nJVM stacktrace", "\n\tat ", "; line ", "\n==", ";\n"):
        cut = text.find(marker)
        if cut > 0:
            text = text[:cut]
    text = re.sub(r"\s*SQLSTATE: \w+\.?", "", text).strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return " ".join(l.strip() for l in lines[:3]) if lines else "unknown error"
