"""Writing a jdbc table: each micro-batch staged by Spark's JDBC writer, then merged into
the table in one transaction (see the package docstring).
"""
from __future__ import annotations

import hashlib
from typing import Optional

from job.connectors.base import Sink, SinkError
from job.connectors.hadoop import sink_id
from job.connectors.jdbc.database import UNREACHABLE_STATES, Database, qualified, safe_url, sql_error, states
from job.connectors.jdbc.dialects import can_hold
from job.errors import EXIT_OTHER, PipelineError
from job.options import table_error

COMMITS_TABLE = "streamsql_sink_commits"
OP_COLUMN = "streamsql_op"
STAGE_PREFIX = "streamsql_stage_"


def _verify_columns(db: Database, table, columns: dict, wanted) -> dict[str, str]:
    """Declared column → the database's spelling; every column must exist and fit."""
    actual = {}
    for col in wanted:
        meta = columns.get(col.name.lower())
        if meta is None:
            raise table_error(table, f"table '{db.options['table-name']}' in the database has no column '{col.name}' "
                                     f"(declared in table '{table.name}')", option="table-name",
                              hint="its columns: " + ", ".join(m["name"] for m in columns.values())
                              + "; add the column or change the declaration")
        why = can_hold(col, meta)
        if why is not None:
            raise table_error(table, f"column '{meta['name']}' of table '{db.options['table-name']}' is {meta['type_name']}"
                                     f"{'(' + str(meta['size']) + ')' if meta['size'] and 'char' in meta['type_name'].lower() else ''}"
                                     f", which cannot hold the declared {col.flink_type} of '{col.name}' (table '{table.name}'): "
                                     f"{why}", option="table-name",
                              hint="change the column's type in the database or the declared type")
        actual[col.name] = meta["name"]
    return actual


class JdbcSink(Sink):
    """Stage each micro-batch, then merge it into the table in one transaction."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.table = ctx.table
        self.options = ctx.options
        self.target = ctx.options["table-name"]
        self.pk = list(ctx.table.primary_key)
        self.cols = [c for c in ctx.table.columns if c.is_persisted]
        self.db = Database(ctx.spark, ctx.table, ctx.options)
        self.dialect = self.db.dialect
        key = hashlib.sha1(ctx.checkpoint.encode()).hexdigest()[:16]
        self.stage = qualified(self.target, STAGE_PREFIX + key)
        self.commits = qualified(self.target, COMMITS_TABLE)
        self.names = {c.name: c.name for c in self.cols}  # declared → database spelling
        self._sink_id: Optional[str] = None
        if not ctx.offline:
            self.prepare()

    # -- before the query starts
    def prepare(self) -> None:
        db, table = self.db, self.table
        columns = db.columns(self.target)
        if columns is None and self.options.get("sink.create-table"):
            self.create_table()
            columns = db.columns(self.target)
        if columns is None:
            raise table_error(table, f"table '{self.target}' does not exist in the database at '{safe_url(db.url)}' "
                                     f"(table '{table.name}')", option="table-name",
                              hint="create it, fix 'table-name', or set 'sink.create-table' = 'true'")
        self.names = _verify_columns(db, table, columns, self.cols)
        if self.pk:
            some = next(iter(columns.values()))
            keys = db.unique_keys(some["schema"], some["table"])
            if {p.lower() for p in self.pk} not in keys:
                raise table_error(table, f"table '{self.target}' has no primary key or unique index on "
                                         f"({', '.join(self.names[p] for p in self.pk)}), which the upserts of table "
                                         f"'{table.name}' need", option="table-name",
                                  hint=f"ALTER TABLE {self.target} ADD PRIMARY KEY ({', '.join(self.names[p] for p in self.pk)})")
        else:
            self.create_commits_table()
        self.create_stage()

    def create_table(self) -> None:
        q = self.dialect.quote
        defs = []
        for col in self.cols:
            is_key = col.name in self.pk
            null = " NOT NULL" if is_key or not col.nullable else ""
            defs.append(f"{q(col.name)} {self.dialect.types(col, is_key)}{null}")
        if self.pk:
            defs.append(f"PRIMARY KEY ({', '.join(q(p) for p in self.pk)})")
        self._ddl(f"CREATE TABLE IF NOT EXISTS {self.target} ({', '.join(defs)})", "sink.create-table")

    def create_commits_table(self) -> None:
        self._ddl(f"CREATE TABLE IF NOT EXISTS {self.commits} (sink_id VARCHAR(64) NOT NULL, batch_id BIGINT NOT NULL, "
                  "table_name VARCHAR(512), PRIMARY KEY (sink_id, batch_id))", "table-name")

    def create_stage(self) -> None:
        q = self.dialect.quote
        columns = ", ".join([q(self.names[c.name]) for c in self.cols]
                            + [f"CAST(NULL AS CHAR(1)) AS {q(OP_COLUMN)}"])
        self._ddl(f"DROP TABLE IF EXISTS {self.stage}", "table-name")
        self._ddl(self.dialect.create_stage.format(stage=self.stage, columns=columns, table=self.target), "table-name")

    def _ddl(self, sql: str, option: str) -> None:
        try:
            self.db.execute(sql)
        except PipelineError:
            raise
        except Exception as exc:  # noqa: BLE001
            _state, message = sql_error(exc)
            if "already exists" in message:  # a concurrent CREATE … IF NOT EXISTS won the race
                return
            raise table_error(self.table, f"table '{self.target}': {message} (while running: {sql[:200]})", option=option)

    # -- per micro-batch
    def write_append(self, batch, batch_id):
        from pyspark.sql import functions as F

        if self.pk:  # a keyed table takes inserts as upserts (the last row per key wins)
            return self._write(_last_per_key(batch, self.pk).withColumn("__op", F.lit("+U")), batch_id, append=False)
        return self._write(batch.withColumn("__op", F.lit("+I")), batch_id, append=True)

    def write_changes(self, batch, batch_id):
        self._write(batch, batch_id, append=not self.pk)

    def _write(self, batch, batch_id: int, *, append: bool) -> None:
        try:
            self._write_batch(batch, batch_id, append=append)
        except SinkError:
            raise
        except PipelineError as err:  # reconnecting failed: tell it through the runner as is
            raise _in_batch(err, batch_id) from None

    def _write_batch(self, batch, batch_id: int, *, append: bool) -> None:
        from pyspark.sql import functions as F

        db, q = self.db, self.dialect.quote
        conn = db.connect()
        sink_id = self.sink_id() if append else None
        if append and self._committed(conn, sink_id, batch_id):
            return
        op = F.when(F.col("__op").isin("-D", "-U"), F.lit("D")).otherwise(F.lit("U"))
        staged = batch.select(*[F.col(f"`{c.name}`").alias(self.names[c.name]) for c in self.cols], op.alias(OP_COLUMN))
        db.execute(f"TRUNCATE TABLE {self.stage}", conn)
        try:
            (staged.write.format("jdbc").options(**db.spark_options()).option("dbtable", self.stage)
             .option("batchsize", str(self.options["sink.buffer-flush.max-rows"])).mode("append").save())
        except Exception as exc:  # noqa: BLE001
            raise self.write_error(exc, batch_id) from None
        cols = ", ".join(q(self.names[c.name]) for c in self.cols)
        statements = []
        if append:
            statements.append(f"INSERT INTO {self.target} ({cols}) SELECT {cols} FROM {self.stage}")
            statements.append(f"INSERT INTO {self.commits} (sink_id, batch_id, table_name) "
                              f"VALUES ('{sink_id}', {int(batch_id)}, '{self.target.replace(chr(39), chr(39) * 2)}')")
            statements.append(f"DELETE FROM {self.commits} WHERE sink_id = '{sink_id}' AND batch_id < {int(batch_id)}")
        else:
            keys = ", ".join(q(self.names[p]) for p in self.pk)
            others = [self.names[c.name] for c in self.cols if c.name not in self.pk]
            statements.append(f"DELETE FROM {self.target} WHERE ({keys}) IN "
                              f"(SELECT {keys} FROM {self.stage} WHERE {q(OP_COLUMN)} = 'D')")
            statements.append(f"INSERT INTO {self.target} ({cols}) SELECT {cols} FROM {self.stage} "
                              f"WHERE {q(OP_COLUMN)} = 'U'" + self.dialect.upsert([self.names[p] for p in self.pk], others))
        conn.setAutoCommit(False)
        try:
            for sql in statements:
                db.execute(sql, conn)
            conn.commit()
        except Exception as exc:  # noqa: BLE001
            try:
                conn.rollback()
            except Exception:  # noqa: BLE001 - the connection is gone; the server rolled back
                pass
            raise self.write_error(exc, batch_id) from None
        finally:
            try:
                conn.setAutoCommit(True)
                db.execute(f"TRUNCATE TABLE {self.stage}", conn)
            except Exception:  # noqa: BLE001 - emptied before the next batch anyway
                pass

    def _committed(self, conn, sink_id: str, batch_id: int) -> bool:
        rows = self.db.query(f"SELECT MAX(batch_id) FROM {self.commits} WHERE sink_id = '{sink_id}'", conn)
        last = rows[0][0] if rows else None
        return last is not None and int(last) >= batch_id

    def write_error(self, exc, batch_id: int) -> SinkError:
        state, message = sql_error(exc)
        if states(state, UNREACHABLE_STATES) or "Connection refused" in message or "I/O error" in message:
            return _in_batch(self.db.connect_error(exc), batch_id)
        return table_error(self.table, f"micro-batch {batch_id} could not be written to table '{self.target}' "
                                       f"(table '{self.table.name}'), nothing of it was committed: {message}",
                           option="table-name", exit_code=EXIT_OTHER, kind=SinkError,
                           hint="make the column hold the values (e.g. a longer VARCHAR) or change the query; "
                                "the batch is retried from the checkpoint when the job restarts")

    def sink_id(self) -> str:
        """The query writing this sink (job.connectors.hadoop.sink_id)."""
        if self._sink_id is None:
            self._sink_id = sink_id(self.ctx.spark, self.ctx.checkpoint)
        return self._sink_id


def _in_batch(err: PipelineError, batch_id: int) -> SinkError:
    """``err`` as the failure of micro-batch ``batch_id``, which the runner reports as is."""
    return SinkError(f"micro-batch {batch_id}: {err.message}", origin=err.origin, statement=err.statement,
                     option=err.option, hint=err.hint, exit_code=err.exit_code)


def _last_per_key(batch, pk):
    """One row per key of an append-only batch: the last in the batch's order."""
    from pyspark.sql import functions as F

    cols = [c for c in batch.columns]
    numbered = batch.withColumn("__rid", F.monotonically_increasing_id())
    latest = numbered.groupBy(*[F.col(f"`{p}`") for p in pk]).agg(
        F.max_by(F.struct(*[F.col(f"`{c}`") for c in cols]), F.col("__rid")).alias("__row"))
    return latest.select(*[F.col("__row")[c].alias(c) for c in cols])
