"""A parsed query → a chain of Spark operators with Flink's semantics.

The planner walks the query's Flink tree (:class:`~job.sql.flink.query.Query`) clause
by clause. Every per-row expression (filters, projections, join keys, aggregate
arguments) goes through the translator, which gives Spark SQL with Flink's meaning and
the Flink type of the result. What Spark cannot do on a changelog — normalizing
upserts, joining and aggregating with retractions, ranking, event-time operators — runs
in the engine's stateful operators (:mod:`job.plan.engine`).

A relation is append-only as long as its inputs are and no operator updates what it
emitted; then Spark's own streaming operators compute Flink's result where they can
(filters, projections, window aggregations, interval joins), and the sink receives
inserts only.
"""
from __future__ import annotations

from typing import Callable, Optional

from sqlglot import exp

from job.catalog import Catalog
from job.errors import PipelineError
from job.plan import nodes, values
from job.plan.execution import Execution
from job.plan.nodes import with_mode
from job.plan.relation import NET, SIGN, WATERMARK, Field, Rel, RelScope, conjuncts, output_name
from job.sql.flink.dialect import WindowTVF
from job.sql.flink.query import Query, is_proctime_call
from job.sql.flink.translate import Settings, Translator, Typed

# The SELECT clauses the planner plans; any other one is refused by name (left out of
# the plan, the query would run as if it were not there).
PLANNED_CLAUSES = {"with_", "with", "hint", "expressions", "distinct", "from_", "from", "joins", "where", "group",
                   "having", "order", "limit", "offset", "windows", "qualify"}
CLAUSE_NAMES = {"laterals": "LATERAL VIEW", "distribute": "DISTRIBUTE BY", "sort": "SORT BY",
                "cluster": "CLUSTER BY", "sample": "TABLESAMPLE", "pivots": "PIVOT", "match": "MATCH_RECOGNIZE",
                "connect": "CONNECT BY", "prewhere": "PREWHERE", "locks": "FOR UPDATE"}


class Planner:
    """Plans one INSERT's query. ``open_source(table)`` returns the table's source stream
    (a :class:`~job.connectors.base.SourceStream`) with its bad-record policy applied."""

    def __init__(self, spark, catalog: Catalog, open_source: Callable, settings: Optional[Settings] = None,
                 execution: Optional[Execution] = None) -> None:
        self.spark = spark
        self.catalog = catalog
        self.open_source = open_source
        self.settings = settings or Settings()
        # Which calls name a user's aggregate function (job.sql.flink.functions.is_aggregate)
        # depends on the pipeline's CREATE FUNCTIONs: this planner's settings say.
        from job.sql.flink.functions import PLANNING

        PLANNING.set(self.settings)
        self.execution = execution or Execution()
        self._n = 0
        self._queries: list[Query] = []     # the query (or view) being planned, innermost last
        self._root: Optional[Query] = None
        self._statement_copy: Optional[exp.Select] = None
        # False: the tables are read without their WATERMARK, for processing-time windows
        # (job.plan.processing_time).
        self.table_watermarks = True
        self._ctes: list[dict] = []
        # The longest event-time span an operator waits for (window size, session gap,
        # interval bound): what the end of a bounded input must advance time by. None:
        # the query has no event-time operator.
        self.event_time_span_ms: Optional[int] = None
        # While a SELECT with LISTAGG, FIRST_VALUE, LAST_VALUE or ARRAY_AGG plans its FROM, a
        # normalized changelog keeps each change's position, so that those functions
        # apply the changes in the order Flink does (see job.plan.aggregates).
        self.keeps_positions = False
        # The engine operators' specs (job.changelog.specs), in the order planning called
        # them: each plan node of an engine operator takes its own (spec_for).
        self._specs: list = []

    def ran(self, spec) -> None:
        """Planning called an engine operator with ``spec``."""
        self._specs.append(spec)

    def spec_for(self, kind):
        """The latest spec of type ``kind`` (an operator's spec class, or its name) not taken
        by a plan node yet; None when there is none."""
        for i in range(len(self._specs) - 1, -1, -1):
            spec = self._specs[i]
            if (isinstance(kind, str) and getattr(spec, "operator", None) == kind) or \
                    (not isinstance(kind, str) and isinstance(spec, kind)):
                return self._specs.pop(i)
        return None

    @property
    def state_ttl_ms(self) -> int:
        return self.execution.state_ttl_ms

    def uses_current_watermark(self) -> bool:
        """Does the query (or a view it reads, being planned) call CURRENT_WATERMARK?"""
        return any(call.name.upper() == "CURRENT_WATERMARK" for q in self._queries
                   for call in q.tree.find_all(exp.Anonymous))

    def waits_for(self, span_ms: int) -> None:
        if not self.table_watermarks:
            from job.plan.processing_time import refuse_event_time

            refuse_event_time(self)
        self.event_time_span_ms = max(self.event_time_span_ms or 0, span_ms)

    # ------------------------------------------------------------------ helpers
    @property
    def current(self) -> Query:
        """The query (or view) being planned; after planning, the INSERT's own query."""
        return self._queries[-1] if self._queries else self._root

    def fresh(self, prefix: str = "_c") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def error(self, node, message: str, hint: Optional[str] = None) -> PipelineError:
        return self.current.error(node, message, hint)

    def translator(self, rel: Rel, where: str, replacements: Optional[dict] = None) -> Translator:
        return Translator(self.current, RelScope(rel, where, replacements, self.current), self.settings)

    def expr(self, rel: Rel, node: exp.Expression, where: str, replacements: Optional[dict] = None) -> Typed:
        return self.translator(rel, where, replacements).expr(node)

    # ------------------------------------------------------------------ entry
    def plan(self, query: Query) -> Rel:
        root = not self._queries
        if root:
            self._root = query
        self._queries.append(query)
        try:
            rel = self.query(query.tree)
            if root:
                from job.plan.current_watermark import finish_query

                rel = finish_query(self, rel, query)
            return rel
        finally:
            self._queries.pop()

    def is_statement_query(self, node: exp.Expression) -> bool:
        """Is ``node`` the statement's own query (not a subquery, a CTE's or a view's)?"""
        tree = self._root.tree if self._root is not None and len(self._queries) == 1 else None
        while isinstance(tree, exp.Subquery):
            tree = tree.this
        return tree is not None and (node is tree or node is self._statement_copy)

    def planned_as_statement_query(self, copy: exp.Select) -> None:
        """``copy`` (a rewritten copy of the statement's query) stands for it from now on."""
        self._statement_copy = copy

    def query(self, node: exp.Expression) -> Rel:
        from job.plan import setops

        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
            return setops.plan_set_operation(self, node)
        if isinstance(node, exp.Values):
            return values.plan_values(self, node)
        if not isinstance(node, exp.Select):
            raise self.error(node, f"'{node.key.upper()}' is not supported as a query")
        return self.select(node)

    def select(self, node: exp.Select) -> Rel:
        from job.plan import aggregate_calls, aggregates, ranking, subqueries

        self.refuse_unplanned(node)
        node, hidden_order_keys = ranking.with_hidden_order_keys(self, node)
        with_ = node.args.get("with_") or node.args.get("with")
        self._ctes.append({cte.alias.lower(): cte.this for cte in (with_.expressions if with_ else [])})
        keeps_positions = self.keeps_positions
        self.keeps_positions = keeps_positions or aggregates.depends_on_order(node)
        try:
            from_ = node.args.get("from_") or node.args.get("from")
            if from_ is None:
                return values.plan_select_without_from(self, node)
            topn = ranking.plan_topn_source(self, node)
            if topn is not None:  # FROM (SELECT …, ROW_NUMBER() OVER (…) AS rn …) WHERE rn <= N
                rel, rest = topn
                for cond in rest:
                    rel = subqueries.plan_where(self, rel, cond)
            else:
                node, scalars = subqueries.lift_scalar_subqueries(self, node)
                where = node.args.get("where")
                pending = conjuncts(where.this) if where is not None else []
                rel = self.from_clause(from_.this, node.args.get("joins") or [], pending)
                for alias, scalar, group_keys in scalars:  # (SELECT MAX(x) FROM t): joined in, then a column
                    rel = subqueries.join_scalar(self, rel, alias, scalar, group_keys)
                if pending:
                    rel = subqueries.plan_where(self, rel, exp.and_(*pending) if len(pending) > 1 else pending[0])
            if aggregate_calls.is_aggregating(node):
                rel = aggregates.plan_aggregate(self, rel, node)
            elif any(isinstance(w, exp.Window) for item in node.expressions for w in item.find_all(exp.Window)):
                from job.plan import over

                rel = over.plan_over(self, rel, node)
            else:
                rel = self.project(rel, node.expressions)
                if node.args.get("distinct"):
                    rel = self.distinct(rel)
            return ranking.without_hidden_order_keys(self.order_limit(rel, node), hidden_order_keys)
        finally:
            self._ctes.pop()
            self.keeps_positions = keeps_positions

    def refuse_unplanned(self, node: exp.Select) -> None:
        for clause, value in node.args.items():
            if value and clause not in PLANNED_CLAUSES:
                raise self.error(node, f"{CLAUSE_NAMES.get(clause, clause.upper())} is not supported")
        if node.args.get("qualify"):
            raise self.error(node.args["qualify"], "QUALIFY is not Flink SQL",
                             hint="filter the ranked rows in an outer query: SELECT … FROM (SELECT …, ROW_NUMBER() "
                                  "OVER (…) AS rn FROM t) WHERE rn <= N")
        group = node.args.get("group")
        if group is not None and group.args.get("all"):
            raise self.error(group, "GROUP BY ALL is not Flink SQL", hint="name the group columns")
        if group is not None and any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup", "totals")):
            # MySQL's GROUP BY a WITH ROLLUP, Hive's GROUP BY a GROUPING SETS (…) without a comma
            raise self.error(group, "this form of GROUP BY is not Flink SQL",
                             hint="write GROUP BY ROLLUP (a, b), CUBE (a, b) or a, GROUPING SETS ((a, b), (a), ())")

    # ------------------------------------------------------------------ FROM
    def from_clause(self, first: exp.Expression, joins: list, where: Optional[list] = None) -> Rel:
        """The FROM clause's relations joined. ``where``: the WHERE clause's conditions; a
        join without ON (``FROM a, b`` or ``CROSS JOIN``) takes the ones that compare its
        two sides, as Flink's optimizer moves them into the join (they leave ``where``)."""
        from job.plan import joins as join_planner

        rel = self.relation(first)
        for join in joins:
            if where and join_planner.is_cross(join) and isinstance(join.this, (exp.Table, exp.Subquery)):
                join = join_planner.with_where_conditions(self, rel, join, where)
            rel = join_planner.plan_join(self, rel, join)
        return self.settle(rel)

    def relation(self, node: exp.Expression) -> Rel:
        from job.plan import windows

        alias = node.alias_or_name if hasattr(node, "alias_or_name") else None
        if isinstance(node, exp.Subquery):
            rel = self.query(node.this)
            return self.aliased(rel, node)
        if isinstance(node, WindowTVF):
            return windows.plan_window_tvf(self, node)
        if isinstance(node, exp.Values):
            return self.aliased(values.plan_values(self, node), node)
        if isinstance(node, exp.Unnest):
            raise self.error(node, "UNNEST is supported in CROSS JOIN UNNEST(…) and LEFT JOIN UNNEST(…) ON TRUE")
        if isinstance(node, exp.Lateral):
            raise self.error(node, "LATERAL TABLE(…) is supported after a table it joins, as in FROM t, LATERAL "
                                   "TABLE(f(…)); on its own in FROM it is not supported yet")
        if not isinstance(node, exp.Table):
            raise self.error(node, f"'{self.current.flink_sql(node)}' is not supported in FROM")
        if node.args.get("version") is not None:
            raise self.error(node, "FOR SYSTEM_TIME AS OF is only supported on the right side of a JOIN")
        name = node.name
        for ctes in reversed(self._ctes):
            if name.lower() in ctes:
                return self.aliased(self.query(ctes[name.lower()]), node)
        view = self.catalog.view(name)
        if view is not None:
            rel = self.plan(view.parsed)
            if view.column_names:
                if len(view.column_names) != len(rel.fields):
                    raise self.error(node, f"view '{view.name}' names {len(view.column_names)} columns but its "
                                           f"query has {len(rel.fields)}")
                rel.fields = [Field(n, f.qualifier, f.col, f.type, f.time) for n, f in zip(view.column_names, rel.fields)]
            return self.requalify(rel, alias or name)
        table = self.catalog.table(name)
        if table is None:
            import difflib

            known = sorted(list(self.catalog.tables) + list(self.catalog.views))
            close = difflib.get_close_matches(name.lower(), known, n=1, cutoff=0.6)
            raise self.error(node, f"Object '{name}' not found: no table or view of that name in this pipeline",
                             hint=(f"did you mean '{close[0]}'? Otherwise declare" if close else "declare")
                                  + " it with CREATE TABLE or CREATE VIEW first"
                                  + (f" (declared: {', '.join(known)})" if known else ""))
        from job.plan.scan import scan

        return scan(self, table, alias or name)

    def aliased(self, rel: Rel, node: exp.Expression) -> Rel:
        alias = node.args.get("alias")
        if alias is None:
            return self.requalify(rel, None)
        columns = [c.name for c in alias.args.get("columns") or []]
        if columns:
            if len(columns) != len(rel.fields):
                raise self.error(node, f"the alias names {len(columns)} columns but the relation has {len(rel.fields)}")
            rel.fields = [Field(n, f.qualifier, f.col, f.type, f.time) for n, f in zip(columns, rel.fields)]
        return self.requalify(rel, alias.name or None)

    @staticmethod
    def requalify(rel: Rel, alias: Optional[str]) -> Rel:
        rel.fields = [f.requalified(alias) for f in rel.fields]
        return rel

    def settle(self, rel: Rel) -> Rel:
        """Plan what a relation left pending (an upsert table to normalize, joins on one
        key to run as one operator), so that its ``df`` holds signed rows."""
        from job.plan import engine, joins

        if rel.pending_join is not None:
            return joins.settle_join(self, rel)
        if rel.pending_upsert is not None:
            return engine.normalize(self, rel)
        return rel

    # ------------------------------------------------------------------ filter / project
    def filter(self, rel: Rel, cond: exp.Expression, where: str, replacements: Optional[dict] = None) -> Rel:
        from pyspark.sql import functions as F

        rel = self.settle(rel)
        value = self.translator(rel, where, replacements).condition(cond, where)
        rel.df = rel.df.filter(F.expr(value.sql))
        rel.net_key = None
        rel.steps = rel.steps + [with_mode(nodes.spark("filter", f"filter: {self.current.flink_sql(cond)}"), rel.mode)]
        return rel

    def expand(self, rel: Rel, items: list[exp.Expression]) -> list[tuple[str, Optional[exp.Expression], Optional[Field]]]:
        """Select items → (output name, expression or None, field for a plain star column)."""
        out: list = []
        for position, item in enumerate(items):
            if isinstance(item, exp.Star):
                out += [(f.name, None, f) for f in rel.fields if f.name != WATERMARK]
            elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
                q = item.table.lower()
                matched = [f for f in rel.fields if (f.qualifier or "").lower() == q and f.name != WATERMARK]
                if not matched:
                    raise self.error(item, f"unknown table '{item.table}' in '{item.table}.*'")
                out += [(f.name, None, f) for f in matched]
            else:
                out.append((output_name(item, position), item.this if isinstance(item, exp.Alias) else item, None))
        return out

    def project(self, rel: Rel, items: list[exp.Expression], replacements: Optional[dict] = None,
                where: str = "the select list") -> Rel:
        from pyspark.sql import functions as F

        rel = self.settle(rel)
        tr = self.translator(rel, where, replacements)
        selected, fields, renames, computed = [], [], {}, set()
        for name, expression, star_field in self.expand(rel, items):
            col = self.fresh()
            if star_field is not None:
                value = Typed(f"`{star_field.col}`", star_field.type)
            else:
                value = tr.expr(expression)
            # A value that is one of the input's columns as it is (keys and time
            # attributes survive the projection).
            plain = value.sql[1:-1] if value.sql.startswith("`") and value.sql.endswith("`") else None
            source = rel.field_of(plain) if plain in rel.cols() else None
            if source is not None and source.time == "rowtime" and source.col in renames:
                # The same event-time column twice (a Top-N's hidden order key, SELECT ts,
                # ts): Spark allows one column with a watermark per stream, so the copy
                # leaves the watermark's mark behind.
                selected.append(F.expr(value.sql).alias(col, metadata={}))
            else:
                selected.append(F.expr(value.sql).alias(col))
            time = source.time if source is not None else "proctime" if is_proctime_call(expression) else None
            fields.append(Field(name, None, col, value.type, time))
            if source is not None:
                renames.setdefault(source.col, col)
                if source.col in rel.computed:
                    computed.add(col)
            else:
                computed.add(col)
        key = None
        if rel.unique_key is not None and all(c in renames for c in rel.unique_key):
            key = frozenset(renames[c] for c in rel.unique_key)
        net_key = None
        if rel.net_key is not None and all(c in renames for c in rel.net_key):
            net_key = frozenset(renames[c] for c in rel.net_key)
        for hidden in (f for f in rel.fields if f.name == WATERMARK):  # CURRENT_WATERMARK's, passed on
            selected.append(F.col(f"`{hidden.col}`"))
            fields.append(Field(WATERMARK, None, hidden.col, hidden.type))
        extra = ([F.col(SIGN)] if SIGN in rel.df.columns else []) + ([F.col(NET)] if net_key is not None else [])
        return Rel(rel.df.select(*selected, *extra), fields, rel.append_only, key, rel.steps,
                   computed=frozenset(computed), net_key=net_key, arrival_order=rel.arrival_order)

    def signed(self, rel: Rel):
        """``rel.df`` with a ``__sign`` column (append-only relations have none)."""
        from pyspark.sql import functions as F

        rel = self.settle(rel)
        if SIGN not in rel.df.columns:
            return rel.df.select(*[F.col(c) for c in rel.cols()], F.lit(1).alias(SIGN))
        return rel.df

    def distinct(self, rel: Rel) -> Rel:
        """SELECT DISTINCT: group by every column, no aggregates."""
        from job.plan import aggregates

        return aggregates.group_by_all(self, rel)

    # ------------------------------------------------------------------ ORDER BY / LIMIT
    def order_limit(self, rel: Rel, node: exp.Select) -> Rel:
        from job.plan import ranking

        order, limit, offset = node.args.get("order"), node.args.get("limit"), node.args.get("offset")
        if order is None and limit is None and offset is None:
            return rel
        return ranking.plan_order_limit(self, rel, node)
