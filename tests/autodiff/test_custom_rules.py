"""``custom_jvp`` / ``custom_vjp``: JAX's interface, one recorded call that replays,
differentiates and lowers, and ``check_grads`` catching a wrong rule.

Each computation is checked against the same custom rule written with
``jax.custom_jvp`` / ``jax.custom_vjp`` (x64 on), on random inputs in
f32/f64/c128. castwise's reverse mode is PyTorch's convention, so a complex
cotangent is compared with the conjugate of JAX's (``check_against_jax``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff.custom import CustomRuleError, CustomVJPForwardError  # noqa: E402
from autodiff.pytree import tree_map  # noqa: E402
from autodiff.testing import check_against_jax, check_grads  # noqa: E402
from passes.lower_jax import lower_to_jax  # noqa: E402
from runtime.core import lax as F  # noqa: E402
from runtime.core.tensor import Tensor  # noqa: E402
from tests import jax_oracles  # noqa: E402
from tests.autodiff.tree_helpers import DTYPES, close, dtype_id, random  # noqa: E402

# -- softplus with a custom JVP: finite gradients where exp overflows ------------------------------------


@autodiff.custom_jvp
def softplus(x: Tensor) -> Tensor:
    return F.log1p(F.exp(x))


@softplus.defjvp
def softplus_jvp(primals: tuple[Tensor], tangents: tuple[Tensor]) -> tuple[Tensor, Tensor]:
    (x,), (t,) = primals, tangents
    return softplus(x), F.mul(t, F.logistic(x))


@jax.custom_jvp
def jax_softplus(x: Any) -> Any:
    return jnp.log1p(jnp.exp(x))


@jax_softplus.defjvp
def jax_softplus_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return jax_softplus(x), t * jax.nn.sigmoid(x)


def softplus_inputs(dtype: Any, rng: np.random.Generator) -> np.ndarray:
    x = random(rng, (5,), dtype)
    if np.dtype(dtype).kind == "f":
        x[0], x[1] = (1e3, 200.0) if dtype == np.float64 else (200.0, 100.0)  # exp overflows to inf
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_custom_jvp_softplus_matches_jax(dtype: Any) -> None:
    x = softplus_inputs(dtype, np.random.default_rng(0))
    check_against_jax(softplus, jax_softplus, [x])
    loss = (lambda v: F.reduce_sum(softplus(v), (0,))) if np.dtype(dtype).kind == "f" else None
    if loss is not None:
        g = autodiff.grad(loss)(rt.asarray(x))
        assert np.all(np.isfinite(g.numpy())) and g.numpy()[0] == 1.0
        with jax.enable_x64(True):
            want = jax_oracles.jitted(jax.grad(lambda v: jnp.sum(jax_softplus(v))))(jnp.asarray(x))
        np.testing.assert_allclose(g.numpy(), np.asarray(want), rtol=1e-6)
        # without the rule the same function's gradient is inf / inf = NaN at large inputs
        with np.errstate(invalid="ignore", over="ignore"):
            plain = autodiff.grad(lambda v: F.reduce_sum(F.log1p(F.exp(v)), (0,)))(rt.asarray(x))
        assert np.isnan(plain.numpy()[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_hessian_through_a_custom_jvp(dtype: Any) -> None:
    x = random(np.random.default_rng(1), (3,), dtype)
    h = autodiff.hessian(lambda v: F.reduce_sum(F.mul(softplus(v), v), (0,)))(rt.asarray(x))
    with jax.enable_x64(True):
        want = jax_oracles.jitted(jax.hessian(lambda v: jnp.sum(jax_softplus(v) * v)))(jnp.asarray(x))
    np.testing.assert_allclose(h.numpy(), np.asarray(want), rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_the_recorded_graph_holds_one_call_that_replays_and_lowers() -> None:
    x = rt.asarray(np.array([-1.0, 0.5, 800.0]))
    graph = rt.trace(lambda v: F.reduce_sum(softplus(v), (0,)), x)
    calls = [e for e in graph.eqns if e.op.name == "custom_jvp_call"]
    assert len(calls) == 1 and not any(e.op.name in ("exp", "log1p") for e in graph.eqns)
    assert "custom_jvp_call[name=softplus rule=softplus_jvp]" in str(graph)
    # the interpreter replays the call's function
    (replayed,) = graph(x)
    np.testing.assert_array_equal(replayed.numpy(), F.reduce_sum(softplus(x), (0,)).numpy())
    # lowering goes to jax.custom_jvp: JAX differentiates the lowered program with the user's rule
    fn = lower_to_jax(graph)
    with jax.enable_x64(True):
        jaxpr = str(jax.make_jaxpr(fn)(x.numpy()))
        g = jax_oracles.jitted(jax.grad(lambda v: fn(v)[0]))(jnp.asarray(x.numpy()))
    assert "custom_jvp_call" in jaxpr
    np.testing.assert_allclose(np.asarray(g), 1 / (1 + np.exp(-x.numpy())))
    # and jit compiles gradients through it
    jg = autodiff.jit(autodiff.grad(lambda v: F.reduce_sum(softplus(v), (0,))))
    np.testing.assert_allclose(jg(x).numpy(), np.asarray(g))


def test_custom_jvp_nondiff_argnums_and_pytrees() -> None:
    # JAX's example: a function argument is static
    @autodiff.custom_jvp
    def app(f: Any, p: dict[str, Tensor]) -> Tensor:
        return f(F.mul(p["a"], p["b"]))

    def app_jvp(f: Any, primals: Any, tangents: Any) -> Any:
        (p,), (t,) = primals, tangents
        return app(f, p), F.mul(F.add(F.mul(t["a"], p["b"]), F.mul(p["a"], t["b"])), 2.0)

    app.defjvp(app_jvp)
    app.nondiff_argnums = (0,)
    p = {"a": rt.asarray(np.array([1.0, 2.0])), "b": rt.asarray(np.array([3.0, -1.0]))}
    g = autodiff.grad(lambda q: F.reduce_sum(app(F.sin, q), (0,)))(p)
    np.testing.assert_allclose(g["a"].numpy(), 2 * p["b"].numpy())  # the rule's (deliberately not sin's) derivative
    np.testing.assert_allclose(g["b"].numpy(), 2 * p["a"].numpy())


# -- gradient clipping with a custom VJP -------------------------------------------------------------


def make_clip(limit: float) -> autodiff.custom_vjp:
    """The identity, whose cotangent is clipped to magnitude ``limit`` (complex: its modulus)."""

    @autodiff.custom_vjp
    def clip_gradient(x: Tensor) -> Tensor:
        return x

    def clip_fwd(x: Tensor) -> tuple[Tensor, None]:
        return x, None

    def clip_bwd(_: None, g: Tensor) -> tuple[Tensor]:
        mag = F.abs(g)
        return (F.mul(g, F.div(limit, F.max(mag, limit))),)

    clip_gradient.defvjp(clip_fwd, clip_bwd)
    return clip_gradient


def make_jax_clip(limit: float) -> Any:
    @jax.custom_vjp
    def clip_gradient(x: Any) -> Any:
        return x

    def clip_fwd(x: Any) -> Any:
        return x, None

    def clip_bwd(_: Any, g: Any) -> Any:
        return (g * (limit / jnp.maximum(jnp.abs(g), limit)),)

    clip_gradient.defvjp(clip_fwd, clip_bwd)
    return clip_gradient


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_custom_vjp_gradient_clipping_matches_jax(dtype: Any) -> None:
    rng = np.random.default_rng(2)
    x, w = random(rng, (6,), dtype), random(rng, (6,), dtype)
    clip, jclip = make_clip(0.5), make_jax_clip(0.5)

    def ours(v: Tensor, k: Tensor) -> Tensor:
        return F.mul(clip(F.mul(F.sin(v), 3.0)), k)

    def theirs(v: Any, k: Any) -> Any:
        return jclip(jnp.sin(v) * 3.0) * k

    check_against_jax(ours, theirs, [x, w], modes=("primal", "vjp"))
    # the gradient really is clipped: each cotangent reaching sin has magnitude <= 0.5
    if np.dtype(dtype).kind == "f":
        g = autodiff.grad(lambda v: F.reduce_sum(F.mul(clip(F.mul(v, 1.0)), 10.0), (0,)))(rt.asarray(x))
        np.testing.assert_allclose(g.numpy(), 0.5)
    # reverse mode only, as in JAX
    with pytest.raises(CustomVJPForwardError, match="custom_vjp function 'clip_gradient'"):
        autodiff.jvp(lambda v: clip(v), (rt.asarray(x),), (rt.asarray(x),))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_custom_vjp_lowers_to_jax_custom_vjp(dtype: Any) -> None:
    rng = np.random.default_rng(3)
    x = random(rng, (4,), dtype)
    clip = make_clip(0.25)

    def loss(v: Tensor) -> Tensor:
        y = F.mul(clip(F.mul(v, 2.0)), 5.0)
        y = F.real(F.mul(y, F.conj(y))) if y.dtype.kind == "complex" else F.mul(y, y)
        return F.reduce_sum(y, (0,))

    graph = rt.trace(loss, rt.asarray(x))
    assert "custom_vjp_call[name=clip_gradient rule=clip_bwd]" in str(graph)
    fn = lower_to_jax(graph)
    with jax.enable_x64(True):
        assert "custom_vjp_call" in str(jax.make_jaxpr(fn)(x))
        jax_g = np.asarray(jax_oracles.jitted(jax.grad(lambda v: fn(v)[0]))(jnp.asarray(x)))
    ours = autodiff.grad(loss)(rt.asarray(x)).numpy()
    # JAX's gradient of the lowered program is the conjugate of castwise's (PyTorch's convention)
    np.testing.assert_allclose(ours, np.conj(jax_g), rtol=1e-5)
    jitted = autodiff.jit(autodiff.grad(loss))
    np.testing.assert_allclose(jitted(rt.asarray(x)).numpy(), ours, rtol=1e-5)


def test_custom_vjp_nondiff_argnums_pytrees_and_residuals() -> None:
    # JAX's example: clip_gradient(lo, hi, x) with static bounds
    @autodiff.custom_vjp
    def clip_gradient(lo: float, hi: float, p: dict[str, Tensor]) -> dict[str, Tensor]:
        return {"y": F.mul(p["x"], p["s"])}

    def fwd(lo: float, hi: float, p: dict[str, Tensor]) -> Any:
        return clip_gradient(lo, hi, p), {"x": p["x"], "s": p["s"]}

    def bwd(lo: float, hi: float, res: dict[str, Tensor], g: dict[str, Tensor]) -> Any:
        return ({"x": F.clamp(lo, F.mul(g["y"], res["s"]), hi), "s": None},)

    clip_gradient.defvjp(fwd, bwd)
    clip_gradient.nondiff_argnums = (0, 1)
    p = {"x": rt.asarray(np.array([1.0, -2.0, 0.1])), "s": rt.asarray(np.array([3.0, 3.0, 3.0]))}
    g = autodiff.grad(lambda q: F.reduce_sum(clip_gradient(-1.0, 1.0, q)["y"], (0,)))(p)
    np.testing.assert_allclose(g["x"].numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(g["s"].numpy(), 0.0)  # bwd said None: a zero cotangent


def test_second_order_through_a_custom_vjp() -> None:
    # bwd reads residuals fwd computed from x: differentiating the gradient goes through them
    @autodiff.custom_vjp
    def cube(x: Tensor) -> Tensor:
        return F.mul(F.mul(x, x), x)

    cube.defvjp(lambda x: (cube(x), F.mul(x, x)), lambda sq, g: (F.mul(F.mul(g, sq), 3.0),))
    x = rt.asarray(np.array([0.5, -1.5]))
    h = autodiff.hessian(lambda v: F.reduce_sum(cube(v), (0,)))(x)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * x.numpy()))
    check_grads(cube, [x], order=2, modes=("rev",))


# -- check_grads catches a wrong rule ----------------------------------------------------------------


def test_check_grads_catches_a_wrong_custom_vjp() -> None:
    @autodiff.custom_vjp
    def my_sin(x: Tensor) -> Tensor:
        return F.sin(x)

    def good_bwd(x: Tensor, g: Tensor) -> tuple[Tensor]:
        return (F.mul(g, F.cos(x)),)

    def wrong_bwd(x: Tensor, g: Tensor) -> tuple[Tensor]:
        return (F.mul(g, F.neg(F.cos(x))),)  # the sign slip of hand-written backward passes

    x = np.array([0.3, -1.1, 2.0])
    my_sin.defvjp(lambda v: (my_sin(v), v), good_bwd)
    check_grads(my_sin, [x], order=2, modes=("rev",))
    my_sin.defvjp(lambda v: (my_sin(v), v), wrong_bwd)
    with pytest.raises(
        AssertionError, match=r"(?s)central differences.*custom_vjp function 'my_sin' \(rule 'wrong_bwd'\)"
    ):
        check_grads(my_sin, [x], order=1, modes=("rev",))
    with pytest.raises(CustomVJPForwardError, match="modes=\\('rev',\\)"):
        check_grads(my_sin, [x], order=1)


def test_check_grads_catches_a_wrong_custom_jvp() -> None:
    @autodiff.custom_jvp
    def my_exp(x: Tensor) -> Tensor:
        return F.exp(x)

    @my_exp.defjvp
    def my_exp_jvp(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return my_exp(x), F.mul(t, F.mul(my_exp(x), 1.01))  # one percent off

    with pytest.raises(
        AssertionError, match=r"(?s)finite differences.*custom_jvp function 'my_exp' \(rule 'my_exp_jvp'\)"
    ):
        check_grads(my_exp, [np.array([0.3, 1.2])], order=1, modes=("fwd",))


def test_rules_returning_the_wrong_aval_are_reported() -> None:
    @autodiff.custom_vjp
    def f(x: Tensor) -> Tensor:
        return F.sin(x)

    f.defvjp(lambda x: (f(x), None), lambda _, g: (F.reshape(g, (3, 1)),))
    with pytest.raises(CustomRuleError, match=r"custom_vjp f: the rule returned f64\[3, 1\] for argument leaf 0"):
        autodiff.grad(lambda v: F.reduce_sum(f(v), (0,)))(rt.asarray(np.ones(3)))
    f.defvjp(lambda x: (f(x), None), lambda _, g: (g, g))
    with pytest.raises(CustomRuleError, match="one cotangent per differentiable argument \\(1\\), got 2"):
        autodiff.grad(lambda v: F.reduce_sum(f(v), (0,)))(rt.asarray(np.ones(3)))

    @autodiff.custom_jvp
    def h(x: Tensor) -> Tensor:
        return F.sin(x)

    h.defjvp(lambda p, t: (h(p[0]), F.convert(t[0], "float32")))
    with pytest.raises(CustomRuleError, match=r"returned f32\[3\] for output 0, which is f64\[3\]"):
        autodiff.jvp(h, (rt.asarray(np.ones(3)),), (rt.asarray(np.ones(3)),))


def test_untracked_calls_are_plain_function_calls() -> None:
    calls = []

    @autodiff.custom_jvp
    def f(x: Tensor) -> Tensor:
        calls.append(1)
        return F.sin(x)

    out = f(rt.asarray(np.ones(2)))
    assert out.node is None and calls == [1]
    tree_map(lambda a: a, {"unused": out})


def test_the_eager_tape_goes_through_custom_calls() -> None:
    @autodiff.custom_vjp
    def f(x: Tensor) -> Tensor:
        return F.sin(x)

    f.defvjp(lambda x: (f(x), F.cos(x)), lambda cos_x, g: (F.mul(g, cos_x),))
    x = rt.asarray(np.array([0.1, 0.2]), requires_grad=True)
    F.reduce_sum(F.mul(f(x), softplus(x)), (0,)).backward()
    v = x.numpy()
    sp = np.log1p(np.exp(v))
    np.testing.assert_allclose(x.grad.numpy(), np.cos(v) * sp + np.sin(v) / (1 + np.exp(-v)))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_check_grads_catches_a_wrong_custom_vjp_in_every_dtype(dtype: Any) -> None:
    """The slips of hand-written backward passes: a sign for real inputs, a missing conjugate for
    complex ones (castwise's VJP of a holomorphic f is g * conj(f'(x)), PyTorch's convention)."""
    complex_ = np.dtype(dtype).kind == "c"

    @autodiff.custom_vjp
    def my_sin(x: Tensor) -> Tensor:
        return F.sin(x)

    def good_bwd(x: Tensor, g: Tensor) -> tuple[Tensor]:
        return (F.mul(g, F.conj(F.cos(x)) if complex_ else F.cos(x)),)

    def wrong_bwd(x: Tensor, g: Tensor) -> tuple[Tensor]:
        return (F.mul(g, F.cos(x)) if complex_ else F.mul(g, F.neg(F.cos(x))),)

    x = random(np.random.default_rng(11), (4,), dtype)
    my_sin.defvjp(lambda v: (my_sin(v), v), good_bwd)
    check_grads(my_sin, [x], order=1, modes=("rev",))
    my_sin.defvjp(lambda v: (my_sin(v), v), wrong_bwd)
    with pytest.raises(AssertionError, match=r"(?s)custom_vjp function 'my_sin' \(rule 'wrong_bwd'\)"):
        check_grads(my_sin, [x], order=1, modes=("rev",))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_custom_rules_batch_under_vmap(dtype: Any) -> None:
    """vmap of a custom_jvp function and per-example gradients through a custom_vjp one, against
    jax.vmap of the same rules: the user's rule is used for each example."""
    rng = np.random.default_rng(12)
    xs, ws = random(rng, (3, 5), dtype), random(rng, (5,), dtype)
    if np.dtype(dtype).kind == "f":
        xs[1, 0] = 200.0 if dtype == np.float64 else 90.0  # where softplus's plain derivative is NaN
    clip, jclip = make_clip(0.5), make_jax_clip(0.5)

    def ours(v: Tensor, k: Tensor) -> Tensor:
        y = F.mul(clip(F.mul(F.sin(v), 3.0)), k)
        sq = F.mul(y, F.conj(y))
        return F.reduce_sum(F.real(sq) if sq.dtype.kind == "complex" else sq, (0,))

    def theirs(v: Any, k: Any) -> Any:
        y = jclip(jnp.sin(v) * 3.0) * k
        return jnp.sum(jnp.real(y * jnp.conj(y)))

    sp = autodiff.vmap(softplus)(rt.asarray(xs))
    per = autodiff.vmap(autodiff.grad(ours), in_axes=(0, None))(rt.asarray(xs), rt.asarray(ws))
    with jax.enable_x64(True):
        want_sp = jax_oracles.jitted(jax.vmap(jax_softplus))(jnp.asarray(xs))
        want_per = jax_oracles.jitted(jax.vmap(jax.grad(theirs), in_axes=(0, None)))(jnp.asarray(xs), jnp.asarray(ws))
    close(sp.numpy(), want_sp, dtype)
    close(per.numpy(), np.conj(np.asarray(want_per)), dtype)
    if np.dtype(dtype).kind == "f":
        loss = lambda v: F.reduce_sum(softplus(v), (0,))  # noqa: E731
        g = autodiff.vmap(autodiff.grad(loss))(rt.asarray(xs))
        with jax.enable_x64(True):
            want_g = jax_oracles.jitted(jax.vmap(jax.grad(lambda v: jnp.sum(jax_softplus(v)))))(jnp.asarray(xs))
        assert np.all(np.isfinite(g.numpy()))
        close(g.numpy(), want_g, dtype)
