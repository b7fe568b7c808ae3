"""Kernels of the structural ops (``runtime.ops`` families ``structural``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.kernels``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime import dtypes as dt
from runtime import memory
from runtime.kernels._common import _I64, KERNELS, Array
from runtime.kernels.conversion import convert_array, scalar_array


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
    """lax.rev along ``dimensions`` (a view)."""
    return (np.flip(x, axis=tuple(int(d) for d in dimensions)),)


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
