"""Kernels of the contraction, selection and joining ops (``runtime.core.ops`` families ``dot_general``,
``select``, ``clamp``, ``concatenate``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runtime.core import shapes
from runtime.core.kernels._common import _WIDEN, KERNELS, Array, _back


def dot_general_kernel(lhs: Array, rhs: Array, *, dimension_numbers: Any, precision: Any = None) -> tuple[Array, ...]:
    """lax.dot_general: batch dims + lhs free dims + rhs free dims, in the operand dtype.

    ``precision`` is recorded for the lowering only: the CPU kernels compute at full precision
    whatever it asks (XLA's CPU backend ignores it as well).

    Narrow floats accumulate in float32 and round once at the end (XLA CPU);
    integers wrap; bool is or-of-ands.
    """
    (lc, rc), (lb, rb) = shapes.dot_dimension_numbers(dimension_numbers)
    if lhs.ndim == 2 and rhs.ndim == 2 and len(lc) == 1 and not lb and lhs.dtype not in _WIDEN:
        # a plain matrix product (the common case): one BLAS call on transposed views
        left = lhs if lc[0] == 1 else lhs.T
        right = rhs if rc[0] == 0 else rhs.T
        return (np.matmul(left, right),)
    lfree = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    batch_shape = tuple(lhs.shape[d] for d in lb)
    lfree_shape = tuple(lhs.shape[d] for d in lfree)
    rfree_shape = tuple(rhs.shape[d] for d in rfree)
    b, m, n = math.prod(batch_shape), math.prod(lfree_shape), math.prod(rfree_shape)
    k = math.prod(lhs.shape[d] for d in lc)
    storage = lhs.dtype
    wide = _WIDEN.get(storage)
    if wide is not None:
        lhs, rhs = lhs.astype(wide), rhs.astype(wide)
    left = np.transpose(lhs, [*lb, *lfree, *lc]).reshape(b, m, k)
    right = np.transpose(rhs, [*rb, *rc, *rfree]).reshape(b, k, n)
    if k == 1 and storage.kind in "biuf":
        # no contraction (an outer product, as in a batch of per-example gradients): each output is one
        # exactly rounded real product, so a broadcast multiply gives the same bits as matmul, which is
        # many times slower for a stack of k=1 products
        out = np.multiply(left, right).reshape(batch_shape + lfree_shape + rfree_shape)
    else:
        out = np.matmul(left, right).reshape(batch_shape + lfree_shape + rfree_shape)
    return (_back(out, storage) if wide is not None else out,)


KERNELS["dot_general"] = dot_general_kernel


def select_kernel(pred: Array, on_true: Array, on_false: Array) -> tuple[Array, ...]:
    """lax.select: on_true where pred, else on_false (0-d operands broadcast)."""
    return (np.where(pred, on_true, on_false),)


KERNELS["select"] = select_kernel


def select_n_kernel(which: Array, *cases: Array) -> tuple[Array, ...]:
    """lax.select_n: ``cases[which]`` elementwise (a bool which: False picks the first case); 0-d
    operands broadcast. An out-of-range which takes the nearest case, as XLA's lowering (a
    tree of selects on ``which < middle``) does."""
    shape = np.broadcast_shapes(which.shape, *(c.shape for c in cases))
    out = np.empty(shape, cases[0].dtype)
    np.copyto(out, cases[0])
    if len(cases) > 1:
        index = np.clip(which.astype(np.int64), 0, len(cases) - 1) if which.dtype != np.bool_ else which
        for i, case in enumerate(cases[1:], start=1):
            np.copyto(out, case, where=np.broadcast_to(index == i, shape))
    return (out,)


KERNELS["select_n"] = select_n_kernel


def clamp_kernel(lo: Array, x: Array, hi: Array) -> tuple[Array, ...]:
    """lax.clamp(min, operand, max) = min(max(operand, min), max), NaN-propagating."""
    storage = x.dtype
    wide = _WIDEN.get(storage)
    if wide is not None:
        lo, x, hi = lo.astype(wide), x.astype(wide), hi.astype(wide)
    with np.errstate(invalid="ignore"):
        out = np.minimum(np.maximum(x, lo), hi)
    return (_back(out, storage) if wide is not None else out,)


KERNELS["clamp"] = clamp_kernel


def concatenate_kernel(*operands: Array, dimension: int) -> tuple[Array, ...]:
    """lax.concatenate along ``dimension``."""
    return (np.concatenate(operands, axis=dimension),)


KERNELS["concatenate"] = concatenate_kernel
