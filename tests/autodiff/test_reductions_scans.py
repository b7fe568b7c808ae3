"""argmax/argmin, reduce_and/or/xor, reduce_precision, the cumulative reductions and logsumexp.

Values against jax.lax / jax.numpy (table-driven over dtypes: ties and NaNs for argmax/argmin,
``reverse=True`` for the scans, lengths across XLA's 16-element scan blocks), derivatives with
``check_grads`` (JVP and VJP, orders 1 and 2) and against ``jax.jvp`` / ``jax.vjp``.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import autodiff  # noqa: E402
import runtime as rt  # noqa: E402
from autodiff.testing import check_grads  # noqa: E402
from runtime.core.dtypes import DType  # noqa: E402
from tests.autodiff.rule_helpers import assert_close, x64  # noqa: E402

SCANS = ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
f32, f64, c64, c128 = rt.float32, rt.float64, rt.complex64, rt.complex128


def _same(got: np.ndarray, want: Any) -> None:
    """Bit for bit (NaNs anywhere count as equal NaNs)."""
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind in "fcV" or got.dtype in (np.dtype(ml_dtypes.bfloat16),):
        g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
        w = want.astype(g.dtype)
        nan = np.isnan(g) & np.isnan(w)
        np.testing.assert_array_equal(np.where(nan, 0, g), np.where(nan, 0, w))
        if got.dtype.kind == "f":  # signed zeros too
            np.testing.assert_array_equal(np.signbit(g[~nan]), np.signbit(w[~nan]))
    else:
        np.testing.assert_array_equal(got, want)


# -- argmax / argmin ------------------------------------------------------------------------------

ARG_DTYPES = ["bool", "int8", "int32", "uint8", "int64", "int4", "float16", "bfloat16", "float32", "float64",
              "float8_e4m3fn", "float8_e5m2"]  # fmt: skip


def _ties_and_nans(d: DType) -> np.ndarray:
    rng = np.random.default_rng(3)
    if d.kind == "bool":
        return rng.integers(0, 2, (4, 6)).astype(bool)
    x = rng.integers(-3, 4, (4, 6)).astype(np.float64)  # few values: ties in every row
    x[0, :] = 2.0  # all tied
    if d.kind == "float":
        x[1, 2] = x[1, 4] = np.nan  # the first NaN wins
        x[2, 1] = -0.0
        x[2, 3] = 0.0  # -0.0 == +0.0: the first index
        x[2, [0, 2, 4, 5]] = -1.0
    return x.astype(d.storage)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ARG_DTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_arg_extreme_matches_lax(name: str, dtype: str, axis: int) -> None:
    d = rt.dtype(dtype)
    x = _ties_and_nans(d)
    with x64():
        want = np.asarray(getattr(lax, name)(x, axis, np.int32))
    got = getattr(rt.lax, name)(rt.asarray(x, d), axis, rt.int32)
    assert got.dtype is rt.int32
    _same(got.numpy(), want)


@pytest.mark.parametrize("index_dtype", ["uint8", "int16", "int64"])
def test_arg_extreme_index_dtype(index_dtype: str) -> None:
    x = np.random.default_rng(0).standard_normal((3, 7))
    with x64():
        want = np.asarray(lax.argmax(x, 1, np.dtype(index_dtype)))
    _same(rt.lax.argmax(rt.asarray(x), 1, index_dtype).numpy(), want)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_tensor_argmax_argmin_methods_are_numpys(axis: int | None, keepdims: bool) -> None:
    x = _ties_and_nans(f64)
    t = rt.asarray(x)
    for name in ("argmax", "argmin"):
        got = getattr(t, name)(axis=axis, keepdims=keepdims)
        want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
        assert got.dtype is rt.int64
        np.testing.assert_array_equal(got.numpy(), want)


def test_argmax_is_not_differentiable_and_records_no_gradient() -> None:
    assert not rt.ops.argmax.differentiable and not rt.ops.argmin.differentiable
    x = rt.asarray(np.array([1.0, 3.0, 2.0]), requires_grad=True)
    y = rt.lax.mul(x, rt.lax.convert(rt.lax.argmax(x, 0), rt.float64))
    y.backward(cotangent=rt.asarray(np.ones(3)))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])  # argmax is a constant


# -- reduce_and / reduce_or / reduce_xor -------------------------------------------------------------


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or", "reduce_xor"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1), ()])
def test_bit_reductions_match_lax(name: str, dtype: str, axes: tuple[int, ...]) -> None:
    d = rt.dtype(dtype)
    rng = np.random.default_rng(1)
    x = (
        rng.integers(0, 2, (3, 5)).astype(bool)
        if d.kind == "bool"
        else rng.integers(-100, 100, (3, 5)).astype(d.storage)
    )
    with x64():
        want = np.asarray(getattr(lax, name)(x, axes))
    _same(getattr(rt.lax, name)(rt.asarray(x, d), axes).numpy(), want)


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or", "reduce_xor"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16"])
def test_empty_bit_reductions_give_lax_identities(name: str, dtype: str) -> None:
    d = rt.dtype(dtype)
    x = np.zeros((0, 3), d.storage)
    with x64():
        want = np.asarray(getattr(lax, name)(x, (0,)))
    _same(getattr(rt.lax, name)(rt.asarray(x, d), (0,)).numpy(), want)


# -- reduce_precision ----------------------------------------------------------------------------------

_FORMATS = [(5, 10), (8, 7), (4, 3), (5, 2), (2, 1), (3, 0), (1, 0), (8, 23), (11, 52), (6, 20)]


def _all_bits(storage: Any, bits: int) -> np.ndarray:
    return np.arange(2**bits, dtype=np.uint64).astype(np.dtype(f"uint{bits}")).view(storage)


def _check_precision(x: np.ndarray, formats: list[tuple[int, int]]) -> None:
    d = rt.dtype(x.dtype)
    for e, m in formats:
        with x64():
            want = np.asarray(lax.reduce_precision(x, exponent_bits=e, mantissa_bits=m))
        got = rt.lax.reduce_precision(rt.asarray(x, d), e, m).numpy()
        assert got.dtype == want.dtype
        with np.errstate(invalid="ignore"):
            nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
        width = f"uint{got.dtype.itemsize * 8}"
        np.testing.assert_array_equal(np.where(nan, 0, got.view(width)), np.where(nan, 0, want.view(width)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reduce_precision_is_bit_exact_sampled(dtype: str) -> None:
    storage = np.dtype(dtype)
    width = np.dtype(f"uint{storage.itemsize * 8}")
    bits = np.random.default_rng(2).integers(0, np.iinfo(width).max, 20000, dtype=width, endpoint=True)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 65504, 65520, 3.4e38, 2**-14], storage)
    _check_precision(np.concatenate([bits.view(storage), specials]), _FORMATS)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz"])
def test_reduce_precision_is_bit_exact_on_every_value_of_narrow_formats(dtype: str) -> None:
    d = rt.dtype(dtype)
    _check_precision(_all_bits(d.storage, d.bits), _FORMATS[:6])


# -- cumulative reductions: values ---------------------------------------------------------------------

SCAN_DTYPES = ["int8", "int32", "uint8", "int4", "float16", "bfloat16", "float32", "float64", "float8_e4m3fn",
               "complex64", "complex128"]  # fmt: skip


def _scan_input(name: str, d: DType, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if d.kind in ("int", "uint"):
        lo = 0 if d.kind == "uint" else -3
        return rng.integers(lo, 4, (3, n)).astype(d.storage)
    x = rng.standard_normal((3, n)) * (0.2 if name == "cumprod" else 2.0)
    if name == "cumprod":
        x = 1 + x
    if d.kind == "complex":
        x = x + 0.5j * rng.standard_normal((3, n))
    if n > 4 and d.kind == "float":
        x[0, 3] = np.nan  # propagates
        x[1, 2] = -0.0
    return x.astype(d.storage)


@pytest.mark.parametrize("name", SCANS)
@pytest.mark.parametrize("dtype", SCAN_DTYPES)
@pytest.mark.parametrize("n", [1, 5, 16, 17, 100, 300])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_match_lax(name: str, dtype: str, n: int, reverse: bool) -> None:
    d = rt.dtype(dtype)
    if name == "cumlogsumexp" and d.kind != "float":
        pytest.skip("cumlogsumexp takes floats (lax: -inf has no integer; castwise: no complex yet)")
    x = _scan_input(name, d, n)
    with x64():
        want = np.asarray(getattr(lax, name)(x, axis=1, reverse=reverse))
    got = getattr(rt.lax, name)(rt.asarray(x, d), 1, reverse).numpy()
    # exp/log1p are NumPy's in float32/float64 (XLA has its own); complex multiplication rounds
    # differently in XLA: those compare within tolerance, everything else bit for bit
    if (name == "cumlogsumexp" and d in (f32, f64)) or (name == "cumprod" and d.kind == "complex"):
        assert_close(f"{name} {dtype} n={n} reverse={reverse}", got, want, d)
    else:
        _same(got, want)


@pytest.mark.parametrize("name", SCANS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_scans_along_any_axis(name: str, axis: int) -> None:
    x = np.random.default_rng(5).standard_normal((20, 3, 18))
    with x64():
        want = np.asarray(getattr(lax, name)(x, axis=axis % 3, reverse=True))
    assert_close(name, getattr(rt.lax, name)(rt.asarray(x), axis, True).numpy(), want, f64)


def test_scan_of_an_empty_axis_is_empty() -> None:
    for name in SCANS:
        out = getattr(rt.lax, name)(rt.asarray(np.zeros((0, 3))), 0)
        assert out.shape == (0, 3)


# -- derivatives ------------------------------------------------------------------------------------------


def _grad_input(name: str, d: DType, n: int = 6) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 1.5, (2, n)) * rng.choice([-1, 1], (2, n))
    if name in ("cummax", "cummin"):  # distinct values, finite differences stay off the kinks
        x = rng.permutation(np.linspace(-2, 2, 2 * n)).reshape(2, n)
    if d.kind == "complex":
        x = x + 0.3j * rng.standard_normal((2, n))
    return x.astype(d.storage)


GRAD_CASES = [(n, d) for n in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp") for d in (f32, f64)] + [
    (n, d) for n in ("cumsum", "cumprod") for d in (c64, c128)
]


@pytest.mark.parametrize(("name", "dtype"), GRAD_CASES, ids=lambda v: getattr(v, "short", v))
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_check_grads(name: str, dtype: DType, reverse: bool) -> None:
    x = rt.asarray(_grad_input(name, dtype), dtype)
    check_grads(lambda v: getattr(rt.lax, name)(v, 1, reverse), [x], order=2, modes=("fwd", "rev"))


def _jax_parity(f_ours: Any, f_jax: Any, x: np.ndarray, d: DType) -> None:
    rng = np.random.default_rng(11)
    with x64():
        out_shape = np.shape(f_jax(jnp.asarray(x)))
    t = rng.standard_normal(x.shape)
    ct = rng.standard_normal(out_shape)
    if d.kind == "complex":
        t, ct = t + 1j * rng.standard_normal(x.shape), ct + 1j * rng.standard_normal(out_shape)
    t, ct = t.astype(d.storage), ct.astype(d.storage)
    with x64():
        _, want_t = jax.jvp(f_jax, (jnp.asarray(x),), (jnp.asarray(t),))
        _, vjp_fn = jax.vjp(f_jax, jnp.asarray(x))
        (want_ct,) = vjp_fn(jnp.asarray(np.conj(ct)))
    _, got_t = autodiff.jvp(f_ours, [rt.asarray(x, d)], [rt.asarray(t, d)])
    _, ours_vjp = autodiff.vjp(f_ours, rt.asarray(x, d))
    (got_ct,) = ours_vjp(rt.asarray(ct, d))
    assert_close("JVP", got_t.numpy(), np.asarray(want_t), d)
    assert_close("VJP", got_ct.numpy(), np.conj(np.asarray(want_ct)), d)


@pytest.mark.parametrize("name", SCANS)
@pytest.mark.parametrize("dtype", [f32, f64, c64, c128], ids=lambda d: d.short)
@pytest.mark.parametrize("n", [1, 2, 5, 8, 19])
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_derivatives_match_jax_with_ties_and_zeros(name: str, dtype: DType, n: int, reverse: bool) -> None:
    if name == "cumlogsumexp" and dtype.kind == "complex":
        pytest.skip("castwise's cumlogsumexp takes real floats")
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n))
    if n > 3:
        x[0, 2] = x[0, 1]  # a tie: lax.max's derivative splits it in the scan's tree
        x[1, 1] = 0.0  # a zero factor: products without division
    if dtype.kind == "complex":
        x = x + 1j * rng.standard_normal((2, n))
    x = x.astype(dtype.storage)
    _jax_parity(lambda v: getattr(rt.lax, name)(v, 1, reverse),
                lambda v: getattr(lax, name)(v, axis=1, reverse=reverse), x, dtype)  # fmt: skip


@pytest.mark.parametrize("dtype", [f32, f64], ids=lambda d: d.short)
def test_reduce_precision_derivatives(dtype: DType) -> None:
    x = np.random.default_rng(4).standard_normal((3, 4)).astype(dtype.storage)
    # JAX treats the rounding as linear (its tangent and cotangent are rounded alike); a rounding is
    # not linear, so check_grads' finite differences and adjoint identity do not apply: JAX is the oracle
    _jax_parity(lambda v: rt.lax.reduce_precision(v, 5, 7), lambda v: lax.reduce_precision(v, 5, 7), x, dtype)


# -- logsumexp ---------------------------------------------------------------------------------------------


_LSE_INPUTS = {
    "plain": np.array([[0.3, -1.2, 2.5, 0.1], [5.0, 5.0, -3.0, 0.0], [-0.5, 0.25, 0.75, 1e-3]]),
    "large": np.array([[1000.0, 999.0, -1000.0, 3.0], [-800.0, -801.0, -799.5, -900.0], [0.0, 1.0, 2.0, 3.0]]),
    "inf": np.array([[-np.inf] * 4, [np.inf, 1.0, 2.0, 3.0], [-np.inf, 0.0, 1.0, -np.inf]]),
    "nan": np.array([[np.nan, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]]),
}


@pytest.mark.parametrize("inputs", list(_LSE_INPUTS))
@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (1, False), (0, True), ((0, 1), False), (-1, True)])
@pytest.mark.parametrize("dtype", [f32, f64], ids=lambda d: d.short)
def test_logsumexp_matches_jax(inputs: str, axis: Any, keepdims: bool, dtype: DType) -> None:
    x = _LSE_INPUTS[inputs].astype(dtype.storage)
    with x64():
        want = np.asarray(jax.nn.logsumexp(x, axis=axis, keepdims=keepdims))
    got = rt.lax.logsumexp(rt.asarray(x), axis, keepdims).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])  # -inf, inf and NaN exactly where JAX has them
    assert_close(f"logsumexp {inputs} axis={axis}", got[finite], want[finite], dtype)


@pytest.mark.parametrize("dtype", [f32, f64], ids=lambda d: d.short)
def test_logsumexp_gradient_is_softmax(dtype: DType) -> None:
    x = _LSE_INPUTS["plain"].astype(dtype.storage)
    _jax_parity(lambda v: rt.lax.logsumexp(v, 1), lambda v: jax.nn.logsumexp(v, axis=1), x, dtype)
    check_grads(lambda v: rt.lax.logsumexp(v, 1), [rt.asarray(x)], order=2, modes=("fwd", "rev"))
    g = autodiff.grad(lambda v: rt.lax.reduce_sum(rt.lax.logsumexp(v, 1), (0,)))(rt.asarray(x))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    assert_close("softmax", g.numpy(), e / e.sum(axis=1, keepdims=True), dtype)


def test_logsumexp_records_ordinary_ops() -> None:
    graph = rt.trace(lambda v: rt.lax.logsumexp(v, 1), rt.asarray(np.ones((2, 3))))
    names = {eqn.op.name for eqn in graph.eqns}
    assert names <= {"reduce_max", "is_finite", "select", "full", "broadcast_in_dim", "sub", "exp", "reduce_sum",
                     "log", "add"}, names  # fmt: skip
    assert "reduce_max" in names and "exp" in names


# -- batching ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCANS)
@pytest.mark.parametrize("in_axis", [0, 1])
def test_scans_vmap_like_jax(name: str, in_axis: int) -> None:
    x = np.random.default_rng(9).standard_normal((4, 5))
    with x64():
        want = np.asarray(jax.vmap(lambda v: getattr(lax, name)(v, axis=0, reverse=True), in_axes=in_axis)(x))
    got = autodiff.vmap(lambda v: getattr(rt.lax, name)(v, 0, True), in_axes=in_axis)(rt.asarray(x))
    assert_close(name, got.numpy(), want, f64)
