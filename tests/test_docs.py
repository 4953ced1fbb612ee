"""The README stays true: generated tables current, commands the same as CI's and the tests'.

No Spark here: scripts/gen_docs.py only reads the connector and format declarations.
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from job.connectors import registry

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GEN_DOCS = ROOT / "scripts" / "gen_docs.py"


def gen_docs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GEN_DOCS), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def gen():
    """scripts/gen_docs.py as a module."""
    spec = importlib.util.spec_from_file_location("gen_docs", GEN_DOCS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fenced_blocks(text: str, heading: str) -> list[str]:
    """The ``` blocks of one '## heading' section of the README."""
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```[a-z]*\n(.*?)```", section, re.S)


def test_connector_tables_are_current():
    done = gen_docs("--check")
    assert done.returncode == 0, done.stderr + "\nRun: .venv/bin/python scripts/gen_docs.py"


def test_check_fails_on_a_stale_readme_and_a_rewrite_fixes_it(tmp_path):
    readme = tmp_path / "README.md"
    shutil.copy(README, readme)
    readme.write_text(readme.read_text().replace("| `number-of-rows` |", "| `number-of-rowz` |"))
    done = gen_docs("--check", "--readme", str(readme))
    assert done.returncode == 1
    assert "stale" in done.stderr and "number-of-rowz" in done.stderr
    assert gen_docs("--readme", str(readme)).returncode == 0
    assert readme.read_text() == README.read_text()
    assert gen_docs("--check", "--readme", str(readme)).returncode == 0


def test_check_fails_without_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# no tables here\n")
    done = gen_docs("--check", "--readme", str(readme))
    assert done.returncode == 1
    assert "<!-- connectors:start -->" in done.stderr


def test_every_builtin_connector_format_and_option_is_documented(gen):
    text = gen.render(gen.builtin_connectors(), gen.builtin_formats())
    for connector in gen.builtin_connectors():
        assert f"#### `{connector.identifier}`" in text
        for option in connector.options:
            assert f"| `{option.name}` |" in text, (connector.identifier, option.name)
    for fmt in gen.builtin_formats():
        assert f"#### `{fmt.name}`" in text
        for option in fmt.options:
            assert f"| `{fmt.name}.{option.name}` |" in text, (fmt.name, option.name)
    # The registry's idea of the built-ins is the same as the script's.
    assert {c.identifier for c in gen.builtin_connectors()} <= set(registry.connectors())


def test_required_and_defaults_are_shown(gen):
    text = gen.render(gen.builtin_connectors(), gen.builtin_formats())
    assert "| `path` | string | yes |  |" in text
    assert "| `on-error` | enum: `fail`, `skip`, `dead-letter` |  | `fail` |" in text
    assert "| `json.ignore-parse-errors` | bool |  | `false` |" in text


def test_installed_plugins_do_not_change_the_tables(gen, monkeypatch):
    """A developer with a plugin installed still generates the same README."""
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "plugin_site"))
    monkeypatch.setattr(registry, "_connectors", None)
    assert "collect" in registry.connectors()
    text = gen.render(gen.builtin_connectors(), gen.builtin_formats())
    assert "collect" not in text
    assert gen.replace_section(README.read_text(), text) == README.read_text()


def test_ci_runs_the_readme_test_command():
    (block,) = fenced_blocks(README.read_text(), "Tests")
    command = block.strip()
    assert command == ".venv/bin/python -m pytest"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in ci, ".ci/run must run exactly the README's test command"


def test_quickstart_commands():
    blocks = [b.strip() for b in fenced_blocks(README.read_text(), "Quick start")]
    assert blocks[0] == "./scripts/setup.sh"
    assert blocks[1] == "./spark-submit.sh --pipeline examples/quickstart/pipeline.yaml --once"
    # The pipeline's own header shows the same command.
    assert blocks[1] in (ROOT / "examples" / "quickstart" / "pipeline.yaml").read_text()


def test_benchmark_markers_are_in_place():
    text = README.read_text()
    assert text.index("## Benchmarks") < text.index("<!-- bench:start -->") < text.index("<!-- bench:end -->")


def test_documented_exit_codes_match_the_code():
    from job import errors

    rows = dict(re.findall(r"^\| (\d) \| (.+) \|$", README.read_text().split("\n## Exit codes\n", 1)[1], re.M))
    assert set(rows) == {str(c) for c in (errors.EXIT_OK, errors.EXIT_OTHER, errors.EXIT_INVALID,
                                          errors.EXIT_UNREACHABLE, errors.EXIT_BAD_RECORD)}
    assert "Invalid pipeline" in rows[str(errors.EXIT_INVALID)]
    assert "cannot be reached" in rows[str(errors.EXIT_UNREACHABLE)]
    assert "bad record" in rows[str(errors.EXIT_BAD_RECORD)]


def test_documented_example_files_exist():
    for path in re.findall(r"\]\(((?:examples|scripts|tests|conf|job|\.ci)/[^)#]+)\)", README.read_text()):
        assert (ROOT / path).exists(), path


# --------------------------------------------------------------------------- docs/functions.md

FUNCTIONS = ROOT / "docs" / "functions.md"


def test_function_list_is_current():
    done = gen_docs("--check")
    assert done.returncode == 0, done.stderr + "\nRun: .venv/bin/python scripts/gen_docs.py"


def test_a_stale_function_list_is_caught_and_rewritten(tmp_path):
    stale = tmp_path / "functions.md"
    stale.write_text(FUNCTIONS.read_text().replace("| `UPPER` |", "| `UPPPER` |"))
    done = gen_docs("--check", "--functions", str(stale))
    assert done.returncode == 1
    assert "stale" in done.stderr and "UPPPER" in done.stderr
    assert gen_docs("--functions", str(stale)).returncode == 0
    assert stale.read_text() == FUNCTIONS.read_text()


def test_every_function_of_the_library_is_listed_with_its_status(gen):
    from job.sql.flink import functions

    functions._load()
    text = gen.render_functions()
    for name, fn in functions.REGISTRY.items():
        if name == fn.name:
            assert f"| `{name}" in text, name
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| `{fn.name}` ") or line.startswith(f"| `{fn.name} ("))
        assert ("refused" in row) == (not fn.supported), row
    for op in functions.OPERATORS:
        assert gen.cell(op.signature) in text, op.signature
    # one section per category, in Flink's documentation order
    titles = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert titles[:4] == ["Summary", "Comparison functions", "Logical functions", "Arithmetic functions"]
