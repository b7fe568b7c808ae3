"""Kernels of the indexing ops (``runtime.core.ops`` families ``scatter``, ``gather``,
``dynamic_slice``, ``dynamic_update_slice``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import shapes
from runtime.core.kernels._common import _I64, KERNELS, Array, _iinfo, _kind, _map2
from runtime.core.kernels.binary import max_kernel, min_kernel, mul_kernel
from runtime.core.kernels.conversion import scalar_array

# -- conversion -----------------------------------------------------------------------------------


def _default_fill(storage: np.dtype[Any]) -> Any:
    """jax.lax.gather's FILL_OR_DROP default: NaN, the most negative int, the largest uint, True."""
    kind = _kind(storage)
    if kind in ("float", "complex"):
        return np.nan
    if kind == "bool":
        return True
    info = _iinfo(storage)
    return int(info.min) if kind == "int" else int(info.max)


# -- indexing ------------------------------------------------------------------------------------


def _index_array(indices: Array) -> Array:
    # Work in int64; huge uint64 indices are out of bounds either way, so
    # saturate them instead of letting them wrap negative.
    if indices.dtype == np.uint64:
        indices = np.minimum(indices, np.uint64(np.iinfo(np.int64).max))
    return np.asarray(indices).astype(_I64)


def _batch_iota(batch: tuple[int, ...], axis: int) -> Array:
    shape = [1] * len(batch)
    shape[axis] = batch[axis]
    return np.arange(batch[axis], dtype=_I64).reshape(shape)


def _window_index(starts: Sequence[Any], batch: tuple[int, ...], window: Sequence[int]) -> list[Array]:
    """Per operand dim, index arrays of shape batch + window: start + offset within the window."""
    rank = len(window)
    nb = len(batch)
    out: list[Array] = []
    for d, size in enumerate(window):
        start = np.broadcast_to(np.asarray(starts[d], dtype=_I64), batch).reshape(batch + (1,) * rank)
        offset = np.arange(size, dtype=_I64).reshape((1,) * (nb + d) + (size,) + (1,) * (rank - d - 1))
        out.append(start + offset)
    return out


def gather_kernel(
    operand: Array,
    start_indices: Array,
    *,
    dimension_numbers: Any,
    slice_sizes: Sequence[int],
    mode: Any = None,
    fill_value: Any = None,
) -> tuple[Array, ...]:
    """lax.gather (index vector dim last).

    clip / promise_in_bounds clamp each start so the slice fits (XLA's native
    gather); fill_or_drop returns ``fill_value`` (default: NaN, the most
    negative int, the largest uint, True) for every slice that would leave the
    operand.
    """
    dn = shapes.gather_dimension_numbers(dimension_numbers)
    mode_name = shapes.parse_mode(mode, shapes.GATHER_DEFAULT_MODE)
    sizes = tuple(int(s) for s in slice_sizes)
    idx = _index_array(start_indices)
    batch = idx.shape[:-1]
    nb, rank = len(batch), operand.ndim
    starts: list[Any] = [0] * rank
    valid: Array | None = None
    for k, d in enumerate(dn.start_index_map):
        s = idx[..., k]
        upper = operand.shape[d] - sizes[d]
        if mode_name == "fill_or_drop":
            ok = (s >= 0) & (s <= upper)
            valid = ok if valid is None else valid & ok
        starts[d] = np.clip(s, 0, upper)
    for od, bd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True):
        starts[od] = _batch_iota(batch, bd)
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    kept = tuple(sizes[d] for d in range(rank) if d not in dropped)
    if rank == 0:
        g = np.broadcast_to(operand, batch)
    else:
        g = operand[tuple(_window_index(starts, batch, sizes))]
    if g.size != math.prod(batch + kept):
        # A collapsed dim of slice size 0 (only possible on an empty operand
        # dim): there is no data to take; the result is all fill.
        g = np.full(batch + kept, scalar_array(_default_fill(operand.dtype), dt.from_numpy(operand.dtype)))
    g = g.reshape(batch + kept)
    out_rank = nb + len(kept)
    batch_pos = [i for i in range(out_rank) if i not in dn.offset_dims]
    perm = [0] * out_rank
    for j, pos in enumerate(batch_pos):
        perm[pos] = j
    for j, pos in enumerate(dn.offset_dims):
        perm[pos] = nb + j
    out = np.transpose(g, perm)
    if valid is not None:
        fill = _default_fill(operand.dtype) if fill_value is None else fill_value
        mask_shape = [1] * out_rank
        for j, pos in enumerate(batch_pos):
            mask_shape[pos] = batch[j]
        out = np.where(valid.reshape(mask_shape), out, scalar_array(fill, dt.from_numpy(operand.dtype)))
    # np.asarray, not np.ascontiguousarray: the latter makes a 0-d result 1-d
    return (np.asarray(out, order="C"),)


KERNELS["gather"] = gather_kernel


def _scatter(
    operand: Array,
    scatter_indices: Array,
    updates: Array,
    dimension_numbers: Any,
    mode: Any,
    add: bool,
    combine: Callable[[Array, Array], tuple[Array, ...]] | None = None,
) -> Array:
    dn = shapes.scatter_dimension_numbers(dimension_numbers)
    mode_name = shapes.parse_mode(mode, shapes.SCATTER_DEFAULT_MODE)
    idx = _index_array(scatter_indices)
    batch = idx.shape[:-1]
    rank = operand.ndim
    window = shapes.scatter_window(operand.shape, updates.shape, dn)
    scatter_dims = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
    # Updates as batch + full-rank window (inserted/batching dims get size 1).
    vals = np.transpose(updates, [*scatter_dims, *dn.update_window_dims]).reshape(batch + window)
    starts: list[Any] = [0] * rank
    valid: Array | None = None
    for k, d in enumerate(dn.scatter_dims_to_operand_dims):
        s = idx[..., k]
        upper = operand.shape[d] - window[d]
        if mode_name == "clip":
            s = np.clip(s, 0, upper)
        else:
            # FILL_OR_DROP and PROMISE_IN_BOUNDS lower to XLA's native scatter,
            # which skips a whole update window that would leave the operand.
            ok = (s >= 0) & (s <= upper)
            valid = ok if valid is None else valid & ok
        starts[d] = s
    for od, bd in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims, strict=True):
        starts[od] = _batch_iota(batch, bd)
    out = operand.copy()
    full = batch + window
    if rank == 0:
        flat = vals.reshape(-1) if valid is None else vals[np.broadcast_to(valid, batch)]
        if flat.size and combine is not None:
            return _combine_in_order(out.reshape(1), (np.zeros(flat.size, _I64),), flat, combine).reshape(())
        if flat.size:
            out[()] = _map2(np.add, out, np.sum(flat, dtype=out.dtype)) if add else flat[-1]
        return out
    index = [np.broadcast_to(ix, full) for ix in _window_index(starts, batch, window)]
    if valid is None:
        where = tuple(ix.reshape(-1) for ix in index)
        flat = vals.reshape(-1)
    else:
        keep = np.broadcast_to(valid.reshape(batch + (1,) * rank), full)
        where = tuple(ix[keep] for ix in index)
        flat = vals[keep]
    if combine is not None:
        return _combine_in_order(out, where, flat, combine)
    if add:
        # ufunc.at adds one update at a time in index order, each rounded to the
        # storage dtype (for narrow floats NumPy/ml_dtypes add in float32 and
        # round back), as XLA's sequential CPU scatter does.
        np.add.at(out, where, flat)
    else:
        out[where] = flat
    return out


def _combine_in_order(
    out: Array, where: tuple[Array, ...], flat: Array, combine: Callable[[Array, Array], tuple[Array, ...]]
) -> Array:
    """``out[p] = combine(out[p], u)`` for every update ``u`` at position ``p``, in index order.

    Duplicate positions are applied in rounds: round r takes the r-th update of every
    position (unique within the round), so each step is one vectorised call of the
    same-dtype binary kernel (``mul``, ``max``, ``min``): its rounding of narrow floats,
    its -0.0 < +0.0 and NaN rules, and XLA's sequential order for duplicates.
    """
    linear = np.ravel_multi_index(where, out.shape) if out.ndim else np.zeros(flat.size, _I64)
    if linear.size == 0:
        return out
    order = np.argsort(linear, kind="stable")
    ranked = linear[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ranked)) + 1]
    counts = np.diff(np.r_[starts, ranked.size])
    rank = np.arange(ranked.size) - np.repeat(starts, counts)
    view = out.reshape(-1)
    values = flat[order]
    for r in range(int(counts.max())):
        pick = rank == r
        pos = ranked[pick]
        (view[pos],) = combine(view[pos], values[pick])
    return out


def scatter_kernel(
    operand: Array,
    scatter_indices: Array,
    updates: Array,
    *,
    dimension_numbers: Any,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> tuple[Array, ...]:
    """lax.scatter: a copy of operand with update windows written (last write wins on duplicates)."""
    return (_scatter(operand, scatter_indices, updates, dimension_numbers, mode, add=False),)


KERNELS["scatter"] = scatter_kernel


def scatter_add_kernel(
    operand: Array,
    scatter_indices: Array,
    updates: Array,
    *,
    dimension_numbers: Any,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> tuple[Array, ...]:
    """lax.scatter_add: a copy of operand with update windows added (duplicates accumulate)."""
    return (_scatter(operand, scatter_indices, updates, dimension_numbers, mode, add=True),)


KERNELS["scatter_add"] = scatter_add_kernel


def scatter_mul_kernel(
    operand: Array,
    scatter_indices: Array,
    updates: Array,
    *,
    dimension_numbers: Any,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> tuple[Array, ...]:
    """lax.scatter_mul: a copy of operand with windows multiplied by the updates (duplicates in order)."""
    return (_scatter(operand, scatter_indices, updates, dimension_numbers, mode, add=False, combine=mul_kernel),)


KERNELS["scatter_mul"] = scatter_mul_kernel


def scatter_min_kernel(
    operand: Array,
    scatter_indices: Array,
    updates: Array,
    *,
    dimension_numbers: Any,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> tuple[Array, ...]:
    """lax.scatter_min: each written position is the min (lax.min: NaN wins, -0.0 < +0.0) of it and its updates."""
    return (_scatter(operand, scatter_indices, updates, dimension_numbers, mode, add=False, combine=min_kernel),)


KERNELS["scatter_min"] = scatter_min_kernel


def scatter_max_kernel(
    operand: Array,
    scatter_indices: Array,
    updates: Array,
    *,
    dimension_numbers: Any,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> tuple[Array, ...]:
    """lax.scatter_max: each written position is the max (lax.max: NaN wins, +0.0 > -0.0) of it and its updates."""
    return (_scatter(operand, scatter_indices, updates, dimension_numbers, mode, add=False, combine=max_kernel),)


KERNELS["scatter_max"] = scatter_max_kernel


def _clamped_window(shape: Sequence[int], starts: Sequence[Array], sizes: Sequence[int]) -> tuple[slice, ...]:
    # XLA clamps each start into [0, dim - size]; negative starts do not wrap
    # (jax.lax's allow_negative_indices=True wrapper adds the dim size first).
    out: list[slice] = []
    for n, s, size in zip(shape, starts, sizes, strict=True):
        begin = min(max(int(s), 0), n - size)
        out.append(slice(begin, begin + size))
    return tuple(out)


def dynamic_slice_kernel(operand: Array, *start_indices: Array, slice_sizes: Sequence[int]) -> tuple[Array, ...]:
    """lax.dynamic_slice with XLA's start clamping."""
    sizes = [int(s) for s in slice_sizes]
    return (operand[_clamped_window(operand.shape, start_indices, sizes)],)


KERNELS["dynamic_slice"] = dynamic_slice_kernel


def dynamic_update_slice_kernel(operand: Array, update: Array, *start_indices: Array) -> tuple[Array, ...]:
    """lax.dynamic_update_slice with XLA's start clamping; returns a new array."""
    out = operand.copy()
    out[_clamped_window(operand.shape, start_indices, update.shape)] = update
    return (out,)


KERNELS["dynamic_update_slice"] = dynamic_update_slice_kernel
