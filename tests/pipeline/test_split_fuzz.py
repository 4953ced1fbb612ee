"""Property tests for split_statements."""
from hypothesis import given, settings
from hypothesis import strategies as st

from job.errors import Origin, PipelineError
from job.pipeline.split import split_statements

# Text that would break a naive splitter if it leaked out of a literal.
TRICKY = st.sampled_from([";", "--", "/*", "*/", ";;", " ", "\n", "$$", "\\", "a", "é", "\t", "--;"])

identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)


def _quoted(quote: str):
    body = st.lists(st.one_of(TRICKY, st.just(quote), identifiers), max_size=6).map("".join)
    return body.map(lambda b: quote + b.replace(quote, quote * 2) + quote)


tokens = st.one_of(identifiers, _quoted("'"), _quoted("`"), _quoted('"'), st.sampled_from(["=", "(", ")", ",", "*"]))
statements = st.lists(tokens, min_size=1, max_size=8).map(" ".join)


@settings(max_examples=300)
@given(st.lists(statements, max_size=6))
def test_joined_statements_split_back(parts):
    script = ";\n".join(parts)
    result = split_statements(script, Origin("fuzz.sql"))
    assert [s.text for s in result] == parts
    # Each origin is where the statement's text starts in the script.
    lines = script.split("\n")
    for s in result:
        assert lines[s.origin.line - 1][s.origin.column - 1 :].startswith(s.text.split("\n")[0])


@settings(max_examples=300)
@given(
    st.lists(
        st.one_of(TRICKY, st.sampled_from(["'", '"', "`", "*", "/", "-", "\r"]), st.characters()),
        max_size=40,
    ).map("".join)
)
def test_random_text_splits_or_raises_pipeline_error(text):
    try:
        result = split_statements(text, Origin("fuzz.sql"))
    except PipelineError as err:
        assert err.origin is not None and err.origin.source == "fuzz.sql"
        return
    assert isinstance(result, list)
    for s in result:
        assert s.text and s.text == s.text.strip()
        assert not s.text.endswith(";")
