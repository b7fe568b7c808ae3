"""Single-precision linear algebra: eager execution and ``autodiff.jit`` (lowered to XLA) agree.

NumPy's linalg computes float32 / complex64 in double; XLA computes in single. Eager kernels
of the decompositions call LAPACK's routines of the operand's precision (the ones jaxlib
calls), so eigenvalue order and eigenvector signs are the same on both paths. Oracle:
the jitted program, compared bit for bit where both call the same routine, and with a
single-precision tolerance elsewhere. A few dozen random matrices, not hundreds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("jax")

import autodiff
import runtime as rt
from runtime.core import lax as F

DTYPES = [np.float32, np.complex64, np.float64, np.complex128]
SINGLE = (np.float32, np.complex64)

# op name -> (function of one matrix, which matrices: "square", "hermitian", "spd", "tall")
OPS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "eig": (lambda a: F.eig(a, compute_left_eigenvectors=False), "square"),
    "eig_left": (lambda a: F.eig(a, compute_left_eigenvectors=True, compute_right_eigenvectors=False), "square"),
    "eig_both": (lambda a: F.eig(a), "square"),
    "eigvals": (lambda a: F.eigvals(a), "square"),
    "eigh": (lambda a: F.eigh(a), "hermitian"),
    "eigh_upper": (lambda a: F.eigh(a, lower=False), "hermitian"),
    "svd": (lambda a: F.svd(a), "tall"),
    "svd_reduced": (lambda a: F.svd(a, full_matrices=False), "tall"),
    "svd_values": (lambda a: F.svd(a, compute_uv=False), "tall"),
    "qr": (lambda a: F.qr(a), "tall"),
    "geqrf": (lambda a: F.geqrf(a), "tall"),
    "lu": (lambda a: F.lu(a), "square"),
    "cholesky": (lambda a: F.cholesky(a), "spd"),
}


def _matrix(rng: np.random.Generator, kind: str, dtype: Any, batch: tuple[int, ...] = ()) -> np.ndarray:
    shape = (*batch, 6, 4) if kind == "tall" else (*batch, 5, 5)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    a = a.astype(dtype)
    if kind == "hermitian":
        a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
    if kind == "spd":
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + 5 * np.eye(5, dtype=dtype)
    return np.ascontiguousarray(a.astype(dtype))


def _leaves(out: Any) -> list[np.ndarray]:
    items = out if isinstance(out, tuple | list) else (out,)
    return [np.asarray(t.numpy()) for t in items]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(OPS))
def test_eager_equals_jit(name: str, dtype: Any) -> None:
    """Every decomposition, every float dtype: the eager result is the jitted one (same order,
    same signs; exactly so for the single-precision routines both paths share)."""
    fn, kind = OPS[name]
    jitted = autodiff.jit(fn)
    rng = np.random.default_rng(abs(hash((name, np.dtype(dtype).name))) % 2**32)
    for trial in range(6):
        a = _matrix(rng, kind, dtype, batch=(2,) if trial == 0 else ())
        eager, lowered = _leaves(fn(rt.asarray(a))), _leaves(jitted(rt.asarray(a)))
        assert len(eager) == len(lowered)
        for e, j in zip(eager, lowered, strict=True):
            assert e.dtype == j.dtype and e.shape == j.shape, (name, e.dtype, j.dtype)
            tol = 1e-4 if dtype in SINGLE else 1e-10
            # the same routine in the same precision: the same order and signs, so a tight
            # elementwise tolerance (a sign flip or a reordering is an O(1) difference)
            np.testing.assert_allclose(e, j, rtol=tol, atol=tol, err_msg=f"{name} trial {trial}")


@pytest.mark.parametrize("dtype", SINGLE, ids=lambda d: np.dtype(d).name)
def test_single_precision_is_computed_in_single(dtype: Any) -> None:
    """The eager eigenvalues of a float32 / complex64 matrix are LAPACK's single-precision ones,
    bit for bit the jitted program's (NumPy's double-precision answer rounded differs)."""
    rng = np.random.default_rng(7)
    jitted = autodiff.jit(lambda a: F.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False))
    differs_from_double = 0
    for _ in range(8):
        a = _matrix(rng, "square", dtype)
        (w,) = _leaves(F.eigvals(rt.asarray(a)))
        (wj,) = _leaves(jitted(rt.asarray(a)))
        np.testing.assert_array_equal(w, wj)
        rounded = np.linalg.eigvals(a.astype(np.complex128)).astype(w.dtype)
        differs_from_double += not np.array_equal(np.sort_complex(w), np.sort_complex(rounded))
    assert differs_from_double > 0  # the check above would not see a double-precision kernel otherwise


@pytest.mark.parametrize("dtype", SINGLE, ids=lambda d: np.dtype(d).name)
def test_single_precision_nan_matrix_gives_nan(dtype: Any) -> None:
    """A matrix with a NaN gets NaN outputs (XLA's answer); the other matrices of the batch do not."""
    a = _matrix(np.random.default_rng(3), "square", dtype, batch=(2,))
    a[1, 0, 0] = np.nan
    w, vl, vr = _leaves(F.eig(rt.asarray(a)))
    assert np.isnan(w[1]).all() and np.isnan(vl[1]).all() and np.isnan(vr[1]).all() and np.isfinite(w[0]).all()
    _, e = _leaves(F.eigh(rt.asarray(a)))
    assert np.isnan(e[1]).all() and np.isfinite(e[0]).all()
