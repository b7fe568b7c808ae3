"""Functions that read a value internally either trace it or refuse it, naming themselves.

``asarray`` of a list holding traced Tensors stacks them by recorded ops (``jnp.asarray([x, y])``
under ``jax.jit``); ``linspace``'s and ``full_like``'s scalars stay traced (JAX traces them);
a value that decides a shape or a bounds check (``repeat``'s counts, ``arange``'s bounds,
``eye``'s sizes, ``linalg.lu_solve``'s pivots) is refused under ``jit``, ``vmap`` and
``rt.trace`` with ``ConcretizationError`` naming the function and the parameter, as ``jax.jit``
raises ``ConcretizationTypeError``, never with the internal ``Tensor.numpy``. A refusal (or a
traced value) is checked on a second call with another value: a baked-in trace-time value
would show there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autodiff
import runtime as rt

jax.config.update("jax_enable_x64", True)

LA: Any = rt.linalg


def _scalar(v: float) -> rt.Tensor:
    return rt.asarray(np.float64(v))


# -- traced values that stay traced ------------------------------------------------------------

#: (name, castwise function of two 0-d floats, the jax.numpy function)
TRACED_CASES: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("asarray-list", lambda a, b: rt.asarray([a, b]), lambda a, b: jnp.asarray([a, b])),
    ("asarray-nested", lambda a, b: rt.asarray([[a, b], [b, 1.0]]), lambda a, b: jnp.asarray([[a, b], [b, 1.0]])),
    ("asarray-dtype", lambda a, b: rt.asarray([a, b], rt.float32), lambda a, b: jnp.asarray([a, b], jnp.float32)),
    ("linspace-stop", lambda a, b: rt.linspace(a, b, 5), lambda a, b: jnp.linspace(a, b, 5)),
    (
        "full_like-fill",
        lambda a, b: rt.full_like(rt.zeros((3,)), a) * b,
        lambda a, b: jnp.full_like(jnp.zeros(3), a) * b,
    ),
]


@pytest.mark.parametrize(("name", "fn", "oracle"), TRACED_CASES, ids=[c[0] for c in TRACED_CASES])
def test_a_traced_value_is_used_on_every_call(name: str, fn: Callable[..., Any], oracle: Callable[..., Any]) -> None:
    jitted = autodiff.jit(fn)
    for a, b in [(1.0, 2.0), (-3.0, 5.5)]:  # the second call would show a trace-time value
        expected = np.asarray(jax.jit(oracle)(a, b))
        got = jitted(_scalar(a), _scalar(b))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
        np.testing.assert_allclose(fn(_scalar(a), _scalar(b)).numpy(), expected, rtol=1e-6)
    batched = autodiff.vmap(fn)(rt.asarray([1.0, -3.0]), rt.asarray([2.0, 5.5]))
    expected = np.asarray(jax.vmap(oracle)(jnp.asarray([1.0, -3.0]), jnp.asarray([2.0, 5.5])))
    np.testing.assert_allclose(batched.numpy(), expected, rtol=1e-6)
    graph = rt.trace(fn, _scalar(1.0), _scalar(2.0))
    (replayed,) = rt.evaluate(graph, _scalar(-3.0), _scalar(5.5))
    np.testing.assert_allclose(replayed.numpy(), np.asarray(oracle(-3.0, 5.5)), rtol=1e-6)


def test_asarray_of_a_list_keeps_the_gradient() -> None:
    """jnp.asarray([a, 2a]) is differentiable: the list is stacked by recorded ops."""
    loss = lambda a: (rt.asarray([a, 2.0 * a, 1.0]) ** 2).sum()  # noqa: E731
    got = autodiff.grad(loss)(_scalar(1.5))
    expected = jax.grad(lambda a: (jnp.asarray([a, 2.0 * a, 1.0]) ** 2).sum())(1.5)
    np.testing.assert_allclose(got.numpy(), expected)


def test_asarray_of_a_ragged_list_of_traced_tensors_is_refused() -> None:
    with pytest.raises(rt.OpValueError, match="^asarray: the nested sequences are ragged"):
        autodiff.jit(lambda a: rt.asarray([a, [a, a]]))(_scalar(1.0))


# -- traced values that are refused -------------------------------------------------------------

X = rt.asarray(np.arange(3.0))
_A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
_LU, _PIV = LA.lu_factor(rt.asarray(_A))

#: (name, the function called, the parameter, a function of one traced Tensor, two arguments,
#: the jax.numpy function that jax.jit refuses (ConcretizationTypeError, or the TypeError
#: jnp.eye raises for a traced size), or None)
REFUSED: list[tuple[str, str, Callable[[Any], Any], list[Any], Callable[[Any], Any] | None]] = [
    ("repeat", "repeats", lambda r: rt.repeat(X, r), [rt.asarray([1, 2, 1]), rt.asarray([0, 1, 3])],
     lambda r: jnp.repeat(jnp.arange(3.0), r)),
    ("arange", "start", lambda n: rt.arange(n), [rt.asarray(3), rt.asarray(4)], lambda n: jnp.arange(n)),
    ("eye", "n", lambda n: rt.eye(n), [rt.asarray(2), rt.asarray(3)], lambda n: jnp.eye(n)),
    # (jnp.eye traces k; castwise refuses it, which keeps no trace-time value either)
    ("eye", "k", lambda k: rt.eye(3, k=k), [rt.asarray(0), rt.asarray(1)], None),
    ("linalg.lu_solve", "piv", lambda p: LA.lu_solve((_LU, p), rt.asarray(np.ones(3))), [_PIV, _PIV], None),
    ("linalg.lu_solve", "piv", lambda a: LA.lu_solve(LA.lu_factor(a), rt.asarray(np.ones(3))),
     [rt.asarray(_A), rt.asarray(_A + np.eye(3))], None),
]  # fmt: skip


@pytest.mark.parametrize(("fn", "param", "body", "args", "oracle"), REFUSED, ids=[f"{c[0]}-{c[1]}" for c in REFUSED])
def test_a_value_that_decides_a_shape_or_a_check_is_refused_naming_the_function(
    fn: str, param: str, body: Callable[[Any], Any], args: list[Any], oracle: Callable[[Any], Any] | None
) -> None:
    for arg in args:  # eager: the concrete value is read
        body(arg)
    if oracle is not None:  # and jax.jit refuses it too
        with pytest.raises(TypeError, match="concrete"):
            jax.jit(oracle)(jnp.asarray(np.asarray(args[0].numpy())))
    transforms: list[Callable[[Any], Any]] = [
        lambda a: autodiff.jit(body)(a),
        lambda a: rt.trace(body, a),
        lambda a: autodiff.vmap(body)(rt.asarray(np.stack([a.numpy(), a.numpy()]))),
    ]
    for transform in transforms:
        for arg in args:
            with pytest.raises(rt.ConcretizationError) as info:
                transform(arg)
            message = str(info.value)
            assert message.startswith(f"{fn}: {param} is traced"), message
            assert "Tensor.numpy" not in message and "policy 'jax'" in message, message


def test_full_with_a_tensor_fill_is_refused_not_baked_in() -> None:
    """``rt.lax.full`` takes a Python scalar fill (an op param): a Tensor is refused eagerly and under
    jit alike, so no trace-time value is kept (full_like traces a Tensor fill, above)."""
    for call in (lambda b: rt.lax.full((3,), b), autodiff.jit(lambda b: rt.lax.full((3,), b))):
        with pytest.raises(rt.ShapeError, match="^full: fill_value must be a scalar"):
            call(_scalar(2.0))
