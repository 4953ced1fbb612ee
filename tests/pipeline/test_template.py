"""Jinja rendering: variables, env(), secret_file(), errors with positions."""
import pytest

from job.errors import Origin, PipelineError
from job.pipeline.template import Renderer, render


def test_renders_variables_and_keeps_lines():
    text = "SELECT '{{ run_date }}';\n{% if full %}\nSELECT 2;\n{% endif %}\n"
    out = render(text, {"run_date": "2024-01-01", "full": True}, source="p.sql")
    assert out == "SELECT '2024-01-01';\n\nSELECT 2;\n\n"
    assert out.count("\n") == text.count("\n")


def test_crlf_is_normalised_without_changing_line_count():
    out = render("SELECT 1;\r\nSELECT {{ x }};\r\n", {"x": 2}, source="p.sql")
    assert out == "SELECT 1;\nSELECT 2;\n"


def test_undefined_variable_names_variable_source_and_line():
    text = "SELECT 1;\n\nSELECT * FROM t WHERE d = '{{ run_date }}';\n"
    with pytest.raises(PipelineError) as info:
        render(text, {}, source="pipeline.sql")
    err = info.value
    assert err.origin == Origin("pipeline.sql", 3, 31)
    message = str(err)
    assert message.startswith("pipeline.sql:3:31: undefined variable 'run_date'")
    assert "--var run_date=" in message


def test_undefined_variable_in_a_text_that_starts_mid_file():
    renderer = Renderer({})
    with pytest.raises(PipelineError) as info:
        renderer.render("SELECT 1;\nSELECT {{ nope }}", Origin("p.yaml", 12, 5), indent=4)
    # line 2 of the text is line 13 of the YAML, indented by 4 more columns
    assert info.value.origin == Origin("p.yaml", 13, 15)


def test_default_filter_and_defined_test_work_with_strict_undefined():
    assert render("{{ x | default('a') }}{% if y is defined %}!{% endif %}", {}, source="s") == "a"


def test_attribute_of_undefined_mapping_key():
    with pytest.raises(PipelineError) as info:
        render("SELECT\n{{ cfg.missing }}", {"cfg": {}}, source="s.sql")
    assert info.value.origin.line == 2
    assert "missing" in info.value.message


def test_syntax_error_has_line():
    with pytest.raises(PipelineError) as info:
        render("SELECT 1;\nSELECT {{ x + }};\n", {"x": 1}, source="bad.sql")
    err = info.value
    assert err.origin == Origin("bad.sql", 2, 1)
    assert "template syntax error" in err.message
    assert "raw" in err.hint


def test_env_reads_environment_and_collects_secret():
    renderer = Renderer({}, environ={"DB_PASSWORD": "hunter2"})
    out = renderer.render("'password' = '{{ env('DB_PASSWORD') }}'", Origin("a"))
    assert out == "'password' = 'hunter2'"
    assert renderer.secrets == {"hunter2"}


def test_env_uses_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("PIPELINE_TEST_TOKEN", "tok-123")
    renderer = Renderer({})
    assert renderer.render("{{ env('PIPELINE_TEST_TOKEN') }}", Origin("a")) == "tok-123"
    assert "tok-123" in renderer.secrets


def test_env_default_when_unset_is_not_a_secret(monkeypatch):
    monkeypatch.delenv("PIPELINE_TEST_UNSET", raising=False)
    renderer = Renderer({})
    assert renderer.render("{{ env('PIPELINE_TEST_UNSET', 'localhost') }}", Origin("a")) == "localhost"
    assert renderer.secrets == set()


def test_env_unset_without_default_is_an_error_at_its_line():
    renderer = Renderer({}, environ={})
    with pytest.raises(PipelineError) as info:
        renderer.render("SELECT 1;\n\nSELECT '{{ env('API_KEY') }}'", Origin("job.sql"))
    err = info.value
    assert "API_KEY" in err.message and "not set" in err.message
    assert err.origin == Origin("job.sql", 3, 1)
    assert "env('API_KEY', " in err.hint


def test_secret_file_strips_trailing_newline_and_collects(tmp_path):
    (tmp_path / "pw").write_text("s3cr3t value\n")
    renderer = Renderer({})
    out = renderer.render("'{{ secret_file('pw') }}'", Origin("a"), base_dir=tmp_path)
    assert out == "'s3cr3t value'"
    assert renderer.secrets == {"s3cr3t value"}


def test_secret_file_absolute_path(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("abc\r\n")
    renderer = Renderer({"path": str(secret)})
    assert renderer.render("{{ secret_file(path) }}", Origin("a")) == "abc"


def test_missing_secret_file_is_an_error(tmp_path):
    renderer = Renderer({})
    with pytest.raises(PipelineError) as info:
        renderer.render("\n{{ secret_file('nope.txt') }}", Origin("p.sql"), base_dir=tmp_path)
    assert "nope.txt" in info.value.message and "not found" in info.value.message
    assert info.value.origin == Origin("p.sql", 2, 1)


def test_reserved_variable_names_are_rejected():
    with pytest.raises(PipelineError, match="reserved"):
        Renderer({"env": "prod"})


def test_other_template_errors_become_pipeline_errors():
    with pytest.raises(PipelineError) as info:
        render("\n{{ 1 / 0 }}", {}, source="z.sql")
    assert info.value.origin == Origin("z.sql", 2, 1)
    assert "ZeroDivisionError" in info.value.message
