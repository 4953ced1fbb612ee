"""load_statements: YAML pipelines, --file scripts and args, with origins and errors."""
import os
import textwrap

import pytest

from job.errors import Origin, PipelineError
from job.pipeline.load import LoadedPipeline, load_statements

PIPELINE_YAML = """\
name: orders-{{ env_name }}
vars:
  env_name: dev
  topic: orders
spark:
  spark.sql.shuffle.partitions: 8
  spark.sql:
    ansi.enabled: true
  spark.jars: [a.jar, b.jar]
checkpoint_dir: /chk/{{ env_name }}
statements:
  - SET 'pipeline.name' = 'demo'
  - "SELECT 'a;b'"
  - |
    CREATE TABLE orders (
      id BIGINT
    ) WITH (
      'connector' = 'kafka',
      'topic' = '{{ topic }}'
    );
      INSERT INTO sink
      SELECT id FROM orders
  - file: sql/extra.sql
  - &anchored !!str |
      SELECT 'tagged'
"""

EXTRA_SQL = "-- extra statements\nCREATE VIEW v AS SELECT 1;\n\nSELECT '{{ topic }}';\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A pipeline directory; the test runs from its parent, as a CLI user would."""
    (tmp_path / "proj" / "sql").mkdir(parents=True)
    (tmp_path / "proj" / "pipeline.yaml").write_text(PIPELINE_YAML)
    (tmp_path / "proj" / "sql" / "extra.sql").write_text(EXTRA_SQL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def yaml_line(number):
    return PIPELINE_YAML.split("\n")[number - 1]


def test_yaml_pipeline_statements_and_origins(project):
    loaded = load_statements(pipeline="proj/pipeline.yaml", environ={})
    assert isinstance(loaded, LoadedPipeline)
    got = [(s.text, str(s.origin)) for s in loaded.statements]
    assert got == [
        ("SET 'pipeline.name' = 'demo'", "proj/pipeline.yaml:12:5"),
        ("SELECT 'a;b'", "proj/pipeline.yaml:13:6"),
        (
            "CREATE TABLE orders (\n  id BIGINT\n) WITH (\n  'connector' = 'kafka',\n  'topic' = 'orders'\n)",
            "proj/pipeline.yaml:15:5",
        ),
        ("INSERT INTO sink\n  SELECT id FROM orders", "proj/pipeline.yaml:21:7"),
        ("CREATE VIEW v AS SELECT 1", "proj/sql/extra.sql:2:1"),
        ("SELECT 'orders'", "proj/sql/extra.sql:4:1"),
        ("SELECT 'tagged'", "proj/pipeline.yaml:25:7"),
    ]
    # Each YAML origin points at the statement's first characters in the file.
    for s in loaded.statements:
        if s.origin.source.endswith(".yaml"):
            line = yaml_line(s.origin.line)
            first = s.text.split("\n")[0].replace("'orders'", "'{{ topic }}'")
            assert line[s.origin.column - 1 :].startswith(first), (line, s)


def test_yaml_settings(project):
    loaded = load_statements(pipeline="proj/pipeline.yaml", environ={})
    assert loaded.name == "orders-dev"
    assert loaded.checkpoint_dir == "/chk/dev"
    assert loaded.spark_conf == {
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.ansi.enabled": "true",
        "spark.jars": "a.jar,b.jar",
    }
    assert loaded.variables == {"env_name": "dev", "topic": "orders"}
    assert loaded.secrets == frozenset()


def test_var_overrides_yaml_vars(project):
    loaded = load_statements(pipeline="proj/pipeline.yaml", variables={"topic": "t2", "extra": "x"}, environ={})
    assert loaded.variables == {"env_name": "dev", "topic": "t2", "extra": "x"}
    assert "'topic' = 't2'" in loaded.statements[2].text
    assert loaded.statements[5].text == "SELECT 't2'"


def test_order_is_yaml_then_files_then_args(tmp_path):
    (tmp_path / "p.yaml").write_text("statements: SELECT 'yaml'\n")
    (tmp_path / "a.sql").write_text("SELECT 'file a'")
    (tmp_path / "b.sql").write_text("SELECT 'file b'")
    loaded = load_statements(
        ["SELECT 'arg 1'", "SELECT 'arg 2a'; SELECT 'arg 2b'"],
        files=[str(tmp_path / "a.sql"), str(tmp_path / "b.sql")],
        pipeline=str(tmp_path / "p.yaml"),
    )
    assert [s.text for s in loaded.statements] == [
        "SELECT 'yaml'",
        "SELECT 'file a'",
        "SELECT 'file b'",
        "SELECT 'arg 1'",
        "SELECT 'arg 2a'",
        "SELECT 'arg 2b'",
    ]
    assert str(loaded.statements[0].origin) == f"{tmp_path}/p.yaml:1:13"
    assert [str(s.origin) for s in loaded.statements[3:]] == ["arg 1:1:1", "arg 2:1:1", "arg 2:1:18"]


def test_args_seed_pipeline_and_default_name():
    loaded = load_statements(
        [
            "CREATE TABLE src (id INT) WITH ('connector' = 'datagen');\n"
            "CREATE TABLE snk (id INT) WITH ('connector' = 'print');\n"
            "INSERT INTO snk SELECT id FROM src;"
        ]
    )
    assert [str(s.origin) for s in loaded.statements] == ["arg 1:1:1", "arg 1:2:1", "arg 1:3:1"]
    assert loaded.name == "sql-pipeline"
    assert loaded.spark_conf == {} and loaded.checkpoint_dir is None


def test_args_are_rendered_and_secrets_collected(tmp_path):
    (tmp_path / "pw").write_text("pa55\n")
    loaded = load_statements(
        ["CREATE TABLE t (a INT) WITH ('password' = '{{ secret_file(pw) }}', 'user' = '{{ env('DB_USER') }}')"],
        variables={"pw": str(tmp_path / "pw")},
        environ={"DB_USER": "admin"},
    )
    assert "'password' = 'pa55'" in loaded.statements[0].text
    assert "'user' = 'admin'" in loaded.statements[0].text
    assert loaded.secrets == frozenset({"pa55", "admin"})


def test_sql_file_is_rendered_name_from_file(tmp_path):
    path = tmp_path / "daily_job.sql"
    path.write_text("SELECT *\nFROM t\nWHERE d = '{{ run_date }}';\n", encoding="utf-8")
    loaded = load_statements(files=[str(path)], variables={"run_date": "2024-05-01"})
    assert loaded.statements[0].text == "SELECT *\nFROM t\nWHERE d = '2024-05-01'"
    assert loaded.name == "daily_job"


def test_sql_file_undefined_variable_points_into_the_file(tmp_path):
    path = tmp_path / "job.sql"
    path.write_text("SELECT 1;\nSELECT '{{ run_date }}';\n")
    with pytest.raises(PipelineError) as info:
        load_statements(files=[str(path)])
    assert info.value.origin == Origin(str(path), 2, 12)
    assert "--var run_date=" in str(info.value)


def test_yaml_statement_template_error_points_into_the_yaml(tmp_path):
    (tmp_path / "p.yaml").write_text("statements:\n  - |\n    SELECT 1;\n    SELECT {{ oops }}\n")
    with pytest.raises(PipelineError) as info:
        load_statements(pipeline=str(tmp_path / "p.yaml"))
    assert info.value.origin == Origin(str(tmp_path / "p.yaml"), 4, 15)
    assert "undefined variable 'oops'" in str(info.value)


def test_env_in_spark_conf_and_checkpoint_dir_are_secrets(tmp_path):
    (tmp_path / "p.yaml").write_text(
        "conf:\n  spark.hadoop.fs.s3a.secret.key: \"{{ env('S3_SECRET') }}\"\n"
        "checkpoint_dir: \"s3a://b/{{ env('JOB_TOKEN') }}\"\n"
        "statements: [SELECT 1]\n"
    )
    loaded = load_statements(pipeline=str(tmp_path / "p.yaml"), environ={"S3_SECRET": "xyz", "JOB_TOKEN": "tk"})
    assert loaded.spark_conf == {"spark.hadoop.fs.s3a.secret.key": "xyz"}
    assert loaded.checkpoint_dir == "s3a://b/tk"
    assert loaded.secrets == frozenset({"xyz", "tk"})
    assert loaded.name == "p"


def test_crlf_yaml(tmp_path):
    (tmp_path / "p.yaml").write_bytes(b"statements:\r\n  - |\r\n    SELECT 1;\r\n    SELECT 2\r\n")
    loaded = load_statements(pipeline=str(tmp_path / "p.yaml"))
    assert [(s.text, s.origin.line, s.origin.column) for s in loaded.statements] == [
        ("SELECT 1", 3, 5),
        ("SELECT 2", 4, 5),
    ]


def test_bad_yaml_reports_line_and_column(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: x\nstatements: [SELECT 1\nvars: {}\n")
    with pytest.raises(PipelineError) as info:
        load_statements(pipeline=str(path))
    err = info.value
    assert err.message.startswith("invalid YAML")
    assert err.origin.source == str(path) and err.origin.line == 3


def test_unknown_key_did_you_mean(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: x\nstatments:\n  - SELECT 1\n")
    with pytest.raises(PipelineError) as info:
        load_statements(pipeline=str(path))
    err = info.value
    assert err.message == "unknown key 'statments' in pipeline file"
    assert err.origin == Origin(str(path), 2, 1)
    assert "did you mean 'statements'?" in err.hint
    assert "checkpoint_dir" in err.hint  # lists the valid keys


def test_unknown_key_in_statement_item(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("statements:\n  - fiel: a.sql\n")
    with pytest.raises(PipelineError) as info:
        load_statements(pipeline=str(path))
    assert "did you mean 'file'?" in info.value.hint
    assert info.value.origin == Origin(str(path), 2, 5)


def test_duplicate_and_conflicting_keys(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: a\nname: b\n")
    with pytest.raises(PipelineError, match="duplicate key 'name'"):
        load_statements(pipeline=str(path))
    path.write_text("spark: {a: 1}\nconf: {b: 2}\n")
    with pytest.raises(PipelineError, match="both 'spark' and 'conf'"):
        load_statements(pipeline=str(path))


def test_yaml_must_be_a_mapping(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("- SELECT 1\n")
    with pytest.raises(PipelineError, match="must be a mapping"):
        load_statements(pipeline=str(path))


def test_missing_sql_file(tmp_path):
    with pytest.raises(PipelineError) as info:
        load_statements(files=[str(tmp_path / "nope.sql")])
    assert str(tmp_path / "nope.sql") in info.value.message
    assert "not found" in info.value.message


def test_missing_pipeline_file(tmp_path):
    with pytest.raises(PipelineError, match="pipeline file .*nope.yaml.* not found"):
        load_statements(pipeline=str(tmp_path / "nope.yaml"))


def test_missing_file_referenced_from_yaml_points_at_the_reference(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("statements:\n  - SELECT 1\n  - file: sql/missing.sql\n")
    with pytest.raises(PipelineError) as info:
        load_statements(pipeline=str(path))
    err = info.value
    assert os.path.join(str(tmp_path), "sql/missing.sql") in err.message
    assert err.origin == Origin(str(path), 3, 11)
    assert "relative to its directory" in err.hint


def test_nothing_to_run(tmp_path):
    for kwargs in ({}, {"args": ["-- only a comment;"]}):
        with pytest.raises(PipelineError) as info:
            load_statements(**kwargs)
        assert "nothing to run" in info.value.message
        assert info.value.hint
    (tmp_path / "p.yaml").write_text("name: empty\n")
    with pytest.raises(PipelineError, match="nothing to run"):
        load_statements(pipeline=str(tmp_path / "p.yaml"))


def test_unterminated_string_in_yaml_block_points_into_the_yaml(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent("""\
        statements:
          - |
            SELECT 1;
            SELECT 'oops
    """))
    with pytest.raises(PipelineError) as info:
        load_statements(pipeline=str(path))
    assert info.value.origin == Origin(str(path), 4, 12)


def test_sql_with_colon_read_as_mapping_gets_a_quoting_hint(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("statements:\n  - SELECT a: b\n")
    with pytest.raises(PipelineError) as info:
        load_statements(pipeline=str(path))
    assert "`|` block" in info.value.hint
