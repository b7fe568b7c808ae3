"""Reductions in XLA CPU's order, and float8_e8m0fnu, bit for bit against jax.lax (issue 6).

XLA's CPU compiler rewrites a reduction over a dimension longer than 32 into
windows of 32 (padded evenly at both ends) and reduces each window, then the
window results, left to right; its reducers round to the dtype after every
step (bfloat16 and the 8-bit formats through a conversion). castwise's
``reduce_sum`` / ``reduce_prod`` follow that order (``runtime/core/kernels/
_xla_fold``), so over one axis they match JAX bit for bit in every float
dtype, and bfloat16 and the 8-bit formats match over any axes. Where XLA
does something else castwise does not replicate (float32/float64 sums of 4096
elements or more go to YNNPACK; LLVM may vectorise a float16/32/64 or complex
loop over several reduced axes), the tests say so and stay out of it.

float8_e8m0fnu has no zero, no sign and no infinity: XLA converts 0, negative
values and +-inf to NaN, so a sum (identity 0), max (identity -inf) or min in
it is NaN, and a triangular solve larger than 1x1 is NaN throughout.

Each distinct (primitive, dtype, shape) costs one XLA compile: the tables use
a handful of shapes.
"""

from __future__ import annotations

import zlib
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import runtime.core.dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.kernels import KERNELS, convert_array
from tests.runtime.bit_helpers import assert_same_bits

jax.config.update("jax_enable_x64", True)

#: The formats whose reducers round through a conversion after every step (float8_e8m0fnu aside).
CONVERTING = [dt.bfloat16, *(d for d in dt.SMALL_FLOATS if d.bits != 6 and d is not dt.float8_e8m0fnu)]
#: Order-sensitive dtypes XLA reduces with a plain ``fadd``: bit for bit over one axis.
PLAIN = [dt.float16, dt.float32, dt.float64, dt.complex64, dt.complex128]

REDUCE = {
    "reduce_sum": lambda x, axes: lax.reduce_sum_p.bind(x, axes=axes, out_sharding=None),
    "reduce_prod": lambda x, axes: lax.reduce_prod_p.bind(x, axes=axes, out_sharding=None),
    "reduce_max": lambda x, axes: lax.reduce_max_p.bind(x, axes=axes, out_sharding=None),
    "reduce_min": lambda x, axes: lax.reduce_min_p.bind(x, axes=axes, out_sharding=None),
}

#: (shape, axes) over one axis: short groups, one window level with uneven padding (33 -> 15 + 16),
#: a window along the outer axis, and two window levels (1100 -> 35 windows -> 2).
ONE_AXIS = [((3, 4), (1,)), ((5, 33), (1,)), ((70, 3), (0,)), ((1100,), (0,))]
#: Several axes, windows included (only the converting formats have a fixed order there).
SEVERAL_AXES = [((6, 7), (0, 1)), ((33, 3, 40), (0, 2))]


def _ids(d: DType) -> str:
    return d.short


def ours(op: str, *arrays: np.ndarray, **params: Any) -> np.ndarray:
    (out,) = KERNELS[op](*arrays, **params)
    return np.asarray(out)


def sample(d: DType, shape: tuple[int, ...], op: str) -> np.ndarray:
    """Values whose sums and products stay in range; magnitudes spread so that rounding happens."""
    rng = np.random.default_rng(zlib.crc32(f"{d.name}/{shape}/{op}".encode()))

    def real() -> np.ndarray:
        if op == "reduce_prod":
            return 1 + 0.05 * rng.standard_normal(shape)
        scale = 0.25 if d.bits <= 8 else 1.0
        return scale * rng.standard_normal(shape) * 2.0 ** rng.integers(-4, 3, shape)

    values = real() + 1j * real() if d.kind == "complex" else real()
    return np.asarray(values).astype(d.storage)


def _half_ulp_rows(d: DType) -> np.ndarray:
    """Rows ``[1, e, e, e]`` (``e`` half an ulp of 1): one at a time, each ``+ e`` rounds back to 1."""
    e = float(ml_dtypes.finfo(d.storage).eps) / 2
    rows = np.array([[1.0, e, e, e], [0.5, e / 2, e / 2, e / 2], [e, e, e, 1.0]])
    if d.kind == "complex":
        rows = rows + 1j * rows[::-1]
    return rows.astype(d.storage)


# -- reductions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [*CONVERTING, *PLAIN], ids=_ids)
def test_sums_round_after_every_step(d: DType) -> None:
    x = _half_ulp_rows(d)
    got = ours("reduce_sum", x, axes=(1,))
    assert_same_bits(got, REDUCE["reduce_sum"](x, (1,)))
    assert np.real(got[0]) == 1  # a float32 accumulator (or NumPy's pairwise order for complex) gives 1 + 2e


@pytest.mark.parametrize("shape_axes", ONE_AXIS, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_prod"])
@pytest.mark.parametrize("d", [*CONVERTING, *PLAIN], ids=_ids)
def test_one_axis_reductions_match_xla_bit_for_bit(d: DType, op: str, shape_axes: Any) -> None:
    shape, axes = shape_axes
    if d.kind == "complex" and op == "reduce_prod":
        pytest.skip("XLA multiplies complex numbers with FMAs, castwise's mul kernel does not (within tolerance)")
    x = sample(d, shape, op)
    assert_same_bits(ours(op, x, axes=axes), REDUCE[op](x, axes))


@pytest.mark.parametrize("shape_axes", SEVERAL_AXES, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_prod"])
@pytest.mark.parametrize("d", CONVERTING, ids=_ids)
def test_converting_formats_match_xla_over_several_axes(d: DType, op: str, shape_axes: Any) -> None:
    shape, axes = shape_axes
    x = sample(d, shape, op)
    assert_same_bits(ours(op, x, axes=axes), REDUCE[op](x, axes))


@pytest.mark.parametrize("d", [dt.float32, dt.float64], ids=_ids)
def test_long_float_sums_below_the_ynnpack_size_match_xla(d: DType) -> None:
    # 4000 elements: two window levels; at 4096 and above XLA's sum is YNNPACK's (pairwise here).
    x = sample(d, (4000,), "reduce_sum")
    assert_same_bits(ours("reduce_sum", x, axes=(0,)), REDUCE["reduce_sum"](x, (0,)))
    big = sample(d, (4096,), "reduce_sum")
    np.testing.assert_allclose(ours("reduce_sum", big, axes=(0,)), REDUCE["reduce_sum"](big, (0,)), rtol=1e-5)


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16, dt.float32], ids=_ids)
def test_signed_zeros_follow_xla(d: DType) -> None:
    x = np.array([[-0.0, -0.0], [-0.0, 1.0]]).astype(d.storage)
    got = ours("reduce_sum", x, axes=(1,))
    assert_same_bits(got, REDUCE["reduce_sum"](x, (1,)))
    assert not np.signbit(got[0])  # XLA's sum starts at +0.0
    one = x[:, :1]  # a group of one element is a reshape in XLA: -0.0 stays
    assert_same_bits(ours("reduce_sum", one, axes=(1,)), REDUCE["reduce_sum"](one, (1,)))
    assert_same_bits(ours("reduce_sum", x, axes=()), REDUCE["reduce_sum"](x, ()))


NO_INF = [dt.float8_e4m3fn, dt.float8_e4m3fnuz, dt.float8_e4m3b11fnuz, dt.float8_e5m2fnuz]


@pytest.mark.parametrize("d", [*NO_INF, dt.float8_e5m2, dt.float4_e2m1fn, dt.float8_e8m0fnu], ids=_ids)
def test_empty_max_and_min_give_lax_identities(d: DType) -> None:
    # -inf / +inf, or -+finfo.max in the formats without an infinity (NaN in float8_e8m0fnu).
    x = np.zeros((2, 0), d.storage)
    for op in ("reduce_max", "reduce_min"):
        assert_same_bits(ours(op, x, axes=(1,)), REDUCE[op](x, (1,)))


# -- float8_e8m0fnu ----------------------------------------------------------------------------------

E8M0 = dt.float8_e8m0fnu
# (JAX has no complex32/bcomplex32: tests/runtime/test_kernels_new_dtypes.py checks those converts)
SWEPT = [d for d in (*dt.ALL_DTYPES,) if d.bits >= 8 and d not in (dt.float32r, E8M0, *dt.SMALL_COMPLEX)]
#: Below 2**-127 (e8m0's smallest value), XLA's float64 -> e8m0 is NaN; float32 subnormals round up.
SPECIAL = [0.0, -0.0, 1.0, -1.0, -2.0, 0.75, 1.5, 3.0, 5.0, 6.0, 7.0, 2.0**-126, 2.0**-127, 1.4 * 2.0**-127,
           0.9 * 2.0**-127, 2.0**-128, 1e-300, 2.0**127, 1.5 * 2.0**127, np.inf, -np.inf, np.nan, 100.0, 255.0,
           256.0]  # fmt: skip


def _sources(d: DType) -> np.ndarray:
    if d.kind == "bool":
        return np.array([False, True])
    if d.kind in ("int", "uint"):
        info = np.iinfo(d.storage)
        ints = (0, 1, 2, 3, 100, 255, 256, int(info.max), int(info.min))
        return np.array([v for v in ints if info.min <= v <= info.max], dtype=d.storage)
    values = np.array(SPECIAL)
    with np.errstate(over="ignore", invalid="ignore"):
        if d.kind == "complex":
            values = values + 1j * values[::-1]
        return values.astype(d.storage)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("other", SWEPT, ids=_ids)
def test_e8m0_converts_like_xla(other: DType) -> None:
    # Every e8m0 code out (NaN, and 2**-127 is not zero: it converts to True), and zeros, negative
    # values, infinities, NaN and tiny values in (NaN there: the format has no zero, sign or infinity).
    codes = np.arange(256, dtype=np.uint8).view(E8M0.storage)
    assert_same_bits(ours("convert", codes, new_dtype=other), lax.convert_element_type(codes, other.storage))
    x = _sources(other)
    assert_same_bits(ours("convert", x, new_dtype=E8M0), lax.convert_element_type(x, E8M0.storage))
    assert convert_array(codes[:1], dt.bool_)[0]  # bits 0x00 are 2**-127


def test_e8m0_sum_max_and_min_are_nan_and_products_round_like_xla() -> None:
    x = (2.0 ** np.arange(-6, 6).reshape(3, 4)).astype(E8M0.storage)
    for op in ("reduce_sum", "reduce_max", "reduce_min"):
        got = ours(op, x, axes=(1,))
        assert np.isnan(got.astype(np.float32)).all()  # the identity (0, -inf, +inf) is NaN in e8m0
        assert_same_bits(got, REDUCE[op](x, (1,)))
        one = x[:, :1]  # groups of one element: XLA reshapes, no identity is combined
        assert_same_bits(ours(op, one, axes=(1,)), REDUCE[op](one, (1,)))
    wide = (2.0 ** np.random.default_rng(0).integers(-3, 3, (5, 40))).astype(E8M0.storage)
    for axes in ((1,), (0, 1)):
        assert_same_bits(ours("reduce_prod", wide, axes=axes), REDUCE["reduce_prod"](wide, axes))


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("left_side", [True, False])
def test_e8m0_triangular_solve_follows_xla(m: int, left_side: bool) -> None:
    # XLA inverts the triangle: its zeros and negated entries are NaN in e8m0, so m >= 2 is all NaN.
    rng = np.random.default_rng(m)
    a = (2.0 ** rng.integers(-2, 2, (m, m))).astype(E8M0.storage)
    b = (2.0 ** rng.integers(-2, 2, (m, 2) if left_side else (2, m))).astype(E8M0.storage)
    for unit_diagonal in (False, True):
        params = {"left_side": left_side, "lower": True, "unit_diagonal": unit_diagonal}
        theirs = lax.linalg.triangular_solve(jnp.asarray(a), jnp.asarray(b), **params)
        assert_same_bits(ours("triangular_solve", a, b, **params), theirs)
