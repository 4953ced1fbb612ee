"""Flink's SQL hints (``/*+ NAME(args) */``), read out of a query's text before it is parsed.

* ``OPTIONS('k' = 'v', …)`` after a table's name (in FROM, or after INSERT INTO's target) is a
  table hint: that scan or sink runs with these options over the table's WITH options. The
  table is checked against its connector's declared options again, with them.
* Query hints, after SELECT: the join hints ``BROADCAST``, ``SHUFFLE_HASH``, ``SHUFFLE_MERGE``,
  ``NEST_LOOP`` choose a join strategy in Flink's batch mode and change no row; ``LOOKUP``
  tunes a lookup join (async, capacity, timeout). They are accepted and have no effect here.
  ``LOOKUP``'s retry options make a lookup that missed try again later, which can change the
  rows, and ``STATE_TTL`` gives one operator's inputs their own state retention: both are
  refused by name (``SET 'table.exec.state.ttl'`` is the whole pipeline's retention).
* A hint Flink does not know is an error in Flink ("Hint: X should be registered in the
  HintStrategyTable"); the job refuses it by name.

A hint is replaced by blanks of its length, so every position in the query stays the user's.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Mapping, Optional

from job.errors import Origin, PipelineError
from job.sql.tokens import IDENT, QUOTED, STRING, TokenStream

JOIN_HINTS = ("BROADCAST", "SHUFFLE_HASH", "SHUFFLE_MERGE", "NEST_LOOP")
KNOWN = JOIN_HINTS + ("LOOKUP", "STATE_TTL", "OPTIONS")
# LOOKUP's options that only tune how the lookup is done.
LOOKUP_TUNING = {"table", "async", "output-mode", "capacity", "timeout"}


@dataclass(frozen=True)
class Hint:
    name: str
    start: int                          # where '/*+' is in the query text
    end: int                            # just after '*/'
    on_table: bool                      # after a table's name, not after SELECT
    options: Mapping[str, str] = field(default_factory=dict)
    origin: Optional[Origin] = field(default=None, compare=False)   # where '/*+' is in the user's file
    option_origins: Mapping[str, Origin] = field(default_factory=dict, compare=False)


def extract(text: str, origin: Origin, statement: Optional[str]) -> tuple[str, list[Hint]]:
    """The text with every hint blanked out, and the hints, checked."""
    hints: list[Hint] = []
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'`":
            end = text.find(c, i + 1)
            while end >= 0 and text[end + 1:end + 2] == c:
                end = text.find(c, end + 2)
            i = n if end < 0 else end + 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*+", i):
            end = text.find("*/", i + 3)
            if end < 0:
                raise PipelineError("the hint /*+ … is not closed with */", origin=origin.offset(text, i),
                                    statement=statement)
            on_table = not re.search(r"\bSELECT\s*$", text[:i], re.IGNORECASE)
            hints += parse(text, i, end + 2, on_table, origin, statement)
            for j in range(i, end + 2):
                if out[j] != "\n":
                    out[j] = " "
            i = end + 2
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            i += 1
    return "".join(out), hints


def parse(text: str, start: int, end: int, on_table: bool, origin: Origin, statement) -> list[Hint]:
    # The hint's body, blanks in place of what is around it, so that positions stay the query's.
    body = re.sub(r"[^\n]", " ", text[:start + 3]) + text[start + 3:end - 2]
    ts = TokenStream(body, origin, text if statement is None else statement)
    hints = []
    while True:
        word = ts.identifier("a hint name (OPTIONS, BROADCAST, LOOKUP, …)")
        name = word.value.upper()
        if name not in KNOWN:
            guess = difflib.get_close_matches(name, KNOWN, n=1, cutoff=0.6)
            raise ts.error(f"unknown hint '{word.value}': Flink has no such hint", word,
                           hint=(f"did you mean {guess[0]}? " if guess else "") + "Flink's hints: " + ", ".join(KNOWN))
        options: dict[str, str] = {}
        origins: dict[str, Origin] = {}
        if ts.accept("("):
            while not ts.accept(")"):
                key = ts.next()
                if key.kind not in (STRING, IDENT, QUOTED):
                    raise ts.expected(f"{name}'s arguments", key)
                if ts.accept("="):
                    options[key.value] = ts.string(f"a value for '{key.value}' as a 'single-quoted' string").value
                    origins[key.value] = ts.origin_at(key.start)
                else:
                    options[key.value] = ""
                if not ts.at(")"):
                    ts.expect(",", what=f"',' or ')' in {name}(…)")
        _check(ts, word, name, options, on_table)
        hints.append(Hint(name, start, end, on_table, options, origin.offset(text, start), origins))
        if not ts.accept(","):
            ts.expect_end("the hint")
            return hints


def _check(ts: TokenStream, word, name: str, options: dict, on_table: bool) -> None:
    if name == "OPTIONS" and not on_table:
        raise ts.error("OPTIONS is a table hint: write it after the table's name (FROM t /*+ OPTIONS(…) */)", word)
    if name != "OPTIONS" and on_table:
        raise ts.error(f"{name} is a query hint: write it after SELECT (SELECT /*+ {name}(…) */ …)", word)
    if name == "OPTIONS" and (not options or any(v == "" for v in options.values())):
        raise ts.error("OPTIONS takes 'key' = 'value' pairs", word)
    if name == "STATE_TTL":
        raise ts.error("the STATE_TTL hint is not supported: the job's stateful operators keep state for one "
                       "retention, the pipeline's", word,
                       hint="SET 'table.exec.state.ttl' = '…' sets it for every operator")
    if name == "LOOKUP":
        retry = sorted(k for k in options if k not in LOOKUP_TUNING)
        if retry:
            raise ts.error(f"LOOKUP hint option '{retry[0]}' is not supported: a lookup retried after a miss can "
                           "find a row a first lookup did not", word,
                           hint="the job looks each row up once, as LOOKUP without retry options does")


def synthetic_name(table: str, hint: Hint) -> str:
    """The name a table read or written with an OPTIONS hint is registered under: one per hint,
    named after the table and where the hint is (the hint's place, not its text, so two hints
    never share one)."""
    where = hint.origin
    return f"{table}__options_{re.sub(r'[^0-9A-Za-z]+', '_', str(where.source))}_{where.line}_{where.column}"


def attach(tree, hints: list[Hint], origin: Origin, text: str, statement) -> tuple:
    """Each OPTIONS hint to the table whose name it follows: that table node is renamed to the
    hint's table (:func:`synthetic_name`) and keeps its name as its alias. Returns
    ``((synthetic, table name as written, hint), …)``."""
    from sqlglot import expressions as exp

    ends = [(t.this.meta["end"], t) for t in tree.find_all(exp.Table)
            if isinstance(t.this, exp.Identifier) and t.this.meta.get("end") is not None]
    out = []
    for hint in (h for h in hints if h.on_table):
        end, table = max(((e, t) for e, t in ends if e < hint.start), key=lambda et: et[0], default=(None, None))
        if table is None or text[end + 1:hint.start].strip():
            raise PipelineError("an OPTIONS hint must follow a table's name (FROM t /*+ OPTIONS(…) */)",
                                origin=origin.offset(text, hint.start), statement=statement)
        name = table.name
        written = ".".join(p for p in (table.catalog, table.db, name) if p)
        synthetic = synthetic_name(name, hint)
        if not table.alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(name)))
        table.set("this", exp.to_identifier(synthetic))
        table.set("db", None)
        table.set("catalog", None)
        out.append((synthetic, written, hint))
    return tuple(out)
