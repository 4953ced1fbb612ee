"""Texts of statements: read from a file, or rendered and split into statements (shared
by the pipeline YAML, :mod:`job.pipeline.spec`, and ``--file``/argument statements,
:mod:`job.pipeline.load`)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from job.errors import Origin, PipelineError
from job.pipeline.split import split_statements
from job.pipeline.template import Renderer
from job.sql.statements import StatementText


def render_and_split(
    renderer: Renderer,
    text: str,
    origin: Origin,
    *,
    indent: int = 0,
    base_dir: Optional[str] = None,
) -> list[StatementText]:
    # Render first, so that a template may expand into several statements and so that
    # positions refer to the text that is actually parsed.
    rendered = renderer.render(text, origin, indent=indent, base_dir=base_dir or None)
    return split_statements(rendered, origin, indent=indent)


def read_text(path: str, *, what: str, hint: str, origin: Optional[Origin] = None) -> str:
    """A UTF-8 file's text (a leading BOM dropped), or a PipelineError naming ``path``."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise PipelineError(f"{what} '{path}' not found", origin=origin, hint=hint) from None
    except IsADirectoryError:
        raise PipelineError(f"{what} '{path}' is a directory, not a file", origin=origin) from None
    except OSError as exc:
        raise PipelineError(f"cannot read {what} '{path}': {exc.strerror or exc}", origin=origin) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise PipelineError(
            f"{what} '{path}' is not UTF-8 text ({exc.reason})",
            origin=Origin(path, line, 1),
            hint="save the file as UTF-8.",
        ) from None
