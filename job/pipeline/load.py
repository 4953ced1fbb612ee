"""Where statements come from: a pipeline YAML, ``--file`` scripts and statement args.

:func:`load_statements` gathers them, renders each with Jinja (see
:mod:`job.pipeline.template`), splits them into statements (see
:mod:`job.pipeline.split`) and returns a :class:`LoadedPipeline`. It never touches
Spark.

The pipeline YAML is read by :mod:`job.pipeline.spec`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Optional, Sequence

from job.errors import Origin, PipelineError
from job.pipeline.spec import PipelineSpec
from job.pipeline.template import Renderer
from job.pipeline.texts import read_text, render_and_split
from job.sql.statements import StatementText

DEFAULT_NAME = "sql-pipeline"

_NO_VARIABLES: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class LoadedPipeline:
    """Everything a run needs from its inputs, before any SQL is parsed.

    ``name`` is the YAML ``name``, else the stem of the YAML file, else of the first
    ``--file``, else ``"sql-pipeline"``. ``variables`` are the YAML ``vars`` overridden
    by ``--var``. ``secrets`` are the values ``env()``/``secret_file()`` returned, for
    masking in logs.
    """

    name: str
    statements: tuple[StatementText, ...]
    spark_conf: dict[str, str] = field(default_factory=dict)
    variables: dict[str, object] = field(default_factory=dict)
    secrets: frozenset[str] = frozenset()
    checkpoint_dir: Optional[str] = None


def load_statements(
    args: Sequence[str] = (),
    files: Sequence[str] = (),
    pipeline: Optional[str] = None,
    variables: Mapping[str, str] = _NO_VARIABLES,
    environ: Optional[Mapping[str, str]] = None,
) -> LoadedPipeline:
    """Gather, render and split the statements of one run, in this order:

    1. the pipeline YAML's ``statements`` (if ``pipeline`` is given), in list order;
    2. each ``--file`` script in ``files``, in order;
    3. each positional statement arg in ``args`` (origin source ``arg N``, 1-based).

    Every text is rendered with Jinja before splitting, with ``variables`` (``--var``)
    over the YAML's ``vars``; ``environ`` (default ``os.environ``) serves ``env()``.
    Raises :class:`PipelineError` for unreadable files, bad YAML, template errors,
    unterminated literals, and when there is nothing to run.
    """
    spec = PipelineSpec.read(pipeline) if pipeline is not None else None
    merged: dict[str, object] = dict(spec.variables) if spec else {}
    merged.update(variables)
    renderer = Renderer(merged, environ=environ)

    statements: list[StatementText] = []
    if spec is not None:
        statements.extend(spec.statements(renderer))
    for path in files:
        text = read_text(path, what="SQL file", hint="paths are relative to the current directory.")
        statements.extend(render_and_split(renderer, text, Origin(path), base_dir=os.path.dirname(path)))
    for number, arg in enumerate(args, start=1):
        statements.extend(render_and_split(renderer, arg, Origin(f"arg {number}")))

    if not statements:
        raise PipelineError(
            "nothing to run: no SQL statements were given",
            hint="pass statements as arguments ('CREATE TABLE …; INSERT INTO … SELECT …'), "
            "a script with --file script.sql, or a pipeline YAML with a `statements:` list.",
        )

    name = spec.name(renderer) if spec else None
    if name is None:
        name = Path(pipeline).stem if pipeline else (Path(files[0]).stem if files else DEFAULT_NAME)
    spark_conf = spec.spark_conf(renderer) if spec else {}
    checkpoint_dir = spec.checkpoint_dir(renderer) if spec else None
    # Last: every rendering above may have added a secret.
    secrets = frozenset(renderer.secrets)
    return LoadedPipeline(
        name=name,
        statements=tuple(statements),
        spark_conf=spark_conf,
        variables=merged,
        secrets=secrets,
        checkpoint_dir=checkpoint_dir,
    )
