"""Kernel of the convolution (``runtime.core.ops`` family ``conv``): ``conv_general_dilated``.

The operands are brought to lax's canonical layout (lhs: batch, feature, spatial...; rhs: out
feature, in feature, spatial...), lhs is dilated and padded, rhs dilated, and the windows of lhs
(one strided view per output position, NumPy's ``sliding_window_view``) are contracted with rhs
by one batched matrix product per feature group (or batch group). As in ``dot_general``, the
narrow floats accumulate in float32 and round once at the end, integers wrap, and bool is an
or of ands. float32/float64 sums run in BLAS's order, not XLA's: values agree within a few ulps
of the sum of the products' magnitudes (the tests bound the difference by that).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runtime.core.kernels._common import _WIDEN, KERNELS, Array, _back
from runtime.core.shapes.convolution import conv_geometry, conv_output_shape


def _dilate_pad_spatial(x: Array, padding: Any, dilation: Any) -> Array:
    """Zeros between spatial elements (``dilation - 1``) and around them (``padding``; negative crops)."""
    if all(lo == hi == 0 for lo, hi in padding) and all(d == 1 for d in dilation):
        return x
    big, place, crop = list(x.shape[:2]), [slice(None)] * 2, [slice(None)] * 2
    for n, (lo, hi), d in zip(x.shape[2:], padding, dilation, strict=True):
        core = 0 if n == 0 else 1 + (n - 1) * d
        plo, phi = max(lo, 0), max(hi, 0)
        big.append(plo + core + phi)
        place.append(slice(plo, plo + core, d))
        crop.append(slice(max(-lo, 0), plo + core + phi - max(-hi, 0)))
    out = np.zeros(big, dtype=x.dtype)
    out[tuple(place)] = x
    return out[tuple(crop)]


def conv_general_dilated_kernel(lhs: Array, rhs: Array, **params: Any) -> tuple[Array, ...]:
    """lax.conv_general_dilated (correlation, as lax: the kernel is not flipped). A ``precision``
    param is for the lowering only: the kernel computes at full precision whatever it asks."""
    c = conv_geometry(params, lhs.ndim)
    out_shape = conv_output_shape(lhs.shape, rhs.shape, c)
    lspec, rspec, ospec = c.dimension_numbers
    storage = lhs.dtype
    wide = _WIDEN.get(storage)
    if storage.kind == "b":
        wide = np.dtype(np.int64)  # or of ands: count the true products, then test for any
    x = np.transpose(lhs, lspec)
    w = np.transpose(rhs, rspec)
    if wide is not None:
        x, w = x.astype(wide), w.astype(wide)
    x = _dilate_pad_spatial(x, c.padding, c.lhs_dilation)
    w = _dilate_pad_spatial(w, [(0, 0)] * (w.ndim - 2), c.rhs_dilation)
    nsp = x.ndim - 2
    canonical = tuple(out_shape[d] for d in ospec)
    spatial_out = canonical[2:]
    if math.prod(canonical) == 0:
        out = np.zeros(canonical, dtype=x.dtype)
    else:
        k_shape = w.shape[2:]
        # windows: (N, C, *spatial_out, *k_shape), strided by the window strides
        win = np.lib.stride_tricks.sliding_window_view(x, k_shape, axis=tuple(range(2, 2 + nsp)))
        win = win[
            (
                slice(None),
                slice(None),
                *(slice(0, n * s, s) for n, s in zip(spatial_out, c.window_strides, strict=True)),
            )
        ]
        n, ch = x.shape[:2]
        o, i = w.shape[:2]
        kk, yy = math.prod(k_shape), math.prod(spatial_out)
        g, b = c.feature_group_count, c.batch_group_count
        # rows: (group, batch * output position); columns: (input feature, tap)
        sp_axes = tuple(range(2, 2 + nsp))
        k_axes = tuple(range(2 + nsp, 2 + 2 * nsp))
        if b > 1:
            p = win.reshape(b, n // b, ch, *spatial_out, *k_shape)
            rows = np.transpose(p, (0, 1, *(a + 1 for a in sp_axes), 2, *(a + 1 for a in k_axes)))
            rows = rows.reshape(b, (n // b) * yy, ch * kk)
            cols = w.reshape(b, o // b, i * kk).transpose(0, 2, 1)
            prod = np.matmul(rows, cols)  # (b, n/b * yy, o/b)
            out = prod.reshape(b, n // b, *spatial_out, o // b)
            out = np.moveaxis(out, -1, 1)  # (b, o/b, n/b, *spatial)
            out = out.reshape(b * (o // b), n // b, *spatial_out).swapaxes(0, 1)
        else:
            p = win.reshape(n, g, ch // g, *spatial_out, *k_shape)
            rows = np.transpose(p, (1, 0, *(a + 1 for a in sp_axes), 2, *(a + 1 for a in k_axes)))
            rows = rows.reshape(g, n * yy, (ch // g) * kk)
            cols = w.reshape(g, o // g, i * kk).transpose(0, 2, 1)
            prod = np.matmul(rows, cols)  # (g, n * yy, o/g)
            out = prod.reshape(g, n, *spatial_out, o // g)
            out = np.moveaxis(out, -1, 1)  # (g, o/g, n, *spatial)
            out = out.reshape(o, n, *spatial_out).swapaxes(0, 1)
    out = np.transpose(out, np.argsort(ospec))
    if storage.kind == "b":
        return (np.ascontiguousarray(out != 0),)
    if wide is not None:
        return (np.ascontiguousarray(_back(out, storage)),)
    return (np.ascontiguousarray(out),)


KERNELS["conv_general_dilated"] = conv_general_dilated_kernel
