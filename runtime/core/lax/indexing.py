"""The op functions of indexing (gather, scatter, dynamic slices, basic indexing).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import ops, shapes
from runtime.core.executor import apply, as_tensor, op_error
from runtime.core.lax._common import Operand, _ints, _is_index, _named, _one
from runtime.core.lax.structural import _axis_of, broadcast_in_dim, reshape, reverse, slice  # noqa: A004
from runtime.core.promotion import get_policy
from runtime.core.shapes import OpTypeError, ShapeError
from runtime.core.tensor import Tensor

__all__ = [
    "basic_index",
    "dynamic_slice",
    "dynamic_update_slice",
    "gather",
    "repeat",
    "scatter",
    "scatter_add",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
]


def scatter(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """Overwrite windows of ``operand`` with ``updates`` (``jax.lax.scatter`` meaning)."""
    return _one(
        ops.scatter, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
    )  # fmt: skip


def scatter_add(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """Add ``updates`` into windows of ``operand`` (``jax.lax.scatter_add`` meaning)."""
    return _one(
        ops.scatter_add, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
    )  # fmt: skip


def scatter_mul(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """Multiply windows of ``operand`` by ``updates`` (``jax.lax.scatter_mul`` meaning).

    As in JAX, the derivative with respect to ``updates`` needs ``unique_indices=True``.
    """
    return _one(
        ops.scatter_mul, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
    )  # fmt: skip


def scatter_min(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """The elementwise min of windows of ``operand`` and ``updates`` (``jax.lax.scatter_min`` meaning)."""
    return _one(
        ops.scatter_min, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
    )  # fmt: skip


def scatter_max(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """The elementwise max of windows of ``operand`` and ``updates`` (``jax.lax.scatter_max`` meaning)."""
    return _one(
        ops.scatter_max, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
    )  # fmt: skip


def gather(
    operand: Operand,
    start_indices: Operand,
    dimension_numbers: Any,
    slice_sizes: Sequence[int],
    *,
    mode: Any = None,
    fill_value: Any = None,
) -> Tensor:
    """Gather slices of ``operand`` (``jax.lax.gather`` meaning)."""
    return _one(
        ops.gather, operand, start_indices, dimension_numbers=dimension_numbers,
        slice_sizes=_ints(slice_sizes, "slice_sizes"), mode=mode, fill_value=fill_value,
    )  # fmt: skip


def dynamic_slice(operand: Operand, start_indices: Sequence[Operand], slice_sizes: Sequence[int]) -> Tensor:
    """The ``slice_sizes`` window of ``operand`` at ``start_indices`` (clamped into range)."""
    return apply(ops.dynamic_slice, (operand, *start_indices), {"slice_sizes": _ints(slice_sizes, "slice_sizes")})  # type: ignore[return-value]


def dynamic_update_slice(operand: Operand, update: Operand, start_indices: Sequence[Operand]) -> Tensor:
    """``operand`` with ``update`` written at ``start_indices`` (clamped into range)."""
    return apply(ops.dynamic_update_slice, (operand, update, *start_indices), {})  # type: ignore[return-value]


@_named("repeat")
def repeat(x: Operand, repeats: Any, axis: int | None = None, *, total_repeat_length: int | None = None) -> Tensor:
    """Each element of ``x`` repeated along ``axis`` (``jax.numpy.repeat`` meaning).

    ``repeats`` is an int or one non-negative count per element along ``axis``; its
    values must be concrete (the output shape depends on them). ``axis=None``
    flattens ``x`` first. ``total_repeat_length`` fixes the output length: extra
    entries are dropped, missing ones repeat the last element. An int count is a
    ``broadcast_in_dim`` and a ``reshape``; per-element counts are a ``gather``.
    """
    t = as_tensor(x)
    if axis is None:
        t = reshape(t, (t.size,))
        axis = 0
    ax = _axis_of(ops.gather, axis, t.ndim)
    if not (_is_index(ax) and 0 <= ax < t.ndim):
        raise op_error(ShapeError, ops.gather, (t,), f"repeat: axis {axis!r} out of range for rank {t.ndim}")
    n = t.shape[ax]
    if isinstance(repeats, Tensor):
        if repeats.node is not None:
            from runtime.core.graph import ConcretizationError, is_traced

            if is_traced(repeats):  # as jnp.repeat under jax.jit: the counts decide the output's shape
                raise ConcretizationError(
                    f"repeat: repeats is traced (its values are known only when the traced program runs: "
                    "rt.trace, autodiff.jit, autodiff.vmap), and the counts decide the length of the result; pass "
                    "them as a Python int or list, or a NumPy array [repeat operands "
                    f"operand:{t.dtype.short}{list(t.shape)} repeats:{repeats.dtype.short}{list(repeats.shape)}; "
                    f"policy {get_policy()!r}]"
                )
        counts = np.asarray(repeats._array)  # (an untraced Tensor: its values are this call's own)
    else:
        counts = np.asarray(repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1 or (counts.ndim == 1 and counts.shape[0] not in (1, n)):
        raise op_error(
            ShapeError, ops.gather, (t,),
            f"repeat: repeats must be an int or {n} integer counts along axis {ax}, got {repeats!r}",
        )  # fmt: skip
    if (counts < 0).any():
        raise op_error(ShapeError, ops.gather, (t,), f"repeat: repeats {repeats!r} must be non-negative")
    if counts.ndim == 1 and counts.shape[0] == 1:
        counts = counts.reshape(())
    if counts.ndim == 0 and total_repeat_length is None:
        c = int(counts)
        wide = (*t.shape[: ax + 1], c, *t.shape[ax + 1 :])
        spread = broadcast_in_dim(t, wide, tuple(d if d <= ax else d + 1 for d in range(t.ndim)))
        return reshape(spread, (*t.shape[:ax], n * c, *t.shape[ax + 1 :]))
    rows = np.repeat(np.arange(n, dtype=np.int64), np.broadcast_to(counts, (n,)))
    if total_repeat_length is not None:
        total = operator.index(total_repeat_length)
        if rows.size >= total or rows.size == 0:
            rows = rows[:total] if rows.size else np.zeros(0, np.int64)
        else:
            rows = np.concatenate([rows, np.full(total - rows.size, rows[-1], np.int64)])
    dn = shapes.GatherDimensionNumbers(
        offset_dims=tuple(d for d in range(t.ndim) if d != ax), collapsed_slice_dims=(ax,), start_index_map=(ax,)
    )
    sizes = tuple(1 if d == ax else s for d, s in enumerate(t.shape))
    return gather(t, rows.reshape(-1, 1), dn, sizes)


@_named("basic_index")
def basic_index(x: Tensor, index: Any) -> Tensor:
    """``x[index]`` for ints, slices (any step), ``...`` and ``None``.

    Lowered to ``reverse`` (negative steps), one ``slice`` and a ``reshape``, so
    it records and differentiates like any op. Other indices raise ``TypeError``
    (use ``gather``).
    """
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if not (item is None or item is Ellipsis or isinstance(item, builtins.slice) or _is_int(item)):
            raise OpTypeError(
                f"basic_index: only basic indexing (ints, slices, ..., None) is supported, got "
                f"{type(item).__name__}; use runtime.gather for advanced indexing [policy {get_policy()!r}]"
            )
    n_real = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    if builtins.sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}: {index!r}")
    expanded: list[Any] = []
    for item in items:
        if item is Ellipsis:
            expanded.extend([builtins.slice(None)] * (x.ndim - n_real))
        else:
            expanded.append(item)
    if Ellipsis not in items:
        expanded.extend([builtins.slice(None)] * (x.ndim - n_real))
    starts, limits, strides, flips, out_shape = [], [], [], [], []
    axis = 0
    for item in expanded:
        if item is None:
            out_shape.append(1)
            continue
        n = x.shape[axis]
        if isinstance(item, builtins.slice):
            start, stop, step = item.indices(n)
            count = len(range(start, stop, step))
            if step < 0:
                flips.append(axis)
                start, step = n - 1 - start, -step
            limit = start + (count - 1) * step + 1 if count else start
            starts.append(start if count else 0)
            limits.append(limit if count else 0)
            strides.append(step)
            out_shape.append(count)
        else:
            i = operator.index(item)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i %= n
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
        axis += 1
    out: Tensor = x
    if flips:
        out = reverse(out, flips)
    if tuple(starts) != (0,) * x.ndim or tuple(limits) != x.shape or builtins.any(s != 1 for s in strides):
        out = slice(out, starts, limits, strides)
    if tuple(out_shape) != out.shape:
        out = reshape(out, out_shape)
    return out


def _is_int(item: Any) -> bool:
    if isinstance(item, builtins.bool):
        return False
    try:
        operator.index(item)
    except TypeError:
        return False
    return True
