"""What ``--dry-run`` and ``--explain`` print: the pipeline's tables, its functions and, per query, its
engine, its sink's feed, its checkpoint and its plan's steps — as text, or as JSON
(``--explain-format json``) with each step's fields (job.plan.nodes) and the plan as a tree."""
from __future__ import annotations

from job.connectors.registry import describe
from job.plan.program import Program


def explain_lines(program: Program, plans: list, checkpoint_dir: str) -> list[str]:
    lines = [f"pipeline {program.name}: {len(program.catalog.tables)} tables, {len(program.catalog.views)} views, "
             f"{len(plans)} queries; checkpoints under {checkpoint_dir}"]
    for key, table in sorted(program.catalog.tables.items()):
        opts = describe(table.options)
        lines.append(f"  table {table.name} [{opts.get('connector')}, {program.catalog.bound_table(key).mode}]"
                     f"{' PRIMARY KEY (' + ', '.join(table.primary_key) + ')' if table.primary_key else ''}: "
                     + ", ".join(f"{k}={v}" for k, v in sorted(opts.items()) if k != "connector"))
    for key, function in sorted(program.catalog.functions.items()):
        kind = "temporary system function" if function.system else "function"
        lines.append(f"  {kind} {function.name}: {function.language.title()} class {function.class_name} "
                     f"[Flink user-defined function, called in Spark's JVM]"
                     + (f", jars {', '.join(function.jars)}" if function.jars else ""))
    for plan in plans:
        lines.append(f"  query {plan.name}: INSERT INTO {plan.sink_table} — {plan.engine} engine, sink fed as {plan.sink_mode}, "
                     f"checkpoint {plan.checkpoint}")
        lines += [f"      {line}" for line in formatted_sql(program.inserts[plan.insert_index].query)]
        lines += [f"    - {s}" for s in plan.steps]
        lines += [f"    - dead letters → {name} (checkpoint {cp})" for name, _w, cp in plan.dead_letters]
        lines.append("    mode: {}: {}".format(*plan.mode_reason()))
    return lines


def explain_json(program: Program, plans: list, checkpoint_dir: str) -> dict:
    """The same plan as a JSON document: tables, functions and, per query, its steps in the
    order they run (``steps``) and as a tree, the sink at its root (``plan``)."""
    from job.plan.nodes import tree

    tables = []
    for key, table in sorted(program.catalog.tables.items()):
        opts = describe(table.options)
        tables.append({"name": table.name, "connector": opts.get("connector"), "mode": program.catalog.bound_table(key).mode,
                       "primary_key": list(table.primary_key or ()),
                       "options": {k: v for k, v in sorted(opts.items()) if k != "connector"}})
    functions = [{"name": f.name, "class": f.class_name, "language": f.language, "system": f.system,
                  "jars": list(f.jars or ())} for _key, f in sorted(program.catalog.functions.items())]
    queries = []
    for plan in plans:
        roots = tree(plan.nodes)
        queries.append({
            "name": plan.name, "sink": plan.sink_table, "engine": plan.engine, "sink_mode": plan.sink_mode,
            "mode": plan.mode(), "mode_reason": plan.mode_reason()[1], "stateful": plan.stateful, "checkpoint": plan.checkpoint,
            "sql": program.inserts[plan.insert_index].query.strip(),
            "steps": [n.to_json() for n in plan.nodes],
            "plan": roots[-1].to_json() if len(roots) == 1 else [r.to_json() for r in roots],
            "dead_letters": [{"sink": name, "checkpoint": cp} for name, _w, cp in plan.dead_letters]})
    return {"pipeline": program.name, "checkpoints": checkpoint_dir, "tables": tables, "functions": functions,
            "queries": queries}


def formatted_sql(sql: str) -> list[str]:
    """The query laid out one clause per line, keywords upper-cased (sqlparse), so a long
    one-line SELECT reads in the plan as it would in an editor. Layout only: the text is
    the user's, what runs is the plan's steps."""
    import sqlparse

    text = sqlparse.format(sql.strip(), reindent=True, keyword_case="upper", strip_comments=True)
    return [line.rstrip() for line in text.splitlines() if line.strip()]
