"""The ``canonicalize`` pass: an exact-shape ``reshape`` before every ``concatenate`` operand.

``stack`` lowers to reshape + concatenate, but a recording that mixes tracked
and untracked operands may store a stack as a ``concatenate`` whose operands
still have the stacked rank (``f32[3]`` operands of an ``f32[2,3]`` result): the
eager reshape of an untracked operand is no recorded op. This pass, which runs
after ``promote`` (the order eager execution used: convert, then reshape),
writes that reshape down so the ``concatenate`` sees operands of its exact
concatenation shape. Both steps exist only in the graph: no eager copy.
"""

from __future__ import annotations

from passes.build import GraphBuilder
from runtime.core import ops
from runtime.core.graph import Eqn, Graph, Var, emit


def exact_shape(operand: tuple[int, ...], result: tuple[int, ...], dimension: int) -> tuple[int, ...] | None:
    """The shape a ``concatenate`` operand must have: ``result`` with ``result[dimension]``
    replaced by the operand's extent along ``dimension``.

    An operand of the result's rank already names its extent; one of rank one
    less whose shape is ``result`` without ``dimension`` is a stacked operand
    (extent 1). Anything else is not a shape this pass can repair (``None``):
    it is left for ``verify`` to report.
    """
    rank = len(result)
    if not 0 <= dimension < rank:  # the kernels take no negative dimension either
        return None
    d = dimension
    if len(operand) == rank:
        return operand
    if len(operand) == rank - 1 and operand == result[:d] + result[d + 1 :]:
        return (*result[:d], 1, *result[d + 1 :])
    return None


def canonicalize(graph: Graph) -> Graph:
    """Reshape every ``concatenate`` operand to its exact concatenation shape.

    ``concatenate[dimension=0](x:f32[3], y:f32[3]) -> f32[2,3]`` (a recorded
    stack) ``-> concatenate[dimension=0](reshape(x, (1,3)), reshape(y, (1,3)))``::

        { lambda a:f32[3] b:f32[1,3] . let
            c:f32[2,3] = concatenate[dimension=0] a b
          in (c) }
        ->
        { lambda a:f32[3] b:f32[1,3] . let
            c:f32[1,3] = reshape[new_sizes=(1, 3)] a
            d:f32[2,3] = concatenate[dimension=0] c b
          in (d) }

    For a result of shape ``S`` concatenated along ``d``, an operand's exact
    shape is ``S`` with ``S[d]`` replaced by its extent (1 for a stacked
    operand). Nothing is inserted where shapes are already exact, so the pass
    is idempotent; output avals are kept (the reshape makes them right).
    Equations whose inputs did not change are shared with ``graph``, which is
    never mutated.
    """
    env: dict[int, Var] = {}  # id(old value) -> the value that replaces it
    eqns: list[Eqn] = []
    for eqn in graph.eqns:
        inputs = [env.get(id(v), v) for v in eqn.inputs]
        if eqn.op is ops.concatenate and len(eqn.outputs) == 1 and "dimension" in eqn.params:
            result = eqn.outputs[0].shape
            for i, var in enumerate(inputs):
                exact = exact_shape(var.shape, result, eqn.params["dimension"])
                if exact is not None and exact != var.shape:
                    step = emit(ops.reshape, (var,), {"new_sizes": exact})
                    eqns.append(step)
                    inputs[i] = step.outputs[0]
        if all(new is old for new, old in zip(inputs, eqn.inputs, strict=True)):
            eqns.append(eqn)
            continue
        # Shapes and dtypes of the outputs do not change: only the operands'
        # layout is made explicit, so the recorded avals and eager values carry over.
        new = Eqn(eqn.op, inputs, eqn.params, ())
        outs = tuple(Var(v.dtype, v.shape, new) for v in eqn.outputs)
        new.outputs = outs  # held weakly by the equation: ``env`` keeps them alive
        eqns.append(new)
        for old_out, new_out in zip(eqn.outputs, outs, strict=True):
            new_out.value = old_out.value
            env[id(old_out)] = new_out
    return graph.replace(eqns=eqns, outputs=[env.get(id(v), v) for v in graph.outputs])


def example() -> Graph:
    """The raw graph of the docstring example (checked by the tests)."""
    b = GraphBuilder()
    x = b.input("f32", (3,))
    y = b.input("f32", (1, 3))
    return b.build(b.raw("concatenate", x, y, out=("f32", (2, 3)), dimension=0))
