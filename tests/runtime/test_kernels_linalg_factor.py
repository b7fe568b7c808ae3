"""Kernels of lu, qr, svd and eig against ``jax.lax.linalg`` on XLA CPU (LAPACK on both sides).

Factors are compared directly where both sides use one LAPACK convention (lu's pivots bit for
bit, qr's signs, svd's and complex eig's phases); a real matrix's left eigenvectors, which
castwise computes from the right ones, agree up to a sign per column.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import runtime as rt
from runtime.core import lax as F
from runtime.core.shapes import OpTypeError, ShapeError

jax.config.update("jax_enable_x64", True)

DTYPES = [rt.float32, rt.float64, rt.complex64, rt.complex128]
IDS = [d.short for d in DTYPES]
TOL = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-12, "complex128": 1e-12}


def random(dtype: rt.DType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if dtype.kind == "complex":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype.storage)


def double(dtype: rt.DType) -> bool:
    return dtype in (rt.float64, rt.complex128)


def real_of(dtype: rt.DType) -> rt.DType:
    return rt.float64 if double(dtype) else rt.float32


def check(got: Any, want: Any, dtype: rt.DType) -> None:
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.dtype == want_a.dtype and got_a.shape == want_a.shape
    scale = max(1.0, float(np.max(np.abs(want_a)))) if want_a.size else 1.0
    np.testing.assert_allclose(got_a, want_a, rtol=0, atol=TOL[dtype.name] * scale)


SHAPES = [(4, 4), (5, 3), (3, 5), (2, 3, 4, 4), (0, 3, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_lu_matches_lax(dtype: rt.DType, shape: tuple[int, ...]) -> None:
    a = random(dtype, shape, seed=1)
    packed, pivots, permutation = F.lu(rt.asarray(a))
    j_packed, j_pivots, j_permutation = lax.linalg.lu(jnp.asarray(a))
    np.testing.assert_array_equal(pivots.numpy(), np.asarray(j_pivots))
    np.testing.assert_array_equal(permutation.numpy(), np.asarray(j_permutation))
    check(packed.numpy(), j_packed, dtype)


@pytest.mark.parametrize("dtype", [rt.float64, rt.complex128], ids=["f64", "c128"])
def test_lu_of_singular_matrices_matches_lax(dtype: rt.DType) -> None:
    # a zero column (getrf's info > 0: no scaling, no swap) and a rank-one matrix
    for a in (
        np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 7.0]]),
        np.outer([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]),
    ):
        a = a.astype(dtype.storage)
        packed, pivots, permutation = F.lu(rt.asarray(a))
        j_packed, j_pivots, j_permutation = lax.linalg.lu(jnp.asarray(a))
        np.testing.assert_array_equal(pivots.numpy(), np.asarray(j_pivots))
        np.testing.assert_array_equal(permutation.numpy(), np.asarray(j_permutation))
        check(packed.numpy(), j_packed, dtype)


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_qr_matches_lax(dtype: rt.DType, shape: tuple[int, ...], full_matrices: bool) -> None:
    a = random(dtype, shape, seed=2)
    q, r = F.qr(rt.asarray(a), full_matrices=full_matrices)
    jq, jr = lax.linalg.qr(jnp.asarray(a), full_matrices=full_matrices)
    check(q.numpy(), jq, dtype)
    check(r.numpy(), jr, dtype)


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_svd_matches_lax(dtype: rt.DType, shape: tuple[int, ...], full_matrices: bool) -> None:
    a = random(dtype, shape, seed=3)
    u, s, vh = F.svd(rt.asarray(a), full_matrices=full_matrices)
    ju, js, jvh = lax.linalg.svd(jnp.asarray(a), full_matrices=full_matrices)
    check(s.numpy(), js, real_of(dtype))
    # the vectors: gauge-invariant u_k vh_k products always, and the raw vectors in double precision
    k = s.shape[-1]
    outer, j_outer = u.numpy()[..., :k] @ vh.numpy()[..., :k, :], np.asarray(ju)[..., :k] @ np.asarray(jvh)[..., :k, :]
    check(outer, j_outer, dtype)
    if double(dtype):
        check(u.numpy(), ju, dtype)
        check(vh.numpy(), jvh, dtype)
    values = F.svd(rt.asarray(a), compute_uv=False)
    check(values.numpy(), lax.linalg.svd(jnp.asarray(a), compute_uv=False), real_of(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_eig_matches_lax(dtype: rt.DType) -> None:
    a = random(dtype, (2, 4, 4), seed=4)
    w, vl, vr = F.eig(rt.asarray(a))
    jw, jvl, jvr = lax.linalg.eig(jnp.asarray(a))
    assert w.dtype is rt.dtype(np.asarray(jw).dtype) and vl.dtype is w.dtype and vr.dtype is w.dtype
    out = rt.dtype(np.asarray(jw).dtype)
    if double(dtype):  # float32 eigenvalues may come in another order from NumPy's double computation
        check(w.numpy(), jw, out)
        check(vr.numpy(), jvr, out)
        phase = np.sum(np.conj(np.asarray(jvl)) * vl.numpy(), axis=-2)
        if dtype.kind == "complex":
            check(vl.numpy(), jvl, out)
        else:  # a sign per column
            np.testing.assert_allclose(np.abs(np.real(phase)), 1.0, atol=1e-10)
            check(vl.numpy(), np.asarray(jvl) * np.real(phase)[..., None, :], out)
    # definitions, whatever the order
    np.testing.assert_allclose(a @ vr.numpy(), vr.numpy() * w.numpy()[..., None, :], atol=1e-4)
    vlh = np.conj(np.swapaxes(vl.numpy(), -1, -2))
    np.testing.assert_allclose(vlh @ a, w.numpy()[..., :, None] * vlh, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(vl.numpy(), axis=-2), 1.0, atol=1e-5)
    only = F.eig(rt.asarray(a), compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    assert len(only) == 1 and only[0].shape == (2, 4)


def test_refusals_name_the_op_and_operand() -> None:
    with pytest.raises(OpTypeError, match=r"lu: x dtype f16 not accepted.*x:f16\[3,3\]"):
        F.lu(rt.asarray(np.eye(3, dtype=np.float16)))
    with pytest.raises(ShapeError, match=r"qr: x must be a \(batch of\) matrices"):
        F.qr(rt.asarray(np.ones(3)))
    with pytest.raises(ShapeError, match=r"eig: x must be a \(batch of\) square matrices"):
        F.eig(rt.asarray(np.ones((2, 3))))
    with pytest.raises(ShapeError, match="solve"):
        F.solve(rt.asarray(np.eye(3)), rt.asarray(np.ones(4)))
    with pytest.raises(ShapeError, match="det takes"):
        F.det(rt.asarray(np.ones((2, 3))))
