"""Bad input, as a user meets it on the command line: ``python -m job.main …`` in a
subprocess must exit 2 with one clear paragraph on stderr — where (``file:line:col``), in
which statement, what (the option at fault), and what to do — and no Python traceback or
Java stack trace.

The first group fails before Spark starts (parsing, templates, YAML, option validation),
so it is fast. The second needs Spark's analyser (unknown columns and tables), and the
last runs ``--dry-run`` on every example pipeline.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent.name for p in (ROOT / "examples").glob("*/pipeline.yaml"))

DATAGEN = "CREATE TABLE src (id INT, name STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '10');"
PRINT = "CREATE TABLE out (id INT, name STRING) WITH ('connector' = 'print');"
INSERT = "INSERT INTO out SELECT id, name FROM src;"


def job(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-m", "job.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def error_of(done: subprocess.CompletedProcess, code: int = 2) -> str:
    """The one error paragraph, after checking the exit code and that nothing leaked."""
    stderr = done.stderr
    assert done.returncode == code, f"exit {done.returncode}\n{stderr[-3000:]}"
    for leak in ("Traceback", "\tat org.apache", "Py4JJavaError", "py4j.protocol"):
        assert leak not in stderr, f"{leak!r} on stderr:\n{stderr[-3000:]}"
    errors = [line for line in stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1, stderr
    assert done.stdout == ""
    return errors[0]


def position(text: str, needle: str, *, offset: int = 0) -> str:
    """'line:col' (1-based) of the first occurrence of needle in text (plus offset)."""
    index = text.index(needle) + offset
    line = text.count("\n", 0, index) + 1
    return f"{line}:{index - (text.rfind(chr(10), 0, index) + 1) + 1}"


def write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text)
    return text


# --------------------------------------------------------------------------- no Spark needed

def test_syntax_error(tmp_path):
    text = write(tmp_path, "bad.sql", "CREATE TABLE src (\n  id INT,,\n  name STRING\n) WITH ('connector' = 'datagen');\n")
    msg = error_of(job("--file", "bad.sql", "--dry-run", cwd=tmp_path))
    assert f"bad.sql:{position(text, ',,', offset=1)}:" in msg   # the second comma
    assert "bad.sql:2:10:" in msg
    assert 'in statement "CREATE TABLE src (":' in msg
    assert "expected a column definition but found ','" in msg


def test_unsupported_statement(tmp_path):
    write(tmp_path, "p.sql", f"{DATAGEN}\n{PRINT}\nDROP TABLE src;\n{INSERT}\n")
    msg = error_of(job("--file", "p.sql", cwd=tmp_path))
    assert "p.sql:3:1:" in msg and "unsupported statement 'DROP'" in msg


def test_unknown_connector_with_did_you_mean(tmp_path):
    text = write(tmp_path, "p.sql", f"{DATAGEN.replace('datagen', 'datagem')}\n{PRINT}\n{INSERT}\n")
    msg = error_of(job("--file", "p.sql", "--dry-run", cwd=tmp_path))
    assert f"p.sql:{position(text, chr(39) + 'connector')}:" in msg   # at the 'connector' key
    assert 'in statement "CREATE TABLE src (id INT, name STRING) WITH' in msg
    assert "unknown connector 'datagem' for table 'src'. Did you mean 'datagen'?" in msg
    assert "available connectors: blackhole, datagen, filesystem, jdbc, kafka, postgres-cdc, print, upsert-kafka" in msg


def test_missing_required_option(tmp_path):
    sink = "CREATE TABLE out (id INT, name STRING) WITH (\n  'connector' = 'filesystem',\n  'format' = 'json'\n);"
    write(tmp_path, "p.sql", f"{DATAGEN}\n{sink}\n{INSERT}\n")
    msg = error_of(job("--file", "p.sql", "--dry-run", cwd=tmp_path))
    assert "p.sql:2:1:" in msg
    assert 'in statement "CREATE TABLE out (id INT, name STRING) WITH (":' in msg
    assert "missing required option 'path' for connector 'filesystem' (table 'out')" in msg


def test_unknown_option_with_did_you_mean(tmp_path):
    source = ("CREATE TABLE src (id INT, name STRING) WITH (\n  'connector' = 'datagen',\n"
              "  'number-of-row' = '10'\n);")
    text = write(tmp_path, "p.sql", f"-- a comment first\n{source}\n{PRINT}\n{INSERT}\n")
    msg = error_of(job("--file", "p.sql", "--dry-run", cwd=tmp_path))
    assert f"p.sql:{position(text, chr(39) + 'number-of-row')}:" in msg
    assert "p.sql:4:3:" in msg
    assert "(option 'number-of-row')" in msg or "option 'number-of-row'" in msg
    assert "unknown option 'number-of-row' for connector 'datagen' (table 'src'). Did you mean 'number-of-rows'?" in msg


def test_bad_option_value_names_the_option(tmp_path):
    write(tmp_path, "p.sql", f"{DATAGEN.replace(chr(39) + '10' + chr(39), chr(39) + 'ten' + chr(39))}\n{PRINT}\n{INSERT}\n")
    msg = error_of(job("--file", "p.sql", "--dry-run", cwd=tmp_path))
    assert "option 'number-of-rows' must be a whole number, got 'ten'" in msg


def test_undefined_template_variable(tmp_path):
    text = write(tmp_path, "p.sql", f"{PRINT}\n{DATAGEN.replace(chr(39) + '10' + chr(39), chr(39) + '{{ rows }}' + chr(39))}\n"
                                    f"{INSERT}\n")
    msg = error_of(job("--file", "p.sql", "--dry-run", cwd=tmp_path))
    assert f"p.sql:{position(text, 'rows }}')}:" in msg
    assert "undefined variable 'rows'" in msg and "--var rows=" in msg


def test_bad_yaml(tmp_path):
    write(tmp_path, "p.yaml", "name: bad\nstatements:\n  - |\n    SELECT 1\n   - oops: [\n")
    msg = error_of(job("--pipeline", "p.yaml", "--dry-run", cwd=tmp_path))
    assert "p.yaml:5:4:" in msg and "invalid YAML" in msg


def test_unknown_yaml_key_with_did_you_mean(tmp_path):
    write(tmp_path, "p.yaml", f"name: p\nstatement:\n  - {INSERT}\n")
    msg = error_of(job("--pipeline", "p.yaml", "--dry-run", cwd=tmp_path))
    assert "p.yaml:2:1:" in msg and "unknown key 'statement'" in msg and "did you mean 'statements'?" in msg


def test_position_inside_a_yaml_block(tmp_path):
    """Errors on the later lines of a `|` block point at the YAML file's own columns."""
    text = write(tmp_path, "p.yaml", "name: p\nstatements:\n  - |\n"
                                     "    CREATE TABLE src (id INT, name STRING) WITH (\n"
                                     "      'connector' = 'datagen',\n"
                                     "      'number-of-row' = '10'\n"
                                     "    );\n"
                                     f"    {PRINT}\n    {INSERT}\n")
    msg = error_of(job("--pipeline", "p.yaml", "--dry-run", cwd=tmp_path))
    assert f"p.yaml:{position(text, chr(39) + 'number-of-row')}:" in msg
    assert "p.yaml:6:7:" in msg


def test_missing_files(tmp_path):
    msg = error_of(job("--file", "nope.sql", cwd=tmp_path))
    assert "SQL file 'nope.sql' not found" in msg
    msg = error_of(job("--pipeline", "nope.yaml", cwd=tmp_path))
    assert "pipeline file 'nope.yaml' not found" in msg
    write(tmp_path, "p.yaml", "statements:\n  - file: sql/missing.sql\n")
    msg = error_of(job("--pipeline", "p.yaml", cwd=tmp_path))
    assert "p.yaml:2:11:" in msg and "SQL file 'sql/missing.sql' not found" in msg


def test_bad_arguments(tmp_path):
    msg = error_of(job("--var", "novalue", INSERT, cwd=tmp_path))
    assert "--var 'novalue' must be KEY=VALUE" in msg
    msg = error_of(job(cwd=tmp_path))
    assert "nothing to run" in msg


def test_statement_arguments_are_located(tmp_path):
    """Statements given as arguments (the seed's style) are located as 'arg N'."""
    msg = error_of(job(DATAGEN, PRINT.replace("(id INT,", "(id INT,,"), INSERT, "--dry-run", cwd=tmp_path))
    assert f"arg 2:{position(PRINT, ',', offset=1)}:" in msg
    assert "expected a column definition but found ','" in msg


# --------------------------------------------------------------------------- Spark's analyser

@pytest.mark.slow
def test_unknown_column_points_into_the_users_file(tmp_path):
    text = write(tmp_path, "p.sql", f"-- users and their names\n{DATAGEN}\n{PRINT}\n\n"
                                    "INSERT INTO out\nSELECT\n  id,\n  upper(nmae) AS name\nFROM src;\n")
    msg = error_of(job("--file", "p.sql", "--dry-run", cwd=tmp_path))
    assert f"p.sql:{position(text, 'nmae')}:" in msg
    assert "p.sql:8:9:" in msg
    assert 'in statement "INSERT INTO out":' in msg
    assert "Column 'nmae' not found in any table" in msg and "Did you mean 'name'?" in msg


@pytest.mark.slow
def test_unknown_table_with_did_you_mean(tmp_path):
    text = write(tmp_path, "p.yaml", "name: p\nstatements:\n  - |\n"
                                     f"    {DATAGEN}\n    {PRINT}\n"
                                     "    INSERT INTO out\n    SELECT id, name\n    FROM scr\n")
    msg = error_of(job("--pipeline", "p.yaml", "--dry-run", cwd=tmp_path))
    assert f"p.yaml:{position(text, 'scr')}:" in msg
    assert "p.yaml:8:10:" in msg
    assert "Object 'scr' not found" in msg and "did you mean 'src'?" in msg


# --------------------------------------------------------------------------- the examples

@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES)
def test_dry_run_of_each_example(example):
    done = job("--pipeline", f"examples/{example}/pipeline.yaml", "--dry-run", cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"pipeline {example}: ")
    queries = [line for line in lines if line.startswith("  query ")]
    assert queries and all(" engine, sink fed as " in q for q in queries)
    assert any(line.startswith("    - ") for line in lines)


def test_examples_are_found():
    assert {"quickstart", "user_count_by_account", "user_favorite_color_and_cheese"} <= set(EXAMPLES)


def test_positional_sql_and_yaml_paths_are_read_as_files():
    from job.cli import parse_args

    opts = parse_args(["examples/user_count_by_account/pipeline.sql", "SET 'a' = 'b'", "p.yaml", "--once"])
    assert opts.files == ["examples/user_count_by_account/pipeline.sql"]
    assert opts.pipeline == "p.yaml"
    assert opts.statements == ["SET 'a' = 'b'"]
