"""``rt.lerp`` and ``rt.addcdiv`` (issue 23, the PyTorch habits), held to PyTorch's semantics.

Oracles: PyTorch's documented formulas written in NumPy in the operands' dtype (lerp's two
branches as ATen's CPU kernel picks them; addcdiv's ``input + value * t1 / t2``), the same
formulas under ``jax.grad`` / ``jax.vmap`` for the derivatives and batching, and ``torch.lerp`` /
``torch.addcdiv`` themselves where torch is installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import autodiff
import runtime as rt
from runtime.core import lax

RNG = np.random.default_rng(7)


def _np(x: Any) -> np.ndarray:
    return x.numpy() if isinstance(x, rt.Tensor) else np.asarray(x)


def _lerp_ref(x: np.ndarray, e: np.ndarray, w: Any) -> np.ndarray:
    """ATen's lerp: ``x + w (e - x)`` where ``|w| < 0.5``, else ``e - (e - x)(1 - w)``."""
    w = np.asarray(w, x.dtype)
    return np.where(np.abs(w) < 0.5, x + w * (e - x), e - (e - x) * (np.asarray(1, x.dtype) - w))


LERP_ROWS = [
    (dtype, weight)
    for dtype in ("float32", "float64", "complex64")
    for weight in (0.0, 0.25, 0.5, 0.75, 1.0, -0.5, 1.5, "tensor")
]


@pytest.mark.parametrize(("dtype", "weight"), LERP_ROWS)
@pytest.mark.parametrize("policy", ["torch", "jax", "numpy"])
def test_lerp_is_pytorchs_formula(dtype: str, weight: Any, policy: str) -> None:
    x = RNG.standard_normal(5).astype(dtype)
    e = RNG.standard_normal(5).astype(dtype)
    w = RNG.uniform(-0.5, 1.5, 5).astype(dtype) if weight == "tensor" else weight
    with rt.use_policy(policy):
        got = rt.lerp(rt.asarray(x), rt.asarray(e), rt.asarray(w) if weight == "tensor" else w)
    assert got.dtype.name == dtype
    np.testing.assert_array_equal(_np(got), _lerp_ref(x, e, w))
    if weight == 1.0:
        np.testing.assert_array_equal(_np(got), e)  # the far branch gives end exactly


def test_lerp_matches_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    x, e = RNG.standard_normal(6).astype(np.float32), RNG.standard_normal(6).astype(np.float32)
    w = RNG.uniform(-0.5, 1.5, 6).astype(np.float32)
    with rt.use_policy("torch"):
        for weight in (0.3, 0.9):
            got = rt.lerp(rt.asarray(x), rt.asarray(e), weight)
            np.testing.assert_array_equal(_np(got), torch.lerp(torch.tensor(x), torch.tensor(e), weight).numpy())
        got = rt.lerp(rt.asarray(x), rt.asarray(e), rt.asarray(w))
        want = torch.lerp(torch.tensor(x), torch.tensor(e), torch.tensor(w)).numpy()
        np.testing.assert_array_equal(_np(got), want)


def test_lerp_gradient_and_vmap_are_jaxs() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def theirs(x: Any, e: Any, w: Any) -> Any:
        return jnp.where(jnp.abs(w) < 0.5, x + w * (e - x), e - (e - x) * (1 - w))

    x, e, w = RNG.standard_normal(4), RNG.standard_normal(4), np.array([0.1, 0.6, -0.2, 1.2])
    ours = autodiff.grad(lambda a, b, c: lax.reduce_sum(rt.lerp(a, b, c), (0,)), argnums=(0, 1, 2))
    got = ours(rt.asarray(x), rt.asarray(e), rt.asarray(w))
    want = jax.grad(lambda a, b, c: theirs(a, b, c).sum(), argnums=(0, 1, 2))(x, e, w)
    for g, t in zip(got, want, strict=True):
        np.testing.assert_allclose(_np(g), t, rtol=1e-14)
    xs = RNG.standard_normal((3, 4))
    got_v = autodiff.vmap(lambda a: rt.lerp(a, rt.asarray(e), rt.asarray(w)))(rt.asarray(xs))
    np.testing.assert_allclose(_np(got_v), jax.vmap(lambda a: theirs(a, e, w))(xs), rtol=1e-14)


ADDCDIV_ROWS = [
    ("float32", "float32", "float32", 1),
    ("float32", "float32", "float32", 0.5),
    ("float64", "float32", "float32", -2.0),
    ("float32", "int32", "float32", 3),
    ("int32", "float32", "float32", 1),
]


@pytest.mark.parametrize(("a", "b", "c", "value"), ADDCDIV_ROWS)
def test_addcdiv_is_pytorchs_formula(a: str, b: str, c: str, value: Any) -> None:
    x = RNG.standard_normal(4).astype(a) if a.startswith("float") else np.arange(4, dtype=a)
    t1 = RNG.standard_normal(4).astype(b) if b.startswith("float") else np.arange(1, 5, dtype=b)
    t2 = RNG.uniform(0.5, 2, 4).astype(c)
    with rt.use_policy("torch"):
        got = rt.addcdiv(rt.asarray(x), rt.asarray(t1), rt.asarray(t2), value=value)
        dtype = rt.result_type(rt.asarray(x), rt.asarray(t1), rt.asarray(t2))
    storage = np.dtype(dtype.storage)
    want = x.astype(storage) + (t1.astype(storage) * storage.type(value)) / t2.astype(storage)
    assert got.dtype is dtype
    np.testing.assert_allclose(_np(got), want, rtol=2e-7 if storage == np.float32 else 1e-15)


def test_addcdiv_matches_torch_where_installed() -> None:
    torch = pytest.importorskip("torch")
    x, t1 = RNG.standard_normal(5).astype(np.float32), RNG.standard_normal(5).astype(np.float32)
    t2 = RNG.uniform(0.5, 2, 5).astype(np.float32)
    with rt.use_policy("torch"):
        got = rt.addcdiv(rt.asarray(x), rt.asarray(t1), rt.asarray(t2), value=0.3)
    want = torch.addcdiv(torch.tensor(x), torch.tensor(t1), torch.tensor(t2), value=0.3).numpy()
    np.testing.assert_array_equal(_np(got), want)


def test_addcdiv_gradient_is_the_formulas() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x, t1, t2 = RNG.standard_normal(3), RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)
    got = autodiff.grad(lambda a, b, c: lax.reduce_sum(rt.addcdiv(a, b, c, value=0.5), (0,)), argnums=(0, 1, 2))(
        rt.asarray(x), rt.asarray(t1), rt.asarray(t2)
    )
    want = jax.grad(lambda a, b, c: (a + b * 0.5 / c).sum(), argnums=(0, 1, 2))(x, t1, t2)
    for g, t in zip(got, want, strict=True):
        np.testing.assert_allclose(_np(g), t, rtol=1e-14)
