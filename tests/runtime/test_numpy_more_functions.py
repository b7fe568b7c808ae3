"""Gradients, vmap and jit of NumPy's math functions, NaN-ignoring reductions, order statistics,
array helpers, lookups, polynomials, correlations and vector products
(``runtime/numpy/math_functions.py``, ``nan_functions.py``, ``arrays.py``, ``numerics.py``).

Their values and dtypes are held against NumPy and jax.numpy in ``test_numpy_names.py``; here each
differentiable one is held against ``jax.grad`` and ``jax.vmap`` of jax.numpy's function of the same
name (x64), and ``autodiff.jit`` against eager execution. The inputs hold what the functions
special-case: NaN for the nan-reductions (their cotangent there is 0), 0 for ``sinc`` (its
derivative at 0 is the limit's), ties avoided for max/min-based ones.
"""

from __future__ import annotations

import warnings
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

jax.config.update("jax_enable_x64", True)

X = np.array([[0.3, -1.2, 2.5, 0.7], [1.9, -0.4, 0.0, -2.2], [0.8, 1.1, -0.6, 1.4]])
Y = np.array([[1.3, 0.2, -0.5, 2.7], [-0.9, 1.4, 0.6, 0.2], [1.8, -1.1, 0.4, 0.9]])
XN = np.where(np.eye(3, 4, dtype=bool), np.nan, X)  # a NaN in each row
W = np.array([0.5, 1.5, 2.0, 1.0])

#: label -> (castwise function of one array, jax.numpy's, input)
ROWS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any], np.ndarray]] = {
    "logaddexp": (lambda x: rt.logaddexp(x, rt.asarray(Y)), lambda x: jnp.logaddexp(x, Y), X),
    "logaddexp2": (lambda x: rt.logaddexp2(rt.asarray(Y), x), lambda x: jnp.logaddexp2(Y, x), X),
    "hypot": (lambda x: rt.hypot(x, rt.asarray(Y)), lambda x: jnp.hypot(x, Y), X),
    "copysign": (lambda x: rt.copysign(x, rt.asarray(Y)), lambda x: jnp.copysign(x, Y), X),
    "deg2rad": (rt.deg2rad, jnp.deg2rad, X),
    "sinc": (rt.sinc, jnp.sinc, X),  # X holds a 0
    "float_power": (
        lambda x: rt.float_power(rt.abs(x) + 0.5, 1.5),
        lambda x: jnp.float_power(jnp.abs(x) + 0.5, 1.5),
        X,
    ),
    "fmod": (lambda x: rt.fmod(x, 0.7), lambda x: jnp.fmod(x, 0.7), X),
    "nansum": (lambda x: rt.nansum(x, axis=1), lambda x: jnp.nansum(x, axis=1), XN),
    "nanmean": (lambda x: rt.nanmean(x, axis=0), lambda x: jnp.nanmean(x, axis=0), XN),
    "nanmax": (lambda x: rt.nanmax(x, axis=1), lambda x: jnp.nanmax(x, axis=1), XN),
    "nanvar": (lambda x: rt.nanvar(x, axis=1, ddof=1), lambda x: jnp.nanvar(x, axis=1, ddof=1), XN),
    "nanstd": (rt.nanstd, jnp.nanstd, XN),
    "nanprod": (lambda x: rt.nanprod(x, axis=1), lambda x: jnp.nanprod(x, axis=1), XN),
    "nancumsum": (lambda x: rt.nancumsum(x, axis=1), lambda x: jnp.nancumsum(x, axis=1), XN),
    "ptp": (lambda x: rt.ptp(x, axis=1), lambda x: jnp.ptp(x, axis=1), X),
    "average": (
        lambda x: rt.average(x, axis=1, weights=rt.asarray(W)),
        lambda x: jnp.average(x, axis=1, weights=W),
        X,
    ),
    "median": (lambda x: rt.median(x, axis=1), lambda x: jnp.median(x, axis=1), X),
    "quantile": (
        lambda x: rt.quantile(x, np.array([0.1, 0.5, 0.8]), axis=0),
        lambda x: jnp.quantile(x, np.array([0.1, 0.5, 0.8]), axis=0),
        X,
    ),
    "nanmedian": (lambda x: rt.nanmedian(x, axis=1), lambda x: jnp.nanmedian(x, axis=1), XN),
    "trapezoid": (lambda x: rt.trapezoid(x, rt.asarray(W.cumsum())), lambda x: jnp.trapezoid(x, W.cumsum()), X),
    "diff": (lambda x: rt.diff(x, 2, axis=1), lambda x: jnp.diff(x, 2, axis=1), X),
    "kron": (lambda x: rt.kron(x, rt.asarray(Y[:2, :2])), lambda x: jnp.kron(x, Y[:2, :2]), X),
    "vdot": (lambda x: rt.vdot(x, rt.asarray(Y)), lambda x: jnp.vdot(x, Y), X),
    "rot90": (lambda x: rt.rot90(x, 3), lambda x: jnp.rot90(x, 3), X),
    "append": (lambda x: rt.append(x, x[:1], axis=0), lambda x: jnp.append(x, x[:1], axis=0), X),
    "interp": (
        lambda x: rt.interp(rt.asarray(np.array([-3.0, -0.5, 0.25, 1.0, 4.0])), x[0], x[1] * 2),
        lambda x: jnp.interp(np.array([-3.0, -0.5, 0.25, 1.0, 4.0]), x[0], x[1] * 2),
        np.sort(X[:2], axis=1),
    ),
    "polyval": (lambda x: rt.polyval(x[0], x[1]), lambda x: jnp.polyval(x[0], x[1]), X),
    "vander": (lambda x: rt.vander(x[0], 3), lambda x: jnp.vander(x[0], 3), X),
    "convolve": (lambda x: rt.convolve(x[0], x[1, :3], "same"), lambda x: jnp.convolve(x[0], x[1, :3], "same"), X),
    "correlate": (lambda x: rt.correlate(x[0], x[1, :2], "full"), lambda x: jnp.correlate(x[0], x[1, :2], "full"), X),
    "cov": (rt.cov, jnp.cov, X),
    "corrcoef": (lambda x: rt.corrcoef(x, rowvar=False), lambda x: jnp.corrcoef(x, rowvar=False), X),
    "matvec": (lambda x: rt.matvec(x, rt.asarray(W)), lambda x: jnp.matvec(x, W), X),
    "vecmat": (lambda x: rt.vecmat(rt.asarray(W[:3]), x), lambda x: jnp.vecmat(W[:3], x), X),
    "logspace": (lambda x: rt.logspace(x[0, 0], x[1, 0], 4), lambda x: jnp.logspace(x[0, 0], x[1, 0], 4), X),
}


def _weighted_total(out: Any, lib: Any) -> Any:
    weights = np.arange(1.0, 1.0 + int(np.prod(out.shape))).reshape(out.shape)
    return lib.sum(out * (rt.asarray(weights) if lib is rt else weights))


@pytest.mark.parametrize("label", list(ROWS))
def test_gradient_matches_jax(label: str) -> None:
    ours, theirs, x = ROWS[label]
    want = jax.jit(jax.grad(lambda v: _weighted_total(theirs(v), jnp)))(x)  # (one compile, not one per primitive)
    got = autodiff.grad(lambda v: _weighted_total(ours(v), rt))(rt.asarray(x))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-10, atol=1e-12, err_msg=label)


@pytest.mark.parametrize("label", list(ROWS))
def test_vmap_and_jit_match(label: str) -> None:
    ours, theirs, x = ROWS[label]
    batch = np.stack([x, x[::-1] * 0.5])
    want = jax.jit(jax.vmap(theirs))(batch)
    got = autodiff.vmap(ours)(rt.asarray(batch))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=label)
    eager = ours(rt.asarray(x))
    np.testing.assert_allclose(autodiff.jit(ours)(rt.asarray(x)).numpy(), eager.numpy(), rtol=1e-14, atol=1e-15,
                               equal_nan=True, err_msg=label)  # fmt: skip


def test_sincs_derivative_at_zero_is_the_limit() -> None:
    """d/dx sinc(x) = (cos(pi x) - sinc(x)) / x, whose limit at 0 is 0: no 0/0 leaks into it."""
    g = autodiff.grad(lambda v: rt.sum(rt.sinc(v)))(rt.asarray(np.array([0.0, 1e-9, 0.5])))
    want = jax.grad(lambda v: jnp.sum(jnp.sinc(v)))(np.array([0.0, 1e-9, 0.5]))
    assert np.isfinite(g.numpy()).all() and g.numpy()[0] == 0.0
    np.testing.assert_allclose(g.numpy(), np.asarray(want), rtol=1e-9, atol=1e-12)


def test_a_nan_gets_no_cotangent() -> None:
    g = autodiff.grad(lambda v: rt.nansum(v) + rt.nanmean(v) + rt.nanmax(v))(rt.asarray(XN))
    assert (g.numpy()[np.isnan(XN)] == 0).all() and np.isfinite(g.numpy()).all()


# -- Hypothesis: shapes, axes, lengths and modes against NumPy ----------------------------------------


NAN_REDUCTIONS = ["nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "nanprod", "nanmedian", "median", "ptp"]


def _same_as_numpy(label: str, got: Any, want: Any) -> None:
    got_a, want_a = np.asarray(got.numpy() if isinstance(got, rt.Tensor) else got), np.asarray(want)
    assert got_a.shape == want_a.shape and got_a.dtype == want_a.dtype, (label, got_a.shape, want_a.shape)
    np.testing.assert_allclose(got_a, want_a, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=label)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
def test_reductions_and_quantiles_equal_numpys(data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape)
    x[rng.random(shape) < 0.25] = np.nan
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    keepdims = data.draw(st.booleans())
    q = np.sort(rng.random(2))
    with rt.use_policy("numpy"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy warns on all-NaN slices)
        for name in NAN_REDUCTIONS:
            want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
            _same_as_numpy(name, getattr(rt, name)(rt.asarray(x), axis=axis, keepdims=keepdims), want)
        for name in ("quantile", "nanquantile"):
            want = getattr(np, name)(x, q, axis=axis, keepdims=keepdims)
            _same_as_numpy(name, getattr(rt, name)(rt.asarray(x), q, axis=axis, keepdims=keepdims), want)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 6), seed=st.integers(0, 2**16), differences=st.integers(0, 7),
       sections=st.integers(1, 5))  # fmt: skip
def test_sequences_equal_numpys(n: int, m: int, seed: int, differences: int, sections: int) -> None:
    rng = np.random.default_rng(seed)
    a, v = rng.standard_normal(n), rng.standard_normal(m)
    with rt.use_policy("numpy"):
        for name in ("convolve", "correlate"):
            for mode in ("full", "same", "valid"):
                _same_as_numpy(f"{name}-{mode}", getattr(rt, name)(rt.asarray(a), rt.asarray(v), mode),
                               getattr(np, name)(a, v, mode))  # fmt: skip
        table = np.sort(rng.integers(0, 4, n).astype(np.float64))
        values = rng.integers(-1, 5, m).astype(np.float64)
        for side in ("left", "right"):
            got = rt.searchsorted(rt.asarray(table), rt.asarray(values), side=side)
            _same_as_numpy(f"searchsorted-{side}", got, np.searchsorted(table, values, side=side))
        _same_as_numpy("diff", rt.diff(rt.asarray(a), differences), np.diff(a, differences))
        for k, (got, want) in enumerate(zip(rt.array_split(rt.asarray(a), sections), np.array_split(a, sections),
                                            strict=True)):  # fmt: skip
            _same_as_numpy(f"array_split-{k}", got, want)
        xp = np.sort(rng.standard_normal(m))
        _same_as_numpy("interp", rt.interp(rt.asarray(a * 2), rt.asarray(xp), rt.asarray(v)), np.interp(a * 2, xp, v))
        _same_as_numpy("kron", rt.kron(rt.asarray(a), rt.asarray(v)), np.kron(a, v))
