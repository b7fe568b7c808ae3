"""The ``dce`` pass: drop equations and constants nothing needs."""

from __future__ import annotations

from passes.build import GraphBuilder
from runtime.core.graph import Eqn, Graph


def dce(graph: Graph) -> Graph:
    """Remove equations whose outputs are unused, and constants nothing reads.

    ``neg`` below feeds nothing the graph returns, so it goes; its constant
    ``a`` goes with it::

        { lambda a:f32[3] ; b:f32[3] . let
            c:f32[3] = neg a
            d:f32[3] = sin b
          in (d) }
        ->
        { lambda a:f32[3] . let
            b:f32[3] = sin a
          in (b) }

    (The printer names values afresh, constants first, so names shift.)

    One backward sweep: an equation is live when any of its outputs is
    (multi-output ops such as ``eigh`` stay whole). Graph inputs are always
    kept — they are the graph's signature — and the outputs are untouched.
    The surviving equations are shared with ``graph``, which is never mutated.
    """
    live: set[int] = {id(v) for v in graph.outputs}
    kept: list[Eqn] = []
    for eqn in reversed(graph.eqns):
        if any(id(v) in live for v in eqn.outputs):
            kept.append(eqn)
            live.update(id(v) for v in eqn.inputs)
    kept.reverse()
    return graph.replace(eqns=kept, consts=[c for c in graph.consts if id(c) in live])


def example() -> Graph:
    """The graph of the docstring example (checked by the tests)."""
    b = GraphBuilder()
    x = b.input("f32", (3,))
    c = b.const([1.0, 2.0, 3.0], "f32")
    b.raw("neg", c, out=("f32", (3,)))
    return b.build(b.raw("sin", x, out=("f32", (3,))))
