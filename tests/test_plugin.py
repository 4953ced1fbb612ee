"""A connector from outside job/ is found through the ``streamsql.connectors`` entry point.

tests/plugin_site/ is what ``pip install`` would leave in site-packages for a package
that declares, in its setup.cfg::

    [options.entry_points]
    streamsql.connectors =
        collect = streamsql_test_plugin:CONNECTOR

i.e. the module and a ``*.dist-info`` directory with ``entry_points.txt``. Putting that
directory on sys.path is all it takes: nothing in job/ names the plugin.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from job.api import RunOptions, compile
from job.connectors import registry
from job.errors import EXIT_INVALID, PipelineError

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "tests" / "plugin_site"

SOURCE = """
CREATE TABLE numbers (
  id BIGINT,
  name STRING
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '5',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '5',
  'fields.name.length' = '4'
);
"""


def sink_ddl(options: str) -> str:
    return f"CREATE TABLE collected (id BIGINT, tenfold BIGINT) WITH ({options});"


INSERT = "INSERT INTO collected SELECT id, id * 10 FROM numbers;"


@pytest.fixture
def plugin(monkeypatch):
    """The plugin's directory on sys.path and a registry that has not looked yet."""
    monkeypatch.syspath_prepend(str(SITE))
    # Restored after the test, so no other test sees the plugin.
    monkeypatch.setattr(registry, "_connectors", None)
    import streamsql_test_plugin

    streamsql_test_plugin.ROWS.clear()
    return streamsql_test_plugin


def program(*statements: str):
    return compile(RunOptions(statements=list(statements)))


def test_not_found_without_the_entry_point(monkeypatch):
    monkeypatch.setattr(registry, "_connectors", None)
    assert "collect" not in registry.connectors()


def test_listed_next_to_the_builtins(plugin):
    found = registry.connectors()
    assert found["collect"] is plugin.CONNECTOR
    assert found["collect"].create_sink.__module__ == "streamsql_test_plugin"
    assert Path(plugin.__file__).is_relative_to(SITE)
    assert {"kafka", "upsert-kafka", "filesystem", "datagen", "print", "blackhole"} <= set(found)
    connector = found["collect"]
    assert connector.can_sink and not connector.can_source


def test_options_are_validated_with_did_you_mean(plugin):
    with pytest.raises(PipelineError) as caught:
        program(SOURCE, sink_ddl("'connector' = 'collect', 'buket' = 'b'"), INSERT)
    err = caught.value
    assert err.option == "buket"
    assert "unknown option 'buket' for connector 'collect'" in err.message
    assert "Did you mean 'bucket'?" in err.message
    assert err.exit_code == EXIT_INVALID
    assert str(err.origin).startswith("arg 2:1:")

    with pytest.raises(PipelineError, match="missing required option 'bucket' for connector 'collect'"):
        program(SOURCE, sink_ddl("'connector' = 'collect'"), INSERT)
    with pytest.raises(PipelineError, match="option 'max-rows' must be a whole number, got 'many'"):
        program(SOURCE, sink_ddl("'connector' = 'collect', 'bucket' = 'b', 'max-rows' = 'many'"), INSERT)
    # The plugin's own check runs too.
    with pytest.raises(PipelineError, match="'bucket' must be a simple name"):
        program(SOURCE, sink_ddl("'connector' = 'collect', 'bucket' = 'a b'"), INSERT)
    # A typo of the plugin's identifier is suggested like a built-in's.
    with pytest.raises(PipelineError, match="unknown connector 'colect'.*Did you mean 'collect'"):
        program(SOURCE, sink_ddl("'connector' = 'colect', 'bucket' = 'b'"), INSERT)


def test_the_cli_finds_it_on_pythonpath(tmp_path):
    """The same through ``python -m job.main``: the entry point is found on PYTHONPATH,
    and the typo is reported before Spark starts."""
    script = tmp_path / "p.sql"
    script.write_text(SOURCE + sink_ddl("\n  'connector' = 'collect',\n  'buket' = 'b'\n") + "\n" + INSERT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SITE), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "job.main", "--file", str(script), "--dry-run"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_INVALID, done.stderr
    line = script.read_text().split("\n").index("  'buket' = 'b'") + 1
    assert f"p.sql:{line}:3:" in done.stderr  # where the 'buket' key is written
    assert "unknown option 'buket' for connector 'collect'" in done.stderr
    assert "Did you mean 'bucket'?" in done.stderr


@pytest.mark.slow
def test_runs_end_to_end(plugin, spark, tmp_path):
    from job.api import run

    code = run(RunOptions(statements=[SOURCE, sink_ddl("'connector' = 'collect', 'bucket' = 'out'"), INSERT],
                          once=True, checkpoint_dir=str(tmp_path / "ckpt")))
    assert code == 0
    assert sorted(plugin.ROWS["out"]) == [("+I", (i, i * 10)) for i in range(1, 6)]


@pytest.mark.slow
def test_receives_a_changelog(plugin, spark, tmp_path):
    """An updating query reaches the plugin as +I/-U/+U/-D (it accepts retractions)."""
    from job.api import run

    statements = [SOURCE,
                  "CREATE TABLE counts (parity BIGINT, n BIGINT) WITH ('connector' = 'collect', 'bucket' = 'counts');",
                  "INSERT INTO counts SELECT id % 2, COUNT(*) FROM numbers GROUP BY id % 2;"]
    code = run(RunOptions(statements=statements, once=True, checkpoint_dir=str(tmp_path / "ckpt")))
    assert code == 0
    assert sorted(plugin.ROWS["counts"]) == [("+I", (0, 2)), ("+I", (1, 3))]
