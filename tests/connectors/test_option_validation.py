"""Option validation for the filesystem, datagen, print and blackhole connectors, through
job.connectors.registry.validate_options (no Spark needed)."""
from __future__ import annotations

import pytest

from job.connectors.registry import connectors, validate_options
from job.errors import PipelineError
from job.sql.statements import Column, CreateTable

COLUMNS = (Column("id", "int", "INT"), Column("name", "string", "STRING"))


def table(**options):
    return CreateTable(name="t", columns=COLUMNS, options=options)


def error(role, **options) -> PipelineError:
    with pytest.raises(PipelineError) as err:
        validate_options(table(**options), role)
    return err.value


def test_connectors_are_registered():
    found = connectors()
    for name in ("filesystem", "datagen", "print", "blackhole"):
        assert found[name].identifier == name
        assert found[name].description


# ---------------------------------------------------------------- missing required

@pytest.mark.parametrize("options, missing", [
    ({"connector": "filesystem", "format": "json"}, "path"),
    ({"connector": "filesystem", "path": "/tmp/x"}, "format"),
])
def test_missing_required(options, missing):
    err = error("source", **options)
    assert f"missing required option '{missing}' for connector 'filesystem'" in err.message


# ---------------------------------------------------------------- wrong type

@pytest.mark.parametrize("role, options, key, expected", [
    ("source", {"connector": "datagen", "rows-per-second": "fast"}, "rows-per-second", "must be a whole number"),
    ("source", {"connector": "datagen", "number-of-rows": "1.5"}, "number-of-rows", "must be a whole number"),
    ("source", {"connector": "datagen", "fields.id.null-rate": "half"}, "fields.id.null-rate", "must be a number"),
    ("source", {"connector": "datagen", "fields.id.max-past": "a while"}, "fields.id.max-past", "must be a duration"),
    ("sink", {"connector": "print", "standard-error": "yes"}, "standard-error", "must be 'true' or 'false'"),
    ("source", {"connector": "filesystem", "path": "/x", "format": "json", "source.max-files-per-trigger": "many"},
     "source.max-files-per-trigger", "must be a whole number"),
    ("source", {"connector": "filesystem", "path": "/x", "format": "json", "json.ignore-parse-errors": "maybe"},
     "json.ignore-parse-errors", "must be 'true' or 'false'"),
])
def test_wrong_type(role, options, key, expected):
    err = error(role, **options)
    assert err.option == key
    assert expected in err.message


def test_typed_values_and_defaults():
    _, typed = validate_options(table(**{"connector": "datagen", "number-of-rows": "5", "fields.name.length": "3"}),
                                "source")
    assert typed["number-of-rows"] == 5 and typed["rows-per-second"] == 10000 and typed["fields.name.length"] == 3
    _, typed = validate_options(table(connector="print"), "sink")
    assert typed["standard-error"] is False and "print-identifier" not in typed
    _, typed = validate_options(table(**{"connector": "filesystem", "path": "/x", "format": "json"}), "source")
    assert typed["json.encode.ignore-null-fields"] is False


# ---------------------------------------------------------------- unknown option

@pytest.mark.parametrize("role, options, key, suggestion", [
    ("source", {"connector": "filesystem", "path": "/x", "format": "json", "paht": "/y"}, "paht", "path"),
    ("source", {"connector": "filesystem", "path": "/x", "format": "json", "source.max-file-per-trigger": "1"},
     "source.max-file-per-trigger", "source.max-files-per-trigger"),
    ("source", {"connector": "filesystem", "path": "/x", "format": "json", "json.ignore-parse-error": "true"},
     "json.ignore-parse-error", "json.ignore-parse-errors"),
    ("source", {"connector": "datagen", "rows-per-sec": "1"}, "rows-per-sec", "rows-per-second"),
    ("sink", {"connector": "print", "print-identifer": "x"}, "print-identifer", "print-identifier"),
    ("sink", {"connector": "print", "standard_error": "true"}, "standard_error", "standard-error"),
])
def test_unknown_option_suggests_the_closest(role, options, key, suggestion):
    err = error(role, **options)
    assert err.option == key
    assert f"unknown option '{key}'" in err.message
    assert f"Did you mean '{suggestion}'?" in err.message


def test_unknown_option_without_a_close_match_lists_the_supported_ones():
    err = error("sink", connector="blackhole", colour="red")
    assert "Did you mean" not in err.message
    assert "supported options:" in err.hint


# ---------------------------------------------------------------- bad enum

def test_bad_enum():
    err = error("source", **{"connector": "datagen", "fields.id.kind": "sequense"})
    assert err.option == "fields.id.kind"
    assert "must be one of 'random', 'sequence', got 'sequense'. Did you mean 'sequence'?" in err.message


def test_bad_format_enum_of_a_format_option():
    err = error("source", **{"connector": "filesystem", "path": "/x", "format": "json",
                             "json.timestamp-format.standard": "ISO"})
    assert err.option == "json.timestamp-format.standard"
    assert "must be one of 'SQL', 'ISO-8601'" in err.message


def test_unknown_format():
    err = error("source", connector="filesystem", path="/x", format="jsn")
    assert err.option == "format"
    assert "unknown format 'jsn'" in err.message and "Did you mean 'json'?" in err.message
