"""castwise passes: graph-to-graph rewrites over ``runtime.core.graph`` graphs.

* ``promote(graph, policy=None)`` — a ``convert`` for every operand whose dtype
  differs from its ``runtime.core.plan`` target;
* ``canonicalize(graph)`` — an exact-shape ``reshape`` before ``concatenate``
  operands (recorded stacks);
* ``dce(graph)`` — drop unused equations and constants;
* ``verify(graph)`` — raise ``GraphError`` (with the printed equation) unless
  the graph is well formed.

Every rewrite takes a graph and returns a new one, never mutating its input.
``PASSES`` lists them; ``run_passes`` applies the standard pipeline.
``raw_eqn`` and ``GraphBuilder`` build graphs by hand, unpromoted ones included.
"""

from passes.build import GraphBuilder, raw_eqn
from passes.canonicalize import canonicalize
from passes.dce import dce
from passes.lower_jax import LOWERINGS, LoweringError, export_stablehlo, lower_to_jax
from passes.promote import promote
from passes.registry import DEFAULT_PIPELINE, PASSES, Pass, get_pass, register_pass, run_passes
from passes.verify import promoted_positions, verify

__all__ = [
    "DEFAULT_PIPELINE",
    "LOWERINGS",
    "PASSES",
    "GraphBuilder",
    "LoweringError",
    "Pass",
    "canonicalize",
    "dce",
    "export_stablehlo",
    "get_pass",
    "lower_to_jax",
    "promote",
    "promoted_positions",
    "raw_eqn",
    "register_pass",
    "run_passes",
    "verify",
]
