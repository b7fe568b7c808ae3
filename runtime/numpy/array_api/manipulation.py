"""The standard's manipulation, indexing and linear algebra functions under its signatures
(positional-only arrays, keyword-only ``axis``), composed of op functions.

``concat``/``stack`` are ``lax.concatenate`` (which promotes its operands under the policy),
``permute_dims`` is ``transpose``, ``unstack`` is ``lax.split`` and ``reshape``, ``repeat``
with per-element counts needs them concrete (the output's length is their sum).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import lax as F
from runtime.core.shapes import ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import manipulation as M
from runtime.numpy import tensor_methods as TM
from runtime.numpy.array_api.common import AxisError, CopyError, operand, standard_error
from runtime.numpy.array_api.data_types import copy_of
from runtime.numpy.common import is_int, normalize_axes
from runtime.numpy.params import named, refuse_traced

__all__ = [
    "broadcast_arrays",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "matmul",
    "matrix_transpose",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "take",
    "take_along_axis",
    "tensordot",
    "tile",
    "unstack",
    "vecdot",
]


def _broadcast_shape(fn: str, shapes: Sequence[tuple[int, ...]], operands: Sequence[Any]) -> tuple[int, ...]:
    rank = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, n in enumerate((1,) * (rank - len(s)) + tuple(s)):
            if n != 1:
                if out[i] not in (1, n):
                    raise standard_error(
                        ShapeError, fn, f"shapes {[tuple(x) for x in shapes]} do not broadcast", *operands
                    )
                out[i] = n
    return tuple(out)


@named("broadcast_arrays")
def broadcast_arrays(*arrays: Any) -> list[Tensor]:
    """The arrays broadcast to their common shape (each a recorded ``broadcast_in_dim``)."""
    ts = [operand("broadcast_arrays", a, f"arrays[{i}]") for i, a in enumerate(arrays)]
    shape = _broadcast_shape("broadcast_arrays", [t.shape for t in ts], ts)
    return [t if t.shape == shape else M.broadcast_to(t, shape) for t in ts]


@named("broadcast_to")
def broadcast_to(x: Any, /, shape: Sequence[int]) -> Tensor:
    """``x`` broadcast to ``shape``."""
    return M.broadcast_to(x, shape)


@named("concat")
def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Tensor:
    """The arrays joined along ``axis`` (``None``: flattened first), promoted by the policy."""
    ts = [operand("concat", a, f"arrays[{i}]") for i, a in enumerate(arrays)]
    if not ts:
        raise standard_error(ShapeError, "concat", "needs at least one array")
    if axis is None:
        ts = [t if t.ndim == 1 else F.reshape(t, (t.size,)) for t in ts]
        axis = 0
    if builtins.any(t.ndim == 0 for t in ts):
        raise standard_error(ShapeError, "concat", "cannot join 0-d arrays (use stack)", *ts)
    (a,) = normalize_axes(ts[0], axis, "concat")
    return F.concatenate(ts, a)


@named("stack")
def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Tensor:
    """The equal-shaped arrays joined along a new ``axis``."""
    ts = [operand("stack", a, f"arrays[{i}]") for i, a in enumerate(arrays)]
    if not ts:
        raise standard_error(ShapeError, "stack", "needs at least one array")
    if len({t.shape for t in ts}) > 1:
        raise standard_error(ShapeError, "stack", "takes arrays of one shape", *ts)
    return F.stack(ts, axis)


@named("expand_dims")
def expand_dims(x: Any, /, axis: int = 0) -> Tensor:
    """``x`` with a size-1 axis inserted at ``axis`` (a position of the result)."""
    t = operand("expand_dims", x)
    if not is_int(axis):
        raise standard_error(ShapeError, "expand_dims", f"axis must be an int, got {axis!r}", t)
    if not -t.ndim - 1 <= axis <= t.ndim:
        raise standard_error(AxisError, "expand_dims", f"axis {axis!r} is out of range for rank {t.ndim} + 1", t)
    return F.expand_dims(t, (axis,))


@named("flip")
def flip(x: Any, /, *, axis: int | Sequence[int] | None = None) -> Tensor:
    """``x`` reversed along ``axis`` (every axis by default)."""
    return M.flip(x, axis)


@named("moveaxis")
def moveaxis(x: Any, source: Any, destination: Any, /) -> Tensor:
    """``x`` with the ``source`` axes moved to ``destination``."""
    return M.moveaxis(x, source, destination)


@named("permute_dims")
def permute_dims(x: Any, /, axes: Sequence[int]) -> Tensor:
    """``x`` with its axes permuted (``lax.transpose``)."""
    t = operand("permute_dims", x)
    perm = tuple(axes)
    if sorted(a % t.ndim if t.ndim else a for a in perm) != list(range(t.ndim)):
        raise standard_error(ShapeError, "permute_dims", f"axes {perm} is not a permutation of {t.ndim} axes", t)
    return F.transpose(t, tuple(a % t.ndim for a in perm))


@named("reshape")
def reshape(x: Any, /, shape: Sequence[int], *, copy: bool | None = None) -> Tensor:
    """``x`` with ``shape`` (one ``-1`` inferred). castwise's reshape is a new value of the graph
    either way; ``copy=False`` is honoured (a view), ``copy=True`` gives fresh storage."""
    t = operand("reshape", x)
    sizes = (shape,) if is_int(shape) else tuple(shape)
    out = TM.reshape(t, sizes)
    if copy:
        return copy_of(out)
    if copy is False and out.node is None and not out.requires_grad and t.size and not _shares(out, t):
        raise standard_error(CopyError, "reshape", "copy=False, but this reshape copies", t)
    return out


def _shares(a: Tensor, b: Tensor) -> bool:
    return bool(np.shares_memory(a.numpy(), b.numpy()))


@named("roll")
def roll(x: Any, /, shift: int | Sequence[int], *, axis: int | Sequence[int] | None = None) -> Tensor:
    """``x`` shifted cyclically by ``shift`` along ``axis`` (flattened without one)."""
    return M.roll(x, shift, axis)


@named("squeeze")
def squeeze(x: Any, /, axis: int | Sequence[int]) -> Tensor:
    """``x`` without the size-1 ``axis``; an axis of another size raises (the standard's rule,
    under every policy)."""
    t = operand("squeeze", x)
    axes = normalize_axes(t, axis, "squeeze")
    wrong = [a for a in axes if t.shape[a] != 1]
    if wrong:
        raise standard_error(ShapeError, "squeeze", f"cannot squeeze axis {wrong[0]} of size {t.shape[wrong[0]]}", t)
    return F.reshape(t, tuple(n for i, n in enumerate(t.shape) if i not in axes))


@named("tile")
def tile(x: Any, repetitions: Sequence[int], /) -> Tensor:
    """``x`` repeated ``repetitions`` times along each axis."""
    return F.tile(operand("tile", x), tuple(repetitions))


@named("repeat")
def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (flattened without one). An array
    of counts decides the output's length, so a traced one raises ``ConcretizationError``."""
    t = operand("repeat", x)
    if isinstance(repeats, Tensor):
        refuse_traced(
            "repeat", "repeats", repeats, "its values decide the output's length",
            "pass the counts as a concrete array or a Python int", (t, repeats),
        )  # fmt: skip
        counts: Any = [builtins.int(v) for v in repeats.numpy().reshape(-1)]
        if len(counts) == 1:  # one count for every element, as a 0-d or (1,) array broadcasts
            counts = counts[0]
    else:
        counts = repeats
    if axis is not None:
        (axis,) = normalize_axes(t, axis, "repeat")
    if isinstance(counts, list) and not counts:  # no elements to repeat: an empty result
        counts = 0
    return F.repeat(t, counts, axis)


@named("unstack")
def unstack(x: Any, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``, as a tuple (``lax.split`` into size-1 pieces)."""
    t = operand("unstack", x)
    if t.ndim == 0:
        raise standard_error(ShapeError, "unstack", "cannot unstack a 0-d array", t)
    (a,) = normalize_axes(t, axis, "unstack")
    n = t.shape[a]
    if n == 0:
        return ()
    rest = t.shape[:a] + t.shape[a + 1 :]
    return tuple(F.reshape(piece, rest) for piece in F.split(t, [1] * n, a))


@named("take")
def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Tensor:
    """The elements of ``x`` at ``indices`` along ``axis`` (a recorded ``gather``)."""
    return M.take(x, indices, axis)


@named("take_along_axis")
def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Tensor:
    """The elements of ``x`` at ``indices``, matched along ``axis``."""
    return M.take_along_axis(x, indices, axis)


@named("matmul")
def matmul(x1: Any, x2: Any, /) -> Tensor:
    """The matrix product (batch axes broadcast)."""
    return F.matmul(x1, x2)


@named("matrix_transpose")
def matrix_transpose(x: Any, /) -> Tensor:
    """``x`` with its last two axes swapped (``x.mT``)."""
    t = operand("matrix_transpose", x)
    if t.ndim < 2:
        raise standard_error(ShapeError, "matrix_transpose", "takes an array of rank 2 or more", t)
    perm = (*range(t.ndim - 2), t.ndim - 1, t.ndim - 2)
    return F.transpose(t, perm)


@named("tensordot")
def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Tensor:
    """The tensor contraction over ``axes``."""
    return M.tensordot(x1, x2, axes)


@named("vecdot")
def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis``, the first conjugated (``sum(conj(x1) * x2)``),
    the other axes broadcast."""
    a, b = operand("vecdot", x1, "x1"), operand("vecdot", x2, "x2")
    shape = _broadcast_shape("vecdot", [a.shape, b.shape], (a, b))
    if not shape or not -len(shape) <= axis < len(shape):
        raise standard_error(ShapeError, "vecdot", f"axis {axis} is out of range", a, b)
    ax = axis % len(shape)
    for t in (a, b):
        at = ax - (len(shape) - t.ndim)
        if at < 0 or t.shape[at] != shape[ax]:
            raise standard_error(ShapeError, "vecdot", f"the vectors along axis {axis} differ in length", a, b)
    if a.dtype.kind == "complex":
        a = F.conj(a)
    return F.reduce_sum(F.mul(a, b), (ax,))
