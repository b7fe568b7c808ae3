"""Bit-for-bit comparison the kernel tests share: equal bits, except that any NaN equals any NaN."""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.core import dtypes as dt


def bits(a: Any) -> np.ndarray:
    """The bit patterns of ``a``, each complex part on its own (complex32 too, whichever
    ml_dtypes release gives its NumPy kind)."""
    a = np.ascontiguousarray(a)
    kind = dt.from_numpy(a.dtype).kind
    if kind == "bool":
        return a
    return a.view(np.dtype(f"u{a.dtype.itemsize // 2 if kind == 'complex' else a.dtype.itemsize}"))


def nan_parts(a: Any) -> np.ndarray:
    """Where ``a`` is NaN, laid out as ``bits(a)`` (per part for complex)."""
    a = np.ascontiguousarray(a)
    kind = dt.from_numpy(a.dtype).kind
    if kind not in ("float", "complex"):
        return np.zeros(bits(a).shape, bool)
    wide = a.astype(np.complex128)
    if kind == "float":
        return np.isnan(wide.real)
    return np.stack([np.isnan(wide.real), np.isnan(wide.imag)], axis=-1).reshape(bits(a).shape)


def assert_same_bits(got: Any, want: Any, what: str = "") -> None:
    """Equal dtype, shape and bits; a NaN part equals any NaN part (payloads are each side's own)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    same = (bits(got) == bits(want)) | (nan_parts(got) & nan_parts(want))
    assert same.all(), (
        f"{what} differs at {np.argwhere(~same)[:5].tolist()}: got {got.ravel()[:8]}, want {want.ravel()[:8]}"
    )
