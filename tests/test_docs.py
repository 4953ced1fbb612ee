"""The README and docs/ stay true: generated tables current, commands the same as CI's and
the tests', documented exit codes, flags and SET keys the code's, links that resolve.

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
DOCS = ROOT / "docs"
CONNECTORS = DOCS / "connectors.md"
OPERATIONS = DOCS / "operations.md"
SQL = DOCS / "sql.md"
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


def section(text: str, heading: str) -> str:
    """The text of one '## heading' section, up to the next '## '."""
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def fenced_blocks(text: str, heading: str) -> list[str]:
    """The ``` blocks of one '## heading' section."""
    return re.findall(r"```[a-z]*\n(.*?)```", section(text, heading), re.S)


def test_connector_tables_are_current():
    done = gen_docs("--check")
    assert done.returncode == 0, done.stderr + "\nRun: .venv/bin/python scripts/gen_docs.py"


def test_check_fails_on_a_stale_connectors_doc_and_a_rewrite_fixes_it(tmp_path):
    doc = tmp_path / "connectors.md"
    shutil.copy(CONNECTORS, doc)
    doc.write_text(doc.read_text().replace("| `number-of-rows` |", "| `number-of-rowz` |"))
    done = gen_docs("--check", "--connectors", str(doc))
    assert done.returncode == 1
    assert "stale" in done.stderr and "number-of-rowz" in done.stderr
    assert gen_docs("--connectors", str(doc)).returncode == 0
    assert doc.read_text() == CONNECTORS.read_text()
    assert gen_docs("--check", "--connectors", str(doc)).returncode == 0


def test_check_fails_without_markers(tmp_path):
    doc = tmp_path / "connectors.md"
    doc.write_text("# no tables here\n")
    done = gen_docs("--check", "--connectors", str(doc))
    assert done.returncode == 1
    assert "<!-- connectors:start -->" in done.stderr


def test_the_readme_holds_no_generated_tables():
    """The tables live in docs/connectors.md; the README links there."""
    text = README.read_text()
    assert "<!-- connectors:start -->" not in text
    assert "](docs/connectors.md)" in text


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
    assert gen.replace_section(CONNECTORS.read_text(), text) == CONNECTORS.read_text()


def test_ci_runs_the_readme_test_command():
    (block,) = fenced_blocks(README.read_text(), "Tests")
    command = block.strip()
    assert command == "./scripts/test.sh"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in ci, ".ci/run must run exactly the README's test command"
    # The script runs every test pytest finds, split in two: tests/flink and the rest.
    script = (ROOT / "scripts" / "test.sh").read_text()
    assert 'pytest tests/flink "$@"' in script and 'pytest --ignore=tests/flink "$@"' in script


def test_quickstart_commands():
    blocks = [b.strip() for b in fenced_blocks(README.read_text(), "Quick start")]
    assert blocks[0] == "./scripts/setup.sh"
    assert blocks[1] == "./spark-submit.sh --pipeline examples/quickstart/pipeline.yaml --once"
    # The pipeline's own header shows the same command.
    assert blocks[1] in (ROOT / "examples" / "quickstart" / "pipeline.yaml").read_text()
    # tests/e2e/test_quickstart.py runs the one sh block that calls spark-submit.sh.
    assert len([b for b in re.findall(r"```sh\n(.*?)```", section(README.read_text(), "Quick start"), re.S)
                if "spark-submit.sh" in b]) == 1


def test_quickstart_shows_the_changelog_the_e2e_test_expects():
    """The expected output in the README is what tests/e2e/test_quickstart.py asserts."""
    printed = re.findall(r"^user_count_by_account> ([+-][IUD]\[.*\])$", section(README.read_text(), "Quick start"),
                         re.M)
    assert printed == ["+I[100, 2]", "+I[101, 1]", "-U[100, 2]", "+U[100, 1]", "-U[101, 1]", "+U[101, 2]",
                       "-D[100, 1]"]
    e2e = (ROOT / "tests" / "e2e" / "test_quickstart.py").read_text()
    assert all(f'"{change}"' in e2e for change in printed)


def test_documented_exit_codes_match_the_code():
    from job import errors

    rows = dict(re.findall(r"^\| (\d) \| (.+) \|$", section(OPERATIONS.read_text(), "Exit codes"), re.M))
    assert set(rows) == {str(c) for c in (errors.EXIT_OK, errors.EXIT_OTHER, errors.EXIT_INVALID,
                                          errors.EXIT_UNREACHABLE, errors.EXIT_BAD_RECORD)}
    assert "Invalid pipeline" in rows[str(errors.EXIT_INVALID)]
    assert "cannot be reached" in rows[str(errors.EXIT_UNREACHABLE)]
    assert "bad record" in rows[str(errors.EXIT_BAD_RECORD)]


def test_documented_command_line_options_are_the_cli_s():
    """docs/operations.md's option table lists exactly the job's flags (job/cli.py)."""
    from job import cli

    flags = {max(a.option_strings, key=len) for a in cli.parser()._actions if a.option_strings} - {"--help"}
    table = section(OPERATIONS.read_text(), "Command line")
    documented = set(re.findall(r"^\| `(--[a-z-]+)", table, re.M))
    assert documented == flags


def test_settings_quoted_from_spark_defaults_are_its_values():
    """'`spark.sql.shuffle.partitions` (2 in `conf/spark-defaults.conf`)' says what the file sets."""
    conf = {}
    for line in (ROOT / "conf" / "spark-defaults.conf").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.strip().partition(" ")
            conf[key] = value.strip()
    quoted = [(doc.name, key, value) for doc in [README, *DOCS.glob("*.md")]
              for key, value in re.findall(r"`(spark\.[\w.]+)` \((\S+) in `conf/spark-defaults\.conf`\)",
                                           doc.read_text())]
    assert ("operations.md", "spark.sql.shuffle.partitions", conf["spark.sql.shuffle.partitions"]) in quoted
    for doc, key, value in quoted:
        assert conf.get(key) == value, f"{doc}: {key} is {conf.get(key)!r} in conf/spark-defaults.conf, not {value}"


def test_object_stores_are_not_promised():
    """hadoop-aws is not shipped: no page offers s3a: paths without saying so."""
    for doc in [README, *DOCS.glob("*.md")]:
        for paragraph in doc.read_text().split("\n\n"):
            if "s3a:" in paragraph:
                assert "not shipped" in paragraph or "neither ships" in paragraph, f"{doc.name}: {paragraph}"


def test_the_spark_pipelines_page_names_what_the_installed_pyspark_has():
    """docs/spark-pipelines.md's commands and options are those of the spark-pipelines CLI
    in the PySpark the job runs on."""
    import pyspark

    page = (DOCS / "spark-pipelines.md").read_text()
    cli = (Path(pyspark.__file__).parent / "pipelines" / "cli.py").read_text()
    assert (Path(pyspark.__file__).parent / "bin" / "spark-pipelines").exists()
    commands = set(re.findall(r"`spark-pipelines ([a-z-]+)", page))
    assert {"run", "dry-run", "init"} <= commands
    for command in commands:
        assert f'add_parser(\n        "{command}"' in cli or f'add_parser("{command}"' in cli, command
    for option in set(re.findall(r"`(?:spark-pipelines run )?(--[a-z-]+)", page)) - {"--class", "--once", "--dry-run",
                                                                                  "--checkpoint-dir"}:
        assert f'"{option}"' in cli, option
    api = (Path(pyspark.__file__).parent / "pipelines" / "api.py").read_text()
    for name in re.findall(r"`@?dp\.([a-z_]+)", page):
        assert f"def {name}(" in api, name
    assert "spark-pipelines.md" in README.read_text()


def test_documented_set_keys_are_read_by_the_job():
    """Every key in docs/sql.md's SET table is one the job's code reads (or a Spark setting)."""
    code = "\n".join(p.read_text() for p in (ROOT / "job").rglob("*.py"))
    keys = re.findall(r"^\| `'([a-z][a-z0-9._-]+)'", section(SQL.read_text(), "SET"), re.M)
    assert "table.exec.state.ttl" in keys and "execution.checkpointing.interval" in keys
    for key in keys:
        assert key.startswith("spark.") or f'"{key}"' in code or f"'{key}'" in code, key


# --------------------------------------------------------------------------- links

def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md")), *sorted((ROOT / "examples").glob("*/README.md"))]


def slugs(text: str) -> set[str]:
    """GitHub's anchors for a Markdown file's headings."""
    out: set[str] = set()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n, candidate = 0, slug
        while candidate in out:
            n += 1
            candidate = f"{slug}-{n}"
        out.add(candidate)
    return out


def test_every_doc_is_linked_from_the_readme():
    text = README.read_text()
    for doc in sorted(DOCS.glob("*.md")):
        assert f"](docs/{doc.name})" in text, doc.name
    for example in sorted((ROOT / "examples").glob("*/README.md")):
        assert f"]({example.relative_to(ROOT).parent.as_posix()}" in text, example


def test_relative_links_resolve():
    """Every relative link of the README, docs/ and the examples' READMEs names a file that
    exists, and its #anchor a heading of that file."""
    for md in markdown_files():
        text = re.sub(r"```.*?```", "", md.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (md.parent / path).resolve() if path else md
            assert resolved.exists(), f"{md.relative_to(ROOT)}: {target}"
            if anchor and resolved.suffix == ".md":
                assert anchor in slugs(resolved.read_text()), f"{md.relative_to(ROOT)}: {target}"


def test_no_internal_jargon():
    for md in markdown_files():
        text = md.read_text().lower()
        for word in ("seed 002", "session 4", "session 7", "the seed's"):
            assert word not in text, (md.relative_to(ROOT), word)


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
