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
    write(tmp_path, "p.sql", f"{DATAGEN}\n{PRINT}\nALTER TABLE src RENAME TO s;\n{INSERT}\n")
    msg = error_of(job("--file", "p.sql", cwd=tmp_path))
    assert "p.sql:3:1:" in msg and "unsupported statement 'ALTER'" in msg


def test_unknown_connector_with_did_you_mean(tmp_path):
    text = write(tmp_path, "p.sql", f"{DATAGEN.replace('datagen', 'datagem')}\n{PRINT}\n{INSERT}\n")
    msg = error_of(job("--file", "p.sql", "--dry-run", cwd=tmp_path))
    assert f"p.sql:{position(text, chr(39) + 'connector')}:" in msg   # at the 'connector' key
    assert 'in statement "CREATE TABLE src (id INT, name STRING) WITH' in msg
    assert "unknown connector 'datagem' for table 'src'. Did you mean 'datagen'?" in msg
    assert "available connectors: blackhole, datagen, delta, filesystem, iceberg, jdbc, kafka, mysql-cdc, postgres-cdc, print, upsert-kafka" in msg


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


# --------------------------------------------------------------------------- the command line itself

def test_a_misspelt_option_is_refused_with_a_did_you_mean(tmp_path):
    done = job("--pipline", "p.yaml", "--once", cwd=tmp_path)
    msg = error_of(done)
    assert msg == ("error (exit 2, invalid pipeline): unknown option '--pipline' on the command line. "
                   "Did you mean '--pipeline'? Hint: see --help for the job's options"), msg
    msg = error_of(job("--dry-rum", "--file", "p.sql", cwd=tmp_path))
    assert "unknown option '--dry-rum' on the command line. Did you mean '--dry-run'?" in msg
    msg = error_of(job("--metrics-port=many", "--file", "p.sql", cwd=tmp_path))
    assert msg.startswith("error (exit 2, invalid pipeline): argument --metrics-port: invalid int value: 'many'"), msg


def test_a_spark_submit_option_after_the_job_s_file_is_named_as_spark_submit_s(tmp_path):
    msg = error_of(job("--pipeline", "p.yaml", "--name", "nightly", cwd=tmp_path))
    assert "--name is an option of spark-submit, not of the job, and spark-submit did not see it" in msg
    assert "put spark-submit's options before the job's file" in msg


def test_help_shows_how_spark_submit_options_pass_through(tmp_path):
    done = job("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "usage: ./spark-submit.sh [spark-submit options] [--] JOB ARGUMENTS" in done.stdout
    assert "spark-submit [spark-submit options] job/main.py JOB ARGUMENTS" in done.stdout
    assert "spark-submit's own options (--master, --name, --conf" in done.stdout
    assert "--metrics-host ADDRESS" in done.stdout
    assert "spark-submit job/main.py [STATEMENT" not in done.stdout


@pytest.mark.slow
def test_master_after_the_job_s_file_under_plain_spark_submit_is_refused(tmp_path):
    """spark-submit hands everything after the job's file to the job; a --master there
    cannot change the master the driver already runs on, so it is refused, not ignored."""
    write(tmp_path, "p.sql", f"{DATAGEN}\n{PRINT}\n{INSERT}\n")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([str(Path(sys.executable).parent / "spark-submit"), "--master", "local[1]",
                           str(ROOT / "job" / "main.py"), "p.sql", "--dry-run", "--master", "local[2]"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert errors == [
        "error (exit 2, invalid pipeline): --master local[2] came after the job's file, where spark-submit does "
        "not see it; this run would use the master spark-submit was given Hint: put --master before the job's "
        "file (spark-submit --master URL … job/main.py …), or use ./spark-submit.sh, which passes it on wherever "
        "it is"], done.stderr[-2000:]
    assert "query " not in done.stdout  # nothing was planned


# --------------------------------------------------------------------------- ./spark-submit.sh's split

def submitted(tmp_path: Path, *args: str) -> tuple[list[str], list[str]]:
    """What ./spark-submit.sh hands spark-submit: (spark-submit's options, the job's
    arguments), read from a stand-in spark-submit that prints the arguments it was given."""
    fake = tmp_path / "spark-home" / "bin" / "spark-submit"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    fake.chmod(0o755)
    env = {**os.environ, "SPARK_HOME": str(fake.parent.parent), "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run([str(ROOT / "spark-submit.sh"), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    given = done.stdout.splitlines()
    main = given.index(str(ROOT / "job" / "main.py"))
    ours = {"--properties-file", "--jars", "--py-files"}
    spark, i = [], 0
    while i < main:  # drop the wrapper's own options
        if given[i] in ours or (given[i] == "--conf" and given[i + 1].startswith("spark.driver.defaultJavaOptions=")):
            i += 2
            continue
        spark.append(given[i])
        i += 1
    return spark, given[main + 1:]


@pytest.mark.slow
def test_spark_submit_sh_passes_on_spark_submit_s_options_wherever_they_are(tmp_path):
    # --name without `--` (it used to reach the job), and --master and --conf after the
    # job's arguments (they used to be handed to the job, which ignored --master).
    spark, job_args = submitted(tmp_path, "--name", "nightly", "--pipeline", "p.yaml", "--once",
                                "--master", "spark://127.0.0.1:7077", "--conf=spark.ui.enabled=true", "--var", "a=b")
    assert spark == ["--name", "nightly", "--master", "spark://127.0.0.1:7077", "--conf", "spark.ui.enabled=true"]
    assert job_args == ["--pipeline", "p.yaml", "--once", "--var", "a=b"]
    # With `--`: what comes before is spark-submit's, known or not; after it, the job's,
    # except spark-submit's known options.
    spark, job_args = submitted(tmp_path / "2", "--class", "x", "--name", "n", "--", "SET 'a' = 'b'", "--master",
                                "local[1]", "--verbose")
    assert spark == ["--class", "x", "--name", "n", "--master", "local[1]"]
    assert job_args == ["SET 'a' = 'b'", "--verbose"]


@pytest.mark.slow
def test_spark_submit_sh_name_names_the_application(tmp_path):
    """--name before the job's arguments or after them names the Spark application
    (Spark's event log says so); without it, the pipeline's name does."""
    write(tmp_path, "p.sql", f"{DATAGEN}\n{PRINT}\n{INSERT}\n")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_GATEWAY_PORT", None)

    def app_name(*args: str) -> str:
        logs = tmp_path / f"events-{len(list(tmp_path.glob('events-*')))}"
        logs.mkdir()
        done = subprocess.run([str(ROOT / "spark-submit.sh"), "--conf", "spark.eventLog.enabled=true", "--conf",
                               "spark.eventLog.compress=false", "--conf", f"spark.eventLog.dir=file:{logs}", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        import json

        for path in (p for p in logs.rglob("*") if p.is_file()):
            for line in path.read_text().splitlines():
                if not line.startswith("{"):
                    continue
                event = json.loads(line)
                if event["Event"] == "SparkListenerApplicationStart":
                    return event["App Name"]
        raise AssertionError(f"no application start in {list(logs.rglob('*'))}")

    assert app_name("p.sql", "--dry-run", "--name", "nightly") == "nightly"
    assert app_name("p.sql", "--dry-run") == "p"


@pytest.mark.slow
def test_catalog_statements_and_explain_run(tmp_path):
    """A file in Flink's catalog style: its own catalog and database, qualified names, SHOW and
    EXPLAIN. The EXPLAIN's INSERT is printed as --explain prints it and does not run; the other
    INSERT writes the source's 10 rows."""
    write(tmp_path, "p.sql", "\n".join([
        "CREATE CATALOG c WITH ('type' = 'generic_in_memory');", "USE CATALOG c;",
        "CREATE DATABASE IF NOT EXISTS shop;", DATAGEN.replace("TABLE src", "TABLE c.shop.src"),
        PRINT.replace("TABLE out", "TABLE shop.out"), "USE shop;", "SHOW TABLES;",
        "EXPLAIN PLAN FOR INSERT INTO out SELECT id, name FROM src WHERE id > 5;", INSERT]))
    done = job("--file", "p.sql", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| table name |\n+------------+\n|        out |\n|        src |" in done.stdout
    assert "WHERE id > 5" in done.stdout and "- filter: id > 5" in done.stdout
    assert len([line for line in done.stdout.splitlines() if line.startswith("+I[")]) == 10, done.stdout
