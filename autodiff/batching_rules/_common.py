"""The batching-rule table and what several op families' batching rules share.

``BATCH_RULES`` and the rule signature types; the helpers that move, broadcast and count batch
dimensions; ``batch_elementwise`` (the rule of every elementwise op, registered by each family's
module) and ``batch_user_call`` (the user calls' rule, which ``conv_general_dilated`` falls back to
for a batched kernel).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from runtime.core import ops
from runtime.core.executor import apply
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor

Dims = Sequence[int | None]
Params = dict[str, Any]
BatchResult = tuple[list[Tensor], list[int | None]]
BatchRule = Callable[[OpDef, Sequence[Tensor], Dims, Params], BatchResult]

#: op name -> batching rule
BATCH_RULES: dict[str, BatchRule] = {}


def missing_batch_rules() -> list[str]:
    """Ops of the vocabulary without a batching rule (empty when complete)."""
    return [name for name in ops.OPS if name not in BATCH_RULES]


# -- helpers --------------------------------------------------------------------------------------


def _run(op: OpDef, args: Sequence[Tensor], params: Params) -> list[Tensor]:
    """``op`` through the eager executor; its outputs as a list."""
    result = apply(op, tuple(args), params)
    return list(result) if isinstance(result, tuple) else [result]


def batch_size(args: Sequence[Tensor], dims: Dims) -> int:
    """The size of the batch dimension (every batched operand has the same)."""
    for a, d in zip(args, dims, strict=True):
        if d is not None:
            return a.shape[d]
    raise ValueError("a batching rule was called with no batched operand")


def example_shape(x: Tensor, d: int | None) -> tuple[int, ...]:
    """``x``'s per-example shape: its shape without the batch dimension."""
    return x.shape if d is None else x.shape[:d] + x.shape[d + 1 :]


def move_batch_dim(x: Tensor, src: int, dst: int) -> Tensor:
    """``x`` with its batch dimension moved from ``src`` to ``dst`` (a ``transpose``; nothing when equal)."""
    if src == dst:
        return x
    rest = [i for i in range(x.ndim) if i != src]
    rest.insert(dst, src)
    return _run(ops.transpose, [x], {"permutation": tuple(rest)})[0]


def broadcast_batch(x: Tensor, size: int, dst: int = 0) -> Tensor:
    """An unbatched ``x`` repeated ``size`` times along a new dimension ``dst`` (``broadcast_in_dim``)."""
    shape = (*x.shape[:dst], size, *x.shape[dst:])
    kept = tuple(i for i in range(len(shape)) if i != dst)
    return _run(ops.broadcast_in_dim, [x], {"shape": shape, "broadcast_dimensions": kept})[0]


def at_front(x: Tensor, d: int | None, size: int) -> Tensor:
    """``x`` with its batch dimension first, broadcast there when ``x`` is unbatched."""
    return broadcast_batch(x, size) if d is None else move_batch_dim(x, d, 0)


def _shift(dims: Sequence[int], k: int) -> tuple[int, ...]:
    """Per-example dimension numbers in an operand whose batch dimension sits at ``k``."""
    return tuple(d + (d >= k) for d in dims)


def _up(dims: Sequence[int]) -> tuple[int, ...]:
    """Per-example dimension numbers in an operand whose batch dimension is first."""
    return tuple(d + 1 for d in dims)


def _front_all(args: Sequence[Tensor], dims: Dims) -> list[Tensor]:
    """Every operand with its batch dimension first (unbatched ones broadcast)."""
    size = batch_size(args, dims)
    return [at_front(a, d, size) for a, d in zip(args, dims, strict=True)]


# -- elementwise: binary, compare, logical, unary, convert, select, clamp ---------------------------


def batch_elementwise(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Elementwise ops take operands of one shape, or 0-d ones (lax's scalar rule).

    When every batched operand has its batch dimension at the same place and
    the full shape, and every unbatched operand is 0-d, the op runs as it is
    and the batch dimension stays where it was. Otherwise the batch dimensions
    move to the front; an unbatched non-0-d operand is broadcast along it, and
    so is a batched operand whose examples are 0-d beside shaped ones.
    """
    if len(args) == 1:  # unary ops and convert: the batch dimension stays where it is
        outs = _run(op, args, params)
        return outs, [dims[0]] * len(outs)
    shapes = [example_shape(a, d) for a, d in zip(args, dims, strict=True)]
    shape = next((s for s in shapes if s != ()), ())
    batched = {d for d in dims if d is not None}
    if len(batched) == 1 and all(
        (s == shape) if d is not None else (s == ()) for s, d in zip(shapes, dims, strict=True)
    ):
        outs = _run(op, args, params)
        return outs, [next(iter(batched))] * len(outs)
    size = batch_size(args, dims)
    full = (size, *shape)
    moved = []
    for a, d, s in zip(args, dims, shapes, strict=True):
        if d is None:
            moved.append(a if s == () else broadcast_batch(a, size))
        else:
            a = move_batch_dim(a, d, 0)
            if s == () and shape != ():
                a = _run(ops.broadcast_in_dim, [a], {"shape": full, "broadcast_dimensions": (0,)})[0]
            moved.append(a)
    outs = _run(op, moved, params)
    return outs, [0] * len(outs)


# -- user rule calls --------------------------------------------------------------------------------


def _example(x: Tensor, i: int) -> Tensor:
    """Example ``i`` of an operand whose batch dimension is first."""
    rest = x.shape[1:]
    one = _run(ops.slice, [x], {"start_indices": (i, *(0,) * len(rest)), "limit_indices": (i + 1, *rest),
                                 "strides": None})[0]  # fmt: skip
    return _run(ops.reshape, [one], {"new_sizes": rest})[0]


def batch_user_call(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """``custom_jvp_call`` / ``custom_vjp_call``: the user's function is arbitrary Python with
    a rule for one example's shapes, so the call runs once per example (each recorded as the
    same user call, so derivatives still use the user's rule) and the results are stacked."""
    from autodiff.custom import example_params

    size = batch_size(args, dims)
    if size == 0 and "out_avals" in params:  # no example to run: empty results (as JAX returns)
        return [Tensor(np.zeros((0, *s), d.storage), d) for d, s in params["out_avals"]], [0] * len(params["out_avals"])
    front = [None if d is None else move_batch_dim(a, d, 0) for a, d in zip(args, dims, strict=True)]
    per = []
    for i in range(size):
        example = [a if f is None else _example(f, i) for a, f in zip(args, front, strict=True)]
        # the example's own params: a custom_vjp call's residuals are per example (example_params)
        per.append(_run(op, example, example_params(op, params, example)))
    outs = []
    for k in range(len(per[0])):
        rows = [_run(ops.reshape, [p[k]], {"new_sizes": (1, *p[k].shape)})[0] for p in per]
        outs.append(_run(ops.concatenate, rows, {"dimension": 0})[0])
    return outs, [0] * len(outs)
