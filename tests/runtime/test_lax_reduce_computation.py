"""``rt.lax.reduce`` / ``rt.lax.reduce_window`` with a user computation, against jax.lax (issue 23).

A monoid computation (add, mul, max, min; and / or / xor on bool and integers) becomes the
existing reduce op of that monoid; the oracle is ``jax.lax.reduce`` / ``jax.lax.reduce_window``
with the same computation in lax ops, values and dtypes, and ``jax.grad`` / ``jax.vmap`` for the
transforms. A general computation (an argmax pair) raises ``ReduceComputationError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import autodiff
import runtime as rt
from runtime.core.lax.computations import ReduceComputationError

rng = np.random.default_rng(0)

#: (name, castwise computation, lax computation, identity, dtypes)
MONOIDS: list[tuple[str, Callable[..., Any], Callable[..., Any], Any, tuple[str, ...]]] = [
    ("add-operator", lambda a, b: a + b, lax.add, 0, ("float32", "float64", "int32", "int8")),
    ("add", rt.lax.add, lax.add, 0, ("float32", "float64", "int32")),
    ("mul", rt.lax.mul, lax.mul, 1, ("float32", "float64", "int32")),
    ("max", rt.lax.max, lax.max, "lowest", ("float32", "float64", "int32", "uint8")),
    ("min", rt.lax.min, lax.min, "highest", ("float32", "float64", "int32", "uint8")),
    ("and", rt.lax.logical_and, lax.bitwise_and, True, ("bool",)),
    ("or", rt.lax.logical_or, lax.bitwise_or, False, ("bool",)),
]
CASES = [(name, ours, theirs, ident, d) for name, ours, theirs, ident, ds in MONOIDS for d in ds]


def _data(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) < 0.6
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 4, shape).astype(dtype)
    return rng.uniform(0.5, 1.5, shape).astype(dtype)


def _ident(kind: Any, dtype: str) -> Any:
    d = np.dtype(dtype)
    if kind == "lowest":
        return np.array(-np.inf if d.kind == "f" else np.iinfo(d).min, d)
    if kind == "highest":
        return np.array(np.inf if d.kind == "f" else np.iinfo(d).max, d)
    return np.array(kind, d)


@pytest.mark.parametrize(("name", "ours", "theirs", "ident", "dtype"), CASES, ids=[f"{c[0]}-{c[4]}" for c in CASES])
@pytest.mark.parametrize("init_kind", ["identity", "other"])
def test_reduce_equals_jax(name: str, ours: Any, theirs: Any, ident: Any, dtype: str, init_kind: str) -> None:
    x = _data(dtype, (3, 4, 2))
    init = _ident(ident, dtype) if init_kind == "identity" else _data(dtype, ())
    with jax.enable_x64(True):
        want = lax.reduce(x, init, theirs, (0, 2))
    got = rt.lax.reduce(rt.asarray(x), rt.asarray(init), ours, (0, 2))
    assert got.dtype.name == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-6)


WINDOWS = [
    ((2, 2), (1, 1), "VALID", None, None),
    ((2, 3), (2, 1), "SAME", None, None),
    ((2, 2), (1, 2), ((1, 0), (0, 2)), (1, 2), None),
    ((2, 2), (1, 1), ((0, 1), (1, 1)), None, (2, 1)),
]


@pytest.mark.parametrize(("name", "ours", "theirs", "ident", "dtype"),
                         [c for c in CASES if c[0] in ("add", "max", "min")], ids=lambda v: str(v)[:12])  # fmt: skip
@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("init_kind", ["identity", "other"])
def test_reduce_window_equals_jax(name: str, ours: Any, theirs: Any, ident: Any, dtype: str, window: Any,
                                  init_kind: str) -> None:  # fmt: skip
    dims, strides, padding, base, wdil = window
    x = _data(dtype, (4, 6))
    init = _ident(ident, dtype) if init_kind == "identity" else _data(dtype, ())
    with jax.enable_x64(True):
        want = lax.reduce_window(x, init, theirs, dims, strides, padding, base, wdil)
    got = rt.lax.reduce_window(rt.asarray(x), rt.asarray(init), ours, dims, strides, padding, base, wdil)
    assert got.shape == want.shape and got.dtype.name == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-6)


def test_variadic_pair_of_monoids_equals_jax() -> None:
    x, y = _data("float64", (3, 4)), _data("int32", (3, 4))
    with jax.enable_x64(True):
        want = lax.reduce((x, y), (0.0, np.int32(0)), lambda a, b: (lax.add(a[0], b[0]), lax.max(a[1], b[1])), (1,))
        want_w = lax.reduce_window((x, y), (0.0, np.int32(0)), lambda a, b: (a[0] + b[0], lax.max(a[1], b[1])),
                                   (2, 2), (1, 1), "VALID")  # fmt: skip
    got = rt.lax.reduce((x, y), (0.0, 0), lambda a, b: (a[0] + b[0], rt.lax.max(a[1], b[1])), (1,))
    got_w = rt.lax.reduce_window((x, y), (0.0, 0), lambda a, b: (a[0] + b[0], rt.lax.max(a[1], b[1])),
                                 (2, 2), (1, 1), "VALID")  # fmt: skip
    for g, w in (*zip(got, want, strict=True), *zip(got_w, want_w, strict=True)):
        assert g.dtype.name == str(w.dtype)
        np.testing.assert_allclose(g.numpy(), np.asarray(w))


def test_argmax_pair_raises_a_named_error() -> None:
    """JAX runs a general variadic computation (and refuses its derivative); castwise refuses it."""
    x, idx = _data("float64", (3, 4)), np.broadcast_to(np.arange(4), (3, 4))

    def argmax_pair(a: Any, b: Any) -> Any:
        take = rt.lax.gt(a[0], b[0])
        return rt.lax.select(take, a[0], b[0]), rt.lax.select(take, a[1], b[1])

    with pytest.raises(ReduceComputationError, match=r"(?s)^reduce: the computation is not one monoid.*policy 'jax'"):
        rt.lax.reduce((x, idx), (-np.inf, 0), argmax_pair, (1,))
    with pytest.raises(ReduceComputationError, match=r"^reduce_window: castwise has no windowed mul"):
        rt.lax.reduce_window(x, 1.0, rt.lax.mul, (2, 2), (1, 1), "VALID")
    assert issubclass(ReduceComputationError, rt.OpTypeError)


def test_derivatives_batching_and_jit_follow_the_monoid_ops() -> None:
    x = _data("float64", (3, 4))

    def ours(t: Any) -> Any:
        s = rt.lax.reduce(t, 0.0, rt.lax.mul, (1,))
        w = rt.lax.reduce_window(t, -np.inf, rt.lax.max, (2, 2), (1, 1), "SAME")
        return rt.lax.reduce_sum(s, (0,)) + rt.lax.reduce_sum(w, (0, 1))

    def theirs(t: Any) -> Any:
        s = lax.reduce(t, 1.0, lax.mul, (1,))
        w = lax.reduce_window(t, -jnp.inf, lax.max, (2, 2), (1, 1), "SAME")
        return jnp.sum(s) + jnp.sum(w)

    def ours_ident(t: Any) -> Any:  # init 1.0: mul's identity
        s = rt.lax.reduce(t, 1.0, rt.lax.mul, (1,))
        w = rt.lax.reduce_window(t, -np.inf, rt.lax.max, (2, 2), (1, 1), "SAME")
        return rt.lax.reduce_sum(s, (0,)) + rt.lax.reduce_sum(w, (0, 1))

    with jax.enable_x64(True):
        want = jax.grad(theirs)(x)
        want_v = jax.vmap(theirs)(np.stack([x, 2 * x]))
    np.testing.assert_allclose(autodiff.grad(ours_ident)(rt.asarray(x)).numpy(), np.asarray(want), rtol=1e-10)
    np.testing.assert_allclose(autodiff.vmap(ours_ident)(rt.asarray(np.stack([x, 2 * x]))).numpy(), np.asarray(want_v),
                               rtol=1e-10)  # fmt: skip
    np.testing.assert_allclose(autodiff.jit(ours_ident)(rt.asarray(x)).numpy(), ours_ident(rt.asarray(x)).numpy())
    # a non-identity init is combined once (XLA's CPU result): zero here, and its gradient too
    assert ours(rt.asarray(x)).numpy() == pytest.approx(ours_ident(rt.asarray(x)).numpy() - np.prod(x, 1).sum())
