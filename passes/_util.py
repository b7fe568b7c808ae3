"""Small helpers shared by the passes: printing one equation as ``pretty`` does, arity."""

from __future__ import annotations

from runtime.core.graph import Eqn, Graph, pretty
from runtime.core.ops import OpDef


def eqn_text(graph: Graph, eqn: Eqn) -> str:
    """The line ``pretty(graph)`` prints for ``eqn``, without its indentation.

    Taken from the full printout rather than re-implemented so that names in an
    error message are the very names the user sees in ``pretty(graph)``.
    """
    for index, candidate in enumerate(graph.eqns):
        if candidate is eqn:
            return pretty(graph).splitlines()[1 + index].strip()
    raise ValueError(f"{eqn!r} is not an equation of this graph")


def outputs_text(graph: Graph) -> str:
    """The closing ``in (...)`` line of ``pretty(graph)``."""
    return pretty(graph).splitlines()[-1].strip()


def arity_ok(op: OpDef, count: int) -> bool:
    """Whether ``count`` operands fit ``op``'s declared operand list.

    A name starting with ``*`` takes any number of operands, wherever it sits
    (``dynamic_update_slice(operand, update, *start_indices)``), so this reads
    the declaration itself rather than ``OpDef.arity``.
    """
    fixed = sum(1 for name in op.operands if not name.startswith("*"))
    if any(name.startswith("*") for name in op.operands):
        return count >= fixed
    return count == fixed
