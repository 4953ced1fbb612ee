"""The typed plan: what a query runs, as a tree of frozen nodes.

Planning builds a query's Spark DataFrames and, beside them, one :class:`PlanNode` per
step: the scan of each table, each filter and operator (Spark's own or the engine's), and
the sink. Everything that is said or decided about a plan afterwards is read from these
nodes' fields, never from their wording: ``--explain`` (text and JSON), the query's engine
label, the checkpoint fingerprint and its compatibility check, and the choice of
micro-batch or real-time mode.

A relation's nodes are kept in the order they run, each node after its inputs (a tree in
post-order: ``inputs`` says how many of the subtrees before it a node reads), so a join's
list is its left side's nodes, its right side's, then the join. :func:`tree` rebuilds the
tree from that list.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

# A node's output, as a changelog: rows only inserted, rows replaced by key (upserts not
# normalized yet), or signed rows that retract what was emitted before.
APPEND, UPSERT, RETRACT = "append", "upsert", "retract"

# The engine's state layout. 2: the JVM operators, state per key (1: Python operators, one
# pickled state per bucket of keys). A checkpoint of another layout is refused.
ENGINE_STATE_VERSION = 2
# Operators whose state layout changed since: a checkpoint with the older layout is refused
# (job.run.compat compares each step's version). rank 3: the arrival of each copy of an
# equal row (2: one count and the first copy's arrival).
OPERATOR_STATE_VERSIONS = {"rank": 3}
# Spark's own stateful operators (windowed aggregation, stream-stream join): Spark checks
# its state's schema itself.
SPARK_STATE_VERSION = 1


@dataclass(frozen=True)
class PlanNode:
    """One step of a query's plan.

    ``text`` says what the step does in the user's words (the SQL it plans); ``note`` how
    and where it runs. ``--explain`` prints both; a checkpoint remembers only ``text``, so
    rewording a note never makes a checkpoint incompatible."""

    kind: str                        # what it is: scan, filter, aggregate, join, rank, sink, …
    text: str                        # what it does, as --explain says it
    note: str = ""                   # how and where it runs (--explain's bracketed remark)
    keys: tuple[str, ...] = ()       # the columns it keys its rows or state by, as the user names them
    mode: Optional[str] = None       # its output: APPEND, UPSERT or RETRACT (set from its relation)
    stateful: bool = False           # keeps state across micro-batches
    engine: Optional[str] = None     # the engine operator it runs on (None: Spark's own operators)
    spec: object = field(default=None, compare=False)   # its typed spec (job.changelog.specs), scan: BoundTable
    state_version: int = 0           # the layout of its state (0: it keeps none)
    inputs: int = 1                  # how many subtrees before it in the list it reads
    shown: bool = True               # listed by the text --explain

    def __str__(self) -> str:
        return self.text + (f" [{self.note}]" if self.note else "")

    def to_json(self) -> dict:
        """The node for ``--explain --json``: every field but the spec's values (a lookup
        join's spec holds credentials), which are named by their type only."""
        out = {"kind": self.kind, "text": self.text, "note": self.note, "keys": list(self.keys), "mode": self.mode,
               "stateful": self.stateful, "engine": self.engine, "state_version": self.state_version}
        if self.spec is not None:
            out["spec"] = type(self.spec).__name__
        return out


def scan(text: str, *, keys=(), note: str = "", table=None, mode: Optional[str] = None, inputs: int = 0) -> PlanNode:
    """A table read as a stream (``table``: the table it reads)."""
    return PlanNode("scan", text, note, tuple(keys), mode=mode, spec=table, inputs=inputs)


def sink(text: str, mode: str, *, keys=(), table=None, shown: bool = True) -> PlanNode:
    """Writing the query's changes into its sink table (``mode``: what the sink is fed)."""
    return PlanNode("sink", text, keys=tuple(keys), mode=mode, spec=table, shown=shown)


def spark(kind: str, text: str, note: str = "", *, keys=(), stateful: bool = False, inputs: int = 1) -> PlanNode:
    """A step Spark's own operators run."""
    return PlanNode(kind, text, note, tuple(keys), stateful=stateful, inputs=inputs,
                    state_version=SPARK_STATE_VERSION if stateful else 0)


def engine(kind: str, operator: str, text: str, note: str, *, keys=(), stateful: bool = True, spec=None,
           inputs: int = 1) -> PlanNode:
    """A step one of the engine's operators runs."""
    return PlanNode(kind, text, note, tuple(keys), stateful=stateful, engine=operator, spec=spec, inputs=inputs,
                    state_version=OPERATOR_STATE_VERSIONS.get(operator, ENGINE_STATE_VERSION) if stateful else 0)


def with_mode(node: PlanNode, mode: str) -> PlanNode:
    return node if node.mode is not None else replace(node, mode=mode)


def has_engine(nodes) -> bool:
    return any(n.engine is not None for n in nodes)


def is_stateful(nodes) -> bool:
    return any(n.stateful for n in nodes)


@dataclass(frozen=True)
class Tree:
    node: PlanNode
    children: tuple = ()

    def to_json(self) -> dict:
        out = self.node.to_json()
        if self.children:
            out["inputs"] = [c.to_json() for c in self.children]
        return out

    def lines(self, indent: str = "") -> list[str]:
        """The tree drawn top-down (the sink first, the scans last)."""
        out = [f"{indent}{self.node}"]
        for child in self.children:
            out += child.lines(indent + "  ")
        return out


def tree(nodes) -> list[Tree]:
    """The nodes (in the order they run) as trees: one, unless a step read fewer inputs
    than the list holds."""
    stack: list[Tree] = []
    for node in nodes:
        n = min(node.inputs, len(stack))
        children = tuple(stack[len(stack) - n:]) if n else ()
        del stack[len(stack) - n:]
        stack.append(Tree(node, children))
    return stack
