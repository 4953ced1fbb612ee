"""SQL hints (job.sql.flink.hints): OPTIONS overrides a table's WITH options for one scan or sink and
is checked against the connector's declared options; join hints are accepted; STATE_TTL, LOOKUP
retries and hints Flink does not know are refused by name at the hint."""
from __future__ import annotations

import pytest

from job.errors import Origin, PipelineError
from job.pipeline.load import load_statements
from job.plan.program import build_program
from job.sql.flink.query import parse_query

SRC = "CREATE TABLE src (id INT, name STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '10')"
OUT = "CREATE TABLE out (id INT, name STRING) WITH ('connector' = 'print')"


def program(*statements: str):
    return build_program(load_statements(args=[";\n".join(statements)]))


def test_options_hint_overrides_the_scan_and_the_sink_only():
    p = program(SRC, OUT, "INSERT INTO out /*+ OPTIONS('print-identifier' = 'x') */ "
                          "SELECT id, name FROM src /*+ OPTIONS('number-of-rows' = '3') */ s WHERE s.id > 0",
                "INSERT INTO out SELECT id, name FROM src")
    hinted = [k for k in p.catalog.tables if k.startswith("src__options")]
    assert len(hinted) == 1
    assert p.catalog.bound_table(hinted[0]).options["number-of-rows"] == 3
    assert p.catalog.bound_table("src").options["number-of-rows"] == 10  # the table itself, and its other scan
    first, second = p.inserts
    assert p.reads[0] == frozenset(hinted) and p.reads[1] == frozenset({"src"})
    assert first.sink_table.startswith("out__options") and second.sink_table == "out"
    assert dict(p.catalog.bound_table(first.sink_table).options)["print-identifier"] == "x"


def test_an_unknown_option_in_a_hint_is_refused_at_the_hint():
    insert = "INSERT INTO out SELECT id, name FROM src /*+ OPTIONS('rows-per-secnd' = '3') */"
    with pytest.raises(PipelineError) as info:
        program(SRC, OUT, insert)
    err = info.value
    assert "in the OPTIONS hint on 'src': unknown option 'rows-per-secnd' for connector 'datagen'" in err.message
    assert "table 'src'" in err.message and "__options" not in err.message
    assert err.statement == insert and err.origin.line == 3 and err.origin.column == insert.index("'rows") + 1


def test_options_hint_on_a_view_is_refused_as_flink_does():
    with pytest.raises(PipelineError, match="View 'v' cannot be enriched with new options"):
        program(SRC, OUT, "CREATE VIEW v AS SELECT * FROM src", "INSERT INTO out SELECT * FROM v /*+ OPTIONS('a'='b') */")


@pytest.mark.parametrize("query, column, message", [
    ("SELECT /*+ FOOBAR(t) */ 1", 12, "unknown hint 'FOOBAR'"),
    ("SELECT /*+ BRODCAST(t) */ 1", 12, "unknown hint 'BRODCAST'"),
    ("SELECT /*+ STATE_TTL('o' = '1d') */ 1", 12, "the STATE_TTL hint is not supported"),
    ("SELECT /*+ LOOKUP('table'='d', 'retry-predicate'='lookup_miss') */ 1", 12,
     "LOOKUP hint option 'retry-predicate' is not supported"),
    ("SELECT /*+ OPTIONS('a'='b') */ 1", 12, "OPTIONS is a table hint"),
    ("SELECT 1 FROM t /*+ BROADCAST(t) */", 21, "BROADCAST is a query hint"),
    ("SELECT 1 FROM t WHERE /*+ OPTIONS('a'='b') */ 1 = 1", 23, "must follow a table's name"),
])
def test_refused_hints(query, column, message):
    with pytest.raises(PipelineError) as info:
        parse_query(query, Origin("q"), query)
    assert message in info.value.message and info.value.origin.column == column


def test_join_and_lookup_hints_are_accepted_and_change_nothing():
    plain = parse_query("SELECT a.id FROM a JOIN b ON a.id = b.id", Origin("q"))
    hinted = parse_query("SELECT /*+ BROADCAST(b), SHUFFLE_HASH(a, b), SHUFFLE_MERGE(a), NEST_LOOP(b), "
                         "LOOKUP('table'='b', 'async'='true') */ a.id FROM a JOIN b ON a.id = b.id", Origin("q"))
    assert hinted.tree.sql() == plain.tree.sql() and hinted.table_hints == ()
