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
from runtime.core import lax as F  # noqa: E402
from runtime.core.promotion import LatticePolicy, get_policy_object, register_policy, use_policy  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
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


# -- (c) custom rules and the version counters -------------------------------------------------------------


def _scale_vjp(c: Tensor, via: str) -> autodiff.custom_vjp:
    """x * c, bwd reading c as fwd's residual or as a closure."""

    @autodiff.custom_vjp
    def scale(x: Tensor) -> Tensor:
        return x * c

    if via == "residual":
        scale.defvjp(lambda x: (x * c, c), lambda r, g: (g * r,))
    else:
        scale.defvjp(lambda x: (x * c, None), lambda r, g: (g * c,))
    return scale


def _scale_jvp(c: Tensor) -> autodiff.custom_jvp:
    @autodiff.custom_jvp
    def scale(x: Tensor) -> Tensor:
        return x * c

    scale.defjvp(lambda p, t: (scale(p[0]), t[0] * c))
    return scale


def _write_through_a_view(c: Tensor) -> None:
    view = c.reshape(*c.shape)  # shares c's memory: not what any recording holds
    view += 1.0


@pytest.mark.parametrize("via", ["residual", "closure"])
def test_backward_refuses_a_custom_vjp_whose_saved_constant_was_written(via: str) -> None:
    c = rt.asarray(np.array([1.0, 2.0]))
    scale = _scale_vjp(c, via)
    x = rt.asarray(np.array([1.0, 1.0]), requires_grad=True)
    loss = S(F.sin(scale(x)))
    _write_through_a_view(c)
    with pytest.raises(rt.SavedValueModifiedError, match="custom_vjp"):
        loss.backward()
    assert x.grad is None  # nothing accumulated


def test_a_residual_written_directly_is_refused_too() -> None:
    c = rt.asarray(np.array([1.0, 2.0]))
    scale = _scale_vjp(c, "residual")
    x = rt.asarray(np.array([1.0, 1.0]), requires_grad=True)
    _, pull = autodiff.vjp(lambda x: S(scale(x)), x)
    c += 1.0  # not referenced by a recorded graph: accepted, but the version ticks
    with pytest.raises(rt.SavedValueModifiedError, match="residual 0 of custom_vjp scale"):
        pull(rt.asarray(1.0))


def test_reverse_and_forward_mode_refuse_a_custom_jvp_rule_whose_constant_was_written() -> None:
    c = rt.asarray(np.array([1.0, 2.0]))
    scale = _scale_jvp(c)
    x = rt.asarray(np.array([1.0, 1.0]), requires_grad=True)
    loss = S(scale(x))
    _, f_jvp = autodiff.linearize(lambda x: S(scale(x)), rt.asarray(np.array([1.0, 1.0])))
    _write_through_a_view(c)
    with pytest.raises(rt.SavedValueModifiedError, match="custom_jvp scale: the JVP rule reads"):
        loss.backward()
    assert x.grad is None
    with pytest.raises(rt.SavedValueModifiedError, match="custom_jvp scale: the JVP rule reads"):
        f_jvp(rt.asarray(np.ones(2)))


def test_custom_rules_still_agree_with_jax_around_unrelated_writes() -> None:
    # no false alarms: writes into memory the rules do not read, a write before the call is
    # recorded, and a rule that writes into its own temporaries
    c = rt.asarray(np.array([1.5, -2.0]))
    other = rt.asarray(np.zeros(2))

    @autodiff.custom_vjp
    def scale(x: Tensor) -> Tensor:
        return x * c

    def bwd(r: Tensor, g: Tensor) -> tuple[Tensor]:
        out = g * r
        out += 0.0  # the rule's own temporary
        return (out,)

    scale.defvjp(lambda x: (x * c, c), bwd)
    jscale = jax.custom_vjp(lambda x: x * np.array([2.5, -1.0]))
    jscale.defvjp(lambda x: (x * np.array([2.5, -1.0]), None), lambda _, g: (g * np.array([2.5, -1.0]),))
    xv = np.array([0.3, 0.9])
    _write_through_a_view(c)  # before anything is recorded: c is [2.5, -1.0] from here on
    x = rt.asarray(xv, requires_grad=True)
    loss = S(F.sin(scale(x)))
    other += 1.0
    _write_through_a_view(other)
    loss.backward()
    with x64():
        want = jax.grad(lambda x: jnp.sum(jnp.sin(jscale(x))))(xv)
    close(x.grad, want)


@pytest.mark.parametrize("kind", ["custom_vjp", "custom_jvp"])
def test_jit_refuses_a_constant_inside_a_custom_function_written_after_the_trace(kind: str) -> None:
    c = rt.asarray(np.array([1.0, 2.0]))
    scale = _scale_vjp(c, "closure") if kind == "custom_vjp" else _scale_jvp(c)

    def loss(x: Tensor) -> Tensor:
        return S(F.sin(scale(x)))

    jl = autodiff.jit(loss)
    x = rt.asarray(np.array([0.5, 0.25]))
    close(jl(x), loss(x).numpy())
    close(jl(x), loss(x).numpy())  # the per-call path
    _write_through_a_view(c)
    with pytest.raises(rt.SavedValueModifiedError, match=f"{kind} function 'scale'"):
        jl(x)


def test_jit_of_grad_refuses_a_constant_only_the_custom_primal_reads() -> None:
    # a straight-through estimator: the primal rounds x / c, bwd passes the cotangent through;
    # the derivative program keeps the call (its value feeds cos), whose function reads c
    c = rt.asarray(np.array([0.5, 0.25]))

    @autodiff.custom_vjp
    def quantize(x: Tensor) -> Tensor:
        return F.round(x / c) * c

    quantize.defvjp(lambda x: (quantize(x), None), lambda _, g: (g,))

    def loss(x: Tensor) -> Tensor:
        return S(F.sin(quantize(x)))

    step = autodiff.jit(autodiff.grad(loss))
    x = rt.asarray(np.array([0.8, 0.6]))
    close(step(x), np.cos(np.round(x.numpy() / c.numpy()) * c.numpy()))
    close(step(x), autodiff.grad(loss)(x).numpy())
    _write_through_a_view(c)
    with pytest.raises(rt.SavedValueModifiedError, match="custom_vjp function 'quantize'"):
        step(x)
