"""A second adversarial review: silent wrong answers where a transform kept stale state.

* ``autodiff.jit``'s caches were keyed by the promotion policy's *name*: a policy registered
  again under that name kept the compiled programs of the old one.
* ``vmap`` of a ``custom_vjp`` ran the call once per example but gave every example the
  residuals ``fwd`` saved for example 0, so reverse mode through it used example 0's.
* Custom rules read what they close over when they run (at backward, at a jvp, when ``jit``
  lowers them), outside the version counters: a residual or a closed-over constant written in
  place after the call was recorded went into the derivative with its new value.

Each test fails on the code before the fix; the oracle is JAX (x64), eager castwise or an
exact value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from runtime import functions as F  # noqa: E402
from runtime.promotion import LatticePolicy, get_policy_object, register_policy, use_policy  # noqa: E402
from runtime.tensor import Tensor  # noqa: E402
from tests.autodiff.rule_helpers import x64  # noqa: E402


def S(t: Tensor) -> Tensor:
    return F.reduce_sum(t, tuple(range(t.ndim)))


def close(got: Any, want: Any) -> None:
    got = got.numpy() if isinstance(got, Tensor) else got
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


# -- (a) jit keys its caches by the policy object, not its name ---------------------------------------------


@pytest.fixture
def strict_policy() -> Iterator[Any]:
    """``register(target)`` registers a policy named "strict" whose every promotion gives
    ``target``; the real "strict" is registered again afterwards."""
    original = get_policy_object("strict")

    def register(target: rt.DType) -> None:
        class Fixed(LatticePolicy):
            name = "strict"

            def _promote(self, a: rt.DType, b: rt.DType) -> rt.DType | None:
                return target

        register_policy(Fixed())

    try:
        yield register
    finally:
        register_policy(original)


def test_jit_follows_a_policy_registered_again_under_the_same_name(strict_policy: Any) -> None:
    a, b = rt.asarray(np.full(2, 1.5, np.float32)), rt.asarray(np.full(2, 2.0))
    mul = autodiff.jit(lambda x, y: x * y)
    plain = b.numpy()  # a NumPy argument: the general path
    strict_policy(rt.float64)
    with use_policy("strict"):
        for _ in range(2):  # the second call takes the per-call path
            assert mul(a, b).dtype is rt.float64
            assert mul(a, plain).dtype is rt.float64
    strict_policy(rt.float32)
    with use_policy("strict"):
        for _ in range(2):
            want = a * b  # eager, under the policy registered now
            assert want.dtype is rt.float32
            got = mul(a, b)
            assert got.dtype is want.dtype, "a program compiled under the replaced policy was served"
            close(got, want.numpy())
            assert mul(a, plain).dtype is rt.float32
    assert mul.traces == 4  # two signatures (Tensor, NumPy argument) under each policy


# -- (b) vmap of a custom_vjp: each example's own residuals ----------------------------------------------


def _csin(residual: str) -> autodiff.custom_vjp:
    """sin with a hand-written VJP whose residual is the input, or cos(x) computed by fwd."""

    @autodiff.custom_vjp
    def csin(x: Tensor) -> Tensor:
        return F.sin(x)

    if residual == "input":
        csin.defvjp(lambda x: (F.sin(x), x), lambda x, g: (g * F.cos(x),))
    else:
        csin.defvjp(lambda x: (F.sin(x), {"cos": F.cos(x)}), lambda r, g: (g * r["cos"],))
    return csin


@jax.custom_vjp
def _jsin(x: Any) -> Any:
    return jnp.sin(x)


_jsin.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (g * jnp.cos(x),))

_RESIDUALS = ["input", "computed"]


@pytest.mark.parametrize("residual", _RESIDUALS)
def test_grad_of_vmap_of_a_custom_vjp_uses_each_examples_residuals(residual: str) -> None:
    csin = _csin(residual)
    v = np.array([0.0, 2.0, -1.3])
    got = autodiff.grad(lambda v: S(autodiff.vmap(csin)(v)))(rt.asarray(v))
    with x64():
        want = jax.grad(lambda v: jnp.sum(jax.vmap(_jsin)(v)))(v)
    close(got, want)  # [1, cos 2, cos -1.3]; example 0's residual for all gave [1, 1, 1]


@pytest.mark.parametrize("residual", _RESIDUALS)
def test_vjp_of_vmap_of_a_custom_vjp(residual: str) -> None:
    csin = _csin(residual)
    rng = np.random.default_rng(0)
    v, ct = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    out, pull = autodiff.vjp(autodiff.vmap(csin, in_axes=1, out_axes=1), rt.asarray(v))
    (got,) = pull(rt.asarray(ct))
    with x64():
        want_out, jpull = jax.vjp(jax.vmap(_jsin, in_axes=1, out_axes=1), v)
        (want,) = jpull(ct)
    close(out, want_out)
    close(got, want)


@pytest.mark.parametrize("residual", _RESIDUALS)
def test_grad_of_nested_vmap_of_a_custom_vjp(residual: str) -> None:
    csin = _csin(residual)
    m = np.array([[0.0, 2.0, 0.4], [1.0, 3.0, -0.8]])
    got = autodiff.grad(lambda m: S(autodiff.vmap(autodiff.vmap(csin))(m)))(rt.asarray(m))
    with x64():
        want = jax.grad(lambda m: jnp.sum(jax.vmap(jax.vmap(_jsin))(m)))(m)
    close(got, want)


def test_vmap_of_a_custom_vjp_with_an_unmapped_argument() -> None:
    @autodiff.custom_vjp
    def scaled_sin(x: Tensor, w: Tensor) -> Tensor:
        return F.sin(x) * w

    scaled_sin.defvjp(lambda x, w: (F.sin(x) * w, (x, w)), lambda r, g: (g * r[1] * F.cos(r[0]), g * F.sin(r[0])))

    @jax.custom_vjp
    def jscaled(x: Any, w: Any) -> Any:
        return jnp.sin(x) * w

    jscaled.defvjp(lambda x, w: (jnp.sin(x) * w, (x, w)), lambda r, g: (g * r[1] * jnp.cos(r[0]), g * jnp.sin(r[0])))
    x, w = np.array([0.1, 1.7, -2.2]), np.array(0.6)
    got = autodiff.grad(lambda x, w: S(autodiff.vmap(scaled_sin, in_axes=(0, None))(x, w)), argnums=(0, 1))(
        rt.asarray(x), rt.asarray(w)
    )
    with x64():
        want = jax.grad(lambda x, w: jnp.sum(jax.vmap(jscaled, in_axes=(0, None))(x, w)), argnums=(0, 1))(x, w)
    for g, ww in zip(got, want, strict=True):
        close(g, ww)


def test_vmap_over_an_empty_batch_of_custom_functions() -> None:
    csin = _csin("input")
    empty = np.zeros((0, 3))
    with x64():
        want = jax.vmap(_jsin)(empty)
    out = autodiff.vmap(csin)(rt.asarray(empty))
    assert out.shape == want.shape == (0, 3) and out.dtype is rt.float64
    g = autodiff.grad(lambda v: S(autodiff.vmap(csin)(v)))(rt.asarray(empty))
    assert g.shape == (0, 3)

    @autodiff.custom_jvp
    def csq(x: Tensor) -> Tensor:
        return x * x

    csq.defjvp(lambda p, t: (csq(p[0]), 2.0 * p[0] * t[0]))
    assert autodiff.vmap(csq)(rt.asarray(empty)).shape == (0, 3)
