"""The functions rt.linalg composes beside the factorisations: vmap, jit and integer inputs.

tests/runtime/test_linalg_namespace.py compares every function's values, JVP and VJP with
jax.numpy.linalg (and finite differences) in f32, f64, c64 and c128; this file checks what its
table does not: ``autodiff.vmap`` against ``jax.vmap``, ``autodiff.jit`` against eager (values and
gradients), integer inputs against jax.numpy's promotion, ``pinv``'s derivative where the one
through ``svd`` would be infinite, and the edge cases JAX defines (empty matrices, singular ones).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import autodiff
import runtime as rt
from runtime.core import lax as F
from runtime.core.executor import asarray
from runtime.core.shapes import OpTypeError
from runtime.core.tensor import Tensor
from runtime.numpy import linalg as L
from tests import jax_oracles

jax.config.update("jax_enable_x64", True)


def general(shape: tuple[int, ...], seed: int, dtype: Any = np.float64) -> np.ndarray:
    """Well conditioned, with well separated singular values."""
    rng = np.random.default_rng(seed)
    x = 0.4 * rng.standard_normal(shape)
    *_, m, n = shape
    k = min(m, n)
    spread = np.zeros((m, n))
    spread[np.arange(k), np.arange(k)] = np.arange(1, k + 1) * 1.5
    return (x + spread).astype(dtype)


def spd(shape: tuple[int, ...], seed: int) -> np.ndarray:
    a = general(shape, seed)
    return a @ np.swapaxes(a, -1, -2) + 3 * np.eye(shape[-1])


def _total(x: Tensor) -> Tensor:
    """A real scalar of ``x`` (a loss): the sum of its entries (real parts)."""
    r = F.real(x) if x.dtype.kind == "complex" else x
    return F.reduce_sum(r, tuple(range(r.ndim)))


# -- vmap ------------------------------------------------------------------------------------------------

#: per function: castwise's call, jax.numpy's, and a batch of inputs (the batch axis first)
VMAP: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[[], list[np.ndarray]]]] = {
    "pinv": (L.pinv, jnp.linalg.pinv, lambda: [general((3, 4, 3), 1)]),
    "pinv-hermitian": (
        lambda a: L.pinv(a, hermitian=True),
        lambda a: jnp.linalg.pinv(a, hermitian=True),
        lambda: [spd((3, 3, 3), 2)],
    ),
    "lstsq": (
        lambda a, b: L.lstsq(a, b)[0],
        lambda a, b: jnp.linalg.lstsq(a, b)[0],
        lambda: [general((3, 5, 3), 3), general((3, 5, 2), 4)],
    ),
    "matrix_rank": (L.matrix_rank, jnp.linalg.matrix_rank, lambda: [general((3, 4, 3), 5)]),
    "cond": (L.cond, jnp.linalg.cond, lambda: [general((3, 3, 3), 6)]),
    "cond-1": (lambda a: L.cond(a, 1), lambda a: jnp.linalg.cond(a, 1), lambda: [general((3, 3, 3), 6)]),
    "multi_dot": (
        lambda a, b, c: L.multi_dot([a, b, c]),
        lambda a, b, c: jnp.linalg.multi_dot([a, b, c]),
        lambda: [general((2, 3, 4), 7), general((2, 4, 2), 8), general((2, 2, 5), 9)],
    ),
    "cross": (L.cross, jnp.linalg.cross, lambda: [general((4, 2, 3), 10), general((4, 2, 3), 11)]),
    "vecdot": (L.vecdot, jnp.linalg.vecdot, lambda: [general((4, 2, 3), 12), general((4, 2, 3), 13)]),
    "trace": (
        lambda x: L.trace(x, offset=1),
        lambda x: jnp.linalg.trace(x, offset=1),
        lambda: [general((3, 3, 4), 14)],
    ),
    "diagonal": (L.diagonal, jnp.linalg.diagonal, lambda: [general((3, 3, 4), 15)]),
    "matrix_transpose": (L.matrix_transpose, jnp.linalg.matrix_transpose, lambda: [general((3, 3, 4), 16)]),
    "tensorinv": (L.tensorinv, jnp.linalg.tensorinv, lambda: [general((2, 6, 6), 17).reshape(2, 2, 3, 6)]),
    "tensorsolve": (
        L.tensorsolve,
        jnp.linalg.tensorsolve,
        lambda: [general((2, 6, 6), 18).reshape(2, 2, 3, 6), general((2, 2, 3), 19)],
    ),
    "solve-pos": (
        lambda a, b: L.solve(a, b, assume_a="pos"),
        lambda a, b: jsl.solve(a, b, assume_a="pos"),
        lambda: [spd((3, 3, 3), 20), general((3, 3, 2), 21)],
    ),
    "qr-raw": (
        lambda a: L.qr(a, mode="raw")[0],
        lambda a: jnp.linalg.qr(a, mode="raw")[0],
        lambda: [general((2, 4, 3), 22)],
    ),
    "slogdet-qr": (
        lambda a: L.slogdet(a, method="qr")[1],
        lambda a: jnp.linalg.slogdet(a, method="qr")[1],
        lambda: [general((3, 3, 3), 23)],
    ),
}


@pytest.mark.parametrize("name", sorted(VMAP))
def test_vmap_matches_jax_vmap(name: str) -> None:
    ours, theirs, make = VMAP[name]
    xs = make()
    got = autodiff.vmap(ours)(*[asarray(x) for x in xs])
    want = jax_oracles.jitted(jax.vmap(theirs))(*[jnp.asarray(x) for x in xs])
    assert got.dtype is rt.dtype(np.asarray(want).dtype)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-10, atol=1e-12)


# -- jit == eager, values and gradients ---------------------------------------------------------------

#: the inexact functions (and a differentiable call of each)
JIT = {name: VMAP[name] for name in sorted(VMAP) if name not in ("matrix_rank", "qr-raw")}


@pytest.mark.parametrize("name", sorted(JIT))
def test_jit_matches_eager_and_jax_grad(name: str) -> None:
    ours, theirs, make = JIT[name]
    xs = [asarray(x[0]) for x in make()]  # one example of vmap's batch
    eager = ours(*xs)
    jitted = autodiff.jit(ours)(*xs)
    np.testing.assert_allclose(jitted.numpy(), eager.numpy(), rtol=1e-12, atol=1e-13)
    loss = lambda *a: _total(ours(*a))  # noqa: E731
    grads = autodiff.grad(loss, argnums=tuple(range(len(xs))))(*xs)
    jit_grads = autodiff.jit(autodiff.grad(loss, argnums=tuple(range(len(xs)))))(*xs)
    want = jax_oracles.jitted(jax.grad(lambda *a: jnp.sum(jnp.real(theirs(*a))), argnums=tuple(range(len(xs)))))(
        *[jnp.asarray(x.numpy()) for x in xs]
    )
    for g, jg, w in zip(grads, jit_grads, want, strict=True):
        np.testing.assert_allclose(jg.numpy(), g.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64], ids=["f32", "c64"])
def test_single_precision_stays_single_and_jit_agrees(dtype: Any) -> None:
    a = general((4, 3), 30, dtype)
    if np.dtype(dtype).kind == "c":
        a = (a + 0.3j * general((4, 3), 31)).astype(dtype)
    for fn in (L.pinv, lambda x: L.qr(x, mode="raw")[0], lambda x: L.lstsq(x, x)[0], L.cond):
        eager = fn(asarray(a))
        assert eager.dtype.storage in (np.dtype(np.float32), np.dtype(np.complex64))
        np.testing.assert_allclose(autodiff.jit(fn)(asarray(a)).numpy(), eager.numpy(), rtol=2e-5, atol=2e-6)


# -- integer inputs --------------------------------------------------------------------------------------

_INT = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]])
INT_CALLS: dict[str, tuple[Callable[..., Any], Callable[..., Any], int]] = {
    "pinv": (L.pinv, jnp.linalg.pinv, 1),
    "matrix_rank": (L.matrix_rank, jnp.linalg.matrix_rank, 1),
    "cond": (L.cond, jnp.linalg.cond, 1),
    "lstsq": (lambda a, b: L.lstsq(a, b)[0], lambda a, b: jnp.linalg.lstsq(a, b)[0], 2),
    "tensorinv": (lambda a: L.tensorinv(a, 1), lambda a: jnp.linalg.tensorinv(a, 1), 1),
    "trace": (L.trace, jnp.linalg.trace, 1),
    "diagonal": (L.diagonal, jnp.linalg.diagonal, 1),
    "matrix_transpose": (L.matrix_transpose, jnp.linalg.matrix_transpose, 1),
    "cross": (L.cross, jnp.linalg.cross, 2),
    "vecdot": (L.vecdot, jnp.linalg.vecdot, 2),
    "multi_dot": (lambda a, b: L.multi_dot([a, b]), lambda a, b: jnp.linalg.multi_dot([a, b]), 2),
    "solve-pos": (lambda a, b: L.solve(a, b, assume_a="pos"), lambda a, b: jsl.solve(a, b, assume_a="pos"), 2),
}


@pytest.mark.parametrize("storage", [np.int32, np.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("name", sorted(INT_CALLS))
def test_integer_inputs_follow_jax_numpy(name: str, storage: Any) -> None:
    ours, theirs, arity = INT_CALLS[name]
    xs = [_INT.astype(storage)] * arity
    got = ours(*[asarray(x) for x in xs])
    want = np.asarray(theirs(*[jnp.asarray(x) for x in xs]))
    assert got.dtype is rt.dtype(want.dtype), (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


# -- derivatives JAX defines where the plain composition would not ------------------------------------


def test_pinv_derivative_is_finite_at_repeated_singular_values() -> None:
    """JAX's custom JVP: the identity's singular values are all 1 (svd's own derivative is NaN there)."""
    a = np.eye(3)[:, :2] * 2.0
    loss = lambda x: _total(F.mul(L.pinv(x), L.pinv(x)))  # noqa: E731
    got = autodiff.grad(loss)(asarray(a)).numpy()
    want = np.asarray(jax_oracles.jitted(jax.grad(lambda x: jnp.sum(jnp.linalg.pinv(x) ** 2)))(jnp.asarray(a)))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    names = [e.op.name for e in rt.trace(L.pinv, asarray(a)).eqns]
    assert names == ["custom_jvp_call"]


def test_pinv_second_derivative_matches_jax() -> None:
    a = general((4, 3), 40)
    loss = lambda x: _total(F.mul(L.pinv(x), L.pinv(x)))  # noqa: E731
    hvp_dir = general((4, 3), 41)
    got = autodiff.jvp(autodiff.grad(loss), [asarray(a)], [asarray(hvp_dir)])[1]
    jgrad = jax.grad(lambda x: jnp.sum(jnp.linalg.pinv(x) ** 2))
    want = jax_oracles.jvp(jgrad, (jnp.asarray(a),), (jnp.asarray(hvp_dir),))[1]
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-8, atol=1e-10)


def test_solve_pos_derivative_takes_the_whole_tangent_as_jax_scipy() -> None:
    a, b = spd((3, 3), 42), general((3, 2), 43)
    da = general((3, 3), 44)  # not symmetric
    got = autodiff.jvp(lambda x: L.solve(x, asarray(b), assume_a="pos"), [asarray(a)], [asarray(da)])[1]
    want = jax_oracles.jvp(
        lambda x: jsl.solve(x, jnp.asarray(b), assume_a="pos"), (jnp.asarray(a),), (jnp.asarray(da),)
    )[1]
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-10, atol=1e-12)
    x = np.linalg.solve(a, b)
    np.testing.assert_allclose(got.numpy(), -np.linalg.solve(a, da @ x), rtol=1e-10, atol=1e-12)


# -- edge cases --------------------------------------------------------------------------------------------


def test_empty_and_singular_inputs_as_jax() -> None:
    empty = np.zeros((0, 3))
    assert L.pinv(asarray(empty)).shape == jnp.linalg.pinv(jnp.asarray(empty)).shape == (3, 0)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for p in (None, 1, "fro"):
        got, want = L.cond(asarray(singular), p), jnp.linalg.cond(jnp.asarray(singular), p)
        assert float(got) == float(want) or (np.isinf(float(got)) and np.isinf(float(want))), p
    assert int(L.matrix_rank(asarray(singular))) == int(jnp.linalg.matrix_rank(jnp.asarray(singular))) == 1
    x, _, rank, _ = L.lstsq(asarray(singular), asarray(np.ones(2)))
    jx, _, jrank, _ = jnp.linalg.lstsq(jnp.asarray(singular), jnp.ones(2))
    np.testing.assert_allclose(x.numpy(), np.asarray(jx), atol=1e-12)
    assert int(rank) == int(jrank) == 1


def test_lstsq_numpy_resid_is_empty_where_numpy_gives_none() -> None:
    a, b = general((3, 4), 50), general((3, 2), 51)
    resid = L.lstsq(asarray(a), asarray(b), numpy_resid=True)[1]
    assert resid.shape == np.asarray(jnp.linalg.lstsq(jnp.asarray(a), jnp.asarray(b), numpy_resid=True)[1]).shape
    tall = general((5, 3), 52)
    got = L.lstsq(asarray(tall), asarray(general((5, 2), 53)), numpy_resid=True)[1]
    np.testing.assert_allclose(got.numpy(), np.linalg.lstsq(tall, general((5, 2), 53))[1], rtol=1e-10)


def test_a_traced_tolerance_is_refused() -> None:
    a = asarray(general((4, 3), 60))
    with pytest.raises(rt.ConcretizationError, match=r"linalg\.pinv: .*rtol"):
        autodiff.jit(lambda x, t: L.pinv(x, rtol=t))(a, asarray(0.1))


def test_matrix_rank_tolerance_follows_the_library() -> None:
    a = asarray(np.diag([4.0, 2.0, 0.5]))
    assert int(L.matrix_rank(a, rtol=1.0)) == int(jnp.linalg.matrix_rank(jnp.diag(jnp.array([4.0, 2.0, 0.5])), 1.0))
    with rt.policy("numpy"):  # NumPy's rtol is relative to the largest singular value
        assert int(L.matrix_rank(a, rtol=0.3)) == int(np.linalg.matrix_rank(np.diag([4.0, 2.0, 0.5]), rtol=0.3)) == 2


def test_slogdet_qr_refuses_complex_as_jax() -> None:
    a = np.eye(3, dtype=np.complex128)
    with pytest.raises(OpTypeError, match=r"linalg\.slogdet: method='qr' takes real matrices.*c128\[3,3\]"):
        L.slogdet(asarray(a), method="qr")
    with pytest.raises(NotImplementedError):
        jnp.linalg.slogdet(jnp.asarray(a), method="qr")


def test_qr_raw_is_not_differentiable_as_in_jax() -> None:
    from autodiff.derivatives.linalg import LinalgDerivativeError

    a = asarray(general((4, 3), 61))
    with pytest.raises(LinalgDerivativeError, match=r"geqrf: .*not differentiable"):
        autodiff.grad(lambda x: _total(L.qr(x, mode="raw")[0]))(a)
    with pytest.raises(NotImplementedError):
        jax_oracles.jitted(jax.grad(lambda x: jnp.sum(jnp.linalg.qr(x, mode="raw")[0])))(jnp.asarray(a.numpy()))
