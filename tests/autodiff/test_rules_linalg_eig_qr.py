"""The derivatives JAX takes that castwise once refused: eig's eigenvectors and QR of wide matrices.

* ``eig(..., enable_eigvec_derivs=True)``: JAX's rule (``jax.lax.linalg.eig``'s opt-in), the
  eigenvectors differentiated under geev's normalisation (unit 2-norm, largest component real);
  right and left eigenvectors, against ``jax.jvp`` / ``jax.vjp`` (castwise's cotangents follow the
  real inner product: ours(ct) == conj(jax_vjp(conj(ct)))) and finite differences.
* ``qr`` of ``[..., m, n]`` with ``m < n``: JAX's rule (the square block's rule, then
  ``R2 = Q^H X2``), both ``full_matrices`` settings, against JAX and finite differences.
* complete ``qr`` (``full_matrices=True``, ``mode='complete'``) of a tall ``m > n``: JAX's rule
  (arXiv 2409.13374: the thin rule, then the completion's columns from ``Q^H Q = I``), against
  JAX and finite differences, under jit and vmap.

Every case runs in f32, f64, c64 and c128, unbatched and batched; the finite differences in f64
and c128.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autodiff
import runtime as rt
from autodiff.api import jvp, vjp
from autodiff.derivatives.linalg import LinalgDerivativeError
from autodiff.testing import check_grads
from runtime.core import lax as F
from runtime.core.executor import asarray
from tests import jax_oracles
from tests.autodiff.rule_helpers import close_within

jax.config.update("jax_enable_x64", True)

DTYPES = [rt.float32, rt.float64, rt.complex64, rt.complex128]
IDS = [d.short for d in DTYPES]
TOL = {"float32": 5e-4, "complex64": 5e-4, "float64": 1e-9, "complex128": 1e-9}
BATCHES = {"single": (), "batched": (2,)}


def _randn(rng: np.random.Generator, shape: tuple[int, ...], dtype: rt.DType) -> np.ndarray:
    x = rng.standard_normal(shape)
    if dtype.kind == "complex":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype.storage)


def general(shape: tuple[int, ...], dtype: rt.DType, seed: int) -> np.ndarray:
    """Well separated singular values and eigenvalues (a spread diagonal plus noise)."""
    rng = np.random.default_rng(seed)
    *_, m, n = shape
    spread = np.zeros((m, n))
    k = min(m, n)
    spread[np.arange(k), np.arange(k)] = 1.5 * np.arange(1, k + 1)
    return (0.4 * _randn(rng, shape, dtype) + spread).astype(dtype.storage)


def close(got: Any, want: Any, dtype: rt.DType, what: str) -> None:
    close_within(got, want, TOL[dtype.name], what)


# (name, castwise function, JAX function, input shape)
CASES: list[tuple[str, Any, Any, tuple[int, int]]] = [
    (
        "eig-right",
        lambda a: F.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True),
        lambda a: tuple(jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)),
        (4, 4),
    ),
    (
        "eig-left-right",
        lambda a: F.eig(a, enable_eigvec_derivs=True),
        lambda a: tuple(jax.lax.linalg.eig(a, enable_eigvec_derivs=True)),
        (3, 3),
    ),
    (
        "eig-left",
        lambda a: F.eig(a, compute_right_eigenvectors=False, enable_eigvec_derivs=True),
        lambda a: tuple(jax.lax.linalg.eig(a, compute_right_eigenvectors=False, enable_eigvec_derivs=True)),
        (3, 3),
    ),
    (
        "qr-wide",
        lambda a: F.qr(a, full_matrices=False),
        lambda a: tuple(jax.lax.linalg.qr(a, full_matrices=False)),
        (3, 5),
    ),
    (
        "qr-wide-full",
        lambda a: F.qr(a, full_matrices=True),
        lambda a: tuple(jax.lax.linalg.qr(a, full_matrices=True)),
        (2, 4),
    ),
    (
        "qr-tall-complete",
        lambda a: F.qr(a, full_matrices=True),
        lambda a: tuple(jax.lax.linalg.qr(a, full_matrices=True)),
        (5, 3),
    ),
    (
        "qr-tall-complete-linalg",
        lambda a: tuple(rt.linalg.qr(a, mode="complete")),
        lambda a: tuple(jnp.linalg.qr(a, mode="complete")),
        (4, 2),
    ),
]
CASE_IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("batch", sorted(BATCHES))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize(("name", "ours", "theirs", "shape"), CASES, ids=CASE_IDS)
def test_jvp_and_vjp_match_jax(name: str, ours: Any, theirs: Any, shape: tuple[int, int], dtype: rt.DType,
                               batch: str) -> None:  # fmt: skip
    a = general((*BATCHES[batch], *shape), dtype, 1)
    rng = np.random.default_rng(2)
    t = _randn(rng, a.shape, dtype)
    outs, touts = jvp(ours, [asarray(a)], [asarray(t)])
    cts = [_randn(rng, o.shape, rt.dtype(o.dtype)) for o in jax.eval_shape(theirs, jnp.asarray(a))]
    # JAX's JVP and VJP: one compiled program (three with separate jvp and vjp oracles)
    jouts, jtouts, (jg,) = jax_oracles.jvp_and_vjp(
        theirs, (jnp.asarray(a),), (jnp.asarray(t),), tuple(np.conj(c) for c in cts)
    )
    for i, (o, jo) in enumerate(zip(outs, jouts, strict=True)):
        close(o.numpy(), jo, dtype, f"value {i}")
    for i, (o, jo) in enumerate(zip(touts, jtouts, strict=True)):
        close(o.numpy(), jo, dtype, f"JVP {i}")
    (g,) = vjp(lambda x: tuple(ours(x)), asarray(a))[1](tuple(asarray(c) for c in cts))
    close(g.numpy(), np.conj(np.asarray(jg)), dtype, "VJP")


@pytest.mark.parametrize("dtype", [rt.float64, rt.complex128], ids=["f64", "c128"])
@pytest.mark.parametrize(("name", "ours", "theirs", "shape"), CASES, ids=CASE_IDS)
def test_finite_differences(name: str, ours: Any, theirs: Any, shape: tuple[int, int], dtype: rt.DType) -> None:
    """The rule is the derivative of the eager function (geev's normalisation for eig), and its
    VJP the JVP's adjoint; QR to second order."""
    order = 1 if name.startswith("eig") else 2
    check_grads(lambda x: tuple(ours(x)), [asarray(general(shape, dtype, 3))], order=order)


def test_eigenvectors_refused_without_the_opt_in_as_jax() -> None:
    a = general((3, 3), rt.float64, 4)
    with pytest.raises(LinalgDerivativeError, match=r"eig: .*f64\[3,3\].*enable_eigvec_derivs=True"):
        jvp(lambda x: F.eig(x, compute_left_eigenvectors=False)[1], [asarray(a)], [asarray(a)])
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        jax.jvp(lambda x: jax.lax.linalg.eig(x, compute_left_eigenvectors=False)[1], (jnp.asarray(a),),
                (jnp.asarray(a),))  # fmt: skip


def test_tall_complete_qr_has_jaxs_derivative_where_jax_once_refused() -> None:
    """JAX 0.10 differentiates complete QR of a tall matrix (it refused before 0.8); so does castwise,
    and the parts that only the completion carries (Q's last m - n columns) are held on their own."""
    a = general((5, 2), rt.float64, 5)
    t = _randn(np.random.default_rng(8), a.shape, rt.float64)
    _, (dq, dr) = jvp(lambda x: F.qr(x, full_matrices=True), [asarray(a)], [asarray(t)])
    _, (jdq, jdr) = jax.jvp(lambda x: jnp.linalg.qr(x, mode="complete"), (jnp.asarray(a),), (jnp.asarray(t),))
    assert dq.shape == (5, 5) and dr.shape == (5, 2)
    close(dq.numpy()[:, 2:], np.asarray(jdq)[:, 2:], rt.float64, "dQ's completion")
    np.testing.assert_array_equal(dr.numpy()[2:], 0.0)  # R's last rows are 0 for every input
    np.testing.assert_array_equal(np.asarray(jdr)[2:], 0.0)


def test_complete_qr_gradient_jits_and_vmaps() -> None:
    a = general((3, 4, 2), rt.complex128, 9)
    c = _randn(np.random.default_rng(10), (4, 4), rt.complex128)

    def loss(x: Any) -> Any:
        q, r = F.qr(x, full_matrices=True)
        return F.real(F.add(F.reduce_sum(F.mul(q, asarray(c)), (0, 1)), F.reduce_sum(F.mul(r, r), (0, 1))))

    def jloss(x: Any) -> Any:
        q, r = jax.lax.linalg.qr(x, full_matrices=True)
        return jnp.real(jnp.sum(q * c) + jnp.sum(r * r))

    eager = autodiff.vmap(autodiff.grad(loss))(asarray(a))
    jitted = autodiff.jit(autodiff.vmap(autodiff.grad(loss)))(asarray(a))
    want = np.conj(np.asarray(jax_oracles.jitted(jax.vmap(jax.grad(jloss)))(jnp.asarray(a))))
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(jitted.numpy(), eager.numpy(), rtol=1e-10, atol=1e-12)


def test_eigenvector_gradient_jits_vmaps_and_lowers() -> None:
    a = general((2, 3, 3), rt.complex128, 6)
    c = _randn(np.random.default_rng(7), (3, 3), rt.complex128)

    def loss(x: Any) -> Any:
        v = F.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)[1]
        return F.real(F.reduce_sum(F.mul(v, asarray(c)), (0, 1)))

    def jloss(x: Any) -> Any:
        v = jax.lax.linalg.eig(x, compute_left_eigenvectors=False, enable_eigvec_derivs=True)[1]
        return jnp.real(jnp.sum(v * c))

    eager = autodiff.vmap(autodiff.grad(loss))(asarray(a))
    jitted = autodiff.jit(autodiff.vmap(autodiff.grad(loss)))(asarray(a))
    want = np.conj(np.asarray(jax_oracles.jitted(jax.vmap(jax.grad(jloss)))(jnp.asarray(a))))
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(jitted.numpy(), eager.numpy(), rtol=1e-10, atol=1e-12)
