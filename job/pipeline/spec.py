"""The pipeline YAML: its keys checked, its values rendered, each node's position kept.

The pipeline YAML (parsed as plain YAML — templates are rendered per value, so that
``vars:`` defined in the file can be used in its statements)::

    name: orders-to-lake            # optional; Spark app name
    vars:                           # optional defaults; --var overrides them
      run_date: "2024-01-01"
    spark:                          # optional Spark conf (alias: conf); nested keys
      spark.sql.shuffle.partitions: 8   # are joined with '.', values stringified
    checkpoint_dir: /chk/orders     # optional
    statements:                     # a script string, or a list of scripts / files
      - |
        CREATE TABLE orders (...) WITH ('connector' = 'kafka', ...);
      - file: sql/insert.sql        # relative to the YAML's directory

String values of ``name``, ``spark``/``conf`` and ``checkpoint_dir`` are rendered too,
so ``env()`` and ``secret_file()`` can supply credentials there; ``vars`` values are
plain YAML (never rendered) and ``file:`` paths are taken literally.

Origins: statements from a ``.sql`` file or an arg point into that file/arg; inline
YAML statements point into the YAML file (source = the YAML path as given). Positions
are exact for ``|`` block scalars and single-line scalars; inside folded scalars (plain
or quoted multi-line, ``>``) YAML joins lines, so only the start is exact — write
multi-line SQL as ``|`` blocks. Positions refer to the *rendered* text, which equals the
source when template expressions render to single-line values (the usual case).
"""
from __future__ import annotations

import difflib
import os
from typing import Optional, Sequence

import yaml

from job.errors import Origin, PipelineError
from job.pipeline.template import Renderer
from job.pipeline.texts import read_text, render_and_split
from job.sql.statements import StatementText

VALID_KEYS = ("name", "vars", "spark", "conf", "checkpoint_dir", "statements")
STATEMENT_ITEM_KEYS = ("file",)


class PipelineSpec:
    """A parsed pipeline YAML: its top-level nodes, kept for their positions."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.lines = text.split("\n")
        self.base_dir = os.path.dirname(path)
        # compose (not safe_load) keeps each node's start mark, for origins; values are
        # built from nodes with the same SafeLoader, so no unsafe tags are accepted.
        try:
            # Inside the try: the reader rejects control characters (a NUL) at once.
            self._loader = yaml.SafeLoader(text)
            root = self._loader.get_single_node()
            if root is not None:
                # Build every value once now, so that a bad tag or value fails here with
                # its YAML position rather than halfway through loading.
                self._loader.construct_document(root)
            self.nodes = self._top_level(root)
            vars_node = self.nodes.get("vars")
            self.variables = self._variables(vars_node) if vars_node is not None else {}
        except yaml.MarkedYAMLError as exc:
            raise self._yaml_error(exc) from None
        except yaml.YAMLError as exc:
            raise PipelineError(f"invalid YAML: {exc}", origin=Origin(path)) from None

    @classmethod
    def read(cls, path: str) -> "PipelineSpec":
        text = read_text(path, what="pipeline file", hint="paths are relative to the current directory.")
        return cls(path, text)

    # -- structure ------------------------------------------------------------------

    def _top_level(self, root: Optional[yaml.Node]) -> dict[str, yaml.Node]:
        if root is None:  # an empty file
            return {}
        if not isinstance(root, yaml.MappingNode):
            raise PipelineError(
                "a pipeline file must be a mapping of keys (name, vars, spark, statements, …)",
                origin=self.origin(root),
            )
        nodes: dict[str, yaml.Node] = {}
        for key_node, value_node in self._pairs(root):
            key = self._key(key_node)
            if key not in VALID_KEYS:
                raise _unknown_key(key, VALID_KEYS, self.origin(key_node), "pipeline file")
            if key in nodes:
                raise PipelineError(f"duplicate key '{key}'", origin=self.origin(key_node))
            if key in ("spark", "conf") and ({"spark", "conf"} & set(nodes)):
                raise PipelineError(
                    "both 'spark' and 'conf' are given; they are the same setting",
                    origin=self.origin(key_node),
                    hint="merge them under one key.",
                )
            nodes[key] = value_node
        return nodes

    def _pairs(self, node: yaml.MappingNode) -> list[tuple[yaml.Node, yaml.Node]]:
        self._loader.flatten_mapping(node)  # resolve `<<: *defaults` merge keys
        return list(node.value)

    def _key(self, node: yaml.Node) -> str:
        key = self._loader.construct_object(node, deep=True)
        if not isinstance(key, str):
            raise PipelineError(f"keys must be strings, not {key!r}", origin=self.origin(node))
        return key

    def _variables(self, node: yaml.Node) -> dict[str, object]:
        value = self._loader.construct_object(node, deep=True)
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise PipelineError(
                "'vars' must be a mapping of variable names to default values",
                origin=self.origin(node),
            )
        return value

    # -- values ---------------------------------------------------------------------

    def statements(self, renderer: Renderer) -> list[StatementText]:
        node = self.nodes.get("statements")
        if node is None:
            return []
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        result: list[StatementText] = []
        for item in items:
            if isinstance(item, yaml.MappingNode):
                result.extend(self._file_item(item, renderer))
                continue
            if not isinstance(item, yaml.ScalarNode):
                raise PipelineError(
                    "each statements item must be SQL text or a mapping 'file: path.sql'",
                    origin=self.origin(item),
                )
            text = self._string(item, "statements")
            if text is None:
                continue  # `- ` with nothing: an empty statement, like ';;'
            origin, indent = self.content_origin(item)
            result.extend(render_and_split(renderer, text, origin, indent=indent, base_dir=self.base_dir))
        return result

    def _file_item(self, node: yaml.MappingNode, renderer: Renderer) -> list[StatementText]:
        path_node = None
        for key_node, value_node in self._pairs(node):
            key = self._key(key_node)
            if key not in STATEMENT_ITEM_KEYS:
                error = _unknown_key(key, STATEMENT_ITEM_KEYS, self.origin(key_node), "statements item")
                if not difflib.get_close_matches(key, STATEMENT_ITEM_KEYS, n=1):
                    # Most likely SQL containing ': ', which YAML reads as a mapping.
                    error.hint = (
                        "if this is SQL, YAML read its ': ' as a mapping: quote the "
                        "statement or write it in a `|` block. " + (error.hint or "")
                    )
                raise error
            path_node = value_node
        relative = self._string(path_node, "file") if path_node is not None else None
        if not relative:
            raise PipelineError(
                "a statements item that is a mapping needs 'file: path.sql'",
                origin=self.origin(node),
            )
        path = os.path.join(self.base_dir, relative)
        text = read_text(
            path,
            what="SQL file",
            origin=self.content_origin(path_node)[0],
            hint=f"paths in a pipeline file are relative to its directory ({self.base_dir or '.'}).",
        )
        return render_and_split(renderer, text, Origin(path), base_dir=os.path.dirname(path))

    def name(self, renderer: Renderer) -> Optional[str]:
        return self._rendered_string("name", renderer)

    def checkpoint_dir(self, renderer: Renderer) -> Optional[str]:
        return self._rendered_string("checkpoint_dir", renderer)

    def spark_conf(self, renderer: Renderer) -> dict[str, str]:
        key = "spark" if "spark" in self.nodes else "conf"
        node = self.nodes.get(key)
        if node is None:
            return {}
        if isinstance(node, yaml.ScalarNode) and self._loader.construct_object(node) is None:
            return {}
        conf: dict[str, str] = {}
        self._flatten_conf(node, key, "", conf, renderer)
        return conf

    def _flatten_conf(self, node: yaml.Node, key: str, prefix: str, conf: dict[str, str], renderer: Renderer) -> None:
        if not isinstance(node, yaml.MappingNode):
            raise PipelineError(f"'{key}' must be a mapping of Spark settings", origin=self.origin(node))
        for key_node, value_node in self._pairs(node):
            name = prefix + str(self._loader.construct_object(key_node, deep=True))
            if isinstance(value_node, yaml.MappingNode):
                # `spark: {sql: {shuffle.partitions: 8}}` means spark.sql.shuffle.partitions
                self._flatten_conf(value_node, key, name + ".", conf, renderer)
                continue
            value = self._loader.construct_object(value_node, deep=True)
            if value is None:
                raise PipelineError(f"Spark setting '{name}' has no value", origin=self.origin(key_node))
            if isinstance(value, list):
                # Spark's list settings (spark.jars, …) are comma-separated.
                conf[name] = ",".join(_conf_string(v) for v in value)
            elif isinstance(value, str):
                origin, indent = self.content_origin(value_node)
                conf[name] = renderer.render(value, origin, indent=indent, base_dir=self.base_dir)
            else:
                conf[name] = _conf_string(value)

    def _rendered_string(self, key: str, renderer: Renderer) -> Optional[str]:
        node = self.nodes.get(key)
        if node is None:
            return None
        value = self._string(node, key)
        if value is None:
            return None
        origin, indent = self.content_origin(node)
        return renderer.render(value, origin, indent=indent, base_dir=self.base_dir)

    def _string(self, node: yaml.Node, key: str) -> Optional[str]:
        """A scalar node's text (numbers are taken as written), None for null."""
        if not isinstance(node, yaml.ScalarNode):
            raise PipelineError(f"'{key}' must be a string", origin=self.origin(node))
        value = self._loader.construct_object(node)
        if value is None:
            return None
        # `name: 2024` or `- 1` are fine as text; keep what the user wrote.
        return value if isinstance(value, str) else node.value

    # -- positions ------------------------------------------------------------------

    def origin(self, node: yaml.Node) -> Origin:
        mark = node.start_mark
        return Origin(self.path, mark.line + 1, mark.column + 1)

    def content_origin(self, node: yaml.Node) -> tuple[Origin, int]:
        """Where a scalar's content starts, and the indentation YAML strips from its
        continuation lines (block scalars; 0 otherwise)."""
        mark = node.start_mark
        start = mark.index
        # A node's mark is at its anchor/tag (`&a !!str |`), if any: skip past those.
        index = start
        while index < len(self.text) and self.text[index] in "&!":
            while index < len(self.text) and not self.text[index].isspace():
                index += 1
            while index < len(self.text) and self.text[index].isspace():
                index += 1
        origin = Origin(self.path, mark.line + 1, mark.column + 1).advance(self.text[start:index])
        style = getattr(node, "style", None)
        if style in ("'", '"'):
            return origin.advance(self.text[index]), 0
        if style not in ("|", ">"):
            return origin, 0
        # Block scalar: the content starts on the line after the `|` / `>` header, at the
        # block's indentation.
        first_content = origin.line  # 0-based index into self.lines of the next line
        indent = 0
        value_lines = node.value.split("\n")
        value_first = next((v for v in value_lines if v.strip()), None)
        source_first = next((s for s in self.lines[first_content:] if s.strip()), None)
        if value_first is not None and source_first is not None:
            indent = _leading_spaces(source_first) - _leading_spaces(value_first)
        return Origin(self.path, first_content + 1, indent + 1), max(indent, 0)

    def _yaml_error(self, exc: yaml.MarkedYAMLError) -> PipelineError:
        mark = exc.problem_mark or exc.context_mark
        message = " ".join(p for p in (exc.context, exc.problem) if p)
        return PipelineError(
            f"invalid YAML: {message}",
            origin=Origin(self.path, mark.line + 1, mark.column + 1) if mark else Origin(self.path),
            hint="check the indentation and quoting near this position; SQL with ': ' or "
            "'#' in a list item is safest in a `|` block.",
        )


def _leading_spaces(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _conf_string(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"  # Spark expects lower-case booleans
    return str(value)


def _unknown_key(key: str, valid: Sequence[str], origin: Origin, where: str) -> PipelineError:
    close = difflib.get_close_matches(key, valid, n=1)
    suggestion = f"did you mean '{close[0]}'? " if close else ""
    return PipelineError(
        f"unknown key '{key}' in {where}",
        origin=origin,
        hint=f"{suggestion}Valid keys: {', '.join(valid)}.",
    )
