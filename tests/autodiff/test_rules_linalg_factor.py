"""Derivative rules of the factorisations lu, qr, svd, eig and the functions built on lu
(solve, inv, det, slogdet).

1. finite differences and the adjoint identity, orders 1 and 2, forward and reverse
   (``check_grads``), in f32, f64, c64 and c128;
2. parity with ``jax.jvp`` / ``jax.vjp`` of ``jax.lax.linalg`` / ``jax.numpy.linalg`` on the
   same well-conditioned random inputs. Singular vectors are compared through functions that
   do not depend on their phases (``|u|^2``, ``|vh|^2``, ``u @ vh``), eigenvalues matched up to
   their order; LU and QR factors directly (castwise's kernels and XLA's use LAPACK's
   conventions, which JAX does not normalise);
3. the derivatives JAX does not define either are refused with ``LinalgDerivativeError``.

Cotangents follow castwise's real-inner-product convention: ours(ct) == conj(jax_vjp(conj(ct))).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import runtime as rt
from autodiff.api import jvp, vjp
from autodiff.derivatives.linalg import LinalgDerivativeError
from autodiff.testing import check_grads
from runtime.core import lax as F
from runtime.core.executor import asarray
from runtime.core.tensor import Tensor
from tests import jax_oracles

jax.config.update("jax_enable_x64", True)

DTYPES = [rt.float32, rt.float64, rt.complex64, rt.complex128]
IDS = [d.short for d in DTYPES]
#: parity tolerance (relative to max(1, max |expected|)) per dtype
TOL = {"float32": 5e-5, "complex64": 5e-5, "float64": 1e-10, "complex128": 1e-10}


# -- inputs and helpers -----------------------------------------------------------------------------


def _randn(rng: np.random.Generator, shape: tuple[int, ...], dtype: rt.DType) -> np.ndarray:
    x = rng.standard_normal(shape)
    if dtype.kind == "complex":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype.storage)


def matrix(dtype: rt.DType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Well conditioned, with well separated singular values (and eigenvalues, when square)."""
    rng = np.random.default_rng(seed)
    x = 0.5 * _randn(rng, shape, dtype)
    *_, m, n = shape
    k = min(m, n)
    spread = np.zeros((m, n))
    spread[np.arange(k), np.arange(k)] = np.arange(1, k + 1) * 1.5
    return (x + spread).astype(dtype.storage)


def T(x: np.ndarray) -> Tensor:
    return asarray(x)


def abs2(v: Tensor) -> Tensor:
    return F.real(F.mul(v, F.conj(v))) if v.dtype.kind == "complex" else F.mul(v, v)


def abs2_jax(v: Any) -> Any:
    return jnp.real(v * jnp.conj(v))


def _mm(x: Tensor, y: Tensor) -> Tensor:
    return F.matmul(x, y)


def svd_invariants(x: Tensor, full_matrices: bool = False) -> tuple[Tensor, ...]:
    """s, and the functions of u and vh that no per-pair phase changes: |u|^2, |vh|^2, u @ vh."""
    u, s, vh = F.svd(x, full_matrices=full_matrices)
    k, n = s.shape[-1], x.shape[-1]
    u_k = F.slice(u, (0,) * u.ndim, (*u.shape[:-1], k)) if u.shape[-1] != k else u
    vh_k = F.slice(vh, (0,) * vh.ndim, (*vh.shape[:-2], k, n)) if vh.shape[-2] != k else vh
    return s, abs2(u_k), abs2(vh_k), _mm(u_k, vh_k)


def svd_invariants_jax(x: Any) -> tuple[Any, ...]:
    u, s, vh = jax.lax.linalg.svd(x, full_matrices=False)
    return s, abs2_jax(u), abs2_jax(vh), u @ vh


def close(got: Any, want: Any, dtype: rt.DType, what: str = "") -> None:
    got_a, want_a = np.asarray(got), np.asarray(want)
    assert got_a.shape == want_a.shape, (what, got_a.shape, want_a.shape)
    tol = TOL[dtype.name]
    scale = max(1.0, float(np.max(np.abs(want_a))) if want_a.size else 1.0)
    err = float(np.max(np.abs(got_a - want_a))) if got_a.size else 0.0
    assert err <= tol * scale, f"{what}: max abs error {err:.3g} > {tol * scale:.3g}\n got {got_a}\n want {want_a}"


def _leaves(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def compare_with_jax(
    ours: Callable[..., Any], theirs: Callable[..., Any], primals: list[np.ndarray], dtype: rt.DType, seed: int = 5
) -> None:
    """Primal, JVP (every operand active) and VJP of ``ours`` against ``jax.jvp`` / ``jax.vjp`` of ``theirs``."""
    rng = np.random.default_rng(seed)
    tangents = [_randn(rng, p.shape, dtype) for p in primals]
    out, tout = jvp(ours, [T(p) for p in primals], [T(t) for t in tangents])
    jprimals = tuple(jnp.asarray(p) for p in primals)
    shapes = jax.eval_shape(theirs, *jprimals)
    cts = [_randn(rng, o.shape, rt.dtype(o.dtype)) for o in _leaves(shapes)]
    conj_cts = tuple(np.conj(c) for c in cts) if isinstance(shapes, tuple) else np.conj(cts[0])
    # JAX's primal, JVP and VJP: one compiled program (three with separate jvp and vjp oracles)
    jout, jtout, jgrads = jax_oracles.jvp_and_vjp(theirs, jprimals, tuple(jnp.asarray(t) for t in tangents), conj_cts)
    for i, (o, jo) in enumerate(zip(_leaves(out), _leaves(jout), strict=True)):
        close(o.numpy(), jo, dtype, f"primal {i}")
    for i, (t, jt) in enumerate(zip(_leaves(tout), _leaves(jtout), strict=True)):
        close(t.numpy(), jt, dtype, f"JVP {i}")
    ct_arg = tuple(T(c) for c in cts) if isinstance(out, tuple) else T(cts[0])
    grads = vjp(ours, *[T(p) for p in primals])[1](ct_arg)
    for i, (g, jg) in enumerate(zip(grads, jgrads, strict=True)):
        assert g is not None
        close(g.numpy(), np.conj(np.asarray(jg)), dtype, f"VJP {i}")


# -- 1. check_grads: orders 1 and 2, forward and reverse ------------------------------------------------

SHAPES = [(3, 3), (4, 3), (3, 4)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_lu_check_grads(dtype: rt.DType, shape: tuple[int, int]) -> None:
    check_grads(lambda a: F.lu(a)[0], [T(matrix(dtype, shape))], order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3)], ids=["3x3", "4x3"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_qr_check_grads(dtype: rt.DType, shape: tuple[int, int]) -> None:
    check_grads(lambda a: F.qr(a, full_matrices=False), [T(matrix(dtype, shape, seed=1))], order=2)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_svd_check_grads(dtype: rt.DType, shape: tuple[int, int]) -> None:
    check_grads(svd_invariants, [T(matrix(dtype, shape, seed=2))], order=2)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_svd_values_only_check_grads(dtype: rt.DType) -> None:
    check_grads(lambda a: F.svd(a, compute_uv=False), [T(matrix(dtype, (4, 3), seed=3))], order=2)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_eigvals_check_grads(dtype: rt.DType) -> None:
    # order 1, as JAX's own eigvals test: the second derivative needs the eigenvectors' derivative,
    # which neither JAX nor castwise defines
    check_grads(F.eigvals, [T(matrix(dtype, (3, 3), seed=4))], order=1)
    with pytest.raises(LinalgDerivativeError, match="eigenvectors"):
        check_grads(F.eigvals, [T(matrix(dtype, (3, 3), seed=4))], order=2, modes=("fwd",))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_solve_inv_det_slogdet_check_grads(dtype: rt.DType) -> None:
    a = T(matrix(dtype, (3, 3), seed=5))
    b = T(_randn(np.random.default_rng(6), (3, 2), dtype))
    check_grads(F.solve, [a, b], order=2)
    check_grads(F.inv, [a], order=2)
    check_grads(F.det, [a], order=2)
    check_grads(F.slogdet, [a], order=2)


@pytest.mark.parametrize("dtype", [rt.float64, rt.complex128], ids=["f64", "c128"])
def test_batched_check_grads(dtype: rt.DType) -> None:
    a = T(matrix(dtype, (2, 3, 3), seed=7))
    check_grads(lambda x: F.lu(x)[0], [a], order=1)
    check_grads(lambda x: F.qr(x, full_matrices=False), [a], order=1)
    check_grads(svd_invariants, [T(matrix(dtype, (2, 4, 3), seed=8))], order=1)
    check_grads(F.eigvals, [a], order=1)
    check_grads(F.det, [a], order=1)
    check_grads(lambda x: F.solve(x, T(_randn(np.random.default_rng(9), (3,), dtype))), [a], order=1)


# -- 2. parity with jax.jvp / jax.vjp --------------------------------------------------------------------


@pytest.mark.parametrize("shape", [*SHAPES, (2, 3, 3), (2, 3, 5)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_lu_vs_jax(dtype: rt.DType, shape: tuple[int, ...]) -> None:
    a = matrix(dtype, shape, seed=10)
    _, pivots, permutation = F.lu(T(a))
    _, j_pivots, j_permutation = jax.lax.linalg.lu(jnp.asarray(a))
    np.testing.assert_array_equal(pivots.numpy(), np.asarray(j_pivots))
    np.testing.assert_array_equal(permutation.numpy(), np.asarray(j_permutation))
    assert pivots.dtype is rt.int32 and permutation.dtype is rt.int32
    compare_with_jax(lambda x: F.lu(x)[0], lambda x: jax.lax.linalg.lu(x)[0], [a], dtype)


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (2, 4, 3)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_qr_vs_jax(dtype: rt.DType, shape: tuple[int, ...]) -> None:
    a = matrix(dtype, shape, seed=11)
    compare_with_jax(lambda x: F.qr(x, full_matrices=False),
                     lambda x: jax.lax.linalg.qr(x, full_matrices=False), [a], dtype)  # fmt: skip


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_svd_vs_jax(dtype: rt.DType, shape: tuple[int, ...]) -> None:
    a = matrix(dtype, shape, seed=12)
    compare_with_jax(svd_invariants, svd_invariants_jax, [a], dtype)
    compare_with_jax(lambda x: F.svd(x, compute_uv=False),
                     lambda x: jax.lax.linalg.svd(x, compute_uv=False), [a], dtype)  # fmt: skip


@pytest.mark.parametrize("dtype", [rt.float64, rt.complex128], ids=["f64", "c128"])
def test_svd_raw_vectors_vs_jax(dtype: rt.DType) -> None:
    # the same LAPACK routine on both sides, so the same gauge: the raw vectors and JAX's gauge
    # convention for their derivative (the phase rotation of a pair goes to u) agree directly
    a = matrix(dtype, (4, 3), seed=13)
    compare_with_jax(lambda x: F.svd(x, full_matrices=False),
                     lambda x: jax.lax.linalg.svd(x, full_matrices=False), [a], dtype)  # fmt: skip


def _order(w: np.ndarray, w_ref: np.ndarray) -> np.ndarray:
    """The permutation taking ``w`` to the order of ``w_ref`` (nearest match)."""
    return np.array([int(np.argmin(np.abs(w - r))) for r in w_ref])


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_eigvals_vs_jax(dtype: rt.DType) -> None:
    rng = np.random.default_rng(14)
    a = matrix(dtype, (4, 4), seed=14)
    ta = _randn(rng, a.shape, dtype)
    w, dw = jvp(F.eigvals, [T(a)], [T(ta)])
    jw, jdw = jax_oracles.jvp(jnp.linalg.eigvals, (jnp.asarray(a),), (jnp.asarray(ta),))
    perm = _order(w.numpy(), np.asarray(jw))
    assert w.dtype is rt.dtype(np.asarray(jw).dtype)
    close(w.numpy()[perm], jw, dtype, "eigenvalues")
    close(dw.numpy()[perm], jdw, dtype, "JVP")
    ct = _randn(rng, (4,), rt.complex128).astype(np.asarray(jw).dtype)
    (g,) = vjp(F.eigvals, T(a))[1](T(ct[np.argsort(perm)]))
    want = np.conj(np.asarray(jax_oracles.pullback(jnp.linalg.eigvals, jnp.asarray(a))(np.conj(ct))[0]))
    assert g is not None and g.dtype is dtype
    close(g.numpy(), want, dtype, "VJP")


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_solve_inv_det_slogdet_vs_jax(dtype: rt.DType) -> None:
    a = matrix(dtype, (3, 3), seed=15)
    b = _randn(np.random.default_rng(16), (3, 2), dtype)
    v = _randn(np.random.default_rng(17), (3,), dtype)
    compare_with_jax(F.solve, jnp.linalg.solve, [a, b], dtype)
    compare_with_jax(F.solve, jnp.linalg.solve, [a, v], dtype)
    compare_with_jax(F.inv, jnp.linalg.inv, [a], dtype)
    compare_with_jax(F.det, jnp.linalg.det, [a], dtype)
    compare_with_jax(F.slogdet, lambda x: tuple(jnp.linalg.slogdet(x)), [a], dtype)
    batched = matrix(dtype, (2, 3, 3), seed=18)
    compare_with_jax(F.det, jnp.linalg.det, [batched], dtype)
    compare_with_jax(F.inv, jnp.linalg.inv, [batched], dtype)


def test_det_and_slogdet_of_a_permuted_and_a_singular_matrix() -> None:
    # an odd permutation: the sign comes from the pivots
    a = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    assert F.det(T(a)).item() == pytest.approx(np.linalg.det(a))
    sign, logabs = F.slogdet(T(a))
    assert (sign.item(), logabs.item()) == pytest.approx(tuple(np.linalg.slogdet(a)))
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    sign, logabs = F.slogdet(T(singular))
    j_sign, j_logabs = jnp.linalg.slogdet(singular)
    assert sign.item() == float(j_sign) == 0.0 and logabs.item() == float(j_logabs) == -np.inf
    assert F.det(T(singular)).item() == float(jnp.linalg.det(singular))


# -- 3. what JAX does not differentiate either -------------------------------------------------------------


def test_refused_derivatives() -> None:
    tall = T(matrix(rt.float64, (4, 3)))
    wide = T(matrix(rt.float64, (3, 4)))
    square = T(matrix(rt.float64, (3, 3)))
    # a tall matrix's complete QR and a wide matrix's QR are differentiable, as in JAX
    # (tests/autodiff/test_rules_linalg_eig_qr.py)
    assert jvp(lambda x: F.qr(x), [tall], [tall])[1][0].shape == (4, 4)
    assert vjp(lambda x: F.qr(x, full_matrices=False)[1], wide)[1](T(np.ones((3, 4))))[0].shape == (3, 4)
    with pytest.raises(LinalgDerivativeError, match=r"svd: .*full_matrices"):
        jvp(lambda x: F.svd(x), [tall], [tall])
    with pytest.raises(LinalgDerivativeError, match=r"eig: .*eigenvectors"):
        jvp(lambda x: F.eig(x), [square], [square])
    # eigenvectors computed but unused: the eigenvalues' cotangent alone is fine in reverse mode
    (g,) = vjp(lambda x: F.eig(x)[0], square)[1](T(np.ones(3, np.complex128)))
    assert g is not None and g.dtype is rt.float64


def _exact_det(m: list[list[Fraction]]) -> Fraction:
    """Laplace expansion in rational arithmetic (small matrices)."""
    if len(m) == 1:
        return m[0][0]
    return sum(((-1) ** j * m[0][j] * _exact_det([r[:j] + r[j + 1 :] for r in m[1:]]) for j in range(len(m))),
               Fraction(0))  # fmt: skip


def test_det_jvp_is_within_a_few_ulps_of_the_exact_derivative() -> None:
    # the parity departure det-jvp-rounding: JAX's rule rounds more than castwise's det(a) tr(a^-1 t)
    rng = np.random.default_rng(12)
    for _ in range(5):
        a, t = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
        fa = [[Fraction(float(x)) for x in row] for row in a]
        cof = [[(-1) ** (i + j) * _exact_det([r[:j] + r[j + 1 :] for k, r in enumerate(fa) if k != i])
                for j in range(4)] for i in range(4)]  # fmt: skip
        exact = float(sum(cof[i][j] * Fraction(float(t[i, j])) for i in range(4) for j in range(4)))
        _, got = jvp(lambda x: F.det(x), (asarray(a),), (asarray(t),))
        assert abs(float(got.numpy()) - exact) <= 16 * np.spacing(abs(exact)) * max(1.0, np.linalg.cond(a) / 10)
