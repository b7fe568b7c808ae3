"""runtime.numpy.nn (docs/tensor.md, "Neural-network and NumPy-named functions") against jax.nn.

- values and dtypes of every function x policies jax and numpy (torch rows when PyTorch is
  installed) x float32, float64, bfloat16, float16 and integers, against jax.nn with x64
  (under numpy: jax.nn's formula on the dtype NumPy's promotion gives), on a grid that holds
  the kinks (0, -0.0, 6), large values, NaN and infinities;
- gradients of every differentiable function against ``jax.grad`` in float64, at the kinks
  included (``relu``'s gradient at 0 is 0, as jax.nn's custom derivative says);
- each function under ``autodiff.vmap`` equals the per-example results, and records only
  ordinary ops (``rt.trace``) that replay (``rt.evaluate``);
- ``one_hot`` against ``jax.nn.one_hot`` (out-of-range labels, ``axis``, ``dtype``);
- the errors name the function, the operands' dtypes and shapes, and the policy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autodiff
import runtime as rt
from runtime.numpy import nn

jax.config.update("jax_enable_x64", True)
#: NaN and infinities in the data: NumPy's "invalid value" warnings are expected
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

POLICIES = ["jax", "numpy", "torch"]
FLOATS = ["float32", "float64", "bfloat16", "float16"]
INTS = ["int32", "int8"]

#: name -> (castwise, jax.nn, how an integer operand's dtype is decided)
#: "exp": the float the policy's exp gives it; "keep": max(x, 0) keeps it;
#: "mix": the dtype of the integer mixed with a Python float (jax.nn's formula multiplies by one)
ELEMENTWISE: dict[str, tuple[Callable[..., Any], Callable[..., Any], str]] = {
    "relu": (nn.relu, jax.nn.relu, "keep"),
    "relu6": (nn.relu6, jax.nn.relu6, "mix"),
    "sigmoid": (nn.sigmoid, jax.nn.sigmoid, "exp"),
    "log_sigmoid": (nn.log_sigmoid, jax.nn.log_sigmoid, "exp"),
    "softplus": (nn.softplus, jax.nn.softplus, "exp"),
    "silu": (nn.silu, jax.nn.silu, "exp"),
    "swish": (nn.swish, jax.nn.swish, "exp"),
    "gelu": (lambda x: nn.gelu(x, approximate=True), lambda x: jax.nn.gelu(x, approximate=True), "exp"),
    "gelu_erf": (lambda x: nn.gelu(x, approximate=False), lambda x: jax.nn.gelu(x, approximate=False), "exp"),
    "elu": (nn.elu, jax.nn.elu, "mix"),
    "elu_alpha": (lambda x: nn.elu(x, alpha=0.5), lambda x: jax.nn.elu(x, alpha=0.5), "mix"),
    "leaky_relu": (nn.leaky_relu, jax.nn.leaky_relu, "mix"),
    "leaky_relu_slope": (lambda x: nn.leaky_relu(x, 0.2), lambda x: jax.nn.leaky_relu(x, 0.2), "mix"),
}
_JAX_STANDARDIZE: Any = jax.nn.standardize  # (its stub in some jax releases lacks ``algorithm``)
#: name -> (castwise, jax.nn) of the functions over an axis; int rows go to exp's float
AXIS_FUNCTIONS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "softmax": (nn.softmax, jax.nn.softmax),
    "log_softmax": (nn.log_softmax, jax.nn.log_softmax),
    "standardize": (nn.standardize, jax.nn.standardize),
    "standardize_stable": (
        lambda x, axis=-1: nn.standardize(x, axis, algorithm="stable"),
        lambda x, axis=-1: _JAX_STANDARDIZE(x, axis, algorithm="stable"),
    ),
}

GRID = [-30.0, -6.5, -3.0, -1.0, -0.5, -0.0, 0.0, 0.25, 1.0, 2.5, 6.0, 7.0, 30.0]
SPECIAL = [np.nan, np.inf, -np.inf]
INT_GRID = [-7, -1, 0, 1, 3, 6, 7, 20]


def _enter(policy: str) -> Any:
    if policy == "torch":
        pytest.importorskip("torch")
    return rt.policy(policy)


def _int_dtype(kind: str, x: np.ndarray, policy: str) -> np.dtype:
    """The dtype the policy's library gives an integer operand (jnp with x64, NumPy)."""
    lib: Any = jnp if policy == "jax" else np
    if kind == "exp":
        return np.dtype(lib.exp(np.zeros_like(x)).dtype)
    if kind == "keep":
        return np.dtype(lib.maximum(x, 0).dtype)
    return np.dtype((lib.asarray(x) * 1.0).dtype)


def assert_close(got: Any, want: Any, dtype: str, scale: Any = 1.0) -> None:
    """Equal dtype and shape; NaN and infinities where the oracle has them; elsewhere within
    4 ulp of the result's dtype, plus 4 eps * max(1, |scale|) absolute (a cancellation such
    as gelu's ``1 + tanh(...)`` near -1 turns one ulp of tanh into many of the result)."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    assert g.shape == w.shape
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g64), np.isnan(w64))
    inf = np.isinf(w64)
    np.testing.assert_array_equal(g64[inf], w64[inf])
    fin = np.isfinite(w64)
    storage = rt.dtype(dtype).storage
    eps = {"bfloat16": 2.0**-7, "float16": 2.0**-10, "float32": 2.0**-23}.get(dtype, 2.0**-52)
    spacing = np.abs(np.spacing(np.abs(w64).astype(storage))).astype(np.float64)
    bound = 4 * spacing + 4 * eps * np.maximum(1.0, np.abs(np.broadcast_to(scale, w64.shape)))
    err = np.abs(g64 - w64)
    assert np.all(err[fin] <= bound[fin]), (g64[fin], w64[fin])


def _data(dtype: str, special: bool = True) -> np.ndarray:
    values = GRID + (SPECIAL if special else [])
    return np.asarray(values).astype(rt.dtype(dtype).storage)


# -- values and dtypes ---------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_matches_jax_nn(name: str, dtype: str, policy: str) -> None:
    fn, oracle, kind = ELEMENTWISE[name]
    with _enter(policy):
        if dtype in INTS:
            x = np.asarray(INT_GRID, dtype)
            if policy == "torch":
                pytest.skip("integer activations: PyTorch's rules are tested by the torch rows of floats")
            want_dtype = _int_dtype(kind, x, policy)
            got = fn(rt.asarray(x))
            want = np.asarray(oracle(jnp.asarray(x.astype(want_dtype))))
            assert_close(got.numpy(), want, want_dtype.name, x)
            return
        x = _data(dtype)
        got = fn(rt.asarray(x, dtype))
    if policy == "torch":
        torch = pytest.importorskip("torch")
        if dtype != "float32":
            pytest.skip("the torch rows compare float32")
        tf = {
            "relu": torch.relu, "relu6": torch.nn.functional.relu6, "sigmoid": torch.sigmoid,
            "log_sigmoid": torch.nn.functional.logsigmoid, "softplus": torch.nn.functional.softplus,
            "silu": torch.nn.functional.silu, "swish": torch.nn.functional.silu,
            "gelu": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
            "gelu_erf": torch.nn.functional.gelu, "elu": torch.nn.functional.elu,
            "elu_alpha": lambda t: torch.nn.functional.elu(t, alpha=0.5),
            "leaky_relu": torch.nn.functional.leaky_relu,
            "leaky_relu_slope": lambda t: torch.nn.functional.leaky_relu(t, 0.2),
        }[name]  # fmt: skip
        want = tf(torch.from_numpy(x[: len(GRID)])).numpy()
        np.testing.assert_allclose(got.numpy()[: len(GRID)], want, rtol=1e-5, atol=1e-6)
        return
    assert_close(got.numpy(), _jax_nn(name, dtype), dtype, x)


@functools.cache
def _jax_nn(name: str, dtype: str) -> np.ndarray:
    """jax.nn's answer on the float grid (the jax and numpy policies share it)."""
    return np.asarray(ELEMENTWISE[name][1](jnp.asarray(_data(dtype))))


SLOW = pytest.mark.slow


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("dtype", [*FLOATS, "int32"])
@pytest.mark.parametrize("name", list(AXIS_FUNCTIONS))
@pytest.mark.parametrize("axis", [-1, (0, 2), pytest.param(0, marks=SLOW), pytest.param(None, marks=SLOW)])
def test_softmax_matches_jax_nn(name: str, dtype: str, policy: str, axis: Any) -> None:
    fn, oracle = AXIS_FUNCTIONS[name]
    rng = np.random.default_rng(0)
    if dtype == "int32":
        x = rng.integers(-5, 6, size=(2, 3, 4)).astype(np.int32)
        want_dtype = np.dtype((jnp if policy != "numpy" else np).exp(x).dtype)
    else:
        x = (rng.standard_normal((2, 3, 4)) * 4).astype(rt.dtype(dtype).storage)
        x[0, 0, 0] = 30.0  # a dominant entry: the shift by the maximum keeps exp finite
        want_dtype = x.dtype
    with _enter(policy):
        got = fn(rt.asarray(x), axis=axis)
    if policy == "torch" and name in ("softmax", "log_softmax"):  # PyTorch has no standardize: jax.nn's below
        torch = pytest.importorskip("torch")
        if dtype != "float32" or not isinstance(axis, int):
            pytest.skip("the torch rows compare float32 over one dim")
        tf = torch.softmax if name == "softmax" else torch.log_softmax
        np.testing.assert_allclose(got.numpy(), tf(torch.from_numpy(x), axis).numpy(), rtol=1e-5, atol=1e-6)
        return
    want = np.asarray(oracle(jnp.asarray(x.astype(want_dtype)), axis=axis))
    assert_close(got.numpy(), want, np.dtype(want_dtype).name if dtype == "int32" else dtype, x)


@st.composite
def _arrays_and_axes(draw: Any) -> tuple[np.ndarray, Any]:
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    ndim = len(shape)
    axis = draw(st.none() | st.integers(-ndim, ndim - 1) | st.sampled_from([tuple(range(ndim))]))
    seed = draw(st.integers(0, 2**16))
    return np.random.default_rng(seed).standard_normal(shape) * draw(st.sampled_from([1.0, 50.0])), axis


@settings(max_examples=30, deadline=None)
@given(case=_arrays_and_axes())
def test_softmax_is_the_normalized_exponential(case: tuple[np.ndarray, Any]) -> None:
    """Against NumPy's ``exp(x - logsumexp(x))`` in float64 on random shapes, axes and scales:
    softmax sums to 1 over ``axis`` and log_softmax is its logarithm."""
    x, axis = case
    shifted = x - np.max(x, axis=axis, keepdims=True)
    want_log = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    got = nn.softmax(rt.asarray(x), axis=axis).numpy()
    np.testing.assert_allclose(got, np.exp(want_log), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(np.sum(got, axis=axis), 1.0, rtol=1e-13)
    np.testing.assert_allclose(nn.log_softmax(rt.asarray(x), axis=axis).numpy(), want_log, rtol=1e-13, atol=1e-13)


def test_softmax_of_infinities_and_nan_follows_jax_nn() -> None:
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0], [np.nan, 0.0, 1.0]])
    for fn, oracle in (AXIS_FUNCTIONS["softmax"], AXIS_FUNCTIONS["log_softmax"]):
        assert_close(fn(rt.asarray(x)).numpy(), np.asarray(oracle(jnp.asarray(x))), "float64")


def test_relu_and_relu6_keep_signs_and_nan_as_jax_nn() -> None:
    x = np.array([-0.0, 0.0, np.nan, 6.0, -np.inf, np.inf])
    for fn, oracle in ((nn.relu, jax.nn.relu), (nn.relu6, jax.nn.relu6), (nn.leaky_relu, jax.nn.leaky_relu)):
        got, want = fn(rt.asarray(x)).numpy(), np.asarray(oracle(jnp.asarray(x)))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_gelu_default_is_the_policy_librarys() -> None:
    x = rt.asarray(np.array([-1.5, 0.5, 2.0]))
    assert_close(nn.gelu(x).numpy(), np.asarray(jax.nn.gelu(jnp.asarray(x.numpy()))), "float64", x.numpy())
    with rt.policy("torch"):  # torch.nn.functional.gelu: approximate='none'
        np.testing.assert_array_equal(nn.gelu(x).numpy(), nn.gelu(x, approximate=False).numpy())
    assert not np.array_equal(nn.gelu(x).numpy(), nn.gelu(x, approximate=False).numpy())


# -- one_hot ---------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("label_dtype", ["int32", "int8", "int64", "uint8"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_matches_jax_nn(policy: str, label_dtype: str, axis: int) -> None:
    labels = np.array([[0, 3, 1], [2, 4, 7]]).astype(label_dtype)  # 4 and 7: out of range
    if label_dtype != "uint8":
        labels[0, 0] = -1  # negative: a row of zeros
    with _enter(policy):
        got = nn.one_hot(rt.asarray(labels), 4, axis=axis)
        typed = nn.one_hot(rt.asarray(labels), 4, dtype=rt.float32, axis=axis)
    want = np.asarray(jax.nn.one_hot(jnp.asarray(labels), 4, axis=axis))
    assert got.dtype is (rt.int64 if policy == "torch" else rt.float64)  # jnp's float with x64; torch: int64
    np.testing.assert_array_equal(got.numpy(), want.astype(got.dtype.storage))
    assert typed.dtype is rt.float32
    np.testing.assert_array_equal(typed.numpy(), want.astype(np.float32))
    if policy == "torch":
        torch = pytest.importorskip("torch")
        inside = np.array([0, 3, 1, 2])
        np.testing.assert_array_equal(
            nn.one_hot(rt.asarray(inside), 4).numpy(), torch.nn.functional.one_hot(torch.from_numpy(inside), 4).numpy()
        )


def test_one_hot_records_ordinary_ops_and_batches() -> None:
    labels = rt.asarray(np.array([[1, 0], [3, 2], [0, 0]], np.int32))
    names = [e.op.name for e in rt.trace(lambda t: nn.one_hot(t, 4), labels).eqns]
    assert names == ["broadcast_in_dim", "eq", "convert"]  # the iota is a constant
    batched = autodiff.vmap(lambda t: nn.one_hot(t, 4))(labels)
    np.testing.assert_array_equal(batched.numpy(), np.asarray(jax.nn.one_hot(jnp.asarray(labels.numpy()), 4)))


# -- gradients -------------------------------------------------------------------------------

DIFFERENTIABLE = [n for n in ELEMENTWISE]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_matches_jax_grad(name: str) -> None:
    fn, oracle, _ = ELEMENTWISE[name]
    x = np.asarray(GRID)
    w = np.linspace(0.5, 2.0, x.size)
    got = autodiff.grad(lambda t: (fn(t) * rt.asarray(w)).sum())(rt.asarray(x)).numpy()
    want = np.asarray(jax.grad(lambda t: (oracle(t) * w).sum())(jnp.asarray(x)))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


def test_relu_and_relu6_gradients_at_the_kinks_are_zero() -> None:
    x = rt.asarray(np.array([0.0, 6.0, -0.0, 3.0]))
    np.testing.assert_array_equal(autodiff.grad(lambda t: nn.relu(t).sum())(x).numpy(), [0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(autodiff.grad(lambda t: nn.relu6(t).sum())(x).numpy(), [0.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("name", list(AXIS_FUNCTIONS))
@pytest.mark.parametrize("axis", [-1, None, pytest.param(0, marks=SLOW)])
def test_softmax_gradient_matches_jax_grad(name: str, axis: Any) -> None:
    fn, oracle = AXIS_FUNCTIONS[name]
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 4)) * 3, rng.standard_normal((3, 4))
    got = autodiff.grad(lambda t: (fn(t, axis=axis) * rt.asarray(w)).sum())(rt.asarray(x)).numpy()
    want = np.asarray(jax.grad(lambda t: (oracle(t, axis=axis) * w).sum())(jnp.asarray(x)))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


# -- vmap and recording --------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*ELEMENTWISE, *AXIS_FUNCTIONS])
def test_vmap_equals_the_per_example_results(name: str) -> None:
    fn = ELEMENTWISE[name][0] if name in ELEMENTWISE else AXIS_FUNCTIONS[name][0]
    x = np.asarray(GRID[:12]).reshape(3, 4)
    batched = autodiff.vmap(fn)(rt.asarray(x)).numpy()
    for i in range(3):
        np.testing.assert_array_equal(batched[i], fn(rt.asarray(x[i])).numpy())


@pytest.mark.parametrize("name", [*ELEMENTWISE, *AXIS_FUNCTIONS])
def test_records_ordinary_ops_that_replay(name: str) -> None:
    fn = ELEMENTWISE[name][0] if name in ELEMENTWISE else AXIS_FUNCTIONS[name][0]
    x = rt.asarray(np.asarray(GRID[:12], np.float32).reshape(3, 4))
    graph = rt.trace(fn, x)
    assert all(e.op.name in rt.ops.OPS for e in graph.eqns)
    (replayed,) = rt.evaluate(graph, x)
    np.testing.assert_array_equal(replayed.numpy(), fn(x).numpy())


# -- errors ----------------------------------------------------------------------------------


def _raises(cls: type[Exception], fn: Callable[[], Any], *needles: str) -> None:
    with pytest.raises(cls) as info:
        fn()
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


@pytest.mark.parametrize("policy", ["jax", "numpy"])
def test_errors_name_the_function_operands_and_policy(policy: str) -> None:
    x = rt.asarray(np.ones((2, 3), np.float32))
    with rt.policy(policy):
        for fn in (nn.softmax, nn.log_softmax, nn.standardize):
            name = f"nn.{fn.__name__}"
            _raises(rt.ShapeError, functools.partial(fn, x, axis=2), name, "f32[2, 3]", f"policy {policy!r}")
            _raises(rt.ShapeError, functools.partial(fn, x, axis=(0, 0)), name, "repeats")
            if fn is not nn.standardize:
                _raises(rt.ShapeError, functools.partial(fn, rt.asarray(np.ones((2, 0))), axis=1), name, "size 0")
        _raises(ValueError, lambda: nn.standardize(x, algorithm="slow"), "nn.standardize", "f32[2,3]", repr(policy))
        labels = rt.asarray(np.array([0, 1], np.int32))
        _raises(rt.ShapeError, lambda: nn.one_hot(labels, 0), "nn.one_hot", "i32[2]", "positive", repr(policy))
        _raises(rt.ShapeError, lambda: nn.one_hot(labels, -3), "nn.one_hot", "positive")
        not_an_int: Any = 2.5
        _raises(TypeError, lambda: nn.one_hot(labels, not_an_int), "nn.one_hot", "num_classes")
        _raises(rt.ShapeError, lambda: nn.one_hot(labels, 3, axis=3), "nn.one_hot", "axis")
        _raises(rt.OpTypeError, lambda: nn.one_hot(x, 3), "nn.one_hot", "f32[2,3]", "integers", repr(policy))


def test_an_op_error_inside_is_renamed() -> None:
    from runtime.core.promotion import PromotionError

    b = rt.asarray(np.ones(2, np.int16))
    with rt.policy("strict"), pytest.raises((PromotionError, rt.OpTypeError)) as info:
        nn.sigmoid(b)
    assert str(info.value).startswith("nn.sigmoid: "), str(info.value)
