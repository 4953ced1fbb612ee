"""Jinja2 rendering of pipeline text (SQL files, YAML statements, statement args).

Templates may use the pipeline's variables (``{{ run_date }}``) and two functions:

* ``env('NAME')`` — an environment variable; a :class:`PipelineError` if it is unset,
  unless a default is given: ``env('NAME', 'default')``;
* ``secret_file('path')`` — a file's content without its trailing newline (a mounted
  Kubernetes secret, say); a relative path is relative to the directory of the file
  being rendered (the current directory for statement args).

Values read by those functions are collected in :attr:`Renderer.secrets` so that a
later logging layer can mask them; nothing is kept at module level.

Line numbers stay stable: newlines are kept (``keep_trailing_newline``; no
``trim_blocks``), so positions in the rendered text equal positions in the source as
long as expressions render to single-line values and no ``{% if %}`` drops whole lines.
Literal ``{{``, ``{%`` or ``{#`` in SQL must be wrapped in ``{% raw %}…{% endraw %}``.
"""
from __future__ import annotations

import math
import os
import re
import traceback
from pathlib import Path
from typing import Callable, Mapping, Optional

import jinja2
from jinja2.sandbox import SandboxedEnvironment, SecurityError

from job.errors import Origin, PipelineError

# Names the template functions live under; a variable may not shadow them.
RESERVED_NAMES = frozenset({"env", "secret_file"})

_MISSING = object()
# Jinja compiles templates from strings under this pseudo file name; frames of the
# compiled template carry it in tracebacks, which is how runtime errors get a line.
_TEMPLATE_FILENAME = "<template>"
_UNDEFINED_NAME = re.compile(r"^'([^']+)' is undefined$")


class Renderer:
    """Renders templates with one set of variables and collects secret values.

    ``environ`` defaults to ``os.environ``; tests pass a plain dict.
    """

    def __init__(
        self,
        variables: Mapping[str, object] = {},
        *,
        environ: Optional[Mapping[str, str]] = None,
    ) -> None:
        shadowing = sorted(RESERVED_NAMES & set(variables))
        if shadowing:
            raise PipelineError(
                f"variable name '{shadowing[0]}' is reserved for a template function",
                hint="rename the variable (--var or the pipeline's `vars:`).",
            )
        self.variables = dict(variables)
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.secrets: set[str] = set()
        # No autoescape: this is SQL, not HTML. StrictUndefined: a typo must fail the
        # run rather than render as an empty string inside a query.
        self._jinja = _BoundedEnvironment(
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            autoescape=False,
        )

    def render(
        self,
        text: str,
        origin: Origin,
        *,
        indent: int = 0,
        base_dir: Optional[str | os.PathLike[str]] = None,
    ) -> str:
        """Render ``text``, which starts at ``origin`` in its source.

        Errors are :class:`PipelineError` located at the template line (and, for an
        undefined variable, the column of its name). ``indent`` is the indentation YAML
        stripped from lines after the first (block scalars); ``base_dir`` is where
        relative ``secret_file`` paths are resolved (default: the current directory).
        """
        try:
            template = self._jinja.from_string(text)
        except jinja2.TemplateSyntaxError as exc:
            raise PipelineError(
                f"template syntax error: {exc.message}",
                origin=_place(origin, exc.lineno or 1, 1, indent),
                hint="check the {{ … }} / {% … %} syntax on this line; to keep a literal "
                "'{{', '{%' or '{#' in SQL, wrap it in {% raw %}…{% endraw %}.",
            ) from None
        context = dict(self.variables)
        context["env"] = self._env
        context["secret_file"] = self._secret_file_reader(base_dir)
        try:
            return _bounded_join(template.generate(context))
        except PipelineError as exc:
            line = _template_line(exc)
            raise exc.located(_place(origin, line, 1, indent) if line else origin)
        except jinja2.UndefinedError as exc:
            raise _undefined_error(exc, text, origin, indent) from None
        except Exception as exc:  # anything a template expression can raise
            line = _template_line(exc)
            raise PipelineError(
                f"template error: {type(exc).__name__}: {exc}",
                origin=_place(origin, line, 1, indent) if line else origin,
            ) from None

    # -- template functions ---------------------------------------------------------

    def _env(self, name: str, default: object = _MISSING) -> str:
        value = self.environ.get(name)
        if value is None:
            if default is _MISSING:
                raise PipelineError(
                    f"environment variable '{name}' is not set",
                    hint=f"set {name}, or give a default: env('{name}', '…').",
                )
            # A default is written in the pipeline itself, so it is no secret.
            return str(default)
        self._remember(value)
        return value

    def _secret_file_reader(self, base_dir: Optional[str | os.PathLike[str]]) -> Callable[[str], str]:
        def secret_file(path: str) -> str:
            full = Path(path)
            if base_dir is not None and not full.is_absolute():
                full = Path(base_dir) / full
            try:
                value = full.read_text(encoding="utf-8")
            except FileNotFoundError:
                raise PipelineError(
                    f"secret file '{full}' not found",
                    hint="relative paths are relative to the file that uses secret_file().",
                ) from None
            except (OSError, UnicodeError) as exc:
                raise PipelineError(f"cannot read secret file '{full}': {exc}") from None
            # Files written by `echo` or editors end with a newline that is no part of
            # the secret; strip only line breaks, never meaningful spaces.
            value = value.rstrip("\r\n")
            self._remember(value)
            return value

        return secret_file

    def _remember(self, value: str) -> None:
        if value:  # masking "" would mask nothing but confuse a masker
            self.secrets.add(value)


# Largest string, list or number a template expression may build: a pipeline's text is
# kilobytes, and `{{ 'x' * 10**12 }}` or `range(10**9)` would otherwise exhaust memory.
MAX_VALUE_SIZE = 10_000_000


class _BoundedEnvironment(SandboxedEnvironment):
    """Jinja's sandbox (no ``__class__``-style attribute walks, ``range()`` capped at
    100,000 items) with ``*`` and ``**`` checked too, so that a template can only fail,
    never hang or eat the machine's memory."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context, operator, left, right):
        if operator == "**" and isinstance(left, (int, float)) and isinstance(right, (int, float)):
            if abs(left) > 1 and right * math.log2(abs(left)) > 256:
                raise SecurityError(f"{left} ** {right} is too large for a template")
        if operator == "*":
            sized = [x for x in (left, right) if isinstance(x, (str, bytes, list, tuple))]
            counts = [x for x in (left, right) if isinstance(x, int) and not isinstance(x, bool)]
            if sized and counts and len(sized[0]) * counts[0] > MAX_VALUE_SIZE:
                raise SecurityError("a template expression repeats a value to more than "
                                    f"{MAX_VALUE_SIZE:,} items")
        return super().call_binop(context, operator, left, right)


def _bounded_join(chunks) -> str:
    """The rendered text, or a SecurityError once it grows past MAX_VALUE_SIZE (a loop
    that renders gigabytes fails early instead of exhausting memory)."""
    out, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_VALUE_SIZE:
            raise SecurityError(f"the rendered text exceeds {MAX_VALUE_SIZE:,} characters")
        out.append(chunk)
    return "".join(out)


def render(text: str, variables: Mapping[str, object], *, source: str) -> str:
    """Render ``text`` (all of the file/arg ``source``) with ``variables``.

    A one-shot convenience; use :class:`Renderer` to also collect secret values.
    """
    return Renderer(variables).render(text, Origin(source))


def _place(origin: Origin, line: int, column: int, indent: int) -> Origin:
    """The source origin of (line, column) of a text that starts at ``origin``."""
    if line <= 1:
        return Origin(origin.source, origin.line, origin.column + column - 1)
    return Origin(origin.source, origin.line + line - 1, column + indent)


def _template_line(exc: BaseException) -> Optional[int]:
    """The template line an exception was raised at, from Jinja's rewritten traceback."""
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename == _TEMPLATE_FILENAME and frame.lineno
    ]
    return lines[-1] if lines else None


def _undefined_error(exc: jinja2.UndefinedError, text: str, origin: Origin, indent: int) -> PipelineError:
    line = _template_line(exc) or 1
    match = _UNDEFINED_NAME.match(exc.message or "")
    if match is None:
        # e.g. "'dict object' has no attribute 'x'"
        return PipelineError(
            f"undefined value in template: {exc.message}",
            origin=_place(origin, line, 1, indent),
        )
    name = match.group(1)
    source_lines = text.splitlines()
    column = 1
    if line <= len(source_lines):
        source_line = source_lines[line - 1]
        word = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
        # The name as a template uses it, inside {{ … }} or {% … %}; not the same word in
        # the SQL around it ('number-of-rows' for {{ rows }}).
        for tag in re.finditer(r"\{\{.*?\}\}|\{%.*?%\}", source_line):
            found = word.search(source_line, tag.start(), tag.end())
            if found:
                column = found.start() + 1
                break
        else:
            found = word.search(source_line)
            if found:
                column = found.start() + 1
    return PipelineError(
        f"undefined variable '{name}'",
        origin=_place(origin, line, column, indent),
        hint=f"pass --var {name}=…, give it a default under `vars:` in the pipeline "
        f"YAML, or write {{{{ {name} | default('…') }}}}.",
    )
