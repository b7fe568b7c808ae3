"""runtime.numpy.elementwise (docs/tensor.md, "Neural-network and NumPy-named functions")
against jax.numpy (policy jax, x64), NumPy (policy numpy) and PyTorch (policy torch, when
installed).

- values and dtypes of every function x policies x float32, float64, bfloat16, float16 and
  int32 (complex64 for the classifiers), with NaN, infinities and broadcasting operands;
  bfloat16 under numpy follows jax.numpy (NumPy has no bfloat16 of its own);
- gradients of the differentiable ones against ``jax.grad`` in float64;
- each under ``autodiff.vmap`` equals the per-example results;
- the errors name the function, the operands' dtypes and shapes, and the policy.
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
from runtime.core.promotion import PromotionError
from runtime.numpy import elementwise as ne

jax.config.update("jax_enable_x64", True)
#: NaN and infinities in the data: NumPy's "invalid value" warnings are expected
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

POLICIES = ["jax", "numpy", "torch"]
DTYPES = ["float32", "float64", "bfloat16", "float16", "int32"]


def _x(dtype: str) -> np.ndarray:
    d = rt.dtype(dtype)
    if d.kind in ("int", "uint"):
        return np.array([[-7, -1, 0, 3], [5, 2, -3, 8], [1, 0, 0, 9]], d.storage)
    values = [[-2.5, -1.0, -0.0, 0.0], [0.5, 3.0, np.nan, np.inf], [-np.inf, 7.25, 1e-3, -4.0]]
    if d.kind == "complex":
        return (np.array(values) + 1j * np.array([[0, np.nan, 1, -np.inf], [2, 0, 0, 1], [0, 3, np.inf, 0]])).astype(
            d.storage
        )
    return np.array(values).astype(d.storage)


def _y(dtype: str) -> np.ndarray:
    d = rt.dtype(dtype)
    if d.kind in ("int", "uint"):
        return np.array([2, -3, 4, 1], d.storage)  # no zero divisor, broadcast against x
    return np.array([1.5, -2.0, 0.75, np.nan]).astype(d.storage)


def _exp(dtype: str) -> np.ndarray:
    """Small exponents for power (non-negative for integers, as NumPy requires)."""
    d = rt.dtype(dtype)
    if d.kind in ("int", "uint"):
        return np.array([2, 0, 3, 1], d.storage)
    return np.array([2.0, -1.0, 0.5, 3.0]).astype(d.storage)


#: name -> (castwise, oracle taking the library module, operands, dtypes it accepts)
Case = tuple[Callable[..., Any], Callable[..., Any], Callable[[str], tuple[np.ndarray, ...]]]
UNARY = lambda d: (_x(d),)  # noqa: E731
BINARY = lambda d: (_x(d), _y(d))  # noqa: E731
CASES: dict[str, Case] = {
    "maximum": (ne.maximum, lambda m, x, y: m.maximum(x, y), BINARY),
    "minimum": (ne.minimum, lambda m, x, y: m.minimum(x, y), BINARY),
    "clip": (lambda x: ne.clip(x, -1, 2), lambda m, x: m.clip(x, -1, 2), UNARY),
    "clip_arrays": (ne.clip, lambda m, x, lo, hi: m.clip(x, lo, hi), lambda d: (_x(d), _y(d), _exp(d))),
    "power": (ne.power, lambda m, x, y: m.power(x, y), lambda d: (_x(d), _exp(d))),
    "floor_divide": (ne.floor_divide, lambda m, x, y: m.floor_divide(x, y), BINARY),
    "true_divide": (ne.true_divide, lambda m, x, y: m.true_divide(x, y), BINARY),
    "divide": (ne.divide, lambda m, x, y: m.divide(x, y), BINARY),
    "remainder": (ne.remainder, lambda m, x, y: m.remainder(x, y), BINARY),
    "absolute": (ne.absolute, lambda m, x: m.absolute(x), UNARY),
    "negative": (ne.negative, lambda m, x: m.negative(x), UNARY),
    "isnan": (ne.isnan, lambda m, x: m.isnan(x), UNARY),
    "isinf": (ne.isinf, lambda m, x: m.isinf(x), UNARY),
    "isfinite": (ne.isfinite, lambda m, x: m.isfinite(x), UNARY),
    "nan_to_num": (ne.nan_to_num, lambda m, x: m.nan_to_num(x), UNARY),
    "nan_to_num_values": (
        lambda x: ne.nan_to_num(x, nan=1.5, posinf=9.0, neginf=-9.0),
        lambda m, x: m.nan_to_num(x, nan=1.5, posinf=9.0, neginf=-9.0),
        UNARY,
    ),
    "isclose": (ne.isclose, lambda m, x, y: m.isclose(x, y), lambda d: (_x(d), (_x(d) * 1.000001).astype(_x(d).dtype))),
    "isclose_equal_nan": (
        lambda x, y: ne.isclose(x, y, rtol=0.1, atol=0.5, equal_nan=True),
        lambda m, x, y: m.isclose(x, y, rtol=0.1, atol=0.5, equal_nan=True),
        lambda d: (_x(d), np.flip(_x(d), axis=0)),
    ),
    "var": (ne.var, lambda m, x: m.var(x), UNARY),
    "var_axis_ddof": (lambda x: ne.var(x, axis=-1, ddof=1), lambda m, x: m.var(x, axis=-1, ddof=1), UNARY),
    "std": (lambda x: ne.std(x, axis=0, keepdims=True), lambda m, x: m.std(x, axis=0, keepdims=True), UNARY),
    "prod": (lambda x: ne.prod(x, axis=1), lambda m, x: m.prod(x, axis=1), UNARY),
    "any": (lambda x: ne.any(x, axis=0), lambda m, x: m.any(x, axis=0), UNARY),
    "all": (lambda x: ne.all(x, axis=-1, keepdims=True), lambda m, x: m.all(x, axis=-1, keepdims=True), UNARY),
    "count_nonzero": (ne.count_nonzero, lambda m, x: m.count_nonzero(x), UNARY),
    "count_nonzero_axis": (
        lambda x: ne.count_nonzero(x, axis=0),
        lambda m, x: m.count_nonzero(x, axis=0),
        UNARY,
    ),
}
#: torch.<name> of the same operands (PyTorch's var/std default to correction=1)
TORCH: dict[str, Callable[..., Any]] = {
    "maximum": lambda t, x, y: t.maximum(x, y),
    "minimum": lambda t, x, y: t.minimum(x, y),
    "clip": lambda t, x: t.clamp(x, -1, 2),
    "power": lambda t, x, y: t.pow(x, y),
    "floor_divide": lambda t, x, y: t.floor_divide(x, y),
    "true_divide": lambda t, x, y: t.true_divide(x, y),
    "divide": lambda t, x, y: t.div(x, y),
    "remainder": lambda t, x, y: t.remainder(x, y),
    "absolute": lambda t, x: t.abs(x),
    "negative": lambda t, x: t.neg(x),
    "isnan": lambda t, x: t.isnan(x),
    "isinf": lambda t, x: t.isinf(x),
    "isfinite": lambda t, x: t.isfinite(x),
    "nan_to_num": lambda t, x: t.nan_to_num(x),
    "isclose": lambda t, x, y: t.isclose(x, y),
    "var": lambda t, x: t.var(x),
    "var_axis_ddof": lambda t, x: t.var(x, dim=-1, correction=1),
    "std": lambda t, x: t.std(x, dim=0, keepdim=True),
    "prod": lambda t, x: t.prod(x, dim=1),
    "count_nonzero_axis": lambda t, x: t.count_nonzero(x, dim=0),
}
#: the classifiers and -x take complex too (|x| of an infinite part: XLA's is NaN, NumPy's inf)
COMPLEX_CASES = ["isnan", "isinf", "isfinite", "nan_to_num", "negative"]
#: reductions that read non-finite data differently in the libraries: finite rows only
FINITE_ONLY = {"var", "var_axis_ddof", "std", "prod"}


def _finite(a: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(a), a, 1).astype(a.dtype)


def _tolerance(dtype: np.dtype) -> float:
    return {"bfloat16": 2.0**-7, "float16": 2.0**-10, "float32": 2.0**-21, "complex64": 2.0**-21}.get(str(dtype), 1e-14)


def _compare(got: Any, want: Any) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    assert g.shape == w.shape, (g.shape, w.shape)
    if w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
        return
    wide = np.complex128 if w.dtype.kind == "c" else np.float64
    tol = _tolerance(w.dtype)
    np.testing.assert_allclose(g.astype(wide), w.astype(wide), rtol=2 * tol, atol=2 * tol, equal_nan=True)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("dtype", [*DTYPES, "complex64"])
@pytest.mark.parametrize("name", list(CASES))
def test_matches_the_policys_library(name: str, dtype: str, policy: str) -> None:
    fn, oracle, operands = CASES[name]
    if dtype == "complex64" and name not in COMPLEX_CASES:
        pytest.skip("complex rows: the classifiers and negative")
    args = operands(dtype)
    if name in FINITE_ONLY:
        args = tuple(_finite(a) for a in args)
    if policy == "torch":
        torch = pytest.importorskip("torch")
        if dtype not in ("float32", "float64") or name not in TORCH:
            pytest.skip("the torch rows compare float32 and float64")
        with rt.policy("torch"):
            got = fn(*(rt.asarray(a) for a in args))
        want = TORCH[name](torch, *(torch.from_numpy(a) for a in args))
        _compare(got.numpy(), want.numpy() if hasattr(want, "numpy") else want)
        return
    library: Any = jnp if policy == "jax" or dtype == "bfloat16" else np
    with rt.policy(policy):
        if policy == "numpy" and dtype == "bfloat16" and name in ("clip", "remainder"):
            # a Python scalar mixed with bfloat16 (clip's bounds; the 0 that x % y compares with):
            # the numpy policy does not know bfloat16 (docs/promotion.md)
            with pytest.raises(PromotionError):
                fn(*(rt.asarray(a) for a in args))
            return
        got = fn(*(rt.asarray(a) for a in args))
    want = oracle(library, *(jnp.asarray(a) if library is jnp else a for a in args))
    if name.startswith("count_nonzero") and library is np:
        want = np.asarray(want, np.int64)  # np.count_nonzero(x) is a Python int: castwise's is int64
    _compare(got.numpy(), want)


def test_allclose_is_a_python_bool() -> None:
    a = rt.asarray(np.array([1.0, np.nan, np.inf]))
    b = rt.asarray(np.array([1.0 + 1e-9, np.nan, np.inf]))
    for equal_nan in (False, True):
        got = ne.allclose(a, b, equal_nan=equal_nan)
        assert type(got) is bool
        assert got is bool(np.allclose(a.numpy(), b.numpy(), equal_nan=equal_nan))
    assert ne.allclose(rt.asarray(np.array([1, 2])), rt.asarray(np.array([1, 2]))) is True
    assert ne.allclose(rt.asarray(np.array([1.0])), 1.1) is False


@pytest.mark.parametrize("policy", ["jax", "numpy"])
def test_isclose_of_integers_and_mixed_operands(policy: str) -> None:
    x = np.array([10**8, 3, -5], np.int64)
    y = np.array([10**8 + 1, 3, -4], np.int64)
    lib: Any = jnp if policy == "jax" else np
    with rt.policy(policy):
        np.testing.assert_array_equal(ne.isclose(rt.asarray(x), rt.asarray(y)).numpy(), lib.isclose(x, y))
        z = np.array([10.0, 3.0000001, -5.0], np.float32)
        np.testing.assert_array_equal(ne.isclose(rt.asarray(x), rt.asarray(z)).numpy(), lib.isclose(x, z))


# -- gradients -------------------------------------------------------------------------------

DIFFERENTIABLE = [
    "maximum", "minimum", "clip", "clip_arrays", "power", "true_divide", "divide", "remainder",
    "absolute", "negative", "nan_to_num_values", "var", "var_axis_ddof", "std", "prod",
]  # fmt: skip


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_matches_jax_grad(name: str) -> None:
    fn, oracle, operands = CASES[name]
    args = operands("float64")
    if name != "nan_to_num_values":  # nan_to_num's gradient at NaN and inf is 0, in both
        args = tuple(_finite(a) for a in args)
    if name == "power":  # a positive base: the derivative in the exponent takes its log
        args = (np.abs(args[0]) + 0.5, args[1])
    w = np.linspace(0.5, 2.0, np.asarray(oracle(np, *args)).size).reshape(np.shape(oracle(np, *args)))
    argnums = tuple(range(len(args)))
    got = autodiff.grad(lambda *t: (fn(*t) * rt.asarray(w)).sum(), argnums=argnums)(*(rt.asarray(a) for a in args))
    want = jax.grad(lambda *t: (oracle(jnp, *t) * w).sum(), argnums=argnums)(*(jnp.asarray(a) for a in args))
    for g, v in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g.numpy()), np.asarray(v), rtol=1e-12, atol=1e-14)


# -- vmap ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_equals_the_per_example_results(name: str) -> None:
    fn, _, operands = CASES[name]
    args = operands("float64")
    stacked = np.stack([args[0], args[0][::-1] * 2.0])  # examples of x's shape; the others unbatched
    batched = autodiff.vmap(fn, in_axes=(0,) + (None,) * (len(args) - 1))(
        rt.asarray(stacked), *(rt.asarray(a) for a in args[1:])
    )
    for i in range(stacked.shape[0]):
        one = fn(rt.asarray(stacked[i]), *(rt.asarray(a) for a in args[1:]))
        np.testing.assert_array_equal(batched.numpy()[i], one.numpy())


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["jax", "numpy"])
@pytest.mark.parametrize("name", ["maximum", "minimum", "power", "floor_divide", "true_divide", "remainder", "isclose"])
def test_mismatched_shapes_name_the_function_operands_and_policy(name: str, policy: str) -> None:
    x, y = rt.asarray(np.ones(3, np.float32)), rt.asarray(np.ones(4, np.float64))
    with rt.policy(policy), pytest.raises(rt.ShapeError) as info:
        getattr(ne, name)(x, y)
    message = str(info.value)
    assert message.startswith(f"{name}: "), message
    for needle in ("f32[3]", "f64[4]", f"policy {policy!r}"):
        assert needle in message, (needle, message)


@pytest.mark.parametrize("name", ["var", "std", "prod", "any", "all", "count_nonzero"])
def test_bad_axes_name_the_function(name: str) -> None:
    x = rt.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(rt.ShapeError) as info:
        getattr(ne, name)(x, axis=2)
    message = str(info.value)
    assert message.startswith(f"{name}: ") and "f32[2, 3]" in message and "policy 'jax'" in message, message
