"""sqlglot's typed nodes for Flink's call syntaxes brought back to plain calls.

sqlglot's base grammar reads ``SUBSTRING(s FROM 2 FOR 3)``, ``POSITION(a IN b)``,
``TRIM(BOTH 'x' FROM s)``, ``OVERLAY(…)``, ``EXTRACT(unit FROM e)``, ``CEIL(t TO DAY)``,
``IF(…)``, ``CURRENT_DATE`` … and ``MAP[…]`` into its own nodes; :func:`normalize` turns
each into an ``exp.Anonymous`` with Flink's name and positional arguments (a time unit as
``exp.Var``), the one form the function library reads (see :mod:`job.sql.flink.dialect`).
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from job.sql.flink.dialect import TIME_UNITS

# Calls whose first argument is a time unit (a keyword, not a column).
_UNIT_FIRST = ("TIMESTAMPADD", "TIMESTAMPDIFF")


def _call(name: str, args: list, like: exp.Expression) -> exp.Anonymous:
    node = exp.Anonymous(this=name, expressions=[a for a in args])
    node.meta.update(like.meta)
    return node


def _unit(node: Optional[exp.Expression]) -> Optional[exp.Var]:
    if node is None:
        return None
    return exp.Var(this=node.name.upper())


def normalize(tree: exp.Expression) -> exp.Expression:
    """Bring sqlglot's typed nodes for Flink call syntaxes back to plain calls (see the
    module docstring), in place; returns the (possibly new) root."""

    def swap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Substring):
            args = [node.this, node.args.get("start"), node.args.get("length")]
            return _call("SUBSTRING", [a for a in args if a is not None], node)
        if isinstance(node, exp.StrPosition):
            args = [node.args.get("substr"), node.this]
            if node.args.get("position") is not None:
                args.append(node.args["position"])
            return _call("POSITION", args, node)
        if isinstance(node, exp.Trim):
            position = (node.args.get("position") or "BOTH").upper()
            chars = node.args.get("expression") or exp.Literal.string(" ")
            return _call("TRIM", [exp.Var(this=position), chars, node.this], node)
        if isinstance(node, exp.Overlay):
            args = [node.this, node.args.get("expression"), node.args.get("from_") or node.args.get("from"),
                    node.args.get("for_") or node.args.get("for")]
            return _call("OVERLAY", [a for a in args if a is not None], node)
        if isinstance(node, exp.Extract):
            return _call("EXTRACT", [_unit(node.this), node.expression], node)
        if isinstance(node, (exp.Ceil, exp.Floor)):
            name = "CEIL" if isinstance(node, exp.Ceil) else "FLOOR"
            args = [node.this]
            if node.args.get("to") is not None:
                args.append(_unit(node.args["to"]))
            elif node.args.get("decimals") is not None:
                args.append(node.args["decimals"])
            return _call(name, args, node)
        if isinstance(node, exp.If) and not isinstance(node.parent, exp.Case):
            args = [node.this, node.args.get("true"), node.args.get("false") or exp.Null()]
            return _call("IF", args, node)
        if isinstance(node, (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime, exp.CurrentUser,
                             exp.Localtime, exp.Localtimestamp)):
            name = {exp.CurrentDate: "CURRENT_DATE", exp.CurrentTimestamp: "CURRENT_TIMESTAMP",
                    exp.CurrentTime: "CURRENT_TIME", exp.CurrentUser: "CURRENT_USER",
                    exp.Localtime: "LOCALTIME", exp.Localtimestamp: "LOCALTIMESTAMP"}[type(node)]
            return _call(name, [], node)
        if isinstance(node, exp.Bracket) and isinstance(node.this, exp.Column) and not node.this.table \
                and not node.this.this.quoted and node.this.name.upper() == "MAP":
            return _call("MAP", list(node.expressions), node.this)
        if isinstance(node, exp.Anonymous) and isinstance(node.this, str):
            node.set("this", node.this.upper()) if node.this.upper() != node.this else None
            if node.this in _UNIT_FIRST and node.expressions:
                # TIMESTAMPADD(DAY, …): the unit is a keyword, not a column named DAY.
                first = node.expressions[0]
                if isinstance(first, exp.Column) and not first.table and not first.this.quoted \
                        and first.name.upper() in TIME_UNITS:
                    unit = exp.Var(this=first.name.upper())
                    unit.meta.update(first.meta)
                    first.replace(unit)
        return node

    return tree.transform(swap, copy=False)
