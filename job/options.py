"""Table options: how one is declared, what its value may be, and which ones are secret.

A connector or a format declares each option it takes as an :class:`Option` (name, type,
default, description); a table's ``WITH`` values are converted to those types here, and
a problem with one is reported by :func:`table_error`, naming the table and the option
where it was written. The changelog modes a table can have (append, upsert, changelog)
are named here too. This is the bottom layer that connectors and formats both import.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional

from job.errors import EXIT_INVALID, PipelineError

# Changelog modes, in Flink's words.
APPEND = "append"        # inserts only (+I)
UPSERT = "upsert"        # latest row per primary key wins; a delete removes the key
CHANGELOG = "changelog"  # full changelog: +I, -U, +U, -D (e.g. debezium-json)


@dataclass(frozen=True)
class Option:
    """One connector or format option.

    ``name`` may contain ``*`` for a family of options (``properties.*``,
    ``fields.*.kind``): any key matching the pattern is accepted and validated by type.
    """

    name: str
    type: str = "string"              # string | int | bool | double | duration | enum
    required: bool = False
    default: Any = None
    description: str = ""
    choices: tuple[str, ...] = ()     # for enum
    secret: bool = False              # masked in logs, plans and errors

    @property
    def is_pattern(self) -> bool:
        return "*" in self.name

    def matches(self, key: str) -> bool:
        if not self.is_pattern:
            return key == self.name
        regex = "^" + re.escape(self.name).replace(r"\*", "[^=]+") + "$"
        return re.match(regex, key) is not None


# --------------------------------------------------------------------------- errors

def table_error(table, message: str, option: Optional[str] = None, hint: Optional[str] = None,
                exit_code: int = EXIT_INVALID, kind: type[PipelineError] = PipelineError) -> PipelineError:
    """The error (a ``kind``) for a problem with ``table`` (a CreateTable): located at
    ``option``'s place in the WITH clause when it names one, else at the CREATE TABLE
    statement."""
    source = getattr(table, "source", None)
    origin = table.option_origins.get(option) if option else None
    return kind(message, origin=origin or (source.origin if source else None),
                statement=source.text if source else None, option=option, hint=hint, exit_code=exit_code)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


# --------------------------------------------------------------------------- values

def split_list(value: str) -> list[str]:
    """Flink list options are ';'-separated ('key.fields' = 'a;b'); accept ',' too."""
    return [p.strip() for p in re.split(r"[;,]", value or "") if p.strip()]


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|milli|millis|milliseconds?|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?)?\s*$", re.I)
_DURATION_MS = {"ms": 1, "mil": 1, "s": 1000, "se": 1000, "m": 60_000, "mi": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str) -> int | None:
    """'5 s', '10s', '1 min', '500 ms', '2h' → milliseconds (Flink's duration syntax)."""
    m = _DURATION.match(text)
    if not m:
        return None
    unit = (m.group(2) or "ms").lower()
    factor = _DURATION_MS.get(unit[:3]) or _DURATION_MS.get(unit[:2]) or _DURATION_MS[unit[0]]
    return int(float(m.group(1)) * factor)


def convert(opt: Option, key: str, raw: str, fail: Callable[..., None]) -> Any:
    """A raw option string → the declared type; ``fail(message, option=key)`` otherwise."""
    kind = opt.type
    if kind == "string":
        return raw
    if kind == "int":
        try:
            return int(raw.strip())
        except ValueError:
            fail(f"option '{key}' must be a whole number, got '{raw}'", option=key)
    if kind == "double":
        try:
            return float(raw.strip())
        except ValueError:
            fail(f"option '{key}' must be a number, got '{raw}'", option=key)
    if kind == "bool":
        low = raw.strip().lower()
        if low in ("true", "false"):
            return low == "true"
        fail(f"option '{key}' must be 'true' or 'false', got '{raw}'", option=key)
    if kind == "duration":
        ms = parse_duration_ms(raw)
        if ms is None:
            fail(f"option '{key}' must be a duration such as '10 s' or '500 ms', got '{raw}'", option=key)
        return ms
    if kind == "enum":
        if raw in opt.choices:
            return raw
        fail(f"option '{key}' must be one of {', '.join(repr(c) for c in opt.choices)}, got '{raw}'.{did_you_mean(raw, opt.choices)}",
             option=key)
    raise AssertionError(f"option type {kind!r} of {key!r} is not known")


# --------------------------------------------------------------------------- secrets

# Words that make a name secret: an option's ('password', 'sasl.jaas.config'…) or a
# key=value pair's inside a larger value (a JAAS config, a JDBC URL).
SECRET_WORDS = ("password", "passwd", "secret", "token", "credential")
_WORDS = "|".join(SECRET_WORDS)
# Option names that hold secrets even when a connector forgot to declare them so.
_SECRET_NAME = re.compile(rf"({_WORDS}|sasl\.jaas\.config|(^|\.)key$|\.key\.)", re.I)
# key="value" / key='value' pairs inside JAAS configs and JDBC-style strings.
SECRET_QUOTED_PAIR = re.compile(rf"""(?i)\b([A-Za-z_.-]*(?:{_WORDS}|key)[A-Za-z_.-]*)\s*=\s*(["'])(.*?)\2""")
# key=value pairs in URLs / connection strings: ...;password=xyz;... or ?password=xyz&...
SECRET_PLAIN_PAIR = re.compile(rf"""(?i)\b([A-Za-z_.-]*(?:{_WORDS})[A-Za-z_.-]*)=([^;&\s"']+)""")
MASK = "****"


def is_secret_option(key: str) -> bool:
    """True for options whose values must never be shown (masked as ``****``)."""
    return bool(_SECRET_NAME.search(key)) and not key.endswith((".format", ".fields"))


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options safe to print: secrets masked."""
    return {k: (MASK if is_secret_option(k) else v) for k, v in options.items()}
