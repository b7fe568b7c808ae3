"""Kernels of the windowed reductions (``runtime.core.ops`` family ``window``).

The operand is dilated and padded with the reduction's identity into one array; each window
tap (an offset inside the window, in row-major order) is then one strided view of it, shaped
like the output. A reduction folds the taps from the identity with the op's own binary kernel
(``add``, ``max``, ``min``), in XLA CPU's order (the window's elements one after the other), so
integer wrapping, -0.0 < +0.0, NaN propagation and complex max/min are those of the binary ops,
and the narrow floats round after every step as XLA's float-normalised reducer does.

``select_and_gather_add`` / ``select_and_scatter_add`` choose, per window, the first tap whose
operand value is ``>=`` (``select_prim="ge"``, max) or ``<=`` (``"le"``, min) every later one, as
XLA's SelectAndScatter does, and read the tangent there (gather) or add the source there
(scatter, accumulated in the wide dtype and rounded once).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core.kernels._common import _WIDEN, KERNELS, Array, _back
from runtime.core.kernels.binary import add_kernel, max_kernel, min_kernel
from runtime.core.kernels.conversion import scalar_array
from runtime.core.kernels.reductions import _extreme_identity
from runtime.core.shapes.windowed import Window, window_geometry, window_output_shape

Slices = tuple[slice, ...]


def _dilate_pad(x: Array, w: Window, fill: Any) -> tuple[Array, tuple[int, ...], Slices]:
    """``x`` dilated by ``base_dilation`` inside ``fill``, padded by the non-negative part of ``padding``.

    Returns the array, the offset where the (possibly cropped) padded operand starts in it (the
    negative part of the low padding), and the slices that put ``x`` back (the transposition).
    """
    big, place, start = [], [], []
    for n, (lo, hi), b in zip(x.shape, w.padding, w.base_dilation, strict=True):
        core = 0 if n == 0 else 1 + (n - 1) * b
        plo, phi = max(lo, 0), max(hi, 0)
        big.append(plo + core + phi)
        place.append(slice(plo, plo + core, b))
        start.append(max(-lo, 0))
    out = np.full(big, fill, dtype=x.dtype)
    out[tuple(place)] = x
    return out, tuple(start), tuple(place)


def _taps(w: Window, start: tuple[int, ...], out_shape: tuple[int, ...]) -> Iterator[Slices]:
    """One tuple of slices per window tap, row-major: the tap's element of every window."""
    for offsets in itertools.product(*(range(k) for k in w.dimensions)):
        yield tuple(
            slice(s0 + o * d, s0 + o * d + (n - 1) * st + 1, st) if n else slice(0, 0)
            for s0, o, d, n, st in zip(start, offsets, w.window_dilation, out_shape, w.strides, strict=True)
        )


def _geometry(x: Array, params: Mapping[str, Any]) -> tuple[Window, tuple[int, ...]]:
    w = window_geometry(params, x.ndim)
    return w, window_output_shape(x.shape, w)


def _fold(x: Array, params: Mapping[str, Any], init: Array, kernel: Any) -> Array:
    w, out_shape = _geometry(x, params)
    out = np.full(out_shape, init, dtype=x.dtype)
    if out.size == 0:
        return out
    padded, start, _ = _dilate_pad(x, w, init)
    for tap in _taps(w, start, out_shape):
        (out,) = kernel(out, padded[tap])
    return np.asarray(out)


def reduce_window_sum_kernel(x: Array, **params: Any) -> tuple[Array, ...]:
    """lax.reduce_window_sum: from +0, the window's elements added in row-major order."""
    return (_fold(x, params, scalar_array(0, dt.from_numpy(x.dtype)), add_kernel),)


KERNELS["reduce_window_sum"] = reduce_window_sum_kernel


def reduce_window_max_kernel(x: Array, **params: Any) -> tuple[Array, ...]:
    """lax.reduce_window_max: from lax's max identity (-inf, or the format's lowest value)."""
    return (_fold(x, params, _extreme_identity(x.dtype, True), max_kernel),)


KERNELS["reduce_window_max"] = reduce_window_max_kernel


def reduce_window_min_kernel(x: Array, **params: Any) -> tuple[Array, ...]:
    """lax.reduce_window_min: from lax's min identity (+inf, or the format's highest value)."""
    return (_fold(x, params, _extreme_identity(x.dtype, False), min_kernel),)


KERNELS["reduce_window_min"] = reduce_window_min_kernel


def _selected_tap(
    operand: Array, select_prim: str, params: Mapping[str, Any]
) -> tuple[Window, tuple[int, ...], list[Slices], Array, tuple[int, ...], Slices]:
    """Per window, the index of the tap that ``select_prim`` picks (the first max/min) and the geometry."""
    w, out_shape = _geometry(operand, params)
    wide = _WIDEN.get(operand.dtype)
    x = operand.astype(wide) if wide is not None else operand  # exact: comparisons are unchanged
    padded, start, place = _dilate_pad(x, w, _extreme_identity(x.dtype, select_prim == "ge"))
    taps = list(_taps(w, start, out_shape))
    which = np.zeros(out_shape, dtype=np.intp)
    if taps and which.size:
        best = padded[taps[0]]
        for k, tap in enumerate(taps[1:], start=1):
            cand = padded[tap]
            with np.errstate(invalid="ignore"):
                keep = best >= cand if select_prim == "ge" else best <= cand
            best = np.where(keep, best, cand)
            which = np.where(keep, which, k)
    return w, out_shape, taps, which, padded.shape, place


def select_and_gather_add_kernel(
    tangents: Array, operand: Array, *, select_prim: str, **params: Any
) -> tuple[Array, ...]:
    """Per window, ``tangents`` at the tap of ``operand`` that ``select_prim`` picks (0 for an empty window)."""
    w, out_shape, taps, which, _, _ = _selected_tap(operand, select_prim, params)
    out = np.zeros(out_shape, dtype=tangents.dtype)
    if not taps or out.size == 0:
        return (out,)
    padded_t, _, _ = _dilate_pad(tangents, w, scalar_array(0, dt.from_numpy(tangents.dtype)))
    for k, tap in enumerate(taps):
        out = np.where(which == k, padded_t[tap], out)
    return (np.asarray(out, dtype=tangents.dtype),)


KERNELS["select_and_gather_add"] = select_and_gather_add_kernel


def select_and_scatter_add_kernel(
    source: Array, operand: Array, *, select_prim: str, **params: Any
) -> tuple[Array, ...]:
    """Each window's ``source`` value added at the tap of ``operand`` that ``select_prim`` picks."""
    _, _, taps, which, padded_shape, place = _selected_tap(operand, select_prim, params)
    storage = source.dtype
    wide = _WIDEN.get(storage)
    src = source.astype(wide) if wide is not None else source
    acc = np.zeros(padded_shape, dtype=src.dtype)
    if taps and src.size:
        zero = np.zeros((), dtype=src.dtype)
        for k, tap in enumerate(taps):
            acc[tap] += np.where(which == k, src, zero)  # within one tap the windows' positions are distinct
    out = acc[place]
    return (np.array(_back(out, storage) if wide is not None else out),)  # a copy, 0-d stays 0-d


KERNELS["select_and_scatter_add"] = select_and_scatter_add_kernel
