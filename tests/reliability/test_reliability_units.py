"""Fast checks (no Spark) of the pieces the slow reliability tests drive end to end."""
from __future__ import annotations

import socket

import pytest

from job.errors import PipelineError
from job.run import availability, compat


def test_interrupted_write_leftovers_are_removed_and_nothing_else(tmp_path):
    offsets, commits = tmp_path / "offsets", tmp_path / "commits"
    offsets.mkdir()
    commits.mkdir()
    keep = [offsets / "0", offsets / ".0.crc", commits / "0", offsets / "notes.tmp"]
    drop = [offsets / ".1.0b1c2d3e-1111-2222-3333-444455556666.tmp",
            offsets / "..1.0b1c2d3e-1111-2222-3333-444455556666.tmp.crc",
            commits / ".1.0b1c2d3e-1111-2222-3333-444455556666.tmp"]
    for p in keep + drop:
        p.write_text("x")
    assert sorted(compat.remove_interrupted_writes(tmp_path)) == sorted(drop)
    assert all(p.exists() for p in keep) and not any(p.exists() for p in drop)


def fp(**state):
    base = {"engine": "changelog", "sql": "SELECT a, COUNT(*) FROM t GROUP BY a", "views": {}, "columns": {},
            "operators": []}
    return {"version": compat.VERSION, "sources": {"t": {"connector": "kafka", "topic": "x"}}, "stateful": True,
            "state": {**base, **state}}


def test_differences_name_what_changed():
    assert compat.differences(fp(), fp()) == []
    assert compat.differences(fp(), fp(operators=["join"])) == ["the stateful query changed: the stateful operators"]
    older = {**fp(), "version": 1}
    assert compat.differences(older, fp()) == [
        f"it keeps its state in the layout of engine version 1, and this version of the job keeps it in the layout "
        f"of version {compat.VERSION}"]
    moved = fp()
    moved["sources"] = {"t": {"connector": "kafka", "topic": "y"}}
    assert "the sources changed (was t (kafka: x), now t (kafka: y))" in compat.differences(fp(), moved)
    stateless = {"version": 1, "sources": {"t": {}}, "stateful": False}
    assert compat.differences(stateless, {**stateless, "sql": "anything"}) == []


def _tree(sql: str):
    from job.errors import Origin
    from job.sql.flink.query import parse_query

    return parse_query(sql, Origin("query"), sql).tree


def test_normalized_sql_ignores_case_spacing_and_comments():
    a = compat.normalized_sql(_tree("SELECT a, COUNT(*) FROM t -- c\n GROUP BY a"))
    assert a == compat.normalized_sql(_tree("select  a,\n count(*)  from t group by a"))
    assert compat.is_stateful_sql(_tree("SELECT a FROM t JOIN u ON t.k = u.k"))
    assert not compat.is_stateful_sql(_tree("SELECT UPPER(a) FROM t WHERE b > 2"))


@pytest.mark.parametrize("conf, expected", [
    ({}, ("wait", None)),
    ({"streamsql.source.unavailable": "fail"}, ("fail", 10.0)),
    ({"streamsql.source.unavailable": "FAIL", "streamsql.source.unavailable.timeout": "1 min"}, ("fail", 60.0)),
    ({"streamsql.source.unavailable.timeout": "500 ms"}, ("wait", 0.5)),
])
def test_availability_settings(conf, expected):
    assert availability.settings(conf) == expected


@pytest.mark.parametrize("conf", [{"streamsql.source.unavailable": "retry"},
                                  {"streamsql.source.unavailable.timeout": "soon"}])
def test_bad_availability_settings_are_validation_errors(conf):
    with pytest.raises(PipelineError) as err:
        availability.settings(conf)
    assert err.value.exit_code == 2 and err.value.option in conf


def test_reachable_probe():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        assert availability.reachable([("127.0.0.1", 1), ("127.0.0.1", port)])
    finally:
        server.close()
    assert not availability.reachable([("127.0.0.1", port)])


class FakeQuery:
    def __init__(self, name, error=None):
        self.name, self._error, self.isActive = name, error, False

    def exception(self):
        return self._error

    def stop(self):
        pass


class FakeError(Exception):
    def __init__(self, desc):
        super().__init__(desc)
        self.desc = desc


class FakeWriter:
    def __init__(self, results):
        self.results = list(results)

    def start(self):
        return self.results.pop(0)


class FakePlan:
    def __init__(self, name, writer):
        self.name, self.writer, self.dead_letters = name, writer, []
        self.checkpoint = f"/nonexistent/checkpoints/{name}"

    def mode(self):
        return "micro-batch"


def test_a_transiently_failed_query_is_restarted_and_others_fail_the_run(monkeypatch, capsys):
    import sys

    from job.run import restarts
    from job.run.runner import supervise
    from job.run.stop import StopSignal

    monkeypatch.setattr(restarts, "PAUSE_S", 0)
    transient = FakeError("Python worker failed to connect back.")
    writer = FakeWriter([FakeQuery("q", transient), FakeQuery("q")])       # fails once more, then finishes
    restarter = restarts.Restarter([FakePlan("q", writer)], sys.stderr)
    queries = [FakeQuery("q", transient)]
    supervise(queries, StopSignal(), 1.0, {}, poll=0, restarter=restarter)
    assert restarter.counts == {"q": 2} and len(restarter.started) == 2
    assert "restarting it from its checkpoint (2/3)" in capsys.readouterr().err

    # A real failure, or one restart too many, ends the run as before.
    with pytest.raises(PipelineError):
        supervise([FakeQuery("q", FakeError("boom"))], StopSignal(), 1.0, {}, poll=0,
                  restarter=restarts.Restarter([FakePlan("q", FakeWriter([]))]))
    restarter = restarts.Restarter([FakePlan("q", FakeWriter([FakeQuery("q", transient)] * 5))])
    with pytest.raises(PipelineError):
        supervise([FakeQuery("q", transient)], StopSignal(), 1.0, {}, poll=0, restarter=restarter)
    assert restarter.counts == {"q": restarts.MAX_RESTARTS}
