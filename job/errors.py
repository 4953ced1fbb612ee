"""The one user-facing error type.

Every failure a user can cause (bad SQL, bad YAML, a missing option, an unreachable
broker, a poison record under the ``fail`` policy) is raised as a :class:`PipelineError`
carrying *where* it happened. ``job.main`` alone turns it into a one-paragraph message
and an exit code; nothing else calls ``sys.exit``.
"""
from __future__ import annotations

from dataclasses import dataclass, field


# Documented exit codes (docs/operations.md, "Exit codes").
EXIT_OK = 0
EXIT_OTHER = 1
EXIT_INVALID = 2       # parse, template, validation
EXIT_UNREACHABLE = 3   # a source or sink cannot be reached
EXIT_BAD_RECORD = 4    # a record failed under the 'fail' policy


@dataclass(frozen=True)
class Origin:
    """Where a piece of text came from: a file (or ``arg N`` / a YAML key) and a position.

    ``line`` and ``column`` are 1-based and refer to the user's own file, never to a
    rewritten statement.

    ``indent`` is for text that YAML took out of a ``|`` block: its lines after the
    first lost that many columns of indentation, which :meth:`advance` adds back when it
    crosses a line break. It is not part of the position (not compared, not shown).
    """

    source: str              # "pipeline.sql", "arg 2", "pipeline.yaml: statements[3]"
    line: int = 1
    column: int = 1
    indent: int = field(default=0, compare=False)

    def advance(self, text: str) -> "Origin":
        """The origin of the character just after ``text``, which starts at ``self``."""
        newlines = text.count("\n")
        if newlines == 0:
            return Origin(self.source, self.line, self.column + len(text), self.indent)
        return Origin(self.source, self.line + newlines, len(text) - text.rfind("\n") + self.indent, self.indent)

    def offset(self, text: str, index: int) -> "Origin":
        """The origin of ``text[index]``, where ``text`` starts at ``self``."""
        return self.advance(text[:index])

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


class PipelineError(Exception):
    """A user-facing failure: what went wrong, where, and what to do about it.

    ``origin`` points at the statement or token at fault; ``statement`` is a short
    preview of the statement (first line); ``option`` names a connector option when the
    fault is an option; ``hint`` says what to do. ``exit_code`` is one of the EXIT_*
    constants above.
    """

    def __init__(
        self,
        message: str,
        *,
        origin: Origin | None = None,
        statement: str | None = None,
        option: str | None = None,
        hint: str | None = None,
        exit_code: int = EXIT_INVALID,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.origin = origin
        self.statement = statement
        self.option = option
        self.hint = hint
        self.exit_code = exit_code

    def located(self, origin: Origin | None = None, statement: str | None = None) -> "PipelineError":
        """Fill in the location if the raiser did not know it (returns self)."""
        if self.origin is None and origin is not None:
            self.origin = origin
        if self.statement is None and statement is not None:
            self.statement = statement
        return self

    def render(self) -> str:
        """One paragraph: ``file:line:col: in statement "…": message (option 'x'). Hint: …``"""
        parts = []
        if self.origin is not None:
            parts.append(f"{self.origin}:")
        if self.statement:
            parts.append(f'in statement "{preview(self.statement)}":')
        parts.append(clip_long_words(self.message))
        text = " ".join(parts)
        if self.option and f"'{self.option}'" not in text:
            text += f" (option '{clip_long_words(self.option)}')"
        if self.hint:
            text += f" Hint: {clip_long_words(self.hint)}"
        return text

    def __str__(self) -> str:
        return self.render()


def clip_long_words(text: str, limit: int = 400) -> str:
    """``text`` with every run of more than ``limit`` non-blank characters cut short: a
    100,000-character identifier or value echoed whole would bury the message."""
    import re

    return re.sub(r"\S{%d,}" % (limit + 1),
                  lambda m: f"{m.group(0)[:limit]}…({len(m.group(0)):,} characters)", text)


def preview(text: str, limit: int = 80) -> str:
    """The first non-blank line of ``text``, cut to ``limit`` characters."""
    for line in text.strip().splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""
