"""Fuzzed input never crashes or hangs the loader and validator.

The oracle is what ``--dry-run`` promises before Spark starts: ``load_statements`` (YAML,
Jinja, splitting) followed by ``build_program`` (parsing, catalog, option validation)
either returns a valid Program or raises :class:`PipelineError` whose rendered message
is one non-empty paragraph. Any other exception, or an example that takes longer than
its deadline (a hang), is a bug in the code, not in the test.

Three families, well over 1,000 examples in all: whole statements and scripts (random
garbage, truncations, unicode, huge identifiers, ``;`` and ``--`` inside literals), YAML
pipelines (broken YAML, wrong shapes, Jinja syntax and runtime errors) and option values
of every built-in connector and format.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from job.connectors.registry import COMMON_OPTIONS, connectors, formats
from job.errors import PipelineError
from job.pipeline.load import load_statements
from job.plan.program import Program, build_program

HANG_S = 10          # an example taking this long is a hang
FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)


def fuzz(examples: int) -> settings:
    return settings(FUZZ, max_examples=examples)


@contextmanager
def hang_guard(seconds: float = HANG_S):
    """Fail (instead of blocking the suite) when the body runs longer than ``seconds``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(_signum, _frame):
        raise TimeoutError(f"no answer within {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def answer(**load_args):
    """Load and validate; returns the Program or the PipelineError, raises anything else."""
    with hang_guard():
        try:
            program = build_program(load_statements(**load_args))
        except PipelineError as err:
            text = err.render()
            assert text.strip(), "an empty error message"
            assert err.message.strip(), "an error without a message"
            assert "Traceback" not in text
            assert err.exit_code == 2, f"a load/validation error exits 2, not {err.exit_code}: {text}"
            return err
    assert isinstance(program, Program) and program.inserts
    return program


# ------------------------------------------------------------------ statements

SOURCE = ("CREATE TABLE src (id STRING, n INT, ts TIMESTAMP(3), PRIMARY KEY (id) NOT ENFORCED) WITH ("
          "'connector' = 'upsert-kafka', 'topic' = 'in', 'properties.bootstrap.servers' = '127.0.0.1:9092', "
          "'key.format' = 'raw', 'value.format' = 'json')")
SINK = ("CREATE TABLE dst (id STRING, n BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', "
        "'topic' = 'out', 'properties.bootstrap.servers' = '127.0.0.1:9092', 'key.format' = 'raw', "
        "'value.format' = 'json')")
VIEW = "CREATE VIEW v AS SELECT id, n FROM src WHERE id <> ';' -- not a ; separator"
INSERT = "INSERT INTO dst SELECT id, COUNT(*) AS n FROM v GROUP BY id"
SCRIPT = ";\n".join(["SET 'spark.sql.shuffle.partitions' = '2'", SOURCE, SINK, VIEW, INSERT]) + ";\n"

PIECES = ["CREATE", "TABLE", "VIEW", "INSERT", "INTO", "SELECT", "FROM", "WITH", "(", ")", ",", ";", "--", "/*",
          "*/", "'", "''", "`", '"', "'connector'", "=", "'kafka'", "'print'", "PRIMARY KEY", "NOT ENFORCED",
          "SET", "'a;b'", "'--x'", "`we;ird`", "\n", "\t", "é", "𝔘", "\u200b", "\x00", "{{", "}}", "{%", "%}",
          "{#", "#}", "$$", "\\", "INT", "ROW<", ">", "ARRAY<", "WATERMARK FOR", "INTERVAL '5' SECOND",
          "METADATA", "VIRTUAL", "PARTITIONED BY", "BEGIN STATEMENT SET", "END"]

huge_identifier = st.integers(1_000, 200_000).map(lambda n: "x" * n)
literal_with_separators = st.lists(st.sampled_from([";", "--", "/*", "*/", "''", "a", "é", "\n", "{{ '}}' }}"]),
                                   max_size=8).map(lambda parts: "'t" + "".join(parts) + "'")


@fuzz(250)
@given(st.integers(0, len(SCRIPT)), st.integers(0, len(SCRIPT)))
def test_truncated_and_cut_scripts(a, b):
    a, b = sorted((a, b))
    answer(args=[SCRIPT[:a]]) if a else None
    answer(args=[SCRIPT[:a] + SCRIPT[b:]]) if a or b < len(SCRIPT) else None


@fuzz(250)
@given(st.lists(st.tuples(st.integers(0, len(SCRIPT)), st.one_of(st.sampled_from(PIECES), st.text(max_size=6))),
                min_size=1, max_size=5))
def test_scripts_with_random_pieces_inserted(inserts):
    text = SCRIPT
    for position, piece in inserts:
        position %= len(text) + 1
        text = text[:position] + piece + text[position:]
    answer(args=[text])


@fuzz(150)
@given(st.text(max_size=200), st.lists(st.sampled_from(PIECES), max_size=30).map(" ".join))
def test_random_text_and_token_soup(garbage, soup):
    answer(args=[garbage])
    answer(args=[soup])


@fuzz(60)
@given(huge_identifier, st.sampled_from(["table", "column", "option", "topic", "view"]))
def test_huge_identifiers(name, where):
    source, sink, insert = SOURCE, SINK, "INSERT INTO dst SELECT id, COUNT(*) AS n FROM src GROUP BY id"
    if where == "table":
        source, insert = source.replace("TABLE src", f"TABLE {name}"), insert.replace("FROM src", f"FROM {name}")
    elif where == "column":
        source = source.replace("n INT", f"{name} INT")
    elif where == "option":
        source = source.replace("'topic'", f"'{name}'")
    elif where == "topic":
        source = source.replace("'in'", f"'{name}'")
    else:
        insert = f"CREATE VIEW {name} AS SELECT * FROM src; INSERT INTO dst SELECT id, COUNT(*) FROM {name} GROUP BY id"
    result = answer(args=[source, sink, insert])
    if isinstance(result, PipelineError):
        assert name not in result.render(), "an error message must not echo a huge identifier whole"


@fuzz(120)
@given(literal_with_separators, literal_with_separators)
def test_separators_inside_literals_do_not_split(topic, where):
    sql = (SOURCE.replace("'in'", topic) + ";\n" + SINK + ";\n"
           + f"INSERT INTO dst SELECT id, COUNT(*) AS n FROM src WHERE id <> {where} GROUP BY id -- trailing ; comment\n")
    result = answer(args=[sql])
    if "{{" not in topic + where and "{%" not in topic + where:
        assert isinstance(result, Program), result
        assert len(result.inserts) == 1 and len(result.catalog.tables) == 2


# ------------------------------------------------------------------ YAML pipelines

JINJA = ["{{ topic }}", "{{ topic", "{{ }}", "{% if %}", "{% if x %}", "{% endif %}", "{% for x in %}", "{{ 1/0 }}",
         "{{ undefined_var }}", "{{ topic | nosuchfilter }}", "{{ env() }}", "{{ env('STREAMSQL_FUZZ_UNSET') }}",
         "{{ env('STREAMSQL_FUZZ_UNSET', 'd') }}", "{{ secret_file('/nonexistent/secret') }}", "{{ secret_file() }}",
         "{# unclosed", "{% raw %}", "{% endraw %}", "{{ topic.__class__ }}", "{{ ''.__class__.__mro__ }}",
         "{{ range(10**9) | list }}", "{{ 'x' * 10 }}", "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
         "{{ topic ~ }}", "{{ [ }}", "{{ {'a': } }}", "{%- set x = 1 -%}{{ x }}", "{{ x if }}"]

YAML_NOISE = [":", "- ", "  ", "\n", "|", ">", "{", "}", "[", "]", "&a", "*a", "!!python/object:os.system", "!!binary",
              "? ", "'", '"', "#", "---", "...", "\t", "%YAML 1.2", "name:", "vars:", "statements:", "file: x.sql",
              "spark:", "checkpoint_dir:", "- file:", "null", "~", "1e999", "é"]


def yaml_pipeline(name="fuzz", topic_expr="{{ topic }}", vars_block="vars:\n  topic: events\n",
                  extra_statement="", spark_block="spark:\n  spark.sql.shuffle.partitions: 2\n") -> str:
    source = SOURCE.replace("'in'", f"'{topic_expr}'")
    lines = [f"name: {name}", vars_block.rstrip("\n"), spark_block.rstrip("\n"), "statements:"]
    for statement in (source, SINK, extra_statement, INSERT.replace("FROM v", "FROM src")):
        if statement:
            lines.append("  - |")
            lines += ["    " + line for line in statement.splitlines()]
    return "\n".join(l for l in lines if l) + "\n"


def load_yaml_text(tmp_path: Path, text: str, **kwargs):
    path = tmp_path / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    return answer(pipeline=str(path), **kwargs)


def test_the_yaml_base_case_is_valid(tmp_path):
    assert isinstance(load_yaml_text(tmp_path, yaml_pipeline()), Program)


@fuzz(200)
@given(st.lists(st.sampled_from(JINJA), min_size=1, max_size=3).map(" ".join), st.sampled_from(["topic", "name", "stmt",
                                                                                             "spark", "checkpoint"]))
def test_yaml_with_jinja_errors(tmp_path_factory, expr, where):
    tmp_path = tmp_path_factory.mktemp("yaml")
    quoted = '"' + expr.replace("\\", "\\\\").replace('"', '\\"') + '"'
    text = {
        "topic": lambda: yaml_pipeline(topic_expr=expr),
        "name": lambda: yaml_pipeline(name=quoted),
        "stmt": lambda: yaml_pipeline(extra_statement=f"SET 'streamsql.fuzz' = '{expr}'"),
        "spark": lambda: yaml_pipeline(spark_block=f"spark:\n  spark.fuzz: {quoted}\n"),
        "checkpoint": lambda: yaml_pipeline() + f"checkpoint_dir: {quoted}\n",
    }[where]()
    load_yaml_text(tmp_path, text, environ={})


@fuzz(200)
@given(st.lists(st.tuples(st.integers(0, 2_000), st.sampled_from(YAML_NOISE)), min_size=1, max_size=4),
       st.integers(0, 2_000))
def test_yaml_with_noise_and_truncation(tmp_path_factory, inserts, cut):
    tmp_path = tmp_path_factory.mktemp("yaml")
    text = yaml_pipeline()
    for position, piece in inserts:
        position %= len(text) + 1
        text = text[:position] + piece + text[position:]
    load_yaml_text(tmp_path, text[: cut % (len(text) + 1)] if cut % 3 == 0 else text)


yaml_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
                         st.binary(max_size=8))
yaml_values = st.recursive(yaml_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                               st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                           max_leaves=8)


@fuzz(150)
@given(st.dictionaries(st.sampled_from(["name", "vars", "spark", "conf", "checkpoint_dir", "statements", "nmae", "x"]),
                       yaml_values, max_size=5))
def test_yaml_documents_of_any_shape(tmp_path_factory, document):
    import yaml

    tmp_path = tmp_path_factory.mktemp("yaml")
    load_yaml_text(tmp_path, yaml.safe_dump(document, allow_unicode=True))


@fuzz(60)
@given(st.binary(max_size=60))
def test_yaml_files_of_random_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("yaml") / "pipeline.yaml"
    path.write_bytes(data)
    answer(pipeline=str(path))


@fuzz(60)
@given(st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=10), max_size=3))
def test_random_var_overrides(variables):
    answer(args=[SOURCE.replace("'in'", "'{{ topic | default(\"t\") }}'"), SINK, INSERT.replace("FROM v", "FROM src")],
           variables=variables)


# ------------------------------------------------------------------ option values

def _all_options():
    out = []
    for name, connector in sorted(connectors().items()):
        for opt in (*connector.options, *COMMON_OPTIONS):
            out.append(("connector", name, opt))
    for name, fmt in sorted(formats().items()):
        for opt in getattr(fmt, "options", ()):
            out.append(("format", name, opt))
    return out


OPTIONS = _all_options()
GARBAGE_VALUES = ["", " ", "-1", "0", "1", "2147483648", "99999999999999999999", "1e999", "NaN", "true", "TRUE", "yes",
                  "maybe", "1.5", "10 s", "10 seconds", "-5 min", "P1D", "abc", "é", "\u0000", "x" * 5000, "''",
                  "a;b", "--", "{{ x }}", "127.0.0.1:notaport", ",", "partition:0,offset:x", "partition:0,offset:42"]

# A minimal valid table per connector, as (extra columns/key, options), role it plays.
BASE_TABLES = {
    "kafka": ("", {"topic": "t", "properties.bootstrap.servers": "127.0.0.1:9092", "format": "json"}),
    "upsert-kafka": (", PRIMARY KEY (id) NOT ENFORCED",
                     {"topic": "t", "properties.bootstrap.servers": "127.0.0.1:9092", "key.format": "raw",
                      "value.format": "json"}),
    "filesystem": ("", {"path": "/tmp/streamsql-fuzz-never-read", "format": "json"}),
    "datagen": ("", {"number-of-rows": "3"}),
    "print": ("", {}),
    "blackhole": ("", {}),
}


def option_key(opt_name: str, kind: str, owner: str) -> str:
    key = opt_name.replace("*", "id")
    if kind == "format" and not key.startswith(owner + "."):
        key = f"{owner}.{key}"
    return key


def table_with(connector: str, options: dict, role: str) -> list[str]:
    extra, _ = BASE_TABLES[connector]
    with_ = ", ".join(f"'{k}' = '{v.replace(chr(39), chr(39) * 2)}'" for k, v in {"connector": connector, **options}.items())
    table = f"CREATE TABLE t1 (id STRING, n INT{extra}) WITH ({with_})"
    if role == "source":
        return [table, "CREATE TABLE t2 (id STRING, n INT) WITH ('connector' = 'blackhole')",
                "INSERT INTO t2 SELECT id, n FROM t1"]
    return [table, "CREATE TABLE t2 (id STRING, n INT) WITH ('connector' = 'datagen', 'number-of-rows' = '1')",
            "INSERT INTO t1 SELECT id, n FROM t2"]


@pytest.mark.parametrize("connector", sorted(BASE_TABLES))
def test_base_tables_are_valid(connector):
    role = "sink" if connector in ("print", "blackhole") else "source"
    assert isinstance(answer(args=table_with(connector, dict(BASE_TABLES[connector][1]), role)), Program)


@fuzz(300)
@given(st.sampled_from(OPTIONS), st.one_of(st.sampled_from(GARBAGE_VALUES), st.text(max_size=30)),
       st.sampled_from(sorted(BASE_TABLES)), st.sampled_from(["source", "sink"]))
def test_option_values(option, value, connector, role):
    kind, owner, opt = option
    options = dict(BASE_TABLES[connector][1])
    if kind == "connector":
        if owner != connector:
            connector, options = owner, dict(BASE_TABLES.get(owner, ("", {}))[1])
        if owner not in BASE_TABLES:
            return
    elif connector in ("print", "blackhole", "datagen"):
        connector, options = "filesystem", dict(BASE_TABLES["filesystem"][1])
        options["format"] = owner
    else:
        options["format" if connector == "filesystem" else ("value.format" if "value.format" in options else "format")] = owner
    options[option_key(opt.name, kind, owner)] = value
    answer(args=table_with(connector, options, role))
