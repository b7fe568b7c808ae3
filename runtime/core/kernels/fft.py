"""Kernels of the Fourier transforms (``runtime.core.ops`` family ``fft``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``.

``numpy.fft`` (pocketfft) computes in the operand's precision since NumPy 2: float32 and
complex64 stay single, as XLA's transforms do, so eager and ``autodiff.jit`` results agree to
single-precision rounding (the two libraries order their butterflies differently, so the last
bits may differ). An empty operand or result has nothing to transform: its result is zeros, as
XLA gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.core.kernels._common import KERNELS, Array

_F32, _F64, _C64, _C128 = (np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
_COMPLEX_OF: dict[np.dtype[Any], np.dtype[Any]] = {_F32: _C64, _F64: _C128}
_REAL_OF: dict[np.dtype[Any], np.dtype[Any]] = {_C64: _F32, _C128: _F64}


def _output_of(x: Array, fft_type: str, lengths: tuple[int, ...]) -> tuple[tuple[int, ...], np.dtype[Any]]:
    k = len(lengths)
    batch = x.shape[: x.ndim - k]
    if fft_type == "RFFT":
        return (*batch, *lengths[:-1], lengths[-1] // 2 + 1), _COMPLEX_OF[x.dtype]
    if fft_type == "IRFFT":
        return (*batch, *lengths), _REAL_OF[x.dtype]
    return x.shape, x.dtype


def fft_kernel(x: Array, *, fft_type: str, fft_lengths: tuple[int, ...]) -> tuple[Array, ...]:
    """lax.fft over the last ``len(fft_lengths)`` axes, unnormalised forward, ``1/n`` inverse."""
    lengths = tuple(fft_lengths)
    shape, dtype = _output_of(x, fft_type, lengths)
    if x.size == 0 or 0 in shape:
        return (np.zeros(shape, dtype),)
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    out: Array
    if fft_type == "FFT":
        out = np.fft.fftn(x, s=lengths, axes=axes)
    elif fft_type == "IFFT":
        out = np.fft.ifftn(x, s=lengths, axes=axes)
    elif fft_type == "RFFT":
        out = np.fft.rfftn(x, s=lengths, axes=axes)
    else:
        out = np.fft.irfftn(x, s=lengths, axes=axes)
    return (np.ascontiguousarray(out, dtype=dtype),)


KERNELS["fft"] = fft_kernel
