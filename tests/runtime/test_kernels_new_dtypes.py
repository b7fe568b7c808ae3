"""Kernels and converts on ml_dtypes' int1/uint1/int2/uint2 and complex32/bcomplex32.

Oracles:

* int2/uint2: ``jax.lax`` on CPU (JAX knows them), and exact Python integer
  arithmetic with XLA's total definitions for every sub-byte int, exhaustively
  over all value pairs. XLA cannot compile int1/uint1 (it lowers them as
  ``pred`` or rejects them), so Python integers are their only oracle.
* complex32/bcomplex32 have no JAX type: castwise computes them in complex64
  and rounds each part back (PyTorch's complex32 "opmath" rule, XLA's rule for
  the narrow floats). The oracle is ``jax.lax`` on the complex64 values, rounded
  part by part with ml_dtypes, and ml_dtypes' own ufuncs where it has them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import runtime as rt
import runtime.core.dtypes as dt
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.kernels import convert_array, run_kernel
from runtime.core.shapes import OpTypeError, abstract_eval

jax.config.update("jax_enable_x64", True)

NEW_INTS = [dt.int1, dt.uint1, dt.int2, dt.uint2]
JAX_NEW_INTS = [dt.int2, dt.uint2]  # XLA compiles these; int1/uint1 it does not
SUB_BYTE = [d for d in dt.ALL_DTYPES if d.is_integer and d.bits < 8]
HALF_COMPLEX = [dt.complex32, dt.bcomplex32]


def _ids(d: DType) -> str:
    return d.short


def ours(op: str, *arrays: np.ndarray, **params: Any) -> np.ndarray:
    outs, _ = run_kernel(
        op, [dt.from_numpy(a.dtype) for a in arrays], arrays, {**_REQUIRED_PARAMS.get(op, {}), **params}
    )
    return outs[0]


#: params an elementwise op cannot do without
_REQUIRED_PARAMS: dict[str, dict[str, int]] = {
    "reduce_precision": {"exponent_bits": 5, "mantissa_bits": 10},
    "integer_pow": {"y": 3},
}


def accepts(op: str, d: DType, arity: int) -> bool:
    try:
        abstract_eval(op, [(d, (2,))] * arity, _REQUIRED_PARAMS.get(op, {}))
    except OpTypeError:
        return False
    return True


# -- sub-byte integers: Python's exact integers with XLA's definitions ----------------------------


def _range(d: DType) -> range:
    info = ml_dtypes.iinfo(d.storage)
    return range(int(info.min), int(info.max) + 1)


def wrap(v: int, d: DType) -> int:
    """``v`` modulo 2**bits, as a two's complement value for signed ``d``."""
    m = v % (1 << d.bits)
    return m - (1 << d.bits) if d.kind == "int" and m >= 1 << (d.bits - 1) else m


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _xla_div(x: int, y: int, d: DType) -> int:
    if y == 0:
        return wrap(-1, d)  # all bits set: -1, or the largest unsigned value
    return wrap(_trunc_div(x, y), d)  # INT_MIN / -1 wraps to INT_MIN


def _xla_rem(x: int, y: int, d: DType) -> int:
    if y == 0:
        return x
    return wrap(x - y * _trunc_div(x, y), d)


def _shift(x: int, y: int, d: DType, kind: str) -> int:
    """XLA's shifts on exact integers: the amount read as unsigned; at or past the width every bit goes."""
    amount, pattern = y % (1 << d.bits), x % (1 << d.bits)
    signed = pattern - (1 << d.bits) if pattern >> (d.bits - 1) else pattern
    if kind == "left":
        return 0 if amount >= d.bits else wrap(pattern << amount, d)
    if kind == "logical":
        return 0 if amount >= d.bits else wrap(pattern >> amount, d)
    return wrap(signed >> min(amount, d.bits - 1), d)


INT_BINARY: dict[str, Callable[[int, int, DType], int | bool | None]] = {
    "shift_left": lambda x, y, d: _shift(x, y, d, "left"),
    "shift_right_logical": lambda x, y, d: _shift(x, y, d, "logical"),
    "shift_right_arithmetic": lambda x, y, d: _shift(x, y, d, "arithmetic"),
    "add": lambda x, y, d: wrap(x + y, d),
    "sub": lambda x, y, d: wrap(x - y, d),
    "mul": lambda x, y, d: wrap(x * y, d),
    "div": _xla_div,
    "rem": _xla_rem,
    "max": lambda x, y, d: max(x, y),
    "min": lambda x, y, d: min(x, y),
    "floor_div": lambda x, y, d: None if y == 0 else wrap(x // y, d),
    "pow": lambda x, y, d: None if y < 0 else wrap(x**y, d),
    "and": lambda x, y, d: wrap(x & y, d),
    "or": lambda x, y, d: wrap(x | y, d),
    "xor": lambda x, y, d: wrap(x ^ y, d),
    "eq": lambda x, y, d: x == y,
    "ne": lambda x, y, d: x != y,
    "lt": lambda x, y, d: x < y,
    "le": lambda x, y, d: x <= y,
    "gt": lambda x, y, d: x > y,
    "ge": lambda x, y, d: x >= y,
}
INT_UNARY: dict[str, Callable[[int, DType], int]] = {
    "neg": lambda x, d: wrap(-x, d),
    "abs": lambda x, d: wrap(abs(x), d),
    "sign": lambda x, d: (x > 0) - (x < 0),
    "square": lambda x, d: wrap(x * x, d),
    "integer_pow": lambda x, d: wrap(x**3, d),  # (y=3: _REQUIRED_PARAMS)
    "stop_gradient": lambda x, d: x,
    "not": lambda x, d: wrap(~x, d),
    "population_count": lambda x, d: wrap(bin(x % (1 << d.bits)).count("1"), d),
    "clz": lambda x, d: wrap(d.bits - (x % (1 << d.bits)).bit_length(), d),
}


def test_the_integer_tables_cover_every_binary_and_unary_op_that_takes_integers() -> None:
    families = {name: od.family for name, od in ops.OPS.items()}
    for name, family in families.items():
        if family in ("binary", "compare", "logical") and accepts(name, dt.int8, 2):
            assert name in INT_BINARY, name
        if family == "unary" and accepts(name, dt.int8, 1):
            assert name in INT_UNARY, name


@pytest.mark.parametrize("d", SUB_BYTE, ids=_ids)
@pytest.mark.parametrize("op", list(INT_BINARY))
def test_sub_byte_binary_ops_match_exact_integers_on_every_pair(op: str, d: DType) -> None:
    assert accepts(op, d, 2)  # every integer op takes every integer width
    pairs = [(x, y) for x in _range(d) for y in _range(d)]
    pairs = [(x, y) for x, y in pairs if INT_BINARY[op](x, y, d) is not None]
    xs = np.array([x for x, _ in pairs], np.int64).astype(d.storage)
    ys = np.array([y for _, y in pairs], np.int64).astype(d.storage)
    got = ours(op, xs, ys)
    expected = [INT_BINARY[op](x, y, d) for x, y in pairs]
    if ops.OPS[op].family == "compare":
        assert got.dtype == np.bool_
    else:
        assert got.dtype == d.storage
    assert got.astype(np.int64).tolist() == [int(v) for v in expected]  # type: ignore[arg-type]


@pytest.mark.parametrize("d", SUB_BYTE, ids=_ids)
@pytest.mark.parametrize("op", list(INT_UNARY))
def test_sub_byte_unary_ops_match_exact_integers(op: str, d: DType) -> None:
    if not accepts(op, d, 1):
        assert d.kind == "uint" and op in ("neg", "abs")  # only the unsigned sign ops may be refused
        return
    xs = np.array(list(_range(d)), np.int64).astype(d.storage)
    got = ours(op, xs)
    assert got.dtype == d.storage
    assert got.astype(np.int64).tolist() == [INT_UNARY[op](x, d) for x in _range(d)]


LAX_BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div, "rem": lax.rem, "max": lax.max,
    "min": lax.min, "and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor,
    "eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge,
}  # fmt: skip
LAX_UNARY = {"neg": lax.neg, "sign": lax.sign, "square": lax.square}


@pytest.mark.parametrize("d", JAX_NEW_INTS, ids=_ids)
def test_int2_and_uint2_ops_match_lax_on_every_pair(d: DType) -> None:
    vals = list(_range(d))
    xs = np.repeat(vals, len(vals)).astype(d.storage)
    ys = np.tile(vals, len(vals)).astype(d.storage)
    for op, ref in LAX_BINARY.items():
        theirs = np.asarray(ref(xs, ys))
        got = ours(op, xs, ys)
        assert got.dtype == theirs.dtype, op
        assert got.astype(np.int64).tolist() == theirs.astype(np.int64).tolist(), op
    for op, ref1 in LAX_UNARY.items():
        theirs = np.asarray(ref1(xs))
        assert ours(op, xs).astype(np.int64).tolist() == theirs.astype(np.int64).tolist(), op


@pytest.mark.parametrize("d", SUB_BYTE, ids=_ids)
def test_sub_byte_reductions_wrap_like_exact_integers(d: DType) -> None:
    rng = np.random.default_rng(d.bits)
    vals = rng.integers(min(_range(d)), max(_range(d)) + 1, size=(3, 40))
    x = vals.astype(d.storage)
    folds: list[tuple[str, Callable[[list[int]], int]]] = [
        ("reduce_sum", sum),
        ("reduce_prod", math.prod),
        ("reduce_max", max),
        ("reduce_min", min),
    ]
    for op, fold in folds:
        got = ours(op, x, axes=(1,))
        assert got.dtype == d.storage
        assert got.astype(np.int64).tolist() == [wrap(fold(row), d) for row in vals.tolist()], op


# -- converts to and from sub-byte integers ------------------------------------------------------

FLOAT_SOURCE = [math.nan, math.inf, -math.inf, -300.0, -3.7, -2.5, -1.2, -0.5, -0.0, 0.7, 1.9, 2.5, 3.5, 100.0]


def _float_to_int(v: float, d: DType) -> int:
    """XLA's float -> int: truncate toward zero, saturate at the range, NaN -> 0."""
    if math.isnan(v):
        return 0
    r = _range(d)
    return min(max(math.trunc(v) if math.isfinite(v) else (r[-1] if v > 0 else r[0]), r[0]), r[-1])


@pytest.mark.parametrize("target", NEW_INTS, ids=_ids)
@pytest.mark.parametrize("src", [d for d in dt.ALL_DTYPES if d.kind in ("float", "complex")], ids=_ids)
def test_convert_float_and_complex_to_sub_byte_ints_truncates_and_saturates(src: DType, target: DType) -> None:
    with np.errstate(over="ignore", invalid="ignore"):
        stored = np.array(FLOAT_SOURCE, np.float64).astype(dt.COMPLEX_PART.get(src, src).storage)
    x = stored.astype(src.storage)  # a complex source: the real part, as JAX takes it
    got = convert_array(x, target)
    assert got.dtype == target.storage
    assert got.astype(np.int64).tolist() == [_float_to_int(float(v), target) for v in stored.astype(np.float64)]


@pytest.mark.parametrize("target", NEW_INTS, ids=_ids)
@pytest.mark.parametrize("src", [d for d in dt.ALL_DTYPES if d.kind in ("bool", "int", "uint")], ids=_ids)
def test_convert_between_integers_wraps(src: DType, target: DType) -> None:
    values = [0, 1] if src is dt.bool_ else list(_range(src)) if src.bits < 8 else [0, 1, 2, 3, 5, 127]
    values += [] if src.kind != "int" or src.bits < 8 else [-1, -2, -3, -128]
    x = np.array(values, np.int64).astype(src.storage)
    got = convert_array(x, target)
    assert got.astype(np.int64).tolist() == [wrap(v, target) for v in values]
    back = convert_array(got, src)
    assert [int(v) for v in back.astype(np.uint64 if src is dt.uint64 else np.int64).tolist()] == [
        (wrap(v, target) != 0) if src is dt.bool_ else wrap(wrap(v, target), src) for v in values
    ]


@pytest.mark.parametrize("src", NEW_INTS, ids=_ids)
def test_convert_sub_byte_ints_to_every_inexact_dtype_matches_lax_from_int8(src: DType) -> None:
    # the same small integers as int8: XLA's int8 -> float conversion is the oracle
    values = np.array(list(_range(src)), np.int8)
    x = values.astype(src.storage)
    for target in dt.ALL_DTYPES:
        if not target.is_inexact or target is dt.float32r or target.bits == 6:
            continue  # float6 crashes XLA's CPU compiler; float32r is castwise's own
        got = convert_array(x, target)
        part = dt.COMPLEX_PART.get(target, target)
        theirs = np.asarray(lax.convert_element_type(values, part.storage))
        assert got.dtype == target.storage
        assert np.array_equal(got.astype(np.complex128), theirs.astype(np.complex128), equal_nan=True), target


@pytest.mark.parametrize("src", JAX_NEW_INTS, ids=_ids)
def test_convert_int2_and_uint2_match_lax_both_ways(src: DType) -> None:
    x = np.array(list(_range(src)), np.int64).astype(src.storage)
    floats = np.array(FLOAT_SOURCE, np.float64)
    for other in (dt.bool_, dt.int8, dt.uint8, dt.int64, dt.uint64, dt.float16, dt.bfloat16, dt.float32, dt.float64):
        theirs = np.asarray(lax.convert_element_type(x, other.storage))
        assert np.array_equal(convert_array(x, other), theirs, equal_nan=True), other
        y = floats.astype(other.storage) if other.kind == "float" else np.array([0, 1, 2, 3, 5], other.storage)
        theirs = np.asarray(lax.convert_element_type(y, src.storage))
        assert convert_array(y, src).astype(np.int64).tolist() == theirs.astype(np.int64).tolist(), other


# -- complex32 and bcomplex32: complex64 arithmetic, parts rounded back -----------------------------


def _complex_sample(d: DType, seed: int, domain: str = "any") -> np.ndarray:
    rng = np.random.default_rng(seed + (0 if d is dt.complex32 else 100))
    re, im = rng.standard_normal(24) * 3, rng.standard_normal(24) * 3
    if domain == "positive":
        re = rng.uniform(0.25, 4.0, 24)
    if domain == "unit":
        re, im = rng.uniform(-2, 2, 24), rng.uniform(-2, 2, 24)
    return (re + 1j * im).astype(d.storage)


def _complex64(re: Any, im: Any) -> np.ndarray:
    """complex64 from parts, without ``re + 1j * im``'s NaN for an infinite part."""
    out = np.empty(np.broadcast(re, im).shape, np.complex64)
    out.real, out.imag = re, im
    return out


def round_parts(z: Any, d: DType) -> np.ndarray:
    """complex64 values with each part rounded to ``d``'s part dtype (ml_dtypes' rounding)."""
    z = np.asarray(z, np.complex64)
    part = dt.COMPLEX_PART[d].storage
    with np.errstate(over="ignore"):
        return _complex64(z.real.astype(part), z.imag.astype(part)).astype(d.storage)


def _ulp_close(got: np.ndarray, want: np.ndarray, d: DType, ulps: int) -> None:
    """Parts equal, or within ``ulps`` units of the part format (NaN == NaN)."""
    eps = float(ml_dtypes.finfo(dt.COMPLEX_PART[d].storage).eps)
    a, b = got.astype(np.complex128), want.astype(np.complex128)
    for pa, pb in ((a.real, b.real), (a.imag, b.imag)):
        np.testing.assert_allclose(pa, pb, rtol=ulps * eps, atol=ulps * eps, equal_nan=True)


# op -> (lax reference on complex64, input domains, exact after rounding)
COMPLEX_ELEMENTWISE: dict[str, tuple[Callable[..., Any], tuple[str, ...], bool]] = {
    "add": (lax.add, ("any", "any"), True),
    "sub": (lax.sub, ("any", "any"), True),
    "mul": (lax.mul, ("any", "any"), False),
    "div": (lax.div, ("any", "any"), False),
    "pow": (lax.pow, ("positive", "unit"), False),
    "max": (lax.max, ("any", "any"), True),
    "min": (lax.min, ("any", "any"), True),
    "eq": (lax.eq, ("any", "any"), True),
    "ne": (lax.ne, ("any", "any"), True),
    "neg": (lax.neg, ("any",), True),
    "sign": (lax.sign, ("any",), False),
    "exp": (lax.exp, ("unit",), False),
    "log": (lax.log, ("positive",), False),
    "expm1": (lax.expm1, ("unit",), False),
    "log1p": (lax.log1p, ("positive",), False),
    "sin": (lax.sin, ("unit",), False),
    "cos": (lax.cos, ("unit",), False),
    "tanh": (lax.tanh, ("unit",), False),
    "logistic": (lax.logistic, ("unit",), False),
    "sqrt": (lax.sqrt, ("positive",), False),
    "rsqrt": (lax.rsqrt, ("positive",), False),
    "conj": (lax.conj, ("any",), True),
    "square": (lax.square, ("any",), False),
    "integer_pow": (lambda x: lax.integer_pow(x, 3), ("any",), False),
    "stop_gradient": (lax.stop_gradient, ("any",), True),
    "reciprocal": (lax.reciprocal, ("any",), False),
    "abs": (lax.abs, ("any",), False),
    "real": (lax.real, ("any",), True),
    "imag": (lax.imag, ("any",), True),
    "exp2": (lax.exp2, ("unit",), False),
    "sinh": (lax.sinh, ("unit",), False),
    "cosh": (lax.cosh, ("unit",), False),
    "tan": (lax.tan, ("unit",), False),
    "asin": (lax.asin, ("unit",), False),
    "acos": (lax.acos, ("unit",), False),
    "atan": (lax.atan, ("unit",), False),
    "asinh": (lax.asinh, ("unit",), False),
    "acosh": (lax.acosh, ("positive",), False),
    "atanh": (lax.atanh, ("unit",), False),
}


def test_complex_table_covers_every_elementwise_op_that_takes_complex64() -> None:
    for name, od in ops.OPS.items():
        if od.family in ("binary", "compare", "logical", "unary"):
            arity = 1 if od.family == "unary" else 2
            takes = accepts(name, dt.complex64, arity)
            assert (name in COMPLEX_ELEMENTWISE) == takes, name
            for d in HALF_COMPLEX:  # the half-precision complex types take exactly the same ops
                assert accepts(name, d, arity) == takes, (name, d)


@pytest.mark.parametrize("d", HALF_COMPLEX, ids=_ids)
@pytest.mark.parametrize("op", list(COMPLEX_ELEMENTWISE))
def test_half_complex_elementwise_is_complex64_rounded_per_part(op: str, d: DType) -> None:
    ref, domains, exact = COMPLEX_ELEMENTWISE[op]
    args = [_complex_sample(d, seed, dom) for seed, dom in enumerate(domains)]
    got = ours(op, *args)
    theirs = np.asarray(ref(*(a.astype(np.complex64) for a in args)))
    if theirs.dtype == np.bool_:
        assert got.dtype == np.bool_ and np.array_equal(got, theirs)
        return
    if theirs.dtype == np.float32:  # abs, real, imag: the part's dtype
        part = dt.COMPLEX_PART[d].storage
        assert got.dtype == part
        want = theirs.astype(part)
        if exact:
            assert np.array_equal(got, want)
        else:
            np.testing.assert_allclose(
                got.astype(np.float64), want.astype(np.float64), rtol=float(ml_dtypes.finfo(part).eps)
            )
        return
    assert got.dtype == d.storage
    want = round_parts(theirs, d)
    if exact:
        assert np.array_equal(got.astype(np.complex64), want.astype(np.complex64), equal_nan=True)
    else:
        # XLA's complex64 and NumPy's may differ in float32's last bit, which can move a
        # rounding to the part format by one unit
        _ulp_close(got, want, d, ulps=1)


@pytest.mark.parametrize("d", HALF_COMPLEX, ids=_ids)
def test_half_complex_arithmetic_matches_ml_dtypes_own_ufuncs(d: DType) -> None:
    x, y = _complex_sample(d, 0), _complex_sample(d, 1)
    for op, ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply)):
        got, theirs = ours(op, x, y), ufunc(x, y)
        assert got.dtype == theirs.dtype == d.storage
        assert np.array_equal(got.astype(np.complex64), theirs.astype(np.complex64)), op


@pytest.mark.parametrize("d", HALF_COMPLEX, ids=_ids)
def test_half_complex_reductions_round_after_every_step(d: DType) -> None:
    rng = np.random.default_rng(7)
    summands = (rng.standard_normal((3, 20)) + 1j * rng.standard_normal((3, 20))) * 5
    factors = rng.uniform(0.8, 1.25, (3, 20)) * np.exp(1j * rng.uniform(-np.pi, np.pi, (3, 20)))  # no overflow
    for op, step, start, values in (("reduce_sum", np.add, 0, summands), ("reduce_prod", np.multiply, 1, factors)):
        x = values.astype(d.storage)
        want = []
        for row in x.astype(np.complex64):
            acc = round_parts(np.complex64(start), d).astype(np.complex64)
            for v in row:  # XLA's order for fewer than 32 elements: left to right from the identity
                acc = round_parts(step(acc, v), d).astype(np.complex64)
            want.append(acc)
        got = ours(op, x, axes=(1,))
        assert got.dtype == d.storage
        assert np.array_equal(got.astype(np.complex64), np.array(want, np.complex64), equal_nan=True), op


@pytest.mark.parametrize("d", HALF_COMPLEX, ids=_ids)
def test_half_complex_dot_general_accumulates_in_complex64_and_rounds_once(d: DType) -> None:
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))).astype(d.storage)
    b = (rng.standard_normal((6, 5)) + 1j * rng.standard_normal((6, 5))).astype(d.storage)
    got = ours("dot_general", a, b, dimension_numbers=(((1,), (0,)), ((), ())))
    theirs = lax.dot_general(
        a.astype(np.complex64), b.astype(np.complex64), (((1,), (0,)), ((), ())), precision=lax.Precision.HIGHEST
    )
    assert got.dtype == d.storage
    _ulp_close(got, round_parts(theirs, d), d, ulps=1)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # raised inside jax for complex -> real
@pytest.mark.parametrize("d", HALF_COMPLEX, ids=_ids)
def test_convert_from_half_complex_is_complex64_converted(d: DType) -> None:
    x = np.array([1.5 - 2j, -0.3 + 1j, 3e4 + 0j, -7.9 - 1e-3j, 0j], np.complex128).astype(d.storage)
    wide = x.astype(np.complex64)  # exact
    assert np.array_equal(wide.real.astype(dt.COMPLEX_PART[d].storage), ours("real", x))
    for target in dt.ALL_DTYPES:
        if target is dt.float32r or target.bits < 2 or target.bits == 6 or target in HALF_COMPLEX:
            continue  # XLA cannot compile int1/uint1 or float6; float32r is castwise's own
        theirs = np.asarray(lax.convert_element_type(wide, target.storage))
        got = convert_array(x, target)
        assert got.dtype == target.storage
        assert np.array_equal(got.astype(np.complex128), theirs.astype(np.complex128), equal_nan=True), target


@pytest.mark.parametrize("d", HALF_COMPLEX, ids=_ids)
def test_convert_to_half_complex_rounds_each_part_as_its_part_type_converts(d: DType) -> None:
    part = dt.COMPLEX_PART[d]
    reals = np.array([1.5, -2.7, 1e-3, 7e4, np.nan, -np.inf, 1.0 + 2**-12, 300.2])
    for src in (dt.float64, dt.float32, dt.int32, dt.int64, dt.bool_, dt.float8_e4m3fn, dt.int2):
        with np.errstate(all="ignore"):
            x = (reals != 0) if src is dt.bool_ else reals.astype(src.storage) if src.is_inexact else None
        if x is None:
            x = np.array([1, -2, 0, 1, -1], np.int64).astype(src.storage)
        # the real part is lax's conversion to the part dtype (from int8 for int2), the imaginary part 0
        lax_src = x.astype(np.int8) if src is dt.int2 else x
        want_re = np.asarray(lax.convert_element_type(lax_src, part.storage))
        got = convert_array(x, d)
        assert got.dtype == d.storage
        got64 = got.astype(np.complex64)
        assert np.array_equal(got64.real, want_re.astype(np.float32), equal_nan=True), src
        assert np.all(got64.imag == 0)
    z = np.array([1.5 - 2.7j, 1e-3 + 7e4j, 300.2 - (1.0 + 2**-12) * 1j], np.complex128)
    for src in (dt.complex128, dt.complex64):
        x = z.astype(src.storage)
        want = _complex64(
            np.asarray(lax.convert_element_type(x.real, part.storage)),
            np.asarray(lax.convert_element_type(x.imag, part.storage)),
        )
        assert np.array_equal(convert_array(x, d).astype(np.complex64), want, equal_nan=True), src
    other = HALF_COMPLEX[1 - HALF_COMPLEX.index(d)]
    with np.errstate(over="ignore"):  # 7e4 is past float16's range: inf in complex32, as intended
        y = z.astype(other.storage)
    want = round_parts(y.astype(np.complex64), d).astype(np.complex64)
    assert np.array_equal(convert_array(y, d).astype(np.complex64), want, equal_nan=True)


# -- eager: PyTorch's complex32 ------------------------------------------------------------------


def test_torch_float16_plus_python_complex_runs_in_complex32() -> None:
    x = np.array([1.5, -2.25, 0.1], np.float16)
    with rt.use_policy("torch"):
        y = rt.asarray(x) + 1j
        z = rt.asarray(x) * rt.asarray(np.array(2 - 1j, np.complex128))  # a 0-d complex tensor
    assert y.dtype is rt.complex32 and z.dtype is rt.complex32
    assert np.array_equal(y.numpy().astype(np.complex64), (x.astype(np.complex64) + 1j).astype(np.complex64))
    # the 0-d complex128 is converted to complex32 first (2 - 1j is exact), then complex64 arithmetic, rounded
    want = round_parts(x.astype(np.complex64) * np.complex64(2 - 1j), rt.complex32)
    assert np.array_equal(z.numpy().astype(np.complex64), want.astype(np.complex64))


@pytest.mark.parametrize("d", [rt.int1, rt.uint1, rt.int2, rt.uint2, rt.int4, rt.uint4], ids=lambda d: d.name)
def test_a_python_int_that_does_not_fit_a_sub_byte_int_is_refused(d: rt.DType) -> None:
    # ml_dtypes wraps an out-of-range Python int silently; castwise refuses it, as int8 + 300 is refused
    info = ml_dtypes.iinfo(d.storage)
    x = rt.asarray(np.zeros(2, d.storage), d)
    for _ in range(2):  # the general path, then the cached one
        assert (x + int(info.max)).tolist() == [int(info.max)] * 2
        for bad in (int(info.max) + 1, int(info.min) - 1):
            with pytest.raises(rt.PromotionError, match=f"does not fit the planned dtype {d.name}"):
                x + bad
