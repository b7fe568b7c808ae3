"""Derivatives and transforms of ``rt.lax.reduce`` / ``reduce_window`` with a general computation.

A computation that is no monoid (an argmax pair, logaddexp, ``x + y + x y``) is a composition of
vocabulary ops (``runtime/core/lax/computations.py``), so JVP, VJP, higher orders, ``jit`` and
``vmap`` come from the ops' own rules. Held here against oracles:

* ``jax.jvp`` / ``jax.grad`` of ``jax.lax.reduce`` where JAX differentiates it (one float operand
  and a constant init), and JAX's gradient of the equivalent max (``take_along_axis`` of
  ``argmax``; a max window, a monoid JAX differentiates) for the argmax pair, whose variadic
  reduce with an integer operand JAX cannot differentiate (jax 0.10.2);
* the closed form ``logaddexp(reduce(x), init)`` for the derivative with respect to the init
  value, which JAX refuses;
* central differences and the JVP/VJP adjoint identity (``autodiff.testing``), first and second
  order;
* eager execution for ``jit``, ``jit(grad)`` and ``vmap`` (batched init values too): bit for bit
  where the arithmetic is exact, a few ulps where XLA's transcendental functions round otherwise;
* NumPy's max and first argmax (a Hypothesis property over shapes, axes and ties).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

import autodiff
import runtime as rt
from autodiff.testing import check_jvp, check_vjp

rng = np.random.default_rng(7)


def argmax_pair(a: Any, b: Any) -> Any:
    """(value, index): the larger value, the smaller index on a tie."""
    take = rt.lax.logical_or(rt.lax.gt(a[0], b[0]), rt.lax.logical_and(rt.lax.eq(a[0], b[0]), rt.lax.lt(a[1], b[1])))
    return rt.lax.select(take, a[0], b[0]), rt.lax.select(take, a[1], b[1])


def logaddexp(a: Any, b: Any) -> Any:  # jnp.logaddexp's formula
    delta = a - b
    return rt.lax.select(
        rt.lax.ne(delta, delta), a + b, rt.lax.max(a, b) + rt.lax.log1p(rt.lax.exp(-rt.lax.abs(delta)))
    )


def plus_product(a: Any, b: Any) -> Any:
    return a + b + a * b  # (1 + a)(1 + b) - 1


def _index(shape: tuple[int, ...], axis: int) -> rt.Tensor:
    idx = np.arange(shape[axis], dtype=np.int32).reshape([-1 if d == axis else 1 for d in range(len(shape))])
    return rt.asarray(np.broadcast_to(idx, shape).copy())


def _distinct(shape: tuple[int, ...]) -> np.ndarray:
    """Values with no ties anywhere: the derivative of a max is unambiguous."""
    return rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64) / 7.0


def _total(t: Any) -> Any:
    return rt.lax.reduce_sum(t, tuple(range(t.ndim)))


def _reduce_lae(x: Any, dims: tuple[int, ...] = (1,), init: Any = -np.inf) -> Any:
    return rt.lax.reduce(x, init, logaddexp, dims)


def _argmax_value(x: Any, axis: int = 1) -> Any:
    return rt.lax.reduce((x, _index(x.shape, axis)), (-np.inf, 0), argmax_pair, (axis,))[0]


@pytest.mark.parametrize("dims", [(1,), (0, 1)])
def test_logaddexp_jvp_and_grad_equal_jax(dims: tuple[int, ...]) -> None:
    x, t = rng.standard_normal((4, 7)), rng.standard_normal((4, 7))
    with jax.enable_x64(True):

        def theirs(y: Any) -> Any:
            return lax.reduce(y, -jnp.inf, jnp.logaddexp, dims)

        want_p, want_t = jax.jvp(theirs, (x,), (t,))
        want_g = jax.grad(
            lambda y: jnp.sum(theirs(y) * jnp.arange(1.0, 1.0 + theirs(y).size).reshape(theirs(y).shape))
        )(x)
    got_p, got_t = autodiff.jvp(lambda y: _reduce_lae(y, dims), (rt.asarray(x),), (rt.asarray(t),))
    np.testing.assert_allclose(got_p.numpy(), np.asarray(want_p), rtol=1e-13)
    np.testing.assert_allclose(got_t.numpy(), np.asarray(want_t), rtol=1e-12)
    weights = rt.asarray(np.arange(1.0, 1.0 + got_p.size).reshape(got_p.shape))
    got_g = autodiff.grad(lambda y: _total(_reduce_lae(y, dims) * weights))(rt.asarray(x))
    np.testing.assert_allclose(got_g.numpy(), np.asarray(want_g), rtol=1e-12)


def test_the_gradient_with_respect_to_the_init_value() -> None:
    """JAX refuses it; the closed form is logaddexp(logsumexp(row), init)."""
    x = rng.standard_normal((3, 5))
    with jax.enable_x64(True):
        want = jax.grad(lambda i: jnp.sum(jnp.logaddexp(jax.scipy.special.logsumexp(x, 1), i)))(0.4)
    got = autodiff.grad(lambda i: _total(_reduce_lae(rt.asarray(x), (1,), i)))(rt.asarray(0.4))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1])
def test_the_argmax_pairs_gradient_goes_to_the_chosen_element(axis: int) -> None:
    x = _distinct((4, 6))
    with jax.enable_x64(True):
        want = jax.jit(
            jax.grad(lambda y: jnp.sum(jnp.take_along_axis(y, jnp.argmax(y, axis, keepdims=True), axis) ** 2))
        )(x)
    got = autodiff.grad(lambda y: _total(_argmax_value(y, axis) ** 2))(rt.asarray(x))
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))


def test_an_argmax_windows_gradient_equals_jaxs_max_window() -> None:
    x = _distinct((5, 6))
    window = ((2, 3), (1, 2), "SAME")
    with jax.enable_x64(True):
        want = jax.jit(jax.grad(lambda y: jnp.sum(lax.reduce_window(y, -jnp.inf, lax.max, *window) ** 2)))(x)
    index = rt.asarray(np.arange(30, dtype=np.int32).reshape(5, 6))

    def ours(y: Any) -> Any:
        value, _ = rt.lax.reduce_window((y, index), (-np.inf, 2**31 - 1), argmax_pair, *window)
        return _total(value**2)

    got = autodiff.grad(ours)(rt.asarray(x))
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))


GENERAL_FUNCTIONS = {
    "reduce-plus-product": lambda x: rt.lax.reduce(x, 0.0, plus_product, (0, 2)),
    "reduce-logaddexp-init": lambda x: rt.lax.reduce(x, 0.25, logaddexp, (1,)),
    "window-plus-product": lambda x: rt.lax.reduce_window(x, 0.0, plus_product, (2, 2, 1), (1, 1, 1), "SAME"),
    "window-logaddexp-dilated": lambda x: rt.lax.reduce_window(
        x, -5.0, logaddexp, (2, 1, 2), (1, 1, 2), ((1, 0), (0, 1), (1, 1)), (1, 2, 1), (1, 1, 2)
    ),
    "argmax-value": lambda x: rt.lax.reduce((x, _index(x.shape, 1)), (-np.inf, 0), argmax_pair, (1,))[0],
}
#: the functions whose arithmetic is exact (selects): XLA's values equal NumPy's bit for bit; the
#: others agree to a few ulps (XLA's exp and log1p, and its fused multiply-adds, round otherwise)
EXACT = {"argmax-value"}


@pytest.mark.parametrize("name", list(GENERAL_FUNCTIONS))
def test_first_and_second_order_derivatives_against_finite_differences(name: str) -> None:
    f = GENERAL_FUNCTIONS[name]
    x = rt.asarray(_distinct((3, 4, 4)) / 10.0)
    check_jvp(f, [x])
    check_vjp(f, [x])
    # second order: the gradient of a weighted total, differentiated again
    weights = rt.asarray(rng.standard_normal(f(x).shape))
    check_jvp(autodiff.grad(lambda y: _total(f(y) * weights)), [x])


@pytest.mark.parametrize("name", list(GENERAL_FUNCTIONS))
def test_jit_grad_and_vmap_agree_with_eager_execution(name: str) -> None:
    """vmap runs castwise's kernels: bit for bit. jit runs XLA's: bit for bit where the
    arithmetic is exact, else to a few ulps (both run the same tree)."""
    f = GENERAL_FUNCTIONS[name]

    def same(got: Any, want: Any) -> None:
        if name in EXACT:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=4e-15, atol=1e-15)

    x = rt.asarray(_distinct((3, 4, 4)) / 10.0)
    same(autodiff.jit(f)(x).numpy(), f(x).numpy())
    g = autodiff.grad(lambda y: _total(f(y)))
    same(autodiff.jit(g)(x).numpy(), g(x).numpy())
    batch = rt.asarray(np.stack([_distinct((3, 4, 4)) / 10.0 for _ in range(3)]))
    want = np.stack([f(rt.asarray(batch.numpy()[k])).numpy() for k in range(3)])
    np.testing.assert_array_equal(autodiff.vmap(f)(batch).numpy(), want)
    same(autodiff.jit(autodiff.vmap(f))(batch).numpy(), want)


def test_vmap_over_the_init_values() -> None:
    """JAX's batching rule refuses batched init values; the composition batches them."""
    x = rt.asarray(rng.standard_normal((3, 5)))
    inits = rt.asarray(np.array([-1.0, 0.5, 2.0]))
    got = autodiff.vmap(lambda i: rt.lax.reduce(x, i, logaddexp, (1,)))(inits)
    want = np.stack([np.logaddexp(np.logaddexp.reduce(x.numpy(), 1), i) for i in inits.numpy()])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)
    windows = autodiff.vmap(lambda i: rt.lax.reduce_window(x, i, plus_product, (1, 2), (1, 1), "SAME"))(inits)
    for k, i in enumerate(inits.numpy()):
        single = rt.lax.reduce_window(x, float(i), plus_product, (1, 2), (1, 1), "SAME")
        np.testing.assert_array_equal(windows.numpy()[k], single.numpy())


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple),
    data=st.data(),
)
def test_argmax_pair_equals_numpys_max_and_first_argmax(shape: tuple[int, ...], data: st.DataObject) -> None:
    axis = data.draw(st.integers(0, len(shape) - 1))
    values = np.asarray(data.draw(st.lists(st.integers(-2, 2), min_size=int(np.prod(shape)),
                                           max_size=int(np.prod(shape)))), np.int32).reshape(shape)  # fmt: skip
    x = rt.asarray(values)

    def f(t: Any) -> Any:
        return rt.lax.reduce((t, _index(shape, axis)), (np.iinfo(np.int32).min, 0), argmax_pair, (axis,))

    value, where = f(x)
    if shape[axis] == 0:
        assert value.shape == where.shape == tuple(s for d, s in enumerate(shape) if d != axis)
        assert (value.numpy() == np.iinfo(np.int32).min).all() and (where.numpy() == 0).all()
    else:
        np.testing.assert_array_equal(value.numpy(), values.max(axis))
        np.testing.assert_array_equal(where.numpy(), values.argmax(axis))  # NumPy: the first maximum
    jitted = autodiff.jit(f)(x)
    np.testing.assert_array_equal(jitted[0].numpy(), value.numpy())
    np.testing.assert_array_equal(jitted[1].numpy(), where.numpy())
