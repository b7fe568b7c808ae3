"""``autodiff.vmap``: batching over the recorded semantic graph.

``vmap(f)(xs)`` records ``f`` once on one example (the first slice of each
mapped argument, a tracked leaf), then replays the recorded equations on the
whole batch, each through its batching rule (``autodiff.rules_batching``).
The recording already holds every implicit promotion as a ``convert``
equation computed by the plan eager execution uses, so the replay runs every
op on operands of the dtypes the unbatched op planned: a batched operand
keeps its dtype, and converts appear exactly where they would without vmap
(the promotion of an array ``f`` closes over included: ``_converted_const``).

The replay goes through the eager executor, so it composes with everything
that records: under ``grad`` / ``vjp`` / ``jvp`` (a tracked batched argument,
or a tracked value ``f`` closes over) the batched ops are recorded like any
other; under ``jit`` they are traced and compiled; ``vmap`` of ``vmap`` nests.
``f`` may itself call ``grad``, ``jvp``, ``jit`` or ``vmap``: their work is
recorded on the example and batched with the rest.

What is fixed at recording time, as with ``jax.jit``: Python control flow and
anything that leaves the recording (``.numpy()``, ``.item()``, ``detach()``,
``no_grad`` blocks) sees the first example only; JAX raises in these places.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autodiff.api import FRESH_INPUTS
from autodiff.rules_batching import BATCH_RULES, broadcast_batch, move_batch_dim
from runtime import hooks, ops
from runtime.graph import Eqn, Var, emit, new_leaf, primal_value, record_holding_all
from runtime.tensor import Tensor, apply, asarray

__all__ = ["VmapError", "vmap"]

Axis = int | None


class VmapError(ValueError):
    """A ``vmap`` call is malformed: in_axes / out_axes, batch sizes, argument kinds."""


# -- arguments and results: the one place that knows their structure ------------------------------------


def _flatten(tree: Any) -> tuple[list[Any], Any]:
    """Positional arguments or ``f``'s result as a flat list and a description to rebuild it.

    Tuples and lists of leaves (one level); a single value is its own leaf. The
    pytree module will replace these two functions.
    """
    if isinstance(tree, tuple):
        return list(tree), ("tuple", len(tree))
    if isinstance(tree, list):
        return list(tree), ("list", len(tree))
    return [tree], ("leaf", 1)


def _unflatten(spec: Any, leaves: Sequence[Any]) -> Any:
    kind, _ = spec
    if kind == "tuple":
        return tuple(leaves)
    if kind == "list":
        return list(leaves)
    return leaves[0]


def _axes_per_leaf(axes: Any, n: int, what: str, names: str) -> list[Axis]:
    """``in_axes`` / ``out_axes`` as one axis per leaf (an int or None applies to all)."""
    if axes is None or (isinstance(axes, int) and not isinstance(axes, bool)):
        return [axes] * n
    if isinstance(axes, (tuple, list)):
        if len(axes) != n:
            raise VmapError(
                f"vmap: {what} has {len(axes)} entries but there are {n} {names}; "
                f"give one int or None per {names[:-1]}, or a single int or None for all"
            )
        for i, a in enumerate(axes):
            if not (a is None or (isinstance(a, int) and not isinstance(a, bool))):
                raise VmapError(f"vmap: {what}[{i}] must be an int or None, got {a!r}")
        return list(axes)
    raise VmapError(f"vmap: {what} must be an int, None, or a tuple/list of those, got {axes!r}")


def _describe(x: Tensor) -> str:
    return f"{x.dtype.short}[{','.join(map(str, x.shape))}]"


# -- recording f on one example ------------------------------------------------------------------------------


#: what a recorded value is to the replay (``_classify``)
INNER, OUTER, CONST = 0, 1, 2


def _classify(roots: Sequence[Var], leaves: Sequence[Var]) -> tuple[list[Eqn], dict[int, int], list[Var]]:
    """The equations between ``leaves`` and ``roots`` that depend on a leaf, in order.

    Every value seen is ``INNER`` (it depends on a leaf: batched), ``OUTER`` (a
    value of an enclosing recording that ``f`` closed over, or computed from
    one: a tracked parameter under ``grad``, a traced value under an outer
    ``vmap``), or ``CONST`` (computed from constants only, such as the
    ``convert`` of a closed-over array). The replay uses the last two as they
    are. Returns the equations, ``id(var) -> kind``, and the values seen (held,
    so their ids stay unique while in use).
    """
    kind: dict[int, int] = {id(v): INNER for v in leaves}
    held: list[Var] = list(leaves)
    order: list[Eqn] = []
    for root in roots:
        stack: list[tuple[Var, bool]] = [(root, False)]
        while stack:
            var, expanded = stack.pop()
            if id(var) in kind:
                continue
            eqn = var.producer
            if eqn is None or var in FRESH_INPUTS:
                # a leaf, or an enclosing transform's input (a recorded convert of a constant,
                # autodiff.api): that transform differentiates with respect to it
                kind[id(var)] = CONST if var.const is not None else OUTER
                held.append(var)
                continue
            if not expanded:
                stack.append((var, True))
                stack.extend((v, False) for v in eqn.inputs if id(v) not in kind)
                continue
            k = min(kind[id(v)] for v in eqn.inputs)
            for out in eqn.outputs:
                kind[id(out)] = k
                held.append(out)
            if k == INNER:
                order.append(eqn)
    return order, kind, held


def _outer_tensor(var: Var, kind: int) -> Tensor:
    """A value the replay does not batch, as a Tensor: tracked on its own recording if ``OUTER``."""
    if var.const is not None:
        return Tensor(var.const, var.dtype)
    t = Tensor(primal_value(var), var.dtype)
    if kind == OUTER:
        t.node = var
        t._requires_grad = var.dtype.is_inexact
    return t


def _converted_const(var: Var, value: Tensor) -> Tensor:
    """``value``, or, when ``var`` is the ``convert`` of a constant that the recording wrote for a
    promoting op, ``value`` tracked through a new such ``convert``: a recorded replay then writes the
    promotion down as eager recording does (``convert`` of the constant, then the op), instead of a
    constant of the converted dtype."""
    eqn = var.producer
    if eqn is None or eqn.op is not ops.convert or value.node is not None or eqn.inputs[0].const is None:
        return value
    out = emit(ops.convert, eqn.inputs, eqn.params).outputs[0]
    out.value = value._array
    t = Tensor(value._array, value.dtype)
    t.node = out
    t._requires_grad = value.dtype.is_inexact
    return t


# -- the replay ----------------------------------------------------------------------------------------------------


def _replay(
    eqns: Sequence[Eqn], env: dict[int, tuple[Tensor, Axis]], kind: dict[int, int], keep: Sequence[Var]
) -> None:
    """Run ``eqns`` on batched values: each through its op's batching rule.

    A batched intermediate is dropped after its last use (``keep``: the values
    wanted at the end), so its memory goes back to the allocator while the
    replay runs and the next result reuses it, warm, instead of the process
    faulting in fresh pages for every op (measured: most of a replay's time
    for a chain of small ops, without this).
    """
    last: dict[int, int] = {}
    for i, eqn in enumerate(eqns):
        for v in eqn.inputs:
            last[id(v)] = i
    for v in keep:
        last[id(v)] = len(eqns)
    dead: list[list[int]] = [[] for _ in eqns]
    for key, i in last.items():
        if i < len(eqns):
            dead[i].append(key)
    for i, eqn in enumerate(eqns):
        args: list[Tensor] = []
        dims: list[Axis] = []
        for v in eqn.inputs:
            found = env.get(id(v))
            if found is None:  # not batched: a constant or a value of an enclosing recording
                found = (_outer_tensor(v, kind[id(v)]), None)
                env[id(v)] = found
            args.append(found[0])
            dims.append(found[1])
        if hooks.current_recorder() is not None and any(a.node is not None for a in args):
            args = [_converted_const(v, a) for v, a in zip(eqn.inputs, args, strict=True)]
        if all(d is None for d in dims):  # only unmapped arguments reach it: it runs as it is
            result = apply(eqn.op, tuple(args), eqn.params)
            outs = list(result) if isinstance(result, tuple) else [result]
            out_dims: list[Axis] = [None] * len(outs)
        else:
            outs, out_dims = BATCH_RULES[eqn.op.name](eqn.op, args, dims, eqn.params)
        del args
        for var, out, d in zip(eqn.outputs, outs, out_dims, strict=True):
            env[id(var)] = (out, d)
        del outs
        for key in dead[i]:
            env.pop(key, None)


def _batch_sizes(args: Sequence[Any], axes: Sequence[Axis]) -> tuple[list[Any], int]:
    """Mapped arguments as Tensors (others as they came) and the batch size, or a ``VmapError``."""
    values: list[Any] = []
    sizes: list[tuple[int, int, int, Tensor]] = []
    for i, (a, axis) in enumerate(zip(args, axes, strict=True)):
        if axis is None:
            values.append(a)
            continue
        if not isinstance(a, Tensor):
            if isinstance(a, (bool, int, float, complex)) or not hasattr(a, "__array__"):
                raise VmapError(
                    f"vmap: argument {i} is a {type(a).__name__}, which has no axis to map (in_axes[{i}] = "
                    f"{axis}); pass a Tensor or an array, or give it in_axes None"
                )
            a = asarray(np.asarray(a))
        if not -a.ndim <= axis < a.ndim:
            raise VmapError(
                f"vmap: in_axes[{i}] = {axis} is out of range for argument {i} of shape {_describe(a)} (rank {a.ndim})"
            )
        axis %= a.ndim
        values.append(a)
        sizes.append((i, axis, a.shape[axis], a))
    if not sizes:
        raise VmapError("vmap: in_axes maps no argument (all None); map at least one with an int axis")
    if len({s for _, _, s, _ in sizes}) > 1:
        listing = "; ".join(
            f"argument {i} has size {s} along axis {ax} (shape {_describe(t)})" for i, ax, s, t in sizes
        )
        raise VmapError(f"vmap: the mapped axes have different sizes: {listing}")
    return values, sizes[0][2]


def _example(x: Tensor, axis: int, size: int) -> Tensor:
    """The first example of ``x`` along ``axis`` (zeros for an empty batch), a fresh array."""
    if size == 0:
        shape = x.shape[:axis] + x.shape[axis + 1 :]
        return Tensor(np.zeros(shape, x.dtype.storage), x.dtype)
    return Tensor(np.take(x._array, 0, axis=axis), x.dtype)


def _move_out(x: Tensor, d: Axis, dst: Axis, size: int, i: int) -> Tensor:
    """Output ``i`` with its batch dimension at ``dst`` (broadcast there when it has none)."""
    if dst is None:
        if d is not None:
            raise VmapError(
                f"vmap: output {i} ({_describe(x)}) depends on the mapped arguments, but out_axes[{i}] is None"
            )
        return x
    rank = x.ndim + (d is None)
    if not -rank <= dst < rank:
        raise VmapError(f"vmap: out_axes[{i}] = {dst} is out of range for output {i} of rank {rank} (batched)")
    dst %= rank
    return broadcast_batch(x, size, dst) if d is None else move_batch_dim(x, d, dst)


def vmap(f: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """Vectorise ``f`` over an axis of its arguments: ``vmap(f)(xs)[i] == f(xs[i])``.

    ``in_axes`` is an int (the mapped axis of every positional argument), None
    (not mapped: passed to every example as it is), or a tuple/list with one
    int or None per positional argument. ``out_axes`` is the same for ``f``'s
    results (a Tensor, or a tuple/list of Tensors): where each result's batch
    axis goes; None only for results that do not depend on a mapped argument.
    Negative axes count from the end. Unmapped arguments may be anything ``f``
    accepts (Python scalars, Tensors closed over as they are).

    ``f`` is recorded once, on the first example, and the recording is
    replayed on the batch with one batching rule per op
    (``autodiff.rules_batching.BATCH_RULES``); a batched operand keeps its
    dtype, so each op promotes exactly as it does without vmap.

    >>> import numpy as np, runtime as rt, autodiff
    >>> xs = rt.asarray(np.arange(6.0).reshape(3, 2))
    >>> autodiff.vmap(lambda x: rt.reduce_sum(x * x, (0,)))(xs).numpy()
    array([ 1., 13., 41.])
    """

    @functools.wraps(f)
    def batched(*args: Any) -> Any:
        flat, _ = _flatten(args)
        axes = _axes_per_leaf(in_axes, len(flat), "in_axes", "arguments")
        values, size = _batch_sizes(flat, axes)
        axes = [None if a is None else a % v.ndim for a, v in zip(axes, values, strict=True)]
        # Record f on one example. Every Tensor argument becomes a fresh tracked leaf (a mapped one
        # its first slice), so what f does with it is recorded, and a transform inside f sees its
        # inputs tracked (``grad`` then records its derivative work, which the replay batches).
        call: list[Any] = []
        leaves: list[Var] = []
        env: dict[int, tuple[Tensor, Axis]] = {}
        for v, axis in zip(values, axes, strict=True):
            if axis is None and not isinstance(v, Tensor):
                call.append(v)  # a Python scalar or anything else f accepts: as it is
                continue
            example = _example(v, axis, size) if axis is not None else Tensor(v._array, v.dtype)
            leaf = new_leaf(example)
            leaves.append(leaf)
            env[id(leaf)] = (v, axis)
            call.append(example)
        with hooks.recorder_override(record_holding_all):
            result = f(*call)
        outs, out_spec = _flatten(result)
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                raise VmapError(f"vmap: f must return a Tensor or a tuple/list of Tensors; output {i} is a "
                                f"{type(o).__name__}")  # fmt: skip
        roots = [o.node for o in outs if o.node is not None]
        eqns, kind, held = _classify(roots, leaves)
        # replay on the batch
        _replay(eqns, env, kind, [o.node for o in outs if o.node is not None])
        results = []
        for o in outs:
            if o.node is not None and kind.get(id(o.node)) == INNER:
                results.append(env[id(o.node)])
            else:
                results.append((o, None))  # depends on no mapped argument: the recorded value is every example's
        del held
        dsts = _axes_per_leaf(out_axes, len(results), "out_axes", "outputs")
        moved = [_move_out(x, d, dst, size, i) for i, ((x, d), dst) in enumerate(zip(results, dsts, strict=True))]
        return _unflatten(out_spec, moved)

    return batched
