"""Kernels of the structural ops (``runtime.core.ops`` families ``structural``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import memory
from runtime.core.kernels._common import _I64, KERNELS, Array
from runtime.core.kernels.conversion import convert_array, scalar_array


def reshape_kernel(x: Array, *, new_sizes: Sequence[int]) -> tuple[Array, ...]:
    """Row-major reshape (a view when possible)."""
    return (np.reshape(x, tuple(int(n) for n in new_sizes)),)


KERNELS["reshape"] = reshape_kernel


def transpose_kernel(x: Array, *, permutation: Sequence[int]) -> tuple[Array, ...]:
    """Output dim i is input dim permutation[i] (a view)."""
    return (np.transpose(x, tuple(int(p) for p in permutation)),)


KERNELS["transpose"] = transpose_kernel


def broadcast_in_dim_kernel(
    x: Array, *, shape: Sequence[int], broadcast_dimensions: Sequence[int]
) -> tuple[Array, ...]:
    """lax.broadcast_in_dim; the result is a fresh, writable array."""
    out_shape = tuple(int(n) for n in shape)
    expanded = [1] * len(out_shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[int(d)] = x.shape[i]
    # copyto broadcasts into a fresh C-order array (np.array of a broadcast view keeps its
    # zero-stride axis order, and a strided result slows every op that reads it)
    out = memory.empty(out_shape, x.dtype)
    np.copyto(out, x.reshape(expanded))
    return (out,)


KERNELS["broadcast_in_dim"] = broadcast_in_dim_kernel


def slice_kernel(
    x: Array,
    *,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],
    strides: Sequence[int] | None = None,
) -> tuple[Array, ...]:
    """lax.slice (a view)."""
    steps = [1] * x.ndim if strides is None else strides
    return (
        x[tuple(slice(int(s), int(e), int(st)) for s, e, st in zip(start_indices, limit_indices, steps, strict=True))],
    )


KERNELS["slice"] = slice_kernel


def pad_kernel(x: Array, *, padding_config: Sequence[Sequence[int]], padding_value: Any = 0) -> tuple[Array, ...]:
    """lax.pad: low/high padding (negative crops) and interior padding per dim."""
    value = scalar_array(padding_value, dt.from_numpy(x.dtype))
    big: list[int] = []
    place: list[slice] = []
    crop: list[slice] = []
    for (lo, hi, interior), n in zip(((int(a), int(b), int(c)) for a, b, c in padding_config), x.shape, strict=True):
        core = n + max(n - 1, 0) * interior
        plo, phi = max(lo, 0), max(hi, 0)
        big.append(plo + core + phi)
        place.append(slice(plo, plo + core, interior + 1))
        crop.append(slice(max(-lo, 0), plo + core + phi - max(-hi, 0)))
    out = np.full(big, value, dtype=x.dtype)
    out[tuple(place)] = x
    # np.asarray, not np.ascontiguousarray: the latter makes a 0-d operand's result 1-d
    return (np.asarray(out[tuple(crop)], order="C"),)


KERNELS["pad"] = pad_kernel


def reverse_kernel(x: Array, *, dimensions: Sequence[int]) -> tuple[Array, ...]:
    """lax.rev along ``dimensions``, into new memory (as PyTorch's flip: a write into the
    result must not change ``x``; the documented views are the reshape family, slices
    and transposes)."""
    return (np.flip(x, axis=tuple(int(d) for d in dimensions)).copy(),)


KERNELS["reverse"] = reverse_kernel


def iota_kernel(*, dtype: Any, shape: Sequence[int], dimension: int) -> tuple[Array, ...]:
    """lax.broadcasted_iota: the index along ``dimension``, converted to ``dtype``."""
    target = dt.dtype(dtype)
    out_shape = tuple(int(n) for n in shape)
    line = convert_array(np.arange(out_shape[dimension], dtype=_I64), target)
    out = np.empty(out_shape, line.dtype)
    np.copyto(out, line.reshape([n if i == dimension else 1 for i, n in enumerate(out_shape)]))
    return (out,)


KERNELS["iota"] = iota_kernel


def full_kernel(*, shape: Sequence[int], fill_value: Any, dtype: Any) -> tuple[Array, ...]:
    """lax.full: ``fill_value`` converted to ``dtype`` like convert_element_type."""
    target = dt.dtype(dtype)
    return (np.full(tuple(int(n) for n in shape), scalar_array(fill_value, target), dtype=target.storage),)


KERNELS["full"] = full_kernel


# -- sorting, splitting -------------------------------------------------------------------------


def _sort_keys(x: Array) -> list[Array]:
    """Arrays whose lexicographic order (first most significant) is lax.sort's order of ``x``.

    lax.sort compares floats after canonicalising them: every zero is +0.0 (so -0.0 and
    +0.0 tie) and every NaN is one NaN, which sorts after +inf; complex numbers compare
    by real part, then imaginary part, each canonicalised the same way.
    """
    kind = x.dtype.kind
    if kind == "b":
        return [x.astype(np.uint8)]
    if kind == "u":
        return [x.astype(np.uint64)]
    if kind == "i":
        return [x.astype(_I64)]
    if kind == "c" or dt.from_numpy(x.dtype).kind == "complex":
        wide = convert_array(x, dt.complex128)
        return [*_float_keys(wide.real), *_float_keys(wide.imag)]
    if dt.from_numpy(x.dtype).kind in ("int", "uint"):  # int4 / uint4 and the other ml_dtypes integers
        return [x.astype(_I64)]
    return _float_keys(x.astype(np.float64))


def _float_keys(x: Array) -> list[Array]:
    nan = np.isnan(x)
    return [nan, np.where(nan, 0.0, x) + 0.0]  # + 0.0 turns -0.0 into +0.0


def sort_kernel(*operands: Array, dimension: int, is_stable: bool = True, num_keys: int = 1) -> tuple[Array, ...]:
    """lax.sort: every operand permuted by the stable lexicographic order of the first ``num_keys``.

    The order is always stable (``is_stable=False`` allows any order of ties; this is one).
    """
    keys: list[Array] = []
    for x in operands[:num_keys]:
        keys.extend(_sort_keys(x))
    perm = np.lexsort(keys[::-1], axis=int(dimension))  # lexsort's last key is the primary one
    return tuple(np.take_along_axis(x, perm, axis=int(dimension)) for x in operands)


KERNELS["sort"] = sort_kernel


def _total_order_key(x: Array) -> Array:
    """An integer array ordered like ``x`` in IEEE total order (-NaN < -inf < -0.0 < +0.0 < +inf < NaN)
    for floats; the values themselves for integers and bools."""
    kind = dt.from_numpy(x.dtype).kind
    if kind == "uint":
        return x.astype(np.uint64)
    if kind in ("int", "bool"):
        return x.astype(_I64)
    bits = x.astype(np.float64).view(_I64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFF_FFFF_FFFF_FFFF))


def top_k_kernel(operand: Array, *, k: int) -> tuple[Array, ...]:
    """lax.top_k along the last axis: the k largest in IEEE total order (NaN above +inf, +0.0 above
    -0.0), largest first, ties by the lower index; with their int32 indices."""
    key = _total_order_key(operand)
    order = np.argsort(~key, axis=-1, kind="stable")[..., : int(k)]  # ~ reverses the order without overflow
    return (np.take_along_axis(operand, order, axis=-1), order.astype(np.int32))


KERNELS["top_k"] = top_k_kernel


def split_kernel(operand: Array, *, sizes: Sequence[int], axis: int) -> tuple[Array, ...]:
    """lax.split: consecutive pieces of ``sizes`` along ``axis`` (views)."""
    bounds = np.cumsum([int(n) for n in sizes])[:-1]
    return tuple(np.split(operand, bounds, axis=int(axis)))


KERNELS["split"] = split_kernel


def optimization_barrier_kernel(*operands: Array) -> tuple[Array, ...]:
    """The identity on every operand, each into new memory (eager execution has nothing to reorder)."""
    return tuple(np.array(x, copy=True) for x in operands)


KERNELS["optimization_barrier"] = optimization_barrier_kernel
