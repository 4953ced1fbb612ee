"""Flink SQL as a sqlglot dialect: what a Flink user writes, read as Flink reads it.

sqlglot has no Flink dialect. This one starts from sqlglot's base grammar and changes
what Flink (Calcite with Flink's settings) reads differently:

* **Literals and names.** ``'it''s'`` is the only escape in a string: a backslash is an
  ordinary character (``'\\d+'`` is the regex ``\\d+``, not ``d+``). Names are quoted
  with backticks; double quotes are not a quote in Flink and are refused.
* **Functions keep their Flink name.** sqlglot normally turns ``DATE_FORMAT`` or
  ``REGEXP_EXTRACT`` into its own typed nodes, sometimes rewriting the arguments on the
  way (format strings, argument order). Here every function call stays an
  ``exp.Anonymous`` with the name and the arguments as written, and the special call
  syntaxes (``SUBSTRING(s FROM 2 FOR 3)``, ``POSITION(a IN b)``, ``TRIM(BOTH 'x' FROM
  s)``, ``OVERLAY(…)``, ``EXTRACT(unit FROM e)``, ``CEIL(t TO DAY)``, ``CURRENT_DATE``…)
  are brought to the same form: ``exp.Anonymous`` with positional arguments, a time unit
  as ``exp.Var``. Only :mod:`job.sql.flink.functions` gives a function its meaning.
* **Types in CAST are Flink types** (``ROW<a INT>``, ``TIMESTAMP_LTZ(3)``, ``STRING``,
  ``MULTISET<INT>``…), parsed by the same parser as the DDL and kept as
  :class:`TypeRef` (the text as written).
* **Window table functions** ``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1'
  MINUTE))``, with positional or named (``DATA => …``) arguments and ``TABLE t PARTITION
  BY k`` for SESSION, become :class:`WindowTVF`.
* ``MAP[k, v, …]`` becomes ``exp.Anonymous('MAP', …)`` (sqlglot reads it as indexing a
  column named MAP); ``ARRAY[…]`` is ``exp.Array``; ``ROW(…)`` stays a call.
* ``INTERVAL '10' MINUTE`` (also plural units, and ``DAY TO SECOND`` spans) is read by
  Flink's rules into ``exp.Interval`` with the unit as written.
* NULLs sort first in ascending order and last in descending order, as in Flink.

What the dialect cannot read is a parse error at the user's line and column; what it
reads but the job does not support is refused later, by name, by the translator or the
planner.
"""
from __future__ import annotations

from sqlglot import exp, generator, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType


class TypeRef(exp.Expression):
    """A Flink type as written in CAST / TRY_CAST (``this``: the text)."""

    arg_types = {"this": True}


class Descriptor(exp.Expression):
    """``DESCRIPTOR(col, …)``: the time column argument of a window TVF."""

    arg_types = {"expressions": True}


class TableArg(exp.Expression):
    """``TABLE name [PARTITION BY k, …]``: the table argument of a window TVF."""

    arg_types = {"this": True, "partition_by": False}


class WindowTVF(exp.Expression):
    """``TABLE(TUMBLE|HOP|CUMULATE|SESSION(args))`` in FROM. ``this``: the function name
    (upper case); ``expressions``: the arguments, each a :class:`TableArg`,
    :class:`Descriptor`, an expression, or ``exp.Kwarg`` for ``NAME => value``."""

    arg_types = {"this": True, "expressions": True, "alias": False}

    @property
    def alias(self) -> str:
        alias = self.args.get("alias")
        return alias.name if alias is not None else ""


# Time units Flink reads as keywords (EXTRACT, CEIL/FLOOR … TO, TIMESTAMPADD/DIFF).
TIME_UNITS = {
    "MILLENNIUM", "CENTURY", "DECADE", "YEAR", "YEARS", "QUARTER", "QUARTERS", "MONTH", "MONTHS", "WEEK",
    "WEEKS", "DAY", "DAYS", "HOUR", "HOURS", "MINUTE", "MINUTES", "SECOND", "SECONDS", "MILLISECOND",
    "MILLISECONDS", "MICROSECOND", "MICROSECONDS", "NANOSECOND", "NANOSECONDS", "DOW", "DOY", "EPOCH",
    "ISODOW", "ISOYEAR", "SQL_TSI_DAY",
}



class Flink(Dialect):
    NULL_ORDERING = "nulls_are_small"

    class Tokenizer(tokens.Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ["`"]
        STRING_ESCAPES = ["'"]
        # Flink function names that sqlglot's tokenizer would read as keywords.
        KEYWORDS = {k: v for k, v in tokens.Tokenizer.KEYWORDS.items()
                    if k not in ("SESSION", "SESSION_USER", "MAP", "STRUCT", "MINUS", "DIV", "ILIKE", "RLIKE",
                                 "QUALIFY", "PIVOT", "UNPIVOT", "SORT BY", "CLUSTER BY", "DISTRIBUTE BY")}
        KEYWORDS["MAP"] = TokenType.MAP

    class Parser(parser.Parser):
        # Every function call stays an exp.Anonymous: the function library gives meanings.
        FUNCTIONS: dict = {}
        FUNCTION_PARSERS = {
            "CAST": lambda self: self._parse_flink_cast(safe=False),
            "TRY_CAST": lambda self: self._parse_flink_cast(safe=True),
            "EXTRACT": lambda self: self._parse_extract(),
            "POSITION": lambda self: self._parse_position(),
            "TRIM": lambda self: self._parse_trim(),
            "SUBSTRING": lambda self: self._parse_substring(),
            "OVERLAY": lambda self: self._parse_overlay(),
            "CEIL": lambda self: self._parse_ceil_floor(exp.Ceil),
            "FLOOR": lambda self: self._parse_ceil_floor(exp.Floor),
            "JSON_VALUE": lambda self: self._parse_json_call("JSON_VALUE"),
            "JSON_QUERY": lambda self: self._parse_json_call("JSON_QUERY"),
            "JSON_EXISTS": lambda self: self._parse_json_call("JSON_EXISTS"),
            "JSON_OBJECT": lambda self: self._parse_json_call("JSON_OBJECT"),
            "JSON_ARRAY": lambda self: self._parse_json_call("JSON_ARRAY"),
            "JSON_OBJECTAGG": lambda self: self._parse_json_call("JSON_OBJECTAGG"),
            "JSON_ARRAYAGG": lambda self: self._parse_json_call("JSON_ARRAYAGG"),
        }
        NO_PAREN_FUNCTION_PARSERS = {
            "CASE": lambda self: self._parse_case(),
        }
        # NULL keeps its position: an untyped NULL is refused where it is written.
        PRIMARY_PARSERS = {
            **parser.Parser.PRIMARY_PARSERS,
            TokenType.NULL: lambda self, token: self._parse_null_literal(token),
        }
        STRICT_CAST = True

        # ------------------------------------------------------------------ CASE
        def _parse_case(self):
            """CASE as sqlglot reads it, plus Flink's ``CASE x WHEN v1, v2 THEN …`` (several
            values for one branch, kept as an ``exp.Tuple``)."""
            if self._match(TokenType.DOT, advance=False):
                self._retreat(self._index - 1)
                return None
            ifs = []
            default = None
            subject = self._parse_disjunction()
            while self._match(TokenType.WHEN):
                values = [self._parse_disjunction()]
                while subject is not None and self._match(TokenType.COMMA):
                    values.append(self._parse_disjunction())
                this = values[0] if len(values) == 1 else exp.Tuple(expressions=values)
                self._match(TokenType.THEN)
                ifs.append(self.expression(exp.If(this=this, true=self._parse_disjunction())))
            if self._match(TokenType.ELSE):
                default = self._parse_disjunction()
            if not self._match(TokenType.END):
                self.raise_error("Expected END after CASE", self._prev)
            return self.expression(exp.Case(this=subject, ifs=ifs, default=default))

        # ------------------------------------------------------------------ GROUP BY
        # ROLLUP (…), CUBE (…) and GROUPING SETS (…) take any expression, a comparison too
        # (``ROLLUP (amount > 4)``), as Flink's; sqlglot reads only arithmetic there.
        def _parse_cube_or_rollup(self, with_prefix: bool = False):
            if with_prefix:
                return super()._parse_cube_or_rollup(with_prefix)
            kind = exp.Cube if self._match(TokenType.CUBE) else exp.Rollup if self._match(TokenType.ROLLUP) else None
            if kind is None:
                return None
            return self.expression(kind(expressions=self._parse_wrapped_csv(self._parse_disjunction)))

        def _parse_grouping_set(self):
            return self._parse_grouping_sets() or self._parse_cube_or_rollup() or self._parse_disjunction()

        def _parse_null_literal(self, token) -> exp.Expression:
            node = self.expression(exp.Null())
            node.meta.update(line=token.line, col=token.col, start=token.start, end=token.end)
            return node

        # ------------------------------------------------------------------ CAST
        def _parse_flink_cast(self, safe: bool) -> exp.Expression:
            this = self._parse_assignment()
            if not self._match(TokenType.ALIAS):
                self.raise_error("Expected AS in CAST")
            to = self._parse_type_text()
            node = exp.TryCast if safe else exp.Cast
            return self.expression(node(this=this, to=to))

        def _parse_type_text(self, stop: tuple = ()) -> TypeRef:
            """The tokens of a type up to the closing ')' (or a word in ``stop``) at depth 0,
            kept as their source text for the Flink type parser."""
            if not self._curr:
                self.raise_error("Expected a type")
            first = self._curr
            last = None
            depth = 0
            while self._curr:
                tt = self._curr.token_type
                if depth == 0 and (tt in (TokenType.R_PAREN, TokenType.COMMA)
                                   or self._curr.text.upper() in stop):
                    break
                if tt in (TokenType.L_PAREN, TokenType.LT):
                    depth += 1
                elif tt in (TokenType.R_PAREN, TokenType.GT):
                    depth -= 1
                last = self._curr
                self._advance()
            if last is None:
                self.raise_error("Expected a type")
            text = self.sql[first.start:last.end + 1]
            ref = TypeRef(this=text)
            ref.meta.update(line=first.line, col=first.col, start=first.start, end=last.end)
            return ref

        # ------------------------------------------------------------------ JSON
        def _parse_json_call(self, name: str) -> exp.Expression:
            """JSON_* calls: arguments, then Flink's clauses (RETURNING type, … ON EMPTY,
            … ON ERROR, WITH/WITHOUT [CONDITIONAL|UNCONDITIONAL] [ARRAY] WRAPPER, NULL|ABSENT
            ON NULL, KEY k VALUE v) kept as ``JsonClause`` entries of the call."""
            args: list[exp.Expression] = []
            clauses: list[exp.Expression] = []
            name_token = self._tokens[self._index - 2] if self._index >= 2 else None
            while self._curr and self._curr.token_type != TokenType.R_PAREN:
                word = self._curr.text.upper()
                if word == "KEY" and name in ("JSON_OBJECT", "JSON_OBJECTAGG"):
                    self._advance()
                    key = self._parse_bitwise()
                    if not self._match_text_seq("VALUE"):
                        self.raise_error("Expected VALUE after the key in " + name)
                    value = self._parse_assignment()
                    args.append(exp.Tuple(expressions=[key, value]))
                elif word == "RETURNING":
                    self._advance()
                    clauses.append(JsonClause(this="RETURNING", expression=self._parse_type_text(
                        stop=("ON", "DEFAULT", "NULL", "ERROR", "EMPTY", "WITH", "WITHOUT", "TRUE", "FALSE",
                              "UNKNOWN"))))
                elif word in ("WITH", "WITHOUT") and name == "JSON_QUERY":
                    words = []
                    while self._curr and self._curr.text.upper() != "WRAPPER":
                        words.append(self._curr.text.upper())
                        self._advance()
                    self._match_text_seq("WRAPPER")
                    clauses.append(JsonClause(this="WRAPPER", expression=exp.Var(this=" ".join(words))))
                elif word in ("NULL", "ABSENT") and self._next and self._next.text.upper() == "ON" \
                        and name in ("JSON_OBJECT", "JSON_ARRAY", "JSON_OBJECTAGG", "JSON_ARRAYAGG"):
                    self._advance(3)  # NULL|ABSENT ON NULL
                    clauses.append(JsonClause(this="ON NULL", expression=exp.Var(this=word)))
                elif word in ("NULL", "ERROR", "DEFAULT", "EMPTY", "TRUE", "FALSE", "UNKNOWN") and args \
                        and self._on_clause_ahead():
                    behaviour = word
                    self._advance()
                    value = None
                    if word == "DEFAULT":
                        value = self._parse_bitwise()
                    elif word == "EMPTY":  # EMPTY ARRAY|OBJECT ON …
                        behaviour = "EMPTY " + self._curr.text.upper()
                        self._advance()
                    self._match_text_seq("ON")
                    when = self._curr.text.upper()
                    self._advance()
                    clauses.append(JsonClause(this="ON " + when, expression=exp.Var(this=behaviour), value=value))
                elif self._curr.token_type == TokenType.COMMA:
                    self._advance()
                else:
                    arg = self._parse_assignment()
                    if name in ("JSON_OBJECT", "JSON_OBJECTAGG") and self._curr \
                            and self._curr.text.upper() == "VALUE":
                        self._advance()  # key VALUE value (KEY is optional)
                        arg = exp.Tuple(expressions=[arg, self._parse_assignment()])
                    args.append(arg)
            node = self.expression(exp.Anonymous(this=name, expressions=args + clauses))
            if name_token is not None and name_token.text.upper() == name:  # where the call is written
                node.meta.update(line=name_token.line, col=name_token.col, start=name_token.start,
                                 end=name_token.end)
            return node

        def _on_clause_ahead(self) -> bool:
            """Is the current token the start of a ``… ON EMPTY|ERROR`` clause?"""
            for i in range(0, 5):
                token = self._tokens[self._index + i] if self._index + i < len(self._tokens) else None
                if token is None or token.token_type in (TokenType.R_PAREN, TokenType.COMMA):
                    return False
                if token.text.upper() == "ON" and i > 0:
                    return True
            return False

        # ------------------------------------------------------------------ INTERVAL
        def _parse_interval(self, require_interval: bool = True, parse_function_unit: bool = True):
            """``INTERVAL [+|-]'text' unit [(p)] [TO unit [(p)]]`` or ``INTERVAL n unit``."""
            index = self._index
            if not self._match(TokenType.INTERVAL):
                if require_interval:
                    return None
            negative = False
            if self._match(TokenType.DASH):
                negative = True
            else:
                self._match(TokenType.PLUS)
            if self._curr and self._curr.token_type == TokenType.STRING:
                value = exp.Literal.string(self._curr.text)
                self._advance()
            elif self._curr and self._curr.token_type == TokenType.NUMBER:
                value = exp.Literal.string(self._curr.text)
                self._advance()
            else:
                self._retreat(index)
                return None
            if not self._curr or self._curr.text.upper() not in TIME_UNITS:
                self.raise_error("Expected a time unit after the INTERVAL literal (e.g. INTERVAL '10' SECOND)")
            unit = self._curr.text.upper()
            self._advance()
            self._skip_precision()
            if self._match_text_seq("TO"):
                if not self._curr or self._curr.text.upper() not in TIME_UNITS:
                    self.raise_error("Expected a time unit after TO")
                unit = f"{unit} TO {self._curr.text.upper()}"
                self._advance()
                self._skip_precision()
            node = exp.Interval(this=value, unit=exp.Var(this=unit))
            return exp.Neg(this=node) if negative else node

        def _skip_precision(self) -> None:
            if self._curr and self._curr.token_type == TokenType.L_PAREN and self._next \
                    and self._next.token_type == TokenType.NUMBER:
                self._advance(2)
                if self._match(TokenType.COMMA):
                    self._advance()
                self._match(TokenType.R_PAREN)

        # ------------------------------------------------------------------ FROM
        def _parse_table(self, schema: bool = False, joins: bool = False, alias_tokens=None,
                         parse_bracket: bool = False, is_db_reference: bool = False,
                         parse_partition: bool = False, consume_pipe: bool = False):
            if (not schema and self._curr and self._curr.token_type == TokenType.TABLE
                    and self._next and self._next.token_type == TokenType.L_PAREN):
                return self._parse_window_tvf()
            return super()._parse_table(schema=schema, joins=joins, alias_tokens=alias_tokens,
                                        parse_bracket=parse_bracket, is_db_reference=is_db_reference,
                                        parse_partition=parse_partition, consume_pipe=consume_pipe)

        def _parse_window_tvf(self) -> exp.Expression:
            start = self._curr
            self._advance(2)  # TABLE (
            name_token = self._curr
            name = name_token.text.upper()
            self._advance()
            if not self._match(TokenType.L_PAREN):
                self.raise_error(f"Expected '(' after {name}")
            args: list[exp.Expression] = []
            while True:
                args.append(self._parse_tvf_arg())
                if not self._match(TokenType.COMMA):
                    break
            if not self._match(TokenType.R_PAREN):
                self.raise_error(f"Expected ')' to close {name}(…)")
            if not self._match(TokenType.R_PAREN):
                self.raise_error("Expected ')' to close TABLE(…)")
            node = WindowTVF(this=name, expressions=args)
            node.meta.update(line=name_token.line, col=name_token.col, start=start.start, end=name_token.end)
            alias = self._parse_table_alias()
            if alias:
                node.set("alias", alias)
            return node

        def _parse_tvf_arg(self) -> exp.Expression:
            if self._curr and self._next and self._next.token_type == TokenType.FARROW:
                key = exp.var(self._curr.text.upper())
                self._advance(2)
                return exp.Kwarg(this=key, expression=self._parse_tvf_arg())
            if self._match(TokenType.TABLE):
                table = self._parse_table_parts()
                partition = None
                if self._match(TokenType.PARTITION_BY) or self._match_text_seq("PARTITION", "BY"):
                    # One column, or several in parentheses: a bare comma ends the argument.
                    if self._match(TokenType.L_PAREN):
                        partition = self._parse_csv(self._parse_column)
                        self._match_r_paren()
                    else:
                        partition = [self._parse_column()]
                return TableArg(this=table, partition_by=partition)
            if self._curr and self._curr.text.upper() == "DESCRIPTOR" and self._next \
                    and self._next.token_type == TokenType.L_PAREN:
                self._advance(2)
                cols = self._parse_csv(self._parse_column)
                self._match_r_paren()
                return Descriptor(expressions=cols)
            return self._parse_assignment()

    class Generator(generator.Generator):
        """Flink SQL text of a tree, for --explain and messages."""

        TRANSFORMS = {
            **generator.Generator.TRANSFORMS,
            TypeRef: lambda self, e: e.this,
            Descriptor: lambda self, e: f"DESCRIPTOR({self.expressions(e, flat=True)})",
            TableArg: lambda self, e: "TABLE " + self.sql(e, "this") + (
                " PARTITION BY " + ", ".join(self.sql(p) for p in e.args["partition_by"])
                if e.args.get("partition_by") else ""),
            WindowTVF: lambda self, e: f"TABLE({e.this}({self.expressions(e, flat=True)}))"
                                       + (f" AS {self.sql(e, 'alias')}" if e.args.get("alias") else ""),
        }


class JsonClause(exp.Expression):
    """A clause of a JSON_* call: ``this`` names it (RETURNING, ON EMPTY, ON ERROR, ON NULL,
    WRAPPER), ``expression`` is its setting, ``value`` a DEFAULT value."""

    arg_types = {"this": True, "expression": False, "value": False}


Flink.Generator.TRANSFORMS[JsonClause] = lambda self, e: f"{e.this} {self.sql(e, 'expression')}"

DIALECT = Flink()
