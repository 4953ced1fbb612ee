"""The typed contract between the planner and the engine (job/changelog/specs.py,
job/changelog/replies.py and engine/…/spec/*.java): both sides know the same fields of
every operator's spec and every reply, a spec written by Python is read by Java field for
field (a reply written by Java read by Python), and the engine's column names agree
(job/changelog/columns.py and engine/…/Columns.java)."""
from __future__ import annotations

import dataclasses
import json
import typing

import pytest

from job.changelog import columns, replies, specs
from job.changelog.jvm import _engine_class, static_call

SPECS_CLASS = "streamsql.engine.spec.Specs"


def kind(hint) -> str:
    """A Python field's kind, in the words of Specs.schema() on the Java side."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:  # Optional[X]: null is any field's absence on the Java side
        return kind(next(a for a in args if a is not type(None)))
    if origin is tuple:
        return f"list<{kind(args[0])}>"
    if dataclasses.is_dataclass(hint):
        return hint.__name__
    return {str: "string", int: "integer", bool: "boolean"}[hint]


def python_schema() -> dict:
    out = {}
    for cls in specs.OPERATORS + specs.EXPRESSIONS + replies.REPLIES + specs.PARTS + replies.PARTS:
        hints = typing.get_type_hints(cls)
        out[cls.__name__] = {f.name: kind(hints[f.name]) for f in dataclasses.fields(cls)}
    return out


def example(cls, salt: int = 0):
    """A spec of ``cls`` with every field set, none to its default, each value distinct."""
    hints = typing.get_type_hints(cls)
    values = {}
    for i, f in enumerate(dataclasses.fields(cls)):
        values[f.name] = _value(hints[f.name], f"{f.name}{salt}", 10 * salt + i + 2)
    return cls(**values)


def _value(hint, text: str, number: int):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return _value(next(a for a in args if a is not type(None)), text, number)
    if origin is tuple:
        return tuple(_value(args[0], f"{text}_{j}", number + j) for j in range(2))
    if dataclasses.is_dataclass(hint):
        return example(hint, number)
    if hint is str:
        return '"long"' if text.startswith("result_type") else \
            '{"type":"struct","fields":[]}' if text.startswith("column_types") else text
    return {int: number, bool: number % 2 == 0}[hint]


def test_python_and_java_know_the_same_fields_of_every_spec(spark):
    java = json.loads(static_call(spark, SPECS_CLASS, "schema"))
    python = python_schema()
    assert list(java) == list(python), "the same operators and parts, in the same order"
    for name in python:
        assert java[name] == python[name], f"{name}: Java's fields differ from specs.py's"


@pytest.mark.parametrize("cls", specs.OPERATORS + specs.EXPRESSIONS, ids=lambda c: c.__name__)
def test_a_spec_written_by_python_is_read_by_java_field_for_field(spark, cls):
    spec = example(cls)
    loader, record = _engine_class(spark, f"streamsql.engine.spec.{cls.__name__}")
    read = static_call(spark, SPECS_CLASS, "read", ("java.lang.String", specs.to_json(spec)),
                       ("java.lang.Class", record))
    back = json.loads(static_call(spark, SPECS_CLASS, "write", ("java.lang.Record", read)))
    assert back == json.loads(specs.to_json(spec))


@pytest.mark.parametrize("cls", replies.REPLIES, ids=lambda c: c.__name__)
def test_a_reply_written_by_java_is_read_by_python_field_for_field(spark, cls):
    reply = example(cls)
    loader, record = _engine_class(spark, f"streamsql.engine.spec.{cls.__name__}")
    read = static_call(spark, SPECS_CLASS, "read", ("java.lang.String", json.dumps(dataclasses.asdict(reply))),
                       ("java.lang.Class", record))
    assert replies.from_json(cls, static_call(spark, SPECS_CLASS, "write", ("java.lang.Record", read))) == reply


def test_python_refuses_a_reply_with_a_field_it_does_not_know_or_lacks():
    good = {"kind": "closed", "id": None, "name": None, "progress": None}
    assert replies.from_json(replies.QueryEvent, json.dumps(good)) == replies.QueryEvent("closed", None, None, None)
    for bad in ({**good, "run_id": "r"}, {"kind": "closed"}, {**good, "kind": 3}):
        with pytest.raises(ValueError, match="malformed"):
            replies.from_json(replies.QueryEvent, json.dumps(bad))


def test_java_refuses_a_spec_with_a_field_it_does_not_know_or_lacks(spark):
    _, record = _engine_class(spark, "streamsql.engine.spec.NetChanges")
    good = json.loads(specs.to_json(specs.NetChanges(keys=("k",), row=("k", "v"))))
    for bad in ({**good, "sign": "__sign"}, {"keys": ["k"]}):
        with pytest.raises(Exception, match="malformed NetChanges specification"):
            static_call(spark, SPECS_CLASS, "read", ("java.lang.String", json.dumps(bad)), ("java.lang.Class", record))


def test_python_and_java_define_the_same_engine_columns(spark):
    assert json.loads(static_call(spark, SPECS_CLASS, "columns")) == columns.ALL


def test_a_lookup_join_spec_never_shows_its_credentials():
    spec = specs.LookupJoin(url="jdbc:postgresql://db/x?password=s3cret", driver=None,
                            properties=(specs.ConnectionProperty("password", "s3cret"),), table="t", columns=("a",),
                            column_types="{}", key_columns=(0,), keys=("k",), passed=("a",), left_outer=False,
                            chunk=1000)
    assert "s3cret" not in repr(spec)
