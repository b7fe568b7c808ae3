"""``lu_solve`` with ``trans=0, 1, 2`` (``a x = b``, ``a^T x = b``, ``a^H x = b``), as
``jax.scipy.linalg.lu_solve`` and scipy define it.

Both ``linalg.lu_solve`` (from ``lu_factor``'s pivots) and ``lax.lu_solve`` (from ``lu``'s
permutation) are held, for every trans and inexact dtype, unbatched and batched, against:

1. the values of ``jax.scipy.linalg.lu_solve`` (eager and under ``autodiff.jit``);
2. ``jax.jvp`` / ``jax.vjp`` of the same function of ``(a, b)`` (castwise's cotangents follow the
   real inner product: ours(ct) == conj(jax_vjp(conj(ct)))), and finite differences;
3. ``autodiff.vmap`` (of the function and of its gradient) against ``jax.vmap``.

A ``trans`` outside ``{0, 1, 2}`` is refused naming ``lu_solve``, the value and the policy.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import autodiff
import runtime as rt
from autodiff.api import jvp, vjp
from autodiff.testing import check_grads
from runtime.core import lax as F
from runtime.core.executor import asarray
from runtime.core.graph import collect
from runtime.core.shapes import OpValueError
from tests import jax_oracles
from tests.autodiff.rule_helpers import close_within

jax.config.update("jax_enable_x64", True)

L = rt.linalg
DTYPES = [rt.float32, rt.float64, rt.complex64, rt.complex128]
IDS = [d.short for d in DTYPES]
TOL = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-10, "complex128": 1e-10}
TRANS = [0, 1, 2]
#: (a's shape, b's shape): a vector b, a matrix b, a batch of both
SHAPES = {"vector": ((3, 3), (3,)), "matrix": ((4, 4), (4, 2)), "batched": ((2, 3, 3), (2, 3, 2))}


def _randn(rng: np.random.Generator, shape: tuple[int, ...], dtype: rt.DType) -> np.ndarray:
    x = rng.standard_normal(shape)
    if dtype.kind == "complex":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype.storage)


def _inputs(dtype: rt.DType, shape: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A well conditioned (diagonally spread, not symmetric) ``a`` that pivots, and ``b``."""
    a_shape, b_shape = SHAPES[shape]
    rng = np.random.default_rng(seed)
    n = a_shape[-1]
    a = _randn(rng, a_shape, dtype) + np.diag(np.arange(1, n + 1) * 1.5)[::-1]  # anti-diagonal: rows swap
    return a.astype(dtype.storage), _randn(rng, b_shape, dtype)


def close(got: Any, want: Any, dtype: rt.DType, what: str) -> None:
    close_within(got, want, TOL[dtype.name], what)


def ours(trans: int) -> Any:
    """``x(a, b)``: lax.lu_solve from lu's (traceable) permutation, b as matrices."""

    def f(a: Any, b: Any) -> Any:
        packed, _, permutation = F.lu(a)
        vector = b.ndim == 1
        x = F.lu_solve(packed, permutation, F.reshape(b, (*b.shape, 1)) if vector else b, trans=trans)
        return F.reshape(x, x.shape[:-1]) if vector else x

    return f


def theirs(trans: int) -> Any:
    return lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b, trans=trans)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("trans", TRANS)
def test_values_match_jax_eager_and_jitted(trans: int, dtype: rt.DType, shape: str) -> None:
    a, b = _inputs(dtype, shape)
    want = theirs(trans)(jnp.asarray(a), jnp.asarray(b))
    got = L.lu_solve(L.lu_factor(asarray(a)), asarray(b), trans=trans)
    assert got.dtype is dtype
    close(got.numpy(), want, dtype, "linalg.lu_solve")
    close(ours(trans)(asarray(a), asarray(b)).numpy(), want, dtype, "lax.lu_solve")
    close(autodiff.jit(ours(trans))(asarray(a), asarray(b)).numpy(), want, dtype, "jit(lax.lu_solve)")
    # the definition itself: op(a) @ x == b
    op = {0: a, 1: np.swapaxes(a, -1, -2), 2: np.conj(np.swapaxes(a, -1, -2))}[trans]
    x = got.numpy()
    close(np.squeeze(op @ (x[..., None] if x.ndim == 1 else x)), np.squeeze(b), dtype, "op(a) @ x")


@pytest.mark.parametrize("trans", TRANS)
def test_recorded_graph_is_what_ran(trans: int) -> None:
    a, b = _inputs(rt.complex128, "matrix")
    ta = asarray(a, requires_grad=True)
    x = ours(trans)(ta, asarray(b))
    text = str(collect([x.node]))
    assert text.count("triangular_solve") == 2
    assert ("transpose_a=True" in text) == (trans != 0), text
    assert ("conjugate_a=True" in text) == (trans == 2), text


@pytest.mark.parametrize("shape", ["vector", "batched"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("trans", TRANS)
def test_jvp_and_vjp_match_jax(trans: int, dtype: rt.DType, shape: str) -> None:
    a, b = _inputs(dtype, shape, 1)
    rng = np.random.default_rng(2)
    ta, tb = _randn(rng, a.shape, dtype), _randn(rng, b.shape, dtype)
    out, tout = jvp(ours(trans), [asarray(a), asarray(b)], [asarray(ta), asarray(tb)])
    ct = _randn(rng, jax.eval_shape(theirs(trans), jnp.asarray(a), jnp.asarray(b)).shape, dtype)
    # JAX's JVP and VJP as one compiled program (eagerly, each primitive of both is an executable)
    jout, jtout, (jga, jgb) = jax_oracles.jvp_and_vjp(
        theirs(trans), (jnp.asarray(a), jnp.asarray(b)), (jnp.asarray(ta), jnp.asarray(tb)), np.conj(ct)
    )
    close(out.numpy(), jout, dtype, "value")
    close(tout.numpy(), jtout, dtype, "JVP")
    ga, gb = vjp(ours(trans), asarray(a), asarray(b))[1](asarray(ct))
    close(ga.numpy(), np.conj(np.asarray(jga)), dtype, "VJP a")
    close(gb.numpy(), np.conj(np.asarray(jgb)), dtype, "VJP b")


@pytest.mark.parametrize("dtype", [rt.float64, rt.complex128], ids=["f64", "c128"])
@pytest.mark.parametrize("trans", TRANS)
def test_finite_differences(trans: int, dtype: rt.DType) -> None:
    a, b = _inputs(dtype, "matrix", 3)
    check_grads(ours(trans), [asarray(a), asarray(b)], order=2)
    # linalg.lu_solve with lu_factor's concrete pivots: b's derivative (the pivots carry none)
    lu_piv = L.lu_factor(asarray(a))
    check_grads(lambda v: L.lu_solve(lu_piv, v, trans=trans), [asarray(b)], order=1)


@pytest.mark.parametrize("dtype", [rt.float32, rt.complex128], ids=["f32", "c128"])
@pytest.mark.parametrize("trans", TRANS)
def test_vmap_of_the_solve_and_of_its_gradient(trans: int, dtype: rt.DType) -> None:
    a, b = _inputs(dtype, "batched", 4)
    got = autodiff.vmap(ours(trans))(asarray(a), asarray(b))
    close(got.numpy(), jax.vmap(theirs(trans))(jnp.asarray(a), jnp.asarray(b)), dtype, "vmap")

    def loss(f: Any, real: Any, s: Any) -> Any:
        return lambda x, y: real(s(f(x, y)))

    ours_loss = loss(ours(trans), F.real, lambda v: F.reduce_sum(v, tuple(range(v.ndim))))
    jax_loss = loss(theirs(trans), jnp.real, jnp.sum)
    g = autodiff.vmap(autodiff.grad(ours_loss))(asarray(a), asarray(b))
    jg = jax_oracles.jitted(jax.vmap(jax.grad(jax_loss)))(jnp.asarray(a), jnp.asarray(b))
    close(g.numpy(), np.conj(np.asarray(jg)), dtype, "vmap(grad)")
    jitted = autodiff.jit(autodiff.vmap(autodiff.grad(ours_loss)))(asarray(a), asarray(b))
    close(jitted.numpy(), g.numpy(), dtype, "jit(vmap(grad))")


@pytest.mark.parametrize("trans", [3, -1, True, 1.0, "T"])
def test_trans_outside_0_1_2_is_refused_as_jax(trans: Any) -> None:
    a, b = _inputs(rt.float64, "vector")
    pattern = rf"linalg\.lu_solve: trans must be 0 .*got {trans!r} .*f64\[3,3\], f64\[3\]; policy 'jax'"
    with pytest.raises(OpValueError, match=pattern):
        L.lu_solve(L.lu_factor(asarray(a)), asarray(b), trans=trans)
    packed, _, perm = F.lu(asarray(a))
    with pytest.raises(OpValueError, match=rf"lu_solve: trans must be 0 .*got {trans!r} .*policy 'jax'"):
        F.lu_solve(packed, perm, asarray(b[:, None]), trans=trans)
    if not isinstance(trans, (bool, float, str)):
        with pytest.raises(ValueError, match="'trans' value must be 0, 1, or 2"):
            jsl.lu_solve(jsl.lu_factor(jnp.asarray(a)), jnp.asarray(b), trans=trans)


@pytest.mark.parametrize(("lu_dtype", "b_dtype"), [("float32", "float64"), ("float64", "float32"),
                                                   ("float64", "int32"), ("complex64", "float64")])  # fmt: skip
def test_b_of_another_dtype_is_promoted_as_jax(lu_dtype: str, b_dtype: str) -> None:
    """jax.scipy.linalg.lu_solve promotes the factors and b to their common inexact dtype."""
    gen = np.random.default_rng(3)
    a = (gen.standard_normal((3, 3)) + 3 * np.eye(3)).astype(lu_dtype)
    b = (gen.standard_normal((3, 2)) * 4).astype(b_dtype)
    with jax.enable_x64(True):
        want = jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(a), b)
    got = rt.linalg.lu_solve(rt.linalg.lu_factor(rt.asarray(a)), rt.asarray(b))
    assert got.dtype.name == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=2e-5)
