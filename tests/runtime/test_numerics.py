"""Numerics users check against (issue 13, section 6), with jax.lax / jax.numpy on CPU as the oracle.

- ``sum_`` / ``mean`` (``jnp.sum`` / ``jnp.mean``, what ``Tensor.sum`` / ``Tensor.mean``
  mean) accumulate float16 and bfloat16 in float32, recorded as explicit
  ``convert -> reduce_sum -> convert``; ``reduce_sum`` stays ``lax.reduce_sum``.
- complex ``log1p`` is accurate near 0 (it was ``log(1 + z)``).
- float16 ``expm1`` follows XLA over every float16, the smallest subnormal included.
- ``max`` / ``min`` and ``reduce_max`` / ``reduce_min`` order signed zeros as XLA
  (-0.0 < +0.0); complex ``max`` / ``min`` pick as XLA does.
- ``pad`` of a 0-d operand is 0-d.
- complex products with non-finite parts follow NumPy's formula, which is XLA's
  for inf/NaN operands (the documented choice, docs/parity.md).
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import runtime as rt
import runtime.core.dtypes as dt
from runtime.core import lax as F
from runtime.core.dtypes import DType
from runtime.core.kernels import KERNELS
from tests.runtime.bit_helpers import assert_same_bits

jax.config.update("jax_enable_x64", True)

#: Real floats JAX runs on CPU (the 6- and 4-bit formats have no XLA CPU kernels; float8_e8m0fnu has no zero).
REAL_FLOATS = [
    dt.float16, dt.bfloat16, dt.float32, dt.float64,
    *(d for d in dt.SMALL_FLOATS if d.bits == 8 and d is not dt.float8_e8m0fnu),
]  # fmt: skip
COMPLEX = [dt.complex64, dt.complex128]


def _ids(d: DType) -> str:
    return d.short


def kernel(op: str, *arrays: np.ndarray, **params: Any) -> np.ndarray:
    (out,) = KERNELS[op](*arrays, **params)
    return np.asarray(out)


# -- jnp.sum / jnp.mean: float16 and bfloat16 accumulate in float32 ----------------------------------


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16], ids=_ids)
def test_mean_of_many_narrow_values_does_not_overflow(d: DType) -> None:
    # the example: 10000 tens in float16 summed in float16 overflow (1e5 > 65504)
    x = np.full(10000, 10.0)
    got = rt.mean(rt.asarray(x, dtype=d))
    assert_same_bits(got, jnp.mean(jnp.asarray(x, dtype=d.storage)))
    assert float(np.asarray(got)) == 10.0
    # 100000 elements: the count itself does not fit float16 (it divides in float32)
    assert float(np.asarray(rt.mean(rt.asarray(np.full(100000, 10.0), dtype=d)))) == 10.0


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16], ids=_ids)
@pytest.mark.parametrize(("shape", "axis"), [((4097,), None), ((5000,), 0), ((70, 40), 1), ((6, 7, 8), (0, 2))])
def test_sum_and_mean_match_jnp(d: DType, shape: tuple[int, ...], axis: Any) -> None:
    # The float32 sum follows XLA's order below 4096 elements over one axis (docs/parity.md); above
    # (YNNPACK) and over several axes it may differ in float32's last bit, which rounding hides here.
    rng = np.random.default_rng(len(shape) * 1000 + shape[0])
    x = (3 * rng.standard_normal(shape) + 1).astype(d.storage)
    jx = jnp.asarray(x)
    assert_same_bits(F.sum_(rt.asarray(x), axis), jnp.sum(jx, axis=axis))
    got_mean = np.asarray(rt.mean(rt.asarray(x), axis))
    want_mean = np.asarray(jnp.mean(jx, axis=axis))
    # XLA divides by the broadcast count as a multiplication by its reciprocal (docs/parity.md,
    # Tolerances): one float32 ulp at most, which rounding to d hides but for the rare tie
    np.testing.assert_allclose(
        got_mean.astype(np.float64), want_mean.astype(np.float64), rtol=float(ml_dtypes.finfo(d.storage).eps), atol=0
    )


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16], ids=_ids)
def test_reduce_sum_stays_lax_reduce_sum(d: DType) -> None:
    # lax.reduce_sum sums in the input dtype (bfloat16 stalls, float16 overflows); jnp.sum does not
    x = np.full(4097, 10.0).astype(d.storage)
    lax_sum = lax.reduce_sum(jnp.asarray(x), (0,))
    assert_same_bits(F.reduce_sum(rt.asarray(x), (0,)), lax_sum)
    if d is dt.bfloat16:
        assert float(np.asarray(F.sum_(rt.asarray(x)))) == float(jnp.sum(jnp.asarray(x))) != float(lax_sum)


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16], ids=_ids)
def test_sum_and_mean_record_the_float32_accumulation_explicitly(d: DType) -> None:
    x = rt.asarray(np.ones((3, 4)), dtype=d)
    mean = rt.trace(lambda t: rt.mean(t, 1), x)
    assert [e.op.name for e in mean.eqns] == ["convert", "reduce_sum", "div", "convert"]
    assert [str(e.outputs[0].dtype.short) for e in mean.eqns] == ["f32", "f32", "f32", d.short]
    total = rt.trace(lambda t: F.sum_(t), x)
    assert [e.op.name for e in total.eqns] == ["convert", "reduce_sum", "convert"]
    # other dtypes record the plain reduction, as jnp does
    plain = rt.trace(lambda t: F.sum_(t, 0), rt.asarray(np.ones((3, 4)), dtype=dt.float32))
    assert [e.op.name for e in plain.eqns] == ["reduce_sum"]


def test_tensor_methods_are_jnp_sum_and_mean() -> None:
    x = rt.asarray(np.full(10000, 10.0), dtype=rt.float16)
    assert float(np.asarray(x.mean())) == 10.0
    y = rt.asarray(np.full(4097, 10.0), dtype=rt.bfloat16)
    assert float(np.asarray(y.sum())) == float(jnp.sum(jnp.asarray(np.full(4097, 10.0), dtype=jnp.bfloat16)))


# -- complex log1p -------------------------------------------------------------------------------


def _exact_log1p(z: complex) -> tuple[float, float]:
    """(Re, Im) of log(1 + z) for a finite z near 0, from exact rational arithmetic and 40 digits."""
    x, y = Fraction(z.real), Fraction(z.imag)
    t = 2 * x + x * x + y * y  # |1 + z|**2 - 1, exactly
    with decimal.localcontext() as ctx:
        ctx.prec = 40
        re = (decimal.Decimal(t.numerator) / decimal.Decimal(t.denominator) + 1).ln() / 2
    return float(re), math.atan2(z.imag, 1 + z.real)


def _ulps(got: float, want: float, storage: np.dtype[Any]) -> float:
    return abs(got - want) / float(np.spacing(storage.type(abs(want))))


@pytest.mark.parametrize("d", COMPLEX, ids=_ids)
def test_complex_log1p_is_accurate_near_zero(d: DType) -> None:
    part = np.dtype(np.float32 if d is dt.complex64 else np.float64)
    tiny = float(np.finfo(np.float32).tiny if d is dt.complex64 else np.finfo(np.float64).tiny)
    rng = np.random.default_rng(13)
    n = 300
    # magnitudes 1e-15 .. 0.3 (no subnormal squares, which XLA would flush), both signs,
    # and points on the circle |1 + z| = 1, where 2x and x**2 + y**2 cancel
    x = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-15, -0.5, n)
    y = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-15, -0.5, n)
    theta = rng.uniform(-0.5, 0.5, 50)
    points = np.concatenate([x + 1j * y, np.expm1(1j * theta), [1e-10 + 1e-10j, 1e-10, -1e-10 + 1e-12j]])
    z = points.astype(d.storage)
    got = kernel("log1p", z)
    worst = 0.0
    for zi, gi in zip(z, got, strict=True):
        re, im = _exact_log1p(complex(zi))
        if abs(re) < tiny:
            continue  # exactly on the circle: Re is 0 or below the normal range
        worst = max(worst, _ulps(float(gi.real), re, part), _ulps(float(gi.imag), im, part))
    assert worst <= 4, f"complex log1p is {worst} ulp off"


def test_complex_log1p_matches_jax_where_jax_is_accurate() -> None:
    # the example: log(1 + z) was 4e9 ulp off for complex128 at 1e-10
    z = np.array([1e-10 + 1e-10j, 1e-10 + 0j, -1e-10 + 1e-12j, 1e-5 - 3e-6j, -0.5 + 0.3j, 3 + 4j], np.complex128)
    got = kernel("log1p", z)
    want = np.asarray(lax.log1p(jnp.asarray(z)))
    np.testing.assert_allclose(got.real, want.real, rtol=4 * np.finfo(np.float64).eps, atol=0)
    np.testing.assert_allclose(got.imag, want.imag, rtol=4 * np.finfo(np.float64).eps, atol=0)


@pytest.mark.parametrize("d", COMPLEX, ids=_ids)
def test_complex_log1p_special_values_match_jax(d: DType) -> None:
    inf, nan = np.inf, np.nan
    z = np.array([0j, complex(-0.0, 0.0), complex(0.0, -0.0), -1 + 0j, -2 + 0j, complex(-2, -0.0),
                  complex(inf, 1), complex(-inf, 1), complex(1, inf), complex(nan, 0), complex(0, nan),
                  1e30 + 1e30j, -0.5 + 0j, 0.5j, complex(-3, -0.0), complex(-0.5, -0.0)], d.storage)  # fmt: skip
    assert_same_bits(kernel("log1p", z), lax.log1p(jnp.asarray(z)))


# -- float16 expm1 ---------------------------------------------------------------------------------


def test_float16_expm1_of_the_smallest_subnormal_is_exact() -> None:
    tiny = np.array([2.0**-24, -(2.0**-24)], np.float16)
    assert_same_bits(kernel("expm1", tiny), tiny)


def test_float16_expm1_matches_xla_on_every_float16() -> None:
    every = np.arange(2**16, dtype=np.uint16).view(np.float16)
    assert_same_bits(kernel("expm1", every), lax.expm1(jnp.asarray(every)))


# -- max / min of signed zeros -------------------------------------------------------------------


def _zero_pairs(d: DType) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, np.nan, -0.0], np.float64)
    y = np.array([-0.0, 0.0, 0.0, -0.0, -0.0, 0.0, -0.0, np.nan], np.float64)
    return x.astype(d.storage), y.astype(d.storage)


@pytest.mark.parametrize("d", REAL_FLOATS, ids=_ids)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_order_signed_zeros_as_xla(d: DType, op: str) -> None:
    x, y = _zero_pairs(d)
    want = getattr(lax, op)(jnp.asarray(x), jnp.asarray(y))
    assert_same_bits(kernel(op, x, y), want)
    assert_same_bits(np.asarray(getattr(F, op)(rt.asarray(x, dtype=d), rt.asarray(y, dtype=d))), want)
    # 0-d operands and a broadcast scalar take the same path
    assert_same_bits(kernel(op, x[0], y[0]), want[0])
    assert_same_bits(kernel(op, x, y[:1]), getattr(lax, op)(jnp.asarray(x), jnp.asarray(y[:1])))


def _signed_zero_rows(n: int) -> np.ndarray:
    rows = np.full((4, n), -0.0)
    rows[0, 0] = rows[1, n // 2] = rows[2, n - 1] = 0.0  # one +0.0 among -0.0s; the last row all -0.0
    return rows


@pytest.mark.parametrize("d", REAL_FLOATS, ids=_ids)
@pytest.mark.parametrize("n", [2, 40, 1100])
def test_reduce_max_min_order_signed_zeros_as_xla(d: DType, n: int) -> None:
    rows = _signed_zero_rows(n).astype(d.storage)
    # XLA vectorises float32/float64 max/min across rows once windows appear (and from 4096
    # elements on), and its vector max does not order zeros: there castwise still does (one row
    # at a time below is what XLA orders too). docs/parity.md says so.
    groups = [rows[i : i + 1] for i in range(len(rows))] if d.bits >= 32 and n > 32 else [rows]
    for op, sign in (("reduce_max", 1), ("reduce_min", -1)):
        for g in groups:
            x = g * d.storage.type(sign)
            assert_same_bits(kernel(op, x, axes=(1,)), getattr(lax, op)(jnp.asarray(x), (1,)))
    if d.bits >= 32 and n > 32:
        return
    both = np.stack([rows, rows[::-1]])
    assert_same_bits(kernel("reduce_max", both, axes=(0, 2)), lax.reduce_max(jnp.asarray(both), (0, 2)))


@pytest.mark.parametrize("d", COMPLEX, ids=_ids)
@pytest.mark.parametrize("op", ["max", "min"])
def test_complex_max_min_pick_as_xla(d: DType, op: str) -> None:
    nan = np.nan
    x = np.array(
        [complex(nan, 0), 1, complex(1, nan), 1 + 1j, 1, complex(0, -0.0), complex(-0.0, 0), 2 - 1j], d.storage
    )
    y = np.array([1, complex(nan, 0), 1 + 1j, complex(1, nan), 1, 0j, complex(0, -0.0), 2 + 1j], d.storage)
    assert_same_bits(kernel(op, x, y), getattr(lax, op)(jnp.asarray(x), jnp.asarray(y)))


# -- pad of a 0-d operand ------------------------------------------------------------------------


@pytest.mark.parametrize("d", dt.ALL_DTYPES, ids=_ids)
def test_pad_of_a_0d_operand_is_0d(d: DType) -> None:
    x = rt.asarray(np.ones((), np.float64), dtype=d) if d is not dt.bool_ else rt.asarray(np.True_)
    fill = 2 if d.kind in ("float", "complex") else 0
    out = F.pad(x, fill, ())
    assert out.shape == () and out.dtype is d
    assert_same_bits(np.asarray(out), np.asarray(x))


def test_pad_of_a_0d_operand_matches_lax() -> None:
    assert_same_bits(
        np.asarray(F.pad(rt.asarray(np.float32(3.0)), 0.0, ())), lax.pad(jnp.float32(3.0), jnp.float32(0), ())
    )


# -- complex products with non-finite parts --------------------------------------------------------

_PARTS = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan]


def _grid(storage: np.dtype[Any], parts: list[float]) -> tuple[np.ndarray, np.ndarray]:
    values = [complex(a, b) for a in parts for b in parts]
    x = np.array([p for p in values for _ in values], storage)
    y = np.array([q for _ in values for q in values], storage)
    return x, y


@pytest.mark.parametrize("d", COMPLEX, ids=_ids)
def test_nonfinite_complex_products_follow_numpy_and_xla(d: DType) -> None:
    # The documented choice (docs/parity.md): (a + bi)(c + di) = (ac - bd) + (ad + bc)i, as NumPy and
    # XLA compute it, with no C99 Annex G recovery: (inf + 0i)(1 + 0i) is inf + nan i in all three.
    x, y = _grid(d.storage, _PARTS)
    with np.errstate(all="ignore"):
        numpy_product = x * y
        got = kernel("mul", x, y)
    assert_same_bits(got, numpy_product)
    assert_same_bits(got, lax.mul(jnp.asarray(x), jnp.asarray(y)))
    with np.errstate(invalid="ignore"):
        one = kernel("mul", np.array([complex(np.inf, 0)], d.storage), np.array([1 + 0j], d.storage))
    assert np.isposinf(one.real[0]) and np.isnan(one.imag[0])


def test_complex_products_that_overflow_midway_follow_numpy_not_xlas_fused_multiply_add() -> None:
    # XLA fuses complex128 products into multiply-adds, whose intermediate product does not
    # overflow: there castwise gives NumPy's inf/nan (docs/parity.md, Tolerances)
    x = np.array([1 - 2.5j, 1 + 1e308j], np.complex128)
    y = np.array([1e308 + 1e308j, -2.5 + np.inf * 1j], np.complex128)
    with np.errstate(all="ignore"):
        assert_same_bits(kernel("mul", x, y), x * y)
