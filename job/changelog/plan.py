"""SELECT → a chain of changelog operators in one streaming query.

sqlglot gives the query's shape (FROM, JOINs, WHERE, GROUP BY, HAVING, the select
list); every per-row expression is handed back to Spark as SQL over internal column
names, so filters, projections, CASE and all of Spark's functions work anywhere. Only
what Spark cannot do on a changelog — normalizing upserts, joining and aggregating with
retractions — runs in the operators of :mod:`job.changelog.operators`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional

import sqlglot
from sqlglot import exp

from job.catalog import Catalog
from job.changelog import operators as ops
from job.changelog.relation import (NET, ROW_JSON, SIGN, Field, PendingJoin, Rel, conjuncts, output_name,
                                    reject_unsupported, rewrite)
from job.connectors.base import APPEND, UPSERT, SourceStream
from job.errors import PipelineError

BUCKET = "__bucket"
NO_KEY = "__no_key"  # a join input row whose key never matches (see Planner.join_input)
SUPPORTED_AGGS = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
WINDOW_FUNCTIONS = ("window", "session_window", "tumble", "hop", "session", "cumulate", "spark_window",
                    "flink_session")


def parse_select(sql: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise PipelineError(f"cannot parse the query: {first.get('description', exc)}",
                            hint="the query is Spark SQL; check the statement near this position") from None


def on_text(pairs) -> str:
    """A join's equalities as the user wrote them, for --explain."""
    return ", ".join(a.sql(dialect="spark") + " = " + b.sql(dialect="spark") for a, b in pairs)


# The SELECT clauses the planner plans. Any other one (LATERAL VIEW, QUALIFY, WINDOW, …)
# is refused: left out of the plan, the query would run as if it were not there.
PLANNED_CLAUSES = {"with_", "with", "hint", "expressions", "distinct", "from_", "from", "joins", "where", "group",
                   "having"}
CLAUSE_NAMES = {"laterals": "LATERAL VIEW", "qualify": "QUALIFY", "windows": "WINDOW", "distribute": "DISTRIBUTE BY",
                "sort": "SORT BY", "cluster": "CLUSTER BY", "sample": "TABLESAMPLE", "pivots": "PIVOT"}


def refuse_unplanned(node: exp.Select) -> None:
    """Refuse, before anything is planned, what a changelog query cannot do: clauses the
    planner does not plan, grouping sets, and window functions or subqueries in any
    expression (Spark would fail only when the query starts, naming internal columns;
    and an aggregate inside a subquery must not be taken for this query's)."""
    for clause in ("order", "limit", "offset"):
        if node.args.get(clause):
            raise PipelineError(f"{clause.upper()} is not supported in a streaming query",
                                hint="a streaming result has no order; sort where you read the sink")
    for clause, value in node.args.items():
        if value and clause not in PLANNED_CLAUSES:
            raise PipelineError(f"{CLAUSE_NAMES.get(clause, clause.upper())} is not supported on a changelog")
    group = node.args.get("group")
    if group is not None and (any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup", "totals", "all"))
                              or any(isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)) for e in group.expressions)):
        raise PipelineError("GROUP BY ALL, ROLLUP, CUBE and GROUPING SETS are not supported on a changelog",
                            hint="name the group columns; write one INSERT per grouping")
    parts = [(item, "the select list") for item in node.expressions]
    parts += [(node.args[c], where) for c, where in (("where", "WHERE"), ("group", "GROUP BY"), ("having", "HAVING"))
              if node.args.get(c)]
    parts += [(join.args["on"], "ON") for join in node.args.get("joins") or [] if join.args.get("on")]
    for part, where in parts:
        reject_unsupported(part, where)


def is_windowed(group: Optional[exp.Expression]) -> bool:
    if group is None:
        return False
    return any(f.name.lower() in WINDOW_FUNCTIONS or type(f).__name__.lower() in WINDOW_FUNCTIONS
               for f in group.find_all(exp.Func))


class Planner:
    """Plans one INSERT's SELECT. ``open_source(table)`` returns the table's
    :class:`SourceStream` with its bad-record policy already applied."""

    def __init__(self, spark, catalog: Catalog, open_source: Callable[[object], SourceStream], buckets: int) -> None:
        self.spark = spark
        self.catalog = catalog
        self.open_source = open_source
        self.buckets = buckets
        self._n = 0
        self._ctes: dict[str, exp.Expression] = {}

    # ------------------------------------------------------------------ helpers
    def fresh(self, prefix: str = "_c") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def bucket(self, key_col):
        from pyspark.sql import functions as F

        return F.pmod(F.xxhash64(key_col), F.lit(self.buckets)).alias(BUCKET)

    def stateful(self, df, processor, schema: str):
        return df.groupBy(BUCKET).transformWithStateInPandas(processor, schema, "Append", "None")

    def empty_like(self, *rels: Rel):
        """An empty batch DataFrame with the rels' columns, for Spark to type expressions."""
        from pyspark.sql.types import StructType

        fields = [f for rel in rels for f in rel.schema_of().fields]
        return self.spark.createDataFrame([], StructType(fields))

    @staticmethod
    def row_json(cols: list[str]):
        from pyspark.sql import functions as F

        return F.to_json(F.struct(*[F.col(f"`{c}`") for c in cols]), ROW_JSON)

    @staticmethod
    def from_row_json(column: str, schema):
        from pyspark.sql import functions as F

        parsed = F.from_json(F.col(column), schema, ROW_JSON)
        return [parsed[f.name].alias(f.name) for f in schema.fields]

    # ------------------------------------------------------------------ queries
    def plan(self, sql: str) -> Rel:
        return self.query(parse_select(sql))

    def query(self, node: exp.Expression) -> Rel:
        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if isinstance(node, exp.Union):
            rel = self.union_all([self.query(node.this), self.query(node.expression)])
            return self.distinct(rel) if node.args.get("distinct") else rel
        if not isinstance(node, exp.Select):
            raise PipelineError(f"'{node.key.upper()}' is not supported as a streaming query",
                                hint="write INSERT INTO … SELECT …")
        refuse_unplanned(node)
        with_ = node.args.get("with_") or node.args.get("with")
        if with_:
            for cte in with_.expressions:
                self._ctes[cte.alias.lower()] = cte.this
        from_ = node.args.get("from_") or node.args.get("from")
        if from_ is None:
            raise PipelineError("a streaming query needs a FROM clause")
        rel = self.relation(from_.this)
        for join in node.args.get("joins") or []:
            rel = self.join(rel, self.relation(join.this), join)
        rel = self.settle(rel)
        if node.args.get("where"):
            rel = self.filter(rel, node.args["where"].this, "WHERE")
        group = node.args.get("group")
        has_aggs = any(True for item in node.expressions for _ in self.agg_calls(item))
        if group is not None or has_aggs or node.args.get("having"):
            if is_windowed(group):
                raise PipelineError("a windowed GROUP BY needs an append-only input, but this query reads a changelog",
                                    hint="window aggregations run on Spark's native operators over append-only tables")
            return self.aggregate(rel, node)
        rel = self.project(rel, node.expressions)
        return self.distinct(rel) if node.args.get("distinct") else rel

    def relation(self, node: exp.Expression) -> Rel:
        alias = node.alias_or_name if hasattr(node, "alias_or_name") else None
        if isinstance(node, exp.Subquery):
            return self.requalify(self.query(node.this), node.alias or None)
        if not isinstance(node, exp.Table):
            raise PipelineError(f"'{node.sql(dialect='spark')}' is not supported in FROM",
                                hint="use table names, views or subqueries")
        name = node.name
        if name.lower() in self._ctes:
            return self.requalify(self.query(self._ctes[name.lower()]), alias)
        view = self.catalog.view(name)
        if view is not None:
            rel = self.requalify(self.plan(view.query), alias)
            if view.column_names:
                rel.fields = [Field(n, f.qualifier, f.col) for n, f in zip(view.column_names, rel.fields)]
            return rel
        table = self.catalog.table(name)
        if table is None:
            raise PipelineError(f"table or view '{name}' is not defined", hint="define it with CREATE TABLE or CREATE VIEW first")
        return self.scan(table, alias or name)

    @staticmethod
    def requalify(rel: Rel, alias: Optional[str]) -> Rel:
        rel.fields = [Field(f.name, alias, f.col) for f in rel.fields]
        return rel

    # ------------------------------------------------------------------ scan
    def scan(self, table, alias: str) -> Rel:
        from pyspark.sql import functions as F

        stream = self.open_source(table)
        df = stream.df
        names = [c.name for c in table.columns]
        fields = [Field(n, alias, self.fresh()) for n in names]
        renamed = [F.col(f"`{n}`").alias(f.col) for n, f in zip(names, fields)]
        if stream.mode == APPEND:
            return Rel(df.select(*renamed, F.lit(1).alias(SIGN)), fields, append_only=True,
                       steps=[f"scan {table.name}: append-only"])
        if stream.mode == UPSERT:
            pk_cols = tuple(f.col for f in fields if f.name in table.primary_key)
            staged = df.select(*renamed, F.col("__kind").alias("kind"), F.col("__seq_major").alias("seq_major"),
                               F.col("__seq_minor").alias("seq_minor"))
            return Rel(staged, fields, append_only=False, unique_key=frozenset(pk_cols), pending_upsert=pk_cols,
                       steps=[f"scan {table.name}: upsert source keyed by ({', '.join(table.primary_key)})"])
        sign = F.when(F.col("__kind").isin("+I", "+U"), F.lit(1)).otherwise(F.lit(-1))
        return Rel(df.select(*renamed, sign.alias(SIGN)), fields, append_only=False,
                   steps=[f"scan {table.name}: changelog source (+I/-U/+U/-D → signed rows)"])

    def settle(self, rel: Rel) -> Rel:
        """Normalize a pending upsert table: latest row per key → retractions."""
        from pyspark.sql import functions as F

        if rel.pending_join is not None:
            return self.settle_join(rel)
        if rel.pending_upsert is None:
            return rel
        cols = rel.cols()
        prepared = rel.df.select(self.row_json(list(rel.pending_upsert)).alias("k"), self.row_json(cols).alias("row"),
                                 "kind", "seq_major", "seq_minor")
        prepared = prepared.select(self.bucket(F.col("k")), "*")
        normalized = self.stateful(prepared, ops.Normalize(), ops.Normalize.OUTPUT)
        out = normalized.select(*self.from_row_json("row", rel.schema_of()), F.col("sign").alias(SIGN))
        return Rel(out, rel.fields, append_only=False, unique_key=rel.unique_key, computed=rel.computed,
                   steps=rel.steps + [f"normalize by PRIMARY KEY into retractions [stateful, {self.buckets} buckets]"])

    # ------------------------------------------------------------------ filter / project
    def filter(self, rel: Rel, cond: exp.Expression, where: str, replacements: Optional[dict] = None) -> Rel:
        from pyspark.sql import functions as F

        rel = self.settle(rel)
        rel.df = rel.df.filter(F.expr(rewrite(cond, rel, where, replacements)))
        rel.net_key = None
        return rel

    def expand(self, rel: Rel, items: list[exp.Expression]) -> list[tuple[str, exp.Expression]]:
        """Select items → (output name, expression), with * and t.* expanded."""
        out = []
        for item in items:
            if isinstance(item, exp.Star):
                out += [(f.name, exp.column(f.name, f.qualifier)) for f in rel.fields]
            elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
                q = item.table.lower()
                out += [(f.name, exp.column(f.name, f.qualifier)) for f in rel.fields if (f.qualifier or "").lower() == q]
            else:
                out.append((output_name(item), item.this if isinstance(item, exp.Alias) else item))
        return out

    def project(self, rel: Rel, items: list[exp.Expression], replacements: Optional[dict] = None) -> Rel:
        from pyspark.sql import functions as F

        rel = self.settle(rel)
        selected, fields, renames, computed = [], [], {}, set()
        for name, expression in self.expand(rel, items):
            sql = rewrite(expression, rel, "the select list", replacements)
            col = self.fresh()
            selected.append(F.expr(sql).alias(col))
            fields.append(Field(name, None, col))
            plain = sql.strip("`")
            if sql == f"`{plain}`" and plain in rel.cols():
                renames.setdefault(plain, col)
                if plain in rel.computed:
                    computed.add(col)
            else:
                computed.add(col)
        key = None
        if rel.unique_key is not None and all(c in renames for c in rel.unique_key):
            key = frozenset(renames[c] for c in rel.unique_key)
        net_key = None
        if rel.net_key is not None and all(c in renames for c in rel.net_key):
            net_key = frozenset(renames[c] for c in rel.net_key)
        extra = [F.col(SIGN)] + ([F.col(NET)] if net_key is not None else [])
        return Rel(rel.df.select(*selected, *extra), fields, rel.append_only, key, rel.steps,
                   computed=frozenset(computed), net_key=net_key)

    def union_all(self, rels: list[Rel]) -> Rel:
        from pyspark.sql import functions as F

        rels = [self.settle(r) for r in rels]
        width = len(rels[0].fields)
        if any(len(r.fields) != width for r in rels):
            raise PipelineError("UNION ALL inputs have different numbers of columns")
        cols = [self.fresh() for _ in range(width)]
        frames = [r.df.select(*[F.col(f.col).alias(c) for f, c in zip(r.fields, cols)], F.col(SIGN)) for r in rels]
        df = frames[0]
        for other in frames[1:]:
            df = df.unionByName(other)
        fields = [Field(f.name, None, c) for f, c in zip(rels[0].fields, cols)]
        return Rel(df, fields, all(r.append_only for r in rels), None, sum((r.steps for r in rels), []) + ["union all"])

    # ------------------------------------------------------------------ join
    def join(self, left: Rel, right: Rel, node: exp.Join) -> Rel:
        from pyspark.sql import functions as F

        side = (node.args.get("side") or "").lower()
        kind = {"left": "left", "right": "right", "full": "full"}.get(side, "inner")
        if (node.args.get("kind") or "").lower() == "cross" or (node.args.get("on") is None and not node.args.get("using")):
            raise PipelineError("a streaming join needs an ON clause with at least one equality",
                                hint="cross joins of changelogs are not supported")
        conds = conjuncts(node.args.get("on"))
        for name in node.args.get("using") or []:
            col = name.name if hasattr(name, "name") else str(name)
            # Unqualified on both sides: each resolves in its own input below.
            conds.append(exp.EQ(this=exp.column(col), expression=exp.column(col)))
        pairs, left_only, right_only, mixed = [], [], [], []
        for cond in conds:
            if isinstance(cond, exp.EQ):
                a, b = cond.this, cond.expression
                if left.refers_only_to(a) and right.refers_only_to(b):
                    pairs.append((a, b))
                    continue
                if left.refers_only_to(b) and right.refers_only_to(a):
                    pairs.append((b, a))
                    continue
            if left.refers_only_to(cond):
                left_only.append(cond)
            elif right.refers_only_to(cond):
                right_only.append(cond)
            else:
                mixed.append(cond)
        if not pairs:
            raise PipelineError("a streaming join needs at least one equality between the two sides in its ON clause")
        if mixed and kind != "inner":
            raise PipelineError(f"the {kind.upper()} JOIN condition '{mixed[0].sql(dialect='spark')}' compares both sides "
                                "with something other than '='", hint="move it to WHERE, or make the join INNER")

        # INNER and LEFT joins without conditions of their own, all on one key, become one
        # operator: a pending join on the left is extended when this join uses its key.
        one_key = kind in ("inner", "left") and not (left_only or right_only or mixed)
        extending = left.pending_join is not None and one_key and left.pending_join.extendable
        if left.pending_join is not None and not extending:
            left = self.settle(left)

        # A side-only condition on the *preserved* side of an outer join decides whether
        # the row may match at all (unmatched rows are still emitted, padded with NULLs);
        # on the other side it simply filters the input.
        left_gate = left_only if kind in ("left", "full") else []
        right_gate = right_only if kind in ("right", "full") else []

        # An upsert side joined on exactly its primary key, with no condition of its
        # own, is normalized inside the join (one stateful operator instead of two).
        # The join key must also *be* the primary key: compared after a cast that can map
        # two keys to one (STRING '1' and '01' both become BIGINT 1 when joined with a
        # BIGINT), one key's row would replace the other's.
        key_probe = self.empty_like(left, right)

        def keeps_keys_apart(rel: Rel, keys) -> bool:
            from pyspark.sql.types import IntegralType

            for (a, b), k in zip(pairs, keys):
                la, rb = rewrite(a, left, "the JOIN condition"), rewrite(b, right, "the JOIN condition")
                common = key_probe.select(F.expr(f"coalesce({la}, {rb})")).schema.fields[0].dataType
                own = key_probe.select(F.expr(rewrite(k, rel, "the JOIN condition"))).schema.fields[0].dataType
                if own != common and not (isinstance(own, IntegralType) and isinstance(common, IntegralType)):
                    return False
            return True

        def fusable(rel: Rel, keys, conds) -> bool:
            if rel.pending_upsert is None or conds:
                return False
            plain = [rewrite(k, rel, "the JOIN condition").strip("`") for k in keys]
            return (set(plain) == set(rel.pending_upsert) and len(plain) == len(rel.pending_upsert)
                    and keeps_keys_apart(rel, keys))
        fuse_left = fusable(left, [a for a, _ in pairs], left_only)
        fuse_right = fusable(right, [b for _, b in pairs], right_only)
        if not fuse_left and not extending:
            left = self.settle(left)
        if not fuse_right:
            right = self.settle(right)
        for cond in ([] if left_gate else left_only):
            left = self.filter(left, cond, "the JOIN condition")
        for cond in ([] if right_gate else right_only):
            right = self.filter(right, cond, "the JOIN condition")

        probe = self.empty_like(left, right)
        lkeys, rkeys, lplain, rplain, key_types, lcols, rcols = [], [], set(), set(), [], [], []
        for i, (a, b) in enumerate(pairs):
            la, rb = rewrite(a, left, "the JOIN condition"), rewrite(b, right, "the JOIN condition")
            common = probe.select(F.expr(f"coalesce({la}, {rb})")).schema.fields[0].dataType
            key_types.append(common)
            lcols.append(la.strip("`"))
            rcols.append(rb.strip("`"))
            lkeys.append(F.expr(la).cast(common).alias(f"k{i}"))
            rkeys.append(F.expr(rb).cast(common).alias(f"k{i}"))
            if la.strip("`") in left.cols():
                lplain.add(la.strip("`"))
            if rb.strip("`") in right.cols():
                rplain.add(rb.strip("`"))
        if extending:
            pending = left.pending_join
            if key_types == pending.key_types and all(c in cols for c, cols in zip(lcols, pending.anchors)) \
                    and len(lcols) == len(pending.anchors):
                return self.extend_join(left, right, kind, rkeys, rcols, fuse_right, lplain, rplain, pairs)
            left = self.settle(left)

        lp, rp = self.join_input(left, lkeys, 0, left_gate), self.join_input(right, rkeys, 1, right_gate)
        upsert_sides = tuple(side for side, fused in ((0, fuse_left), (1, fuse_right)) if fused)
        # Rows that cannot match (NULL key) need no state: an outer side passes them
        # through padded with NULLs, an inner side drops them.
        passthrough = []
        if kind in ("left", "full") and not fuse_left:
            passthrough.append((0, lp.filter(NO_KEY).drop(NO_KEY)))
        if kind in ("right", "full") and not fuse_right:
            passthrough.append((1, rp.filter(NO_KEY).drop(NO_KEY)))
        # Per key part, the columns that hold the key in every output row: the left key
        # (left rows are never padded in an INNER or LEFT join), and an INNER join's right key.
        anchors = [{c for c in ({lc, rc} if kind == "inner" else {lc}) if c in left.cols() + right.cols()}
                   for lc, rc in zip(lcols, rcols)]
        pending = PendingJoin(
            inputs=[lp, rp], schemas=[left.schema_of(), right.schema_of()], kinds=[kind], upsert_sides=upsert_sides,
            key_types=key_types, anchors=anchors,
            passthrough=passthrough, schema=self.joined_schema(left, right),
            extendable=one_key and all(c in left.cols() for c in lcols))
        key = self.join_key(left, right, kind, lplain, rplain)
        steps = left.steps + right.steps + [
            f"{kind} join on {on_text(pairs)} [stateful, {self.buckets} buckets; emits at once, retracts padded rows when a match arrives"
            + ("; normalizes the upsert " + " and ".join(("left", "right")[s_] for s_ in upsert_sides)
               + " side by its key in the same operator" if upsert_sides else "") + "]"]
        rel = Rel(None, left.fields + right.fields, kind == "inner" and left.append_only and right.append_only, key, steps,
                  computed=left.computed | right.computed, pending_join=pending)
        for cond in (mixed if kind == "inner" else []):
            rel = self.filter(rel, cond, "the JOIN condition")
        return rel

    def extend_join(self, left: Rel, right: Rel, kind: str, rkeys, rcols: list, fuse_right: bool, lplain: set,
                    rplain: set, pairs) -> Rel:
        """One more input for the pending join on ``left``'s key (see :class:`PendingJoin`)."""
        pending = left.pending_join
        side = len(pending.inputs)
        rows = self.join_input(right, rkeys, side, [])
        anchors = pending.anchors
        if kind == "inner":  # an inner-joined input's key equals the key in every output row
            anchors = [a | ({rc} if rc in right.cols() else set()) for a, rc in zip(anchors, rcols)]
        extended = replace(
            pending, inputs=pending.inputs + [rows], schemas=pending.schemas + [right.schema_of()],
            kinds=pending.kinds + [kind], upsert_sides=pending.upsert_sides + ((side,) if fuse_right else ()),
            anchors=anchors, schema=self.joined_schema(left, right),
            # Input 0's NULL-key rows are emitted padded only while every join is LEFT.
            passthrough=pending.passthrough if kind == "left" else [])
        steps = left.steps + right.steps + [
            f"{kind} join on {on_text(pairs)} [same key: joined in the previous join's operator, now {side + 1} inputs"
            + ("; normalizes the upsert right side by its key there" if fuse_right else "") + "]"]
        return Rel(None, left.fields + right.fields, kind == "inner" and left.append_only and right.append_only,
                   self.join_key(left, right, kind, lplain, rplain), steps,
                   computed=left.computed | right.computed, pending_join=extended)

    @staticmethod
    def joined_schema(left: Rel, right: Rel):
        from pyspark.sql.types import StructType

        return StructType(left.schema_of().fields + right.schema_of().fields)

    def join_input(self, rel: Rel, keys, side: int, gates):
        """A join input as the operator reads it: the key as JSON (NULL when a key part is
        NULL or a gate condition fails: such rows never match), the side, and the row.

        Plus :data:`NO_KEY`, true for the rows that never match, for the filters that split
        them off: a filter on ``jk IS NULL`` would be pushed below this projection as the
        whole key expression, computing every row's key JSON twice."""
        from pyspark.sql import functions as F

        null_key = F.lit(False)
        for k in keys:
            null_key = null_key | k.isNull()
        for g in gates:
            null_key = null_key | ~F.coalesce(F.expr(rewrite(g, rel, "the JOIN condition")), F.lit(False))
        jk = F.when(null_key, F.lit(None)).otherwise(F.to_json(F.struct(*keys), ROW_JSON))
        if rel.pending_upsert is not None:  # fused: raw upserts, ordered by the join
            return rel.df.select(jk.alias("jk"), F.lit(side).alias("side"), F.lit(0).alias("sign"),
                                 self.row_json(rel.cols()).alias("row"), "kind", "seq_major", "seq_minor",
                                 null_key.alias(NO_KEY))
        return rel.df.select(jk.alias("jk"), F.lit(side).alias("side"), F.col(SIGN).alias("sign"),
                             self.row_json(rel.cols()).alias("row"), F.lit(None).cast("string").alias("kind"),
                             F.lit(None).cast("string").alias("seq_major"), F.lit(None).cast("long").alias("seq_minor"),
                             null_key.alias(NO_KEY))

    def settle_join(self, rel: Rel) -> Rel:
        """Plan a pending join as its operator: all inputs in one stream, bucketed by key."""
        from pyspark.sql import functions as F

        pending = rel.pending_join
        matched = pending.inputs[0].filter(~F.col(NO_KEY)).drop(NO_KEY)
        for rows in pending.inputs[1:]:
            matched = matched.unionByName(rows.filter(~F.col(NO_KEY)).drop(NO_KEY))
        processor = (ops.Join(pending.kinds[0], pending.upsert_sides) if len(pending.inputs) == 2
                     else ops.StarJoin(tuple(pending.kinds), pending.upsert_sides))
        joined = self.stateful(matched.select(self.bucket(F.col("jk")), "*"), processor, processor.output_schema)
        columns = processor.COLUMNS
        for side, rows in pending.passthrough:
            joined = joined.unionByName(rows.select("sign", *[
                (F.col("row") if i == side else F.lit(None).cast("string")).alias(c) for i, c in enumerate(columns)],
                F.lit(None).cast("string").alias("net")))
        decoded = [col for c, schema_ in zip(columns, pending.schemas) for col in self.from_row_json(c, schema_)]
        # The operator nets by join key. That is the output's unique key when the unique key
        # is one col per key part, each holding that part in every row with the key's own
        # type (a cast is not one-to-one: '1' and '01' join as 1): one row per join key, and
        # rows of one sink key under one join key. NULL-key rows bypass the operator
        # (unnetted), so they rule it out.
        unique = rel.unique_key
        types = {f.name: f.dataType for f in pending.schema.fields}
        per_join_key = (unique is not None and not pending.passthrough and set(pending.kinds) <= {"inner", "left"}
                        and len(unique) == len(pending.anchors)
                        and all(len(unique & anchor) == 1 and types.get(next(iter(unique & anchor))) == key_type
                                for anchor, key_type in zip(pending.anchors, pending.key_types)))
        return Rel(joined.select(*decoded, F.col("sign").alias(SIGN), F.col("net").alias(NET)), rel.fields,
                   rel.append_only, unique, rel.steps, computed=rel.computed,
                   net_key=unique if per_join_key else None)

    @staticmethod
    def join_key(left: Rel, right: Rel, kind: str, lplain: set, rplain: set) -> Optional[frozenset]:
        """A unique key of the join's output, as Flink derives it."""
        lk, rk = left.unique_key, right.unique_key
        if lk is not None and rk is not None and rk <= rplain and kind in ("inner", "left"):
            return lk       # each left row matches at most one right row
        if lk is not None and rk is not None and lk <= lplain and kind in ("inner", "right"):
            return rk
        if lk is not None and rk is not None:
            return lk | rk
        return None

    # ------------------------------------------------------------------ aggregate
    @staticmethod
    def agg_calls(node: exp.Expression):
        """Aggregate calls, each with its FILTER (WHERE …) clause if it has one."""
        for call in node.find_all(exp.AggFunc):
            parent = call.parent
            yield parent if isinstance(parent, exp.Filter) and parent.this is call else call

    @staticmethod
    def agg_parts(call: exp.Expression):
        """(function node, argument, DISTINCT?) of an aggregate call. A FILTER (WHERE c)
        or COUNT_IF(c) becomes the argument ``CASE WHEN c THEN arg END``: every supported
        aggregate skips NULLs, so a row the condition rejects does not count."""
        cond = None
        if isinstance(call, exp.Filter):
            cond, call = call.expression.this, call.this
        if isinstance(call, exp.CountIf):
            cond = call.this if cond is None else exp.and_(cond, call.this)
            call = exp.Count(this=exp.Star())
        arg = call.this
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            if len(arg.expressions) != 1:
                raise PipelineError(f"{call.sql(dialect='spark')}: DISTINCT over several columns is not supported")
            arg = arg.expressions[0]
        if cond is not None and not distinct and isinstance(arg, (exp.Star, exp.Literal)):
            arg = exp.Literal.number(1)
        if cond is not None:
            arg = exp.Case().when(cond.copy(), arg.copy())
        return call, arg, distinct

    def aggregate(self, rel: Rel, node: exp.Select) -> Rel:
        from pyspark.sql import functions as F
        from pyspark.sql.types import DecimalType, FractionalType, IntegralType

        rel = self.settle(rel)
        items = node.expressions
        group = node.args.get("group")
        group_exprs = list(group.expressions) if group is not None else []
        aliases = {output_name(i).lower(): (i.this if isinstance(i, exp.Alias) else i) for i in items}
        resolved_groups = []
        for g in group_exprs:
            if isinstance(g, exp.Literal) and g.is_int:  # GROUP BY 1
                g = (items[int(g.this) - 1].this if isinstance(items[int(g.this) - 1], exp.Alias) else items[int(g.this) - 1])
            elif isinstance(g, exp.Column) and not g.table and not rel.refers_only_to(g) and g.name.lower() in aliases:
                g = aliases[g.name.lower()]
            resolved_groups.append(g)
        if node.args.get("distinct") and not group_exprs:
            resolved_groups = [e for _, e in self.expand(rel, items)]

        calls: list[exp.AggFunc] = []
        for source in list(items) + ([node.args["having"]] if node.args.get("having") else []):
            for call in self.agg_calls(source):
                if call.sql(dialect="spark") not in {c.sql(dialect="spark") for c in calls}:
                    calls.append(call)

        probe = self.empty_like(rel)
        gcols = [f"g{i}" for i in range(len(resolved_groups))]
        gexprs = [F.expr(rewrite(g, rel, "GROUP BY")).alias(c) for g, c in zip(resolved_groups, gcols)]
        specs, arg_exprs, result_types = [], [], []
        for i, call in enumerate(calls):
            function, arg, distinct = self.agg_parts(call)
            fn = SUPPORTED_AGGS.get(type(function))
            if fn is None:
                raise PipelineError(f"aggregate function {call.sql(dialect='spark')} is not supported on a changelog",
                                    hint="supported: COUNT, COUNT(DISTINCT), SUM, AVG, MIN, MAX, each also with "
                                         "FILTER (WHERE …), and COUNT_IF")
            if fn == "count" and (isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not distinct)):
                specs.append(("count_star", "int", False))
                arg_exprs.append(None)
            else:
                arg_sql = rewrite(arg, rel, "an aggregate")
                arg_type = probe.select(F.expr(arg_sql)).schema.fields[0].dataType
                kind = ("decimal" if isinstance(arg_type, DecimalType) else "int" if isinstance(arg_type, IntegralType)
                        else "float" if isinstance(arg_type, FractionalType) else "other")
                if fn in ("sum", "avg") and kind == "other":
                    raise PipelineError(f"{call.sql(dialect='spark')}: {fn.upper()} needs a numeric argument, not {arg_type.simpleString()}")
                specs.append((fn, kind, distinct))
                arg_exprs.append(F.expr(arg_sql).cast("string").alias(f"a{i}"))
            result_types.append(probe.select(F.expr(rewrite(call, rel, "an aggregate"))).schema.fields[0].dataType)

        staged = rel.df.select(*gexprs, *[a for a in arg_exprs if a is not None], F.col(SIGN).alias("sign"))
        group_schema = staged.select(*gcols).schema
        gk = F.to_json(F.struct(*[F.col(c) for c in gcols]), ROW_JSON) if gcols else F.lit("{}")
        prepared = staged.select(gk.alias("gk"), "sign", *[f"a{i}" for i, a in enumerate(arg_exprs) if a is not None])
        processor = ops.Aggregate(specs, global_agg=not gcols)
        result = self.stateful(prepared.select(self.bucket(F.col("gk")), "*"), processor, processor.output_schema)

        fields, selected, replacements = [], [], {}
        parsed = F.from_json(F.col("gk"), group_schema, ROW_JSON)
        for g, c in zip(resolved_groups, gcols):
            col = self.fresh()
            if isinstance(g, exp.Column):
                fields.append(Field(g.name, rel.resolve(g, "GROUP BY").qualifier, col))
            else:
                fields.append(Field(output_name(g), None, col))
            selected.append(parsed[c].alias(col))
            replacements[g.sql(dialect="spark")] = col
        for i, (call, dtype) in enumerate(zip(calls, result_types)):
            col = self.fresh("_a")
            fields.append(Field(f"__agg{i}", None, col))
            selected.append(F.col(f"r{i}").cast(dtype).alias(col))
            replacements[call.sql(dialect="spark")] = col
        group_cols = frozenset(f.col for f in fields[: len(gcols)])
        agg_rel = Rel(result.select(*selected, F.col("sign").alias(SIGN), F.col("net").alias(NET)), fields,
                      append_only=False, unique_key=group_cols, net_key=group_cols if gcols else None,
                      steps=rel.steps + [
                          f"aggregate by ({', '.join(g.sql(dialect='spark') for g in resolved_groups) or 'nothing: one global row'}) "
                          f"computing {', '.join(c.sql(dialect='spark') for c in calls) or 'distinct rows'} "
                          f"[stateful, {self.buckets} buckets; retracts the old result row on every change]"])
        if node.args.get("having"):
            # HAVING reads the aggregate's results: its aggregate calls and group keys are
            # the columns just computed, and (as Spark allows) a select alias that is not an
            # input column stands for its expression.
            def alias_to_expr(n: exp.Expression):
                if (isinstance(n, exp.Column) and not n.table and n.name.lower() in aliases
                        and not rel.refers_only_to(n)):
                    return aliases[n.name.lower()].copy()
                return n

            having = node.args["having"].this.copy().transform(alias_to_expr)
            agg_rel = self.filter(agg_rel, having, "HAVING", replacements)
        if node.args.get("distinct") and not group_exprs:
            replacements = {g.sql(dialect="spark"): f.col for g, f in zip(resolved_groups, fields)}
        return self.project(agg_rel, items, replacements)

    def distinct(self, rel: Rel) -> Rel:
        """SELECT DISTINCT / UNION: group by every column, no aggregates."""
        node = exp.Select(expressions=[exp.column(f.col) for f in rel.fields])
        node.set("group", exp.Group(expressions=[exp.column(f.col) for f in rel.fields]))
        named = Rel(rel.df, [Field(f.col, None, f.col) for f in rel.fields], rel.append_only, rel.unique_key, rel.steps,
                    computed=rel.computed)
        out = self.aggregate(named, node)
        out.fields = [Field(f.name, None, o.col) for f, o in zip(rel.fields, out.fields)]
        return out
