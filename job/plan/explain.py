"""What ``--dry-run`` and ``--explain`` print: the pipeline's tables, its functions and, per query, its
engine, its sink's feed, its checkpoint and its plan's steps."""
from __future__ import annotations

from job.catalog import table_mode
from job.connectors.registry import describe
from job.plan.program import Program


def explain_lines(program: Program, plans: list, checkpoint_dir: str) -> list[str]:
    lines = [f"pipeline {program.name}: {len(program.catalog.tables)} tables, {len(program.catalog.views)} views, "
             f"{len(plans)} queries; checkpoints under {checkpoint_dir}"]
    for key, table in sorted(program.catalog.tables.items()):
        opts = describe(table.options)
        lines.append(f"  table {table.name} [{opts.get('connector')}, {table_mode(table)}]"
                     f"{' PRIMARY KEY (' + ', '.join(table.primary_key) + ')' if table.primary_key else ''}: "
                     + ", ".join(f"{k}={v}" for k, v in sorted(opts.items()) if k != "connector"))
    for key, function in sorted(program.catalog.functions.items()):
        kind = "temporary system function" if function.system else "function"
        lines.append(f"  {kind} {function.name}: {function.language.title()} class {function.class_name} "
                     f"[Flink scalar function, called in Spark's JVM]"
                     + (f", jars {', '.join(function.jars)}" if function.jars else ""))
    for plan in plans:
        lines.append(f"  query {plan.name}: INSERT INTO {plan.sink_table} — {plan.engine} engine, sink fed as {plan.sink_mode}, "
                     f"checkpoint {plan.checkpoint}")
        lines += [f"      {line}" for line in formatted_sql(program.inserts[plan.insert_index].query)]
        lines += [f"    - {s}" for s in plan.steps]
        lines += [f"    - dead letters → {name} (checkpoint {cp})" for name, _w, cp in plan.dead_letters]
    return lines


def formatted_sql(sql: str) -> list[str]:
    """The query laid out one clause per line, keywords upper-cased (sqlparse), so a long
    one-line SELECT reads in the plan as it would in an editor. Layout only: the text is
    the user's, what runs is the plan's steps."""
    import sqlparse

    text = sqlparse.format(sql.strip(), reindent=True, keyword_case="upper", strip_comments=True)
    return [line.rstrip() for line in text.splitlines() if line.strip()]
