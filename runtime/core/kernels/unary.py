"""Kernels of the elementwise unary ops (``runtime.core.ops`` families ``unary``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from runtime.core import dtypes as dt
from runtime.core.kernels._common import (
    _COMPLEX_PART,
    _F16,
    _F32,
    _NARROW_FLOAT,
    _SMALL_COMPLEX,
    _VIA_F16,
    _WIDEN,
    KERNELS,
    Array,
    Kernel,
    _back,
    _bits,
    _from_pattern,
    _map1,
    _pattern,
    _round_half_away,
)

# -- elementwise unary ---------------------------------------------------------------------------


def neg_kernel(x: Array) -> tuple[Array, ...]:
    """-x (unsigned and INT_MIN wrap)."""
    return (_map1(np.negative, x),)


KERNELS["neg"] = neg_kernel


def abs_kernel(x: Array) -> tuple[Array, ...]:
    """|x|; complex gives the real dtype; INT_MIN stays INT_MIN."""
    if x.dtype in _SMALL_COMPLEX:
        return (_part(np.abs, x),)  # |z| in float32, rounded once to the part's dtype
    return (_map1(np.abs, x),)


KERNELS["abs"] = abs_kernel


def _sign(x: Array) -> Array:
    s = np.sign(x)
    if x.dtype.kind == "f":
        s = np.where(x == 0, x, s)  # lax.sign keeps the sign of zero; np.sign(-0.0) is +0.0
    return s


def sign_kernel(x: Array) -> tuple[Array, ...]:
    """lax.sign: -1/0/1 (keeps -0.0 and NaN); x/|x| for complex."""
    with np.errstate(invalid="ignore"):
        return (_map1(_sign, x),)


KERNELS["sign"] = sign_kernel


def _unary_float(f: Callable[[Any], Any], x: Array) -> tuple[Array, ...]:
    with np.errstate(all="ignore"):
        return (_map1(f, x),)


def exp_kernel(x: Array) -> tuple[Array, ...]:
    """e**x."""
    return _unary_float(np.exp, x)


KERNELS["exp"] = exp_kernel


def log_kernel(x: Array) -> tuple[Array, ...]:
    """Natural log (NaN below 0, -inf at 0, principal branch for complex)."""
    return _unary_float(np.log, x)


KERNELS["log"] = log_kernel


def _expm1_f16(x: Array) -> Array:
    # XLA's float16 expm1 (also used for the 8/6/4-bit floats, which compute in
    # float16): tanh(x/2) * (exp(x) + 1) for |x| <= 0.5, else exp(x) - 1, each
    # step rounded to float16; where tanh(x/2) rounds to 0 although x is not 0
    # (x = +-2**-24, the smallest subnormal) the result is x itself. Reproduced
    # bit for bit over every float16 (tests/runtime/test_numerics.py).
    def r16(v: Array) -> Array:
        return np.asarray(v).astype(_F16).astype(_F32)

    xf = x.astype(_F32)
    with np.errstate(all="ignore"):
        e = r16(np.exp(xf))
        half = r16(np.tanh(xf / np.float32(2)))
        small = np.where(half == 0, xf, half * r16(e + np.float32(1)))
        out = np.where(np.abs(xf) <= np.float32(0.5), small, e - np.float32(1))
    return _back(out, x.dtype) if x.dtype in _VIA_F16 else np.asarray(out).astype(_F16)


def _expm1_complex(z: Array) -> Array:
    # XLA's complex expm1, expm1(x) cos(y) + cosm1(y) + i e**x sin(y) with cosm1(y) = -2 sin(y/2)**2
    # (accurate near 0), and C99's special values of cexp(z) - 1: a zero imaginary part gives
    # expm1(x) + 0 (so +-0 + 0j gives +0, +inf gives inf, NaN gives NaN) and keeps that zero (NumPy
    # and an exp(x) * sin(y) would give NaN at inf + 0j), -inf gives -1 + 0 cis(y) (+-0j at an
    # infinite or NaN y) and +inf with an infinite or NaN y gives inf + NaN j.
    x, y = z.real, z.imag
    with np.errstate(all="ignore"):
        em1, h, s = np.expm1(x), np.sin(y / 2), np.sin(y)
        re = em1 * np.cos(y) - 2 * h * h
        im = np.exp(x) * s
        finite_y = np.isfinite(y)
        zero = np.zeros((), x.dtype)
        re = np.where(y == 0, em1 + zero, re)
        im = np.where(y == 0, y, im)
        re = np.where(x == -np.inf, -1, re)
        im = np.where((x == -np.inf) & finite_y, zero * s, np.where(x == -np.inf, zero, im))
        inf_nan = (x == np.inf) & ~finite_y
        re = np.where(inf_nan, np.inf, re)
        im = np.where(inf_nan, np.nan, im)
    out = np.empty(z.shape, z.dtype)
    out.real, out.imag = re, im
    return out


def expm1_kernel(x: Array) -> tuple[Array, ...]:
    """e**x - 1, accurate near 0 (narrow floats follow XLA's float16 algorithm; complex follows
    XLA's formula with C99's special values at infinities, NaN and a zero imaginary part)."""
    if x.dtype == _F16 or x.dtype in _VIA_F16:
        return (_expm1_f16(x),)
    if x.dtype.kind == "c" or x.dtype in _SMALL_COMPLEX:
        return (_map1(_expm1_complex, x),)
    return _unary_float(np.expm1, x)


KERNELS["expm1"] = expm1_kernel


def _square_parts(a: Array) -> tuple[Array, Array]:
    """a * a as hi + lo exactly (Dekker's product of Veltkamp's halves; float64, |a| < 1)."""
    hi = a * a
    c = a * 134217729.0  # 2**27 + 1 splits a 53-bit mantissa into two 26-bit halves
    a_hi = c - (c - a)
    a_lo = a - a_hi
    return hi, ((a_hi * a_hi - hi) + 2 * a_hi * a_lo) + a_lo * a_lo


def _two_sum(a: Array, b: Array) -> tuple[Array, Array]:
    """a + b as s + e exactly (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _complex_log1p(z: Array) -> Array:
    """log(1 + z) for complex ``z``, accurate near 0 (NumPy's log1p computes log(1 + z)).

    With z = x + iy: Re = log|1 + z| = log1p(2x + x**2 + y**2) / 2, which keeps the
    relative accuracy of small x and y that forming 1 + z rounds away. The sum is
    formed in double-double (exact squares, exact two-sums), so it stays accurate
    where 2x and x**2 + y**2 cancel (near the circle |1 + z| = 1). Im = atan2(y, 1 + x).
    complex64 is computed in float64 and rounded once. Away from 0 (|x| or |y| >= 1,
    and non-finite parts) log(1 + z) is accurate and used as is.
    """
    w = z.astype(np.complex128)
    x, y = w.real, w.imag
    near = (np.abs(x) < 1) & (np.abs(y) < 1)
    one_plus = w.copy()
    one_plus.real += 1  # not w + 1, which turns an imaginary part of -0.0 into +0.0 (the branch cut)
    with np.errstate(all="ignore"):
        out = np.log(one_plus)
        if near.any():
            xx, xx_lo = _square_parts(x)
            yy, yy_lo = _square_parts(y)
            s1, e1 = _two_sum(2 * x, xx)
            s2, e2 = _two_sum(s1, yy)
            t = s2 + (((e1 + e2) + xx_lo) + yy_lo)
            small = np.empty_like(w)  # set by parts: re + 1j * im would lose an imaginary -0.0
            small.real = np.log1p(t) / 2
            small.imag = np.arctan2(y, x + 1)
            out = np.where(near, small, out)
    return np.asarray(out).astype(z.dtype)


def log1p_kernel(x: Array) -> tuple[Array, ...]:
    """log(1 + x), accurate near 0 (complex too, unlike NumPy's)."""
    if x.dtype.kind == "c":
        return (_complex_log1p(x),)
    return _unary_float(np.log1p, x)


KERNELS["log1p"] = log1p_kernel


def sin_kernel(x: Array) -> tuple[Array, ...]:
    """sin(x)."""
    return _unary_float(np.sin, x)


KERNELS["sin"] = sin_kernel


def cos_kernel(x: Array) -> tuple[Array, ...]:
    """cos(x)."""
    return _unary_float(np.cos, x)


KERNELS["cos"] = cos_kernel


def tanh_kernel(x: Array) -> tuple[Array, ...]:
    """tanh(x). A real tanh raises no floating-point flag for any input, so it skips
    the errstate block (which costs more than a small tanh); complex keeps it."""
    if x.dtype in _COMPLEX_PART:
        return _unary_float(np.tanh, x)
    return (_map1(np.tanh, x),)


KERNELS["tanh"] = tanh_kernel


def _logistic(x: Array) -> Array:
    one = np.ones((), x.dtype)
    return one / (one + np.exp(-x))


def _logistic_narrow(x: Array) -> Array:
    # XLA expands logistic into neg, exp, add, divide before choosing compute
    # types, so each step rounds to the narrow type.
    storage = x.dtype

    def r(v: Array) -> Array:
        return np.asarray(_back(v, storage)).astype(_F32)

    one = np.float32(1)
    with np.errstate(all="ignore"):
        return _back(one / r(one + r(np.exp(r(-x.astype(_F32))))), storage)


def logistic_kernel(x: Array) -> tuple[Array, ...]:
    """1 / (1 + e**-x) (for narrow floats each step rounds, as XLA's expansion does)."""
    if x.dtype in _NARROW_FLOAT:
        return (_logistic_narrow(x),)
    return _unary_float(_logistic, x)


KERNELS["logistic"] = logistic_kernel


def sqrt_kernel(x: Array) -> tuple[Array, ...]:
    """Square root (principal branch for complex)."""
    return _unary_float(np.sqrt, x)


KERNELS["sqrt"] = sqrt_kernel


def _rsqrt(x: Array) -> Array:
    return np.ones((), x.dtype) / np.sqrt(x)


def rsqrt_kernel(x: Array) -> tuple[Array, ...]:
    """1 / sqrt(x)."""
    return _unary_float(_rsqrt, x)


KERNELS["rsqrt"] = rsqrt_kernel


def conj_kernel(x: Array) -> tuple[Array, ...]:
    """Complex conjugate; a real input is returned unchanged (same dtype)."""
    if x.dtype in _SMALL_COMPLEX:
        return (np.conjugate(x.astype(np.complex64)).astype(x.dtype),)  # exact
    return (np.conjugate(x) if x.dtype.kind == "c" else x,)


KERNELS["conj"] = conj_kernel


def _part(f: Callable[[Any], Any], x: Array) -> Array:
    """``f`` (real, imag or abs) of a complex32 / bcomplex32 array, in the part's dtype."""
    return _back(f(x.astype(np.complex64)), _COMPLEX_PART[x.dtype])


def real_kernel(x: Array) -> tuple[Array, ...]:
    """Real part of a complex array (a view)."""
    if x.dtype in _SMALL_COMPLEX:
        return (_part(np.real, x),)
    return (np.real(x),)


KERNELS["real"] = real_kernel


def imag_kernel(x: Array) -> tuple[Array, ...]:
    """Imaginary part of a complex array (a view)."""
    if x.dtype in _SMALL_COMPLEX:
        return (_part(np.imag, x),)
    return (np.imag(x),)


KERNELS["imag"] = imag_kernel


def square_kernel(x: Array) -> tuple[Array, ...]:
    """x * x (integers wrap)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (_map1(np.square, x),)


KERNELS["square"] = square_kernel


def reciprocal_kernel(x: Array) -> tuple[Array, ...]:
    """1 / x."""
    return _unary_float(np.reciprocal, x)


KERNELS["reciprocal"] = reciprocal_kernel


# -- rounding, tests, exponentials, trigonometric and hyperbolic ---------------------------------


def floor_kernel(x: Array) -> tuple[Array, ...]:
    """Largest integer <= x (exact in every float format)."""
    return (_map1(np.floor, x),)


KERNELS["floor"] = floor_kernel


def ceil_kernel(x: Array) -> tuple[Array, ...]:
    """Smallest integer >= x."""
    return (_map1(np.ceil, x),)


KERNELS["ceil"] = ceil_kernel


def round_kernel(x: Array, *, rounding_method: int = 0) -> tuple[Array, ...]:
    """lax.round: halves away from zero (method 0) or to even (method 1, np.rint)."""
    with np.errstate(invalid="ignore"):
        return (_map1(np.rint if int(rounding_method) == 1 else _round_half_away, x),)


KERNELS["round"] = round_kernel


def is_finite_kernel(x: Array) -> tuple[Array, ...]:
    """Neither infinite nor NaN (widening is exact, so no rounding back)."""
    wide = _WIDEN.get(x.dtype)
    return (np.isfinite(x if wide is None else x.astype(wide)),)


KERNELS["is_finite"] = is_finite_kernel


def _exp2(x: Array) -> Array:
    # XLA's lowering of lax.exp2: exp(log(2) * x), the constant rounded to x's dtype
    return np.exp(np.asarray(np.log(2), x.dtype) * x)


def _exp2_narrow(x: Array) -> Array:
    # each of the lowering's two ops rounds to the narrow format, as XLA does
    storage = x.dtype
    c = np.asarray(np.log(2)).astype(storage).astype(_F32)
    m = np.asarray(_back(c * x.astype(_F32), storage)).astype(_F32)
    return _back(np.exp(m), storage)


def exp2_kernel(x: Array) -> tuple[Array, ...]:
    """2**x, computed as XLA lowers lax.exp2: exp(log(2) * x)."""
    if x.dtype in _NARROW_FLOAT:
        with np.errstate(all="ignore"):
            return (_exp2_narrow(x),)
    return _unary_float(_exp2, x)


KERNELS["exp2"] = exp2_kernel


def _unary_float_kernel(name: str, f: Callable[[Any], Any], doc: str) -> Kernel:
    def kernel(x: Array) -> tuple[Array, ...]:
        return _unary_float(f, x)

    kernel.__name__ = kernel.__qualname__ = f"{name}_kernel"
    kernel.__doc__ = doc
    return kernel


def _step_rounding(storage: np.dtype[Any]) -> Callable[[Any], Array]:
    """How XLA rounds each step of an expansion it runs for a narrow float: to the format
    itself (as ``_back`` does), values kept in float32. bfloat16's steps run in float32 with
    subnormals flushed to zero (float16's subnormals are float32 normals, so nothing flushes)."""
    flush = storage == dt.bfloat16.storage
    tiny = np.float32(ml_dtypes.finfo(np.float32).smallest_normal)

    def r(v: Any) -> Array:
        v = np.asarray(v, _F32)
        if flush:
            v = np.where(np.abs(v) < tiny, v * np.float32(0), v)
        return np.asarray(_back(v, storage)).astype(_F32)

    r.finite_max = float(ml_dtypes.finfo(storage).max)  # type: ignore[attr-defined]
    return r


def _finite_max(r: Callable[[Any], Array]) -> float:
    """The largest finite value of the format ``r`` rounds to."""
    return float(r.finite_max)  # type: ignore[attr-defined]


def _narrow_expansion(expand: Callable[[Array, Callable[[Any], Array]], Array], x: Array) -> Array:
    """A narrow-float op as XLA CPU computes it: the op's expansion, each step rounded.

    XLA expands lax.asin / acos / asinh / acosh / atanh / sinh / cosh into elementary ops
    before it picks compute types, so every step of the expansion rounds to the narrow
    format; bfloat16 also reads subnormals as zero there. Checked bit for bit against JAX
    on every finite float16 and bfloat16 (tests/runtime/test_kernels.py).
    """
    storage = x.dtype
    r = _step_rounding(storage)
    with np.errstate(all="ignore"):
        return _back(expand(r(x.astype(_F32)), r), storage)


def _asin_steps(x: Array, r: Callable[[Any], Array]) -> Array:
    return r(2 * r(np.arctan2(x, r(1 + r(np.sqrt(r(r(1 - x) * r(1 + x))))))))  # 2 atan2(x, 1 + sqrt((1-x)(1+x)))


def _acos_steps(x: Array, r: Callable[[Any], Array]) -> Array:
    return r(np.arctan2(r(np.sqrt(r(r(1 - x) * r(1 + x)))), x))  # atan2(sqrt((1-x)(1+x)), x)


def _asinh_steps(x: Array, r: Callable[[Any], Array]) -> Array:
    # sign(x) log1p(|x| + x**2 / (1 + sqrt(1 + x**2))); log(2) + log|x| where x**2 would overflow
    a = np.abs(x)
    xx = r(a * a)
    small = r(np.log1p(r(a + r(xx / r(1 + r(np.sqrt(r(1 + xx))))))))
    big = r(r(np.log(a)) + r(np.log(2)))
    return r(np.sign(x) * np.where(a >= np.float32(np.sqrt(_finite_max(r))), big, small))


def _acosh_steps(x: Array, r: Callable[[Any], Array]) -> Array:
    # log1p(sqrt(x-1) (sqrt(x+1) + sqrt(x-1))); log(2) + log(x) where x + x would overflow
    xm = r(np.sqrt(r(x - 1)))
    small = r(np.log1p(r(xm * r(r(np.sqrt(r(x + 1))) + xm))))
    big = r(r(np.log(x)) + r(np.log(2)))
    return np.where(x >= np.float32(_finite_max(r) / 2), big, small)


def _atanh_steps(x: Array, r: Callable[[Any], Array]) -> Array:
    return r(np.float32(0.5) * r(r(np.log1p(x)) - r(np.log1p(-x))))  # (log1p(x) - log1p(-x)) / 2


def _expanded_kernel(name: str, f: Callable[[Any], Any], steps: Callable[..., Array], doc: str) -> Kernel:
    def kernel(x: Array) -> tuple[Array, ...]:
        if x.dtype in _NARROW_FLOAT:
            return (_narrow_expansion(steps, x),)
        return _unary_float(f, x)

    kernel.__name__ = kernel.__qualname__ = f"{name}_kernel"
    kernel.__doc__ = doc
    return kernel


KERNELS["asin"] = _expanded_kernel("asin", np.arcsin, _asin_steps, "Inverse sine (principal branch).")
KERNELS["acos"] = _expanded_kernel("acos", np.arccos, _acos_steps, "Inverse cosine (principal branch).")
KERNELS["asinh"] = _expanded_kernel("asinh", np.arcsinh, _asinh_steps, "Inverse hyperbolic sine.")
KERNELS["acosh"] = _expanded_kernel(
    "acosh", np.arccosh, _acosh_steps, "Inverse hyperbolic cosine (NaN below 1 for reals)."
)
KERNELS["atanh"] = _expanded_kernel("atanh", np.arctanh, _atanh_steps, "Inverse hyperbolic tangent.")

KERNELS["sinh"] = _unary_float_kernel("sinh", np.sinh, "Hyperbolic sine.")
KERNELS["cosh"] = _unary_float_kernel("cosh", np.cosh, "Hyperbolic cosine.")
KERNELS["tan"] = _unary_float_kernel("tan", np.tan, "Tangent.")
KERNELS["atan"] = _unary_float_kernel("atan", np.arctan, "Inverse tangent (principal branch).")
KERNELS["cbrt"] = _unary_float_kernel("cbrt", np.cbrt, "Real cube root.")


# -- integer bit operations -----------------------------------------------------------------------


def not_kernel(x: Array) -> tuple[Array, ...]:
    """lax.bitwise_not: logical not for bool, every bit flipped for integers."""
    if x.dtype.kind == "b":
        return (np.logical_not(x),)
    n = _bits(x.dtype)
    mask = np.uint64((1 << n) - 1) if n < 64 else np.uint64(2**64 - 1)
    return (_from_pattern(~_pattern(x) & mask, x.dtype),)


KERNELS["not"] = not_kernel


def population_count_kernel(x: Array) -> tuple[Array, ...]:
    """The number of set bits of each integer's two's complement pattern."""
    return (_from_pattern(np.bitwise_count(_pattern(x)).astype(np.uint64), x.dtype),)


KERNELS["population_count"] = population_count_kernel


def clz_kernel(x: Array) -> tuple[Array, ...]:
    """Leading zero bits of each integer's pattern in its own width (the width itself for 0)."""
    p = _pattern(x)
    n = _bits(x.dtype)
    length = np.zeros(p.shape, np.uint64)
    for k in range(n):  # bit length: one past the highest set bit
        length = np.where((p >> np.uint64(k)) != 0, np.uint64(k + 1), length)
    return (_from_pattern(np.uint64(n) - length, x.dtype),)


KERNELS["clz"] = clz_kernel


# -- integer_pow and stop_gradient ----------------------------------------------------------------


def integer_pow_kernel(x: Array, *, y: int) -> tuple[Array, ...]:
    """lax.integer_pow: XLA's binary exponentiation with ``mul`` (so every rounding step is the one
    XLA takes, and integers wrap), the reciprocal ``div(1, acc)`` for a negative ``y``."""
    from runtime.core.kernels.conversion import scalar_array

    if x.dtype in _SMALL_COMPLEX:  # the half-precision complex types: complex64 arithmetic, rounded once
        return (_map1(lambda wide: integer_pow_kernel(wide, y=y)[0], x),)
    mul, div = KERNELS["mul"], KERNELS["div"]
    n = abs(int(y))
    if n == 0:
        return (np.full(x.shape, scalar_array(1, dt.from_numpy(x.dtype)), dtype=x.dtype),)
    acc: Array | None = None
    base = x
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        while n > 0:
            if n & 1:
                acc = base if acc is None else mul(acc, base)[0]
            n >>= 1
            if n > 0:
                base = mul(base, base)[0]
        assert acc is not None
        if y < 0:
            acc = div(np.full(acc.shape, scalar_array(1, dt.from_numpy(x.dtype)), dtype=x.dtype), acc)[0]
    return (np.array(acc, copy=True) if acc is x else acc,)


KERNELS["integer_pow"] = integer_pow_kernel


def stop_gradient_kernel(x: Array) -> tuple[Array, ...]:
    """The identity, into new memory (a write into the result must not change ``x``)."""
    return (np.array(x, copy=True),)


KERNELS["stop_gradient"] = stop_gradient_kernel
