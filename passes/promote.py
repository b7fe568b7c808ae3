"""The ``promote`` pass: write every implicit promotion and broadcast down as an equation.

Eager execution converts operands to the dtypes ``runtime.core.plan.plan`` chooses,
and broadcasts elementwise operands to the shapes
``runtime.core.shape_plan.broadcast_targets`` chooses, before a same-dtype,
same-shape kernel runs. A raw recording that stored the operands as they came
(``add(x:f64, y:c128)``, ``add(x:f64[3,1], y:f64[4])``) does not replay what
eager ran; this pass makes the graph say it, with ``convert`` and
``broadcast_in_dim`` equations, by calling the same plans — there is no second
promotion or broadcasting table here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from passes._util import arity_ok, eqn_text
from passes.build import GraphBuilder
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.graph import Eqn, Graph, Var, emit
from runtime.core.ops import OpDef
from runtime.core.plan import REWRITE_RULES, PlanInput, plan, promotes, rewrite
from runtime.core.promotion import Operand, Policy, PromotionError, get_policy_object
from runtime.core.shape_plan import broadcast_params, broadcast_targets, broadcasts
from runtime.core.shapes import ArityError, KernelDTypeError, OpTypeError, ShapeError, abstract_eval
from runtime.core.weak import WeakOperand, honours_weak, output_weak, planned_weak

#: What ``abstract_eval`` (``runtime.core.shapes``, the kernels' signature check) raises
#: for an equation the kernels cannot run.
KERNEL_ERRORS = (KernelDTypeError, ShapeError, OpTypeError, ArityError)


def plan_input(var: Var, weak_types: bool = False) -> PlanInput:
    """How a graph value enters the plan: as eager execution classifies a tensor.

    A 0-d value is a ``zero_dim`` operand, because some policies (torch's
    category rule) treat 0-d tensors differently from others; eager execution
    plans 0-d tensors the same way, so the pass reproduces its choice. With
    ``weak_types`` (a policy that has them), a weak value enters as the weak
    node of its kind (``runtime.core.weak.WeakOperand``), as eager execution plans it.
    """
    if weak_types and var.weak:
        return WeakOperand(var.dtype, not var.shape)
    return var.dtype if var.shape else Operand(var.dtype, None, True)


def retyped(eqn: Eqn, inputs: Sequence[Var]) -> tuple[Eqn, tuple[Var, ...]]:
    """A copy of ``eqn`` over new ``inputs``, and its fresh output values.

    ``promote`` changes dtypes and never shapes: the output shapes are the
    recorded ones (a raw stack records its result shape before ``canonicalize``
    makes the operand shapes exact, and the kernels' shape rule would answer
    for the raw operand shapes instead). The output dtypes are re-derived with
    the kernels' ``abstract_eval`` because a promoted operand can change what the
    kernel produces (``promote`` under a policy other than the recording's).
    Where the kernels cannot type the raw equation (mixed-rank raw operands),
    the recorded dtypes are kept too; ``verify`` has the last word.

    An output whose aval is unchanged keeps the eager value recorded on it
    (derivative rules read it); a retyped one has none, and is recomputed from
    its producer on demand. The outputs are returned because an equation holds
    its outputs only weakly: the caller keeps them alive until a Graph pins them.
    """
    recorded = tuple(v.aval for v in eqn.outputs)
    try:
        derived = abstract_eval(eqn.op, [v.aval for v in inputs], eqn.params)
    except KERNEL_ERRORS:
        derived = recorded
    if len(derived) != len(recorded):
        derived = recorded
    new = Eqn(eqn.op, inputs, eqn.params, ())
    weak = output_weak(eqn.op, [v.weak for v in inputs], eqn.params)  # the op's weak rule, as eager ran it
    outs = tuple(
        Var(d, s, new, None, w) for (d, _), (_, s), w in zip(derived, recorded, weak, strict=True)
    )  # fmt: skip
    new.outputs = outs
    for old_out, out in zip(eqn.outputs, outs, strict=True):
        if old_out.aval == out.aval:
            out.value = old_out.value
    return new, outs


def promote(graph: Graph, policy: str | Policy | None = None) -> Graph:
    """Insert a ``convert`` before every operand whose dtype differs from its plan target.

    ``add(x:f64, y:c128) -> add(convert(x, c128), y)``::

        { lambda a:f64[3] b:c128[3] . let
            c:c128[3] = add a b
          in (c) }
        ->
        { lambda a:f64[3] b:c128[3] . let
            c:c128[3] = convert[to=c128] a
            d:c128[3] = add c b
          in (d) }

    Every promoting family is covered, with the operand positions the plan
    promotes: binary (compare and logical included), dot_general, select (not
    the predicate), clamp, concatenate, scatter / scatter_add (not the
    indices) and dynamic_update_slice (not the start indices). Targets come
    from ``runtime.core.plan.plan(op, dtypes, policy)``; ``policy=None`` means the
    active policy, resolved once so one graph is planned under one policy.

    Exactly one ``convert`` is inserted per operand whose dtype differs from
    its target (as the eager recorder does), none where dtypes agree. Under a
    policy with weak types a weak value plans as eager execution plans it, and
    a converted operand whose join is weak says so (``weak_type=True``).
    Elementwise operands (binary, compare, logical, select, clamp) whose shape
    differs from their shape-plan target get one ``broadcast_in_dim`` after
    their ``convert``, NumPy's alignment made explicit::

        { lambda a:f64[3,1] b:f32[4] . let
            c:f64[3,4] = add a b
          in (c) }
        ->
        { lambda a:f64[3,1] b:f32[4] . let
            c:f64[3,4] = broadcast_in_dim[shape=(3, 4) broadcast_dimensions=(0, 1)] a
            d:f64[4] = convert[to=f64] b
            e:f64[3,4] = broadcast_in_dim[shape=(3, 4) broadcast_dimensions=(1,)] d
            f:f64[3,4] = add c e
          in (f) }

    Both insertions happen only where something differs, so the pass is
    idempotent. Equations whose inputs did not change are shared with
    ``graph``; the input graph is never mutated. ``graph.meta["policy"]`` of
    the result names the policy used. Raises ``PromotionError`` (naming the
    printed equation) where the policy has no promotion path, ``ShapeError``
    (naming it too) where shapes do not broadcast.
    """
    pol = get_policy_object(policy)
    weak_types = honours_weak(pol)
    env: dict[int, Var] = {}  # id(old value) -> the value that replaces it
    eqns: list[Eqn] = []
    for eqn in graph.eqns:
        inputs = [env.get(id(v), v) for v in eqn.inputs]
        # A wrong operand count is left for ``verify`` to report with the equation.
        if (promotes(eqn.op) or eqn.op.name in REWRITE_RULES) and inputs and arity_ok(eqn.op, len(inputs)):
            pins = [plan_input(v, weak_types) for v in inputs]
            try:
                targets = plan(eqn.op, pins, pol, eqn.params)
            except PromotionError as err:
                raise PromotionError(f"{err}\n    in equation: {eqn_text(graph, eqn)}") from None
            weak = planned_weak(eqn.op, pins, pol) if weak_types else None
        else:
            targets, weak = tuple(v.dtype for v in inputs), None
        shapes = None
        if broadcasts(eqn.op) and arity_ok(eqn.op, len(inputs)):
            try:
                shapes = broadcast_targets(eqn.op, [v.shape for v in inputs], pol.name)
            except ShapeError as err:
                raise ShapeError(f"{err}\n    in equation: {eqn_text(graph, eqn)}") from None
        for i, (var, target) in enumerate(zip(inputs, targets, strict=True)):
            # JAX's order, and the eager recorder's: convert the dtype, then broadcast
            if var.dtype is not target:
                params: dict[str, object] = {"new_dtype": target}
                if weak is not None and weak[i]:
                    params["weak_type"] = True  # the join is weak: so is the converted operand
                conv = emit(ops.convert, (var,), params)
                eqns.append(conv)
                var = inputs[i] = conv.outputs[0]
            if shapes is not None and var.shape != shapes[i]:
                bcast = emit(ops.broadcast_in_dim, (var,), broadcast_params(var.shape, shapes[i]))
                eqns.append(bcast)
                inputs[i] = bcast.outputs[0]
        if eqn.op.name in REWRITE_RULES and _expand(eqn, inputs, targets, pol, eqns, env):
            continue
        if all(new is old for new, old in zip(inputs, eqn.inputs, strict=True)):
            eqns.append(eqn)  # unchanged: share it, copying would only cost
            continue
        new, outs = retyped(eqn, inputs)
        eqns.append(new)
        for old_out, new_out in zip(eqn.outputs, outs, strict=True):
            env[id(old_out)] = new_out  # keeps new_out alive until the result pins it
    result = graph.replace(eqns=eqns, outputs=[env.get(id(v), v) for v in graph.outputs])
    result.meta["policy"] = pol.name
    return result


def _expand(
    eqn: Eqn, inputs: Sequence[Var], targets: Sequence[DType], pol: Policy, eqns: list[Eqn], env: dict[int, Var]
) -> bool:
    """Write the ops ``eqn`` stands for (``runtime.core.plan.rewrite``), as eager execution ran them.

    ``add(a:bool, b:bool) -> or a b`` under jax; ``real(a:f64) -> a`` (no equation).
    Returns False when ``eqn`` runs as itself.
    """
    expansion = rewrite(eqn.op, targets, pol)
    if expansion is None:
        return False

    def write(op: OpDef, operands: Sequence[Var], params: dict[str, Any]) -> Var | tuple[Var, ...]:
        new = emit(op, tuple(operands), params)
        eqns.append(new)
        return new.outputs[0] if len(new.outputs) == 1 else new.outputs

    result = expansion(write, inputs, eqn.params)
    outs = result if isinstance(result, tuple) else (result,)
    for old_out, new_out in zip(eqn.outputs, outs, strict=True):
        env[id(old_out)] = new_out
    return True


def example() -> Graph:
    """The raw graph of the docstring example (checked by the tests)."""
    b = GraphBuilder()
    x = b.input("f64", (3,))
    y = b.input("c128", (3,))
    return b.build(b.raw("add", x, y, out=("c128", (3,))))


def broadcast_example() -> Graph:
    """The raw graph of the docstring's broadcasting example (checked by the tests)."""
    b = GraphBuilder()
    x = b.input("f64", (3, 1))
    y = b.input("f32", (4,))
    return b.build(b.raw("add", x, y, out=("f64", (3, 4))))
