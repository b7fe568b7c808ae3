"""The Tensor API users reach for (runtime.numpy.tensor_methods, docs/tensor.md), against its oracles.

- values and dtypes of ``sum/prod/max/min/mean/var/std/any/all`` (``axis`` negative or
  not, ``keepdims``) against jax.numpy (policy jax), NumPy (policy numpy) and PyTorch
  (policy torch, when installed), on random shapes and axes;
- gradients (reverse and forward mode) of the methods, of advanced indexing and of
  ``x.at[idx].set/add`` against ``jax.grad`` / ``jax.jvp``;
- advanced indexing reads against NumPy's own indexing, recorded as one ``gather``;
- the functional update against ``jnp.ndarray.at``, recorded as one scatter;
- the errors: each names the method, the operand and the policy.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autodiff
import runtime as rt
from runtime.numpy import tensor_methods as tensor_api
from tests import jax_oracles

jax.config.update("jax_enable_x64", True)

SETTINGS = settings(max_examples=12, deadline=None)  # each example compiles JAX oracles: the CPU budget

DTYPES = ["float32", "float64", "int8", "int32", "uint8", "bool", "float16", "bfloat16", "complex64"]
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "any", "all"]


@st.composite
def shapes_and_axes(draw: Any, min_size: int = 1) -> tuple[tuple[int, ...], Any]:
    shape = tuple(draw(st.lists(st.integers(min_size, 4), min_size=0, max_size=3)))
    ndim = len(shape)
    if ndim == 0:
        return shape, draw(st.sampled_from([None, ()]))
    axis = draw(
        st.none()
        | st.integers(-ndim, ndim - 1)
        | st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(
            lambda axes: tuple(a - ndim if i % 2 else a for i, a in enumerate(axes))  # some negative
        )
    )
    return shape, axis


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    d = rt.dtype(dtype)
    if d.kind == "bool":
        return rng.random(shape) > 0.5
    if d.kind in ("int", "uint"):
        low = 0 if d.kind == "uint" else -3
        return rng.integers(low, 4, size=shape).astype(d.storage)
    values = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if d.kind == "complex" else 0)
    return np.asarray(values).astype(d.storage)


def _tolerance(dtype: str) -> float:
    return {"float16": 2e-2, "bfloat16": 5e-2, "float32": 1e-5, "complex64": 1e-5}.get(dtype, 1e-12)


def _supported(method: str, dtype: str) -> bool:
    # NumPy and jax.numpy order complex numbers differently
    return not (dtype == "complex64" and method in ("max", "min"))


# -- reductions: values and dtypes ---------------------------------------------------------------------


@SETTINGS
@given(sa=shapes_and_axes(), method=st.sampled_from(REDUCTIONS), dtype=st.sampled_from(DTYPES),
       keepdims=st.booleans(), seed=st.integers(0, 2**16))  # fmt: skip
def test_reductions_match_jax_numpy(sa: Any, method: str, dtype: str, keepdims: bool, seed: int) -> None:
    shape, axis = sa
    if not _supported(method, dtype):
        return
    a = _data(np.random.default_rng(seed), shape, dtype)
    got = getattr(rt.asarray(a), method)(axis=axis, keepdims=keepdims)
    want = getattr(jnp, method)(jnp.asarray(a), axis=axis, keepdims=keepdims)
    assert got.dtype is rt.dtype(want.dtype), (method, dtype, got.dtype, want.dtype)
    assert got.shape == want.shape
    tol = _tolerance(got.dtype.name) if method in ("mean", "var", "std", "sum", "prod") else 0
    np.testing.assert_allclose(
        np.asarray(got.numpy(), np.complex128), np.asarray(want, np.complex128), rtol=tol, atol=tol
    )


NUMPY_DTYPES = ["float32", "float64", "int8", "int32", "uint8", "bool", "complex128"]


@SETTINGS
@given(sa=shapes_and_axes(), method=st.sampled_from(REDUCTIONS), dtype=st.sampled_from(NUMPY_DTYPES),
       keepdims=st.booleans(), seed=st.integers(0, 2**16))  # fmt: skip
def test_reductions_match_numpy_under_the_numpy_policy(
    sa: Any, method: str, dtype: str, keepdims: bool, seed: int
) -> None:
    shape, axis = sa
    if not _supported(method, dtype.replace("128", "64")):
        return
    a = _data(np.random.default_rng(seed), shape, dtype)
    with rt.use_policy("numpy"):
        got = getattr(rt.asarray(a), method)(axis=axis, keepdims=keepdims)
    want = np.asarray(getattr(np, method)(a, axis=axis, keepdims=keepdims))
    assert got.dtype is rt.dtype(want.dtype), (method, dtype, got.dtype, want.dtype)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got.numpy(), np.complex128), want.astype(np.complex128), rtol=1e-5)


def test_where_libraries_disagree_the_policy_decides() -> None:
    a = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    t = rt.asarray(a)
    # var/std: ddof 0 under jax and numpy, correction 1 under torch
    np.testing.assert_allclose(t.var().numpy(), np.var(a))
    with rt.use_policy("torch"):
        np.testing.assert_allclose(t.var().numpy(), np.var(a, ddof=1))
        np.testing.assert_allclose(t.std(axis=-1).numpy(), np.std(a, axis=-1, ddof=1))
        np.testing.assert_allclose(t.var(correction=0).numpy(), np.var(a))
    np.testing.assert_allclose(t.var(ddof=1).numpy(), np.var(a, ddof=1))
    # N - ddof <= 0: jax.numpy gives NaN, NumPy and PyTorch divide by max(N - ddof, 0)
    np.testing.assert_array_equal(t.var(axis=0, ddof=3).numpy(), np.asarray(jnp.var(jnp.asarray(a), axis=0, ddof=3)))
    with rt.use_policy("numpy"), np.errstate(divide="ignore", invalid="ignore"):
        assert np.all(np.isinf(t.var(axis=0, ddof=3).numpy()))
    # sum of small integers: uint8 -> uint64 (jax, numpy), int64 (torch)
    u = rt.asarray(np.array([200, 100], np.uint8))
    assert u.sum().dtype is rt.uint64 and int(u.sum()) == 300
    with rt.use_policy("torch"):
        assert u.sum().dtype is rt.int64 and u.prod().dtype is rt.int64
        # any/all of uint8 is uint8 in PyTorch
        assert u.any().dtype is rt.uint8 and int(u.all()) == 1
    assert u.any().dtype is rt.bool_
    # squeeze of an axis whose size is not 1: refused by NumPy/jax.numpy, a no-op in PyTorch
    x = rt.asarray(np.zeros((1, 3, 1)))
    with pytest.raises(rt.ShapeError, match=r"squeeze: cannot squeeze axis 1 of size 3 .*policy 'jax'"):
        x.squeeze(1)
    with rt.use_policy("torch"):
        assert x.squeeze(1).shape == (1, 3, 1) and x.squeeze((0, 1)).shape == (3, 1)
    assert x.squeeze().shape == (3,) and x.squeeze(-1).shape == (1, 3)


def test_mean_of_integers_does_not_overflow_their_dtype() -> None:
    a = np.full(300, 100, np.int8)
    for policy, want in (("jax", rt.float32), ("numpy", rt.float64), ("torch", rt.float32)):
        with rt.use_policy(policy):
            m = rt.asarray(a).mean()
            assert m.dtype is want and float(m) == 100.0
            assert float(rt.asarray(a).var()) == 0.0
    assert int(rt.asarray(a).sum()) == 30000  # in int64, as jnp.sum


def test_max_and_min_of_an_empty_axis_raise_as_every_library_does() -> None:
    x = rt.asarray(np.zeros((0, 3)))
    for policy in ("jax", "numpy", "torch"):
        with (
            rt.use_policy(policy),
            pytest.raises(rt.ShapeError, match=rf"max: zero-size .*f64\[0, 3\]; policy '{policy}'"),
        ):
            x.max(axis=0)
    assert x.max(axis=1).shape == (0,)  # nothing is reduced over an empty axis there
    with pytest.raises(ValueError):
        jnp.max(jnp.zeros((0, 3)), axis=0)
    assert bool(x.any()) is False and bool(x.all()) is True


@pytest.mark.parametrize("method", REDUCTIONS)
def test_reductions_under_torch_match_torch(method: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for dtype in ("float64", "int32", "uint8", "bool"):
        a = _data(rng, (3, 4), dtype)
        if method in ("mean", "var", "std") and dtype != "float64":
            continue  # PyTorch refuses integer means; castwise's torch policy computes them in float32
        with rt.use_policy("torch"):
            got = getattr(rt.asarray(a), method)(axis=-1, keepdims=True)
        fn = getattr(torch, {"max": "amax", "min": "amin"}.get(method, method))
        want = fn(torch.from_numpy(a), dim=-1, keepdim=True).numpy()
        assert got.dtype is rt.dtype(want.dtype), (method, dtype)
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64), rtol=1e-12)


# -- reductions: gradients -------------------------------------------------------------------------------

DIFF_REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std"]


@SETTINGS
@given(sa=shapes_and_axes(min_size=2), method=st.sampled_from(DIFF_REDUCTIONS), keepdims=st.booleans(),
       seed=st.integers(0, 2**16))  # fmt: skip
def test_reduction_gradients_match_jax(sa: Any, method: str, keepdims: bool, seed: int) -> None:
    shape, axis = sa
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    w = rng.standard_normal(np.shape(getattr(np, method)(a, axis=axis, keepdims=keepdims)))

    def ours(x: Any) -> Any:
        return (getattr(x, method)(axis=axis, keepdims=keepdims) * rt.asarray(w)).sum()

    def theirs(x: Any) -> Any:
        return (getattr(jnp, method)(x, axis=axis, keepdims=keepdims) * w).sum()

    got = autodiff.grad(ours)(rt.asarray(a))
    np.testing.assert_allclose(
        got.numpy(), np.asarray(jax_oracles.jitted(jax.grad(theirs))(jnp.asarray(a))), rtol=1e-9, atol=1e-12
    )
    t = rng.standard_normal(shape)
    _, jt = autodiff.jvp(ours, (rt.asarray(a),), (rt.asarray(t),))
    _, want_t = jax_oracles.jvp(theirs, (jnp.asarray(a),), (jnp.asarray(t),))
    np.testing.assert_allclose(float(jt), float(want_t), rtol=1e-9, atol=1e-12)


def test_complex_variance_is_real_and_differentiates_as_jax() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    v = rt.asarray(a).var(axis=0)
    assert v.dtype is rt.float64
    np.testing.assert_allclose(v.numpy(), np.var(a, axis=0))
    got = autodiff.grad(lambda x: x.var(axis=-1).sum())(rt.asarray(a))
    want = jax_oracles.jitted(jax.grad(lambda x: jnp.var(x, axis=-1).sum()))(jnp.asarray(a))
    np.testing.assert_allclose(got.numpy(), np.conj(np.asarray(want)), rtol=1e-12)  # PyTorch's convention


def test_methods_record_ordinary_ops() -> None:
    x = rt.asarray(np.ones((2, 3), np.float16))
    names = [e.op.name for e in rt.trace(lambda t: t.var(axis=-1, keepdims=True), x).eqns]
    assert names[0] == "convert" and "reduce_sum" in names and names[-2:] == ["convert", "reshape"]
    names = [e.op.name for e in rt.trace(lambda t: t.any(axis=0), rt.asarray(np.ones(3))).eqns]
    assert names == ["convert", "reduce_max"]


# -- shape methods, clip, where ----------------------------------------------------------------------------


@SETTINGS
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple), seed=st.integers(0, 99))
def test_reshape_infers_one_dimension_and_flatten_merges_axes(shape: tuple[int, ...], seed: int) -> None:
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = rt.asarray(a)
    assert t.reshape(-1).shape == a.reshape(-1).shape
    np.testing.assert_array_equal(t.flatten().numpy(), a.flatten())
    if a.ndim >= 2:
        assert t.reshape(shape[0], -1).shape == a.reshape(shape[0], -1).shape if shape[0] else True
        assert t.flatten(1).shape == (shape[0], int(np.prod(shape[1:])))
        assert t.flatten(0, -2).shape == (int(np.prod(shape[:-1])), shape[-1])


def test_reshape_errors_name_the_method_operand_and_policy() -> None:
    t = rt.asarray(np.zeros((2, 3)))
    with pytest.raises(rt.ShapeError, match=r"reshape: can only infer one dimension .*f64\[2, 3\]; policy 'jax'"):
        t.reshape(-1, -1)
    with pytest.raises(rt.ShapeError, match=r"reshape: cannot reshape 6 elements into \(4, -1\)"):
        t.reshape(4, -1)


@SETTINGS
@given(seed=st.integers(0, 2**16), lo=st.none() | st.floats(-1, 0, allow_subnormal=False),
       hi=st.none() | st.floats(0, 1, allow_subnormal=False))  # (XLA on CPU flushes subnormals)  # fmt: skip
def test_clip_matches_jnp_clip_with_its_gradient(seed: int, lo: float | None, hi: float | None) -> None:
    a = np.random.default_rng(seed).standard_normal((3, 4))
    got = rt.asarray(a).clip(lo, hi)
    np.testing.assert_array_equal(got.numpy(), np.asarray(jnp.clip(jnp.asarray(a), lo, hi)))
    g = autodiff.grad(lambda x: (x.clip(lo, hi) * x).sum())(rt.asarray(a))
    want = jax_oracles.jitted(jax.grad(lambda x: (jnp.clip(x, lo, hi) * x).sum()))(jnp.asarray(a))
    np.testing.assert_allclose(g.numpy(), np.asarray(want))


def test_where_broadcasts_promotes_and_differentiates_as_jnp_where() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(4).astype(np.float32)
    cond = rng.integers(0, 2, size=(3, 1))  # an int condition: compared with 0
    got = rt.where(cond, rt.asarray(a), rt.asarray(b))
    want = jnp.where(cond, a, b)
    assert got.dtype is rt.dtype(want.dtype)
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    g = autodiff.grad(lambda x: rt.where(cond, x, 0.0).sum())(rt.asarray(a))
    np.testing.assert_array_equal(
        g.numpy(), np.asarray(jax_oracles.jitted(jax.grad(lambda x: jnp.where(cond, x, 0.0).sum()))(a))
    )
    idx = rt.where(rt.asarray(a) > 0)
    for got_i, want_i in zip(idx, np.nonzero(a > 0), strict=True):
        np.testing.assert_array_equal(got_i.numpy(), want_i)
    with pytest.raises(TypeError, match="where: give both x and y"):
        rt.where(cond, a)


def test_functions_take_negative_axes_and_keepdims() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(rt.sum(a, -1, keepdims=True).numpy(), a.sum(-1, keepdims=True))
    np.testing.assert_array_equal(rt.mean(a, (0, -1)).numpy(), a.mean((0, -1)))
    np.testing.assert_array_equal(rt.lax.reduce_max(a, -2).numpy(), a.max(-2))
    np.testing.assert_array_equal(rt.lax.reduce_sum(a, (-1, 0)).numpy(), a.sum((-1, 0)))
    np.testing.assert_array_equal(rt.lax.transpose(a, (-1, 0, 1)).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(rt.lax.reverse(a, (-1,)).numpy(), a[..., ::-1])
    np.testing.assert_array_equal(rt.lax.concatenate([a, a], -1).numpy(), np.concatenate([a, a], -1))
    # the recorded params are non-negative, as lax's
    eqn = rt.trace(lambda t: rt.lax.reduce_sum(t, -1), rt.asarray(a)).eqns[0]
    assert eqn.params["axes"] == (2,)


# -- indexing reads -------------------------------------------------------------------------------


@st.composite
def indexes(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A NumPy index of ints, slices, integer arrays (lists, NumPy arrays), boolean masks,
    None and an ellipsis, all in bounds."""
    items: list[Any] = []
    axis = 0
    ellipsis = False
    while axis < len(shape):
        n = shape[axis]
        kind = draw(st.sampled_from(["int", "slice", "array", "list", "mask", "none", "ellipsis", "full"]))
        if kind == "ellipsis" and not ellipsis:
            ellipsis = True
            items.append(Ellipsis)
            axis += draw(st.integers(0, len(shape) - axis))
            continue
        if kind == "none":
            items.append(None)
            continue
        if kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            items.append(slice(draw(st.none() | st.integers(-n, n)), draw(st.none() | st.integers(-n, n)),
                               draw(st.sampled_from([None, 1, 2, -1]))))  # fmt: skip
        elif kind in ("array", "list"):
            size = draw(st.integers(0, 3))
            values = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size))
            items.append(values if kind == "list" and values else np.array(values, np.int64))
        elif kind == "mask":
            items.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool))
        else:
            items.append(slice(None))
        axis += 1
    return tuple(items)


@SETTINGS
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
def test_advanced_indexing_reads_as_numpy_and_differentiates_as_jax(data: Any, shape: tuple[int, ...]) -> None:
    index = data.draw(indexes(shape))
    a = np.random.default_rng(len(shape)).standard_normal(shape)
    try:
        want = a[index]
    except IndexError:  # index arrays that do not broadcast together
        with pytest.raises(IndexError, match="__getitem__: index arrays of shapes"):
            rt.asarray(a)[index]
        return
    got = rt.asarray(a)[index]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    jindex = tuple(jnp.asarray(i) if isinstance(i, (list, np.ndarray)) else i for i in index)
    w = np.random.default_rng(0).standard_normal(want.shape)
    g = autodiff.grad(lambda x: (x[index] * rt.asarray(w)).sum())(rt.asarray(a))
    np.testing.assert_allclose(
        g.numpy(), np.asarray(jax_oracles.jitted(jax.grad(lambda x: (x[jindex] * w).sum()))(jnp.asarray(a)))
    )


def test_integer_tensor_index_is_a_gather_operand_and_replays_with_new_indices() -> None:
    a = np.arange(12.0).reshape(3, 4)
    graph = rt.trace(lambda x, i: x[:, i], rt.asarray(a), rt.asarray(np.array([0, -1])))
    names = [e.op.name for e in graph.eqns]
    assert "gather" in names and "select" in names  # negative positions wrapped by recorded ops
    f = autodiff.jit(lambda x, i: x[i, 1:])
    for idx in ([0, 2], [-1, 1, 1]):
        i = rt.asarray(np.array(idx))
        np.testing.assert_array_equal(f(rt.asarray(a), i).numpy(), a[np.array(idx), 1:])


def test_an_ellipsis_between_advanced_indices_separates_them_as_in_numpy() -> None:
    for shape, index in (
        ((1, 1, 1), (None, 0, np.array([], np.int64), Ellipsis, 0)),  # an ellipsis spanning no axis
        ((2, 3, 4), (0, Ellipsis, [0, 1])),
        ((2, 3, 4), ([1, 0], [0, 2])),
        ((2, 3, 4), (slice(None), [1, 0], [0, 2])),
        ((2, 3, 4), ([1, 0], slice(None), [0, 2])),
    ):
        a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
        np.testing.assert_array_equal(rt.asarray(a)[index].numpy(), a[index])
        assert (
            rt.asarray(a).at[index].set(-1.0).numpy().sum()
            == np.where(np.isin(np.arange(a.size), np.arange(a.size).reshape(shape)[index]), -1.0, a.ravel()).sum()
        )


def test_boolean_mask_is_read_eagerly_and_refused_in_a_trace() -> None:
    a = np.array([1.0, -2.0, 3.0, -4.0])
    x = rt.asarray(a)
    np.testing.assert_array_equal(x[x > 0].numpy(), a[a > 0])
    g = autodiff.grad(lambda t: (t[t > 0] ** 2).sum())(x)  # the mask is a constant; the values differentiate
    np.testing.assert_array_equal(g.numpy(), np.where(a > 0, 2 * a, 0.0))
    with pytest.raises(IndexError, match=r"__getitem__: the boolean mask is traced .* data-dependent shape"):
        rt.trace(lambda t: t[t > 0], x)
    with pytest.raises(IndexError, match="data-dependent"):
        rt.trace(lambda t: rt.where(t > 0), x)


def test_out_of_bounds_indices_clamp_under_jax_and_raise_under_numpy_and_torch() -> None:
    a = np.arange(5.0)
    np.testing.assert_array_equal(rt.asarray(a)[[7, -9]].numpy(), np.asarray(jnp.asarray(a)[jnp.array([7, -9])]))
    for policy in ("numpy", "torch"):
        with rt.use_policy(policy), pytest.raises(IndexError, match=rf"index 7 is out of bounds .*policy '{policy}'"):
            rt.asarray(a)[[1, 7]]


def test_bad_indices_name_the_problem() -> None:
    x = rt.asarray(np.zeros((2, 3)))
    with pytest.raises(IndexError, match=r"boolean mask of shape \[3\] does not match"):
        x[np.array([True, False, True])]
    with pytest.raises(IndexError, match="cannot be broadcast together"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="too many indices"):
        x[[0], 0, 0]
    with pytest.raises(IndexError, match="integers or bool, got a float64 tensor"):
        x[rt.asarray(np.array([0.0]))]


# -- functional updates ------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       kind=st.sampled_from(["set", "add"]))  # fmt: skip
def test_at_updates_match_jax_values_and_gradients(data: Any, shape: tuple[int, ...], kind: str) -> None:
    index = data.draw(indexes(shape))
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape)
    try:
        target = a[index]
    except IndexError:  # index arrays that do not broadcast together
        with pytest.raises(IndexError, match="index arrays of shapes|shape mismatch"):
            rt.asarray(a).at[index].set(0.0)
        return
    positions = np.arange(a.size).reshape(shape)[index]
    if kind == "set" and len(np.unique(positions)) != positions.size:
        return  # repeated positions: which update lands is unspecified for set (as in JAX)
    v = np.asarray(rng.standard_normal(target.shape[data.draw(st.integers(0, target.ndim)) :]))  # broadcast
    jindex = tuple(jnp.asarray(i) if isinstance(i, (list, np.ndarray)) else i for i in index)
    got = getattr(rt.asarray(a).at[index], kind)(rt.asarray(v))
    want = getattr(jnp.asarray(a).at[jindex], kind)(v)
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12)
    w = rng.standard_normal(shape)

    def ours(x: Any, u: Any) -> Any:
        return (getattr(x.at[index], kind)(u) * rt.asarray(w)).sum()

    def theirs(x: Any, u: Any) -> Any:
        return (getattr(x.at[jindex], kind)(u) * w).sum()

    gx, gu = autodiff.grad(ours, argnums=(0, 1))(rt.asarray(a), rt.asarray(v))
    jx, ju = jax_oracles.jitted(jax.grad(theirs, argnums=(0, 1)))(jnp.asarray(a), jnp.asarray(v))
    np.testing.assert_allclose(gx.numpy(), np.asarray(jx), rtol=1e-12)
    np.testing.assert_allclose(gu.numpy(), np.asarray(ju), rtol=1e-12)


def test_at_converts_values_to_the_operand_dtype_and_records_one_scatter() -> None:
    x = rt.asarray(np.zeros(4, np.float32))
    y = x.at[[1, 3]].set(np.array([1.5, 2.5]))  # float64 values, converted as jnp's .at does
    assert y.dtype is rt.float32
    np.testing.assert_array_equal(y.numpy(), [0, 1.5, 0, 2.5])
    np.testing.assert_array_equal(x.numpy(), np.zeros(4))  # x itself is unchanged
    names = [e.op.name for e in rt.trace(lambda t: t.at[[0, 0]].add(1.0), x).eqns]
    assert names.count("scatter_add") == 1
    np.testing.assert_array_equal(x.at[[0, 0]].add(1.0).numpy(), [2, 0, 0, 0])  # repeats accumulate
    np.testing.assert_array_equal(x.at[1:3].set(7).numpy(), [0, 7, 7, 0])
    np.testing.assert_array_equal(x.at[[-1]].get().numpy(), [0])


def test_at_drops_out_of_bounds_under_jax_and_raises_under_numpy() -> None:
    a = np.arange(4.0)
    got = rt.asarray(a).at[[1, 9]].set(-1.0)
    np.testing.assert_array_equal(got.numpy(), np.asarray(jnp.asarray(a).at[jnp.array([1, 9])].set(-1.0)))
    with rt.use_policy("numpy"), pytest.raises(IndexError, match=r"at\[\.\.\.\]\.set: index 9 is out of bounds"):
        rt.asarray(a).at[[1, 9]].set(-1.0)


@pytest.mark.parametrize("kind", ["mul", "min", "max"])
def test_at_mul_min_max_use_their_scatter_op(kind: str) -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0])
    ref = rt.asarray(a).at[[0, 2, 2]]
    want = getattr(jnp.asarray(a).at[jnp.array([0, 2, 2])], kind)(2.5)
    np.testing.assert_array_equal(getattr(ref, kind)(2.5).numpy(), np.asarray(want))
    names = [e.op.name for e in rt.trace(lambda t: getattr(t.at[[0, 2, 2]], kind)(2.5), rt.asarray(a)).eqns]
    assert names.count(f"scatter_{kind}") == 1


@pytest.mark.parametrize("kind", ["mul", "min", "max"])
def test_at_mul_min_max_gradients_match_jax(kind: str) -> None:
    rng = np.random.default_rng(7)
    a, v = rng.standard_normal(6), rng.standard_normal(3)
    idx = [4, 0, 2]  # unique: JAX differentiates scatter_mul's updates only for unique indices

    def ours(x: Any, u: Any) -> Any:
        return (getattr(x.at[idx], kind)(u, unique_indices=True) * rt.asarray(np.arange(6.0))).sum()

    def theirs(x: Any, u: Any) -> Any:
        return (getattr(x.at[jnp.array(idx)], kind)(u, unique_indices=True) * jnp.arange(6.0)).sum()

    gx, gu = autodiff.grad(ours, argnums=(0, 1))(rt.asarray(a), rt.asarray(v))
    jx, ju = jax_oracles.jitted(jax.grad(theirs, argnums=(0, 1)))(jnp.asarray(a), jnp.asarray(v))
    np.testing.assert_allclose(gx.numpy(), np.asarray(jx), rtol=1e-12)
    np.testing.assert_allclose(gu.numpy(), np.asarray(ju), rtol=1e-12)


# -- what users reach for that castwise refuses, and how it says so ----------------------------------------


def test_item_assignment_points_to_at() -> None:
    x = rt.asarray(np.zeros(3))
    with pytest.raises(TypeError, match=r"x = x\.at\[index\]\.set\(value\)"):
        x[0] = 1.0


def test_python_scalars_from_tensors() -> None:
    assert bool(rt.asarray(np.array([[2.0]]))) is True  # one element of any rank, as PyTorch and NumPy
    assert float(rt.asarray(np.array([2.5]))) == 2.5 and int(rt.asarray(np.array(3))) == 3
    with pytest.raises(ValueError, match=r"ambiguous; use \.any\(\) or \.all\(\) \[policy 'jax'\]"):
        bool(rt.asarray(np.zeros(2)))
    with pytest.raises(TypeError, match=r"float\(\) of a float64 tensor of shape \[2\] .*\.sum\(\)"):
        float(rt.asarray(np.zeros(2)))
    with pytest.raises(TypeError, match=r"would drop the imaginary part; use \.real"):
        float(rt.asarray(np.array(1 + 2j)))
    assert complex(rt.asarray(np.array(1 + 2j))) == 1 + 2j


def test_library_table_names_each_policy() -> None:
    assert tensor_api.LIBRARY["numpy"] == "numpy" and tensor_api.LIBRARY["torch"] == "torch"
    with rt.use_policy("strict"):
        assert tensor_api.library() == "jax"


def test_indexing_and_updates_push_tangents_as_jax() -> None:
    rng = np.random.default_rng(4)
    a, v, ta, tv = (rng.standard_normal(s) for s in ((3, 4), (2, 4), (3, 4), (2, 4)))
    idx = np.array([2, 0])

    def ours(x: Any, u: Any) -> Any:
        return x.at[idx].add(u)[[1, 2], -1:]

    def theirs(x: Any, u: Any) -> Any:
        return x.at[idx].add(u)[jnp.array([1, 2]), -1:]

    out, tangent = autodiff.jvp(ours, (rt.asarray(a), rt.asarray(v)), (rt.asarray(ta), rt.asarray(tv)))
    want, want_t = jax_oracles.jvp(theirs, (jnp.asarray(a), jnp.asarray(v)), (jnp.asarray(ta), jnp.asarray(tv)))
    np.testing.assert_allclose(out.numpy(), np.asarray(want))
    np.testing.assert_allclose(tangent.numpy(), np.asarray(want_t))


def test_at_with_a_traced_index_replays_with_new_indices() -> None:
    a = np.zeros((3, 2))
    f = autodiff.jit(lambda x, i, u: x.at[i].add(u))
    for idx in ([0, 0], [-1, 1]):
        got = f(rt.asarray(a), rt.asarray(np.array(idx)), rt.asarray(np.ones((2, 2))))
        want = jnp.asarray(a).at[jnp.array(idx)].add(1.0)
        np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    graph = rt.trace(lambda x, i: x.at[i].set(1.0), rt.asarray(a), rt.asarray(np.array([1])))
    assert [e.op.name for e in graph.eqns].count("scatter") == 1


@pytest.mark.parametrize("method", ["sum", "prod", "mean"])
@pytest.mark.parametrize("dtype", ["int8", "float32", "float64"])
def test_an_explicit_dtype_is_the_accumulator_as_in_jnp(method: str, dtype: str) -> None:
    a = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    got = getattr(rt.asarray(a), method)(axis=-1, dtype=dtype)
    want = getattr(jnp, method)(jnp.asarray(a), axis=-1, dtype=dtype)
    assert got.dtype is rt.dtype(want.dtype)
    np.testing.assert_allclose(got.numpy().astype(np.float64), np.asarray(want, np.float64), rtol=1e-6)
