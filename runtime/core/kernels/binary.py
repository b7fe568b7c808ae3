"""Kernels of the elementwise binary ops (``runtime.core.ops`` families ``binary``, ``compare``,
``logical``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import memory, parallel
from runtime.core.kernels._common import (
    _F32,
    _NARROW_FLOAT,
    _SIGNED_INT,
    _SMALL_COMPLEX,
    _WIDEN,
    KERNELS,
    Array,
    _back,
    _bits,
    _from_pattern,
    _iinfo,
    _map2,
    _pattern,
    _round_half_away,
)

# -- storage classes ------------------------------------------------------------------------------

_UNSIGNED_INT: Final[frozenset[np.dtype[Any]]] = frozenset(d.storage for d in dt.ALL_DTYPES if d.kind == "uint")
_INTEGER: Final = _SIGNED_INT | _UNSIGNED_INT


def _cmp(f: Callable[[Any, Any], Any], x: Array, y: Array) -> Any:
    """A comparison in the compute dtype (widening is exact, so no rounding back)."""
    wide = _WIDEN.get(x.dtype)
    if wide is not None:
        x, y = x.astype(wide), y.astype(wide)
    return f(x, y)


# -- elementwise binary ---------------------------------------------------------------------------


def add_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x + y (integers wrap)."""
    if x.dtype not in _WIDEN:  # the common case, without a helper call
        if x.nbytes < memory.POOL_MIN_BYTES and y.nbytes < memory.POOL_MIN_BYTES:
            return (np.add(x, y),)
        out = memory.empty_like_broadcast(x, y)  # same dtype in, same out
        if parallel.ON and out is not None:
            return (parallel.ufunc(np.add, (x, y), out),)
        return (np.add(x, y, out=out),)
    return (_map2(np.add, x, y),)


KERNELS["add"] = add_kernel


def sub_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x - y (integers wrap)."""
    if x.dtype not in _WIDEN:  # the common case, without a helper call
        if x.nbytes < memory.POOL_MIN_BYTES and y.nbytes < memory.POOL_MIN_BYTES:
            return (np.subtract(x, y),)
        out = memory.empty_like_broadcast(x, y)  # same dtype in, same out
        if parallel.ON and out is not None:
            return (parallel.ufunc(np.subtract, (x, y), out),)
        return (np.subtract(x, y, out=out),)
    return (_map2(np.subtract, x, y),)


KERNELS["sub"] = sub_kernel


def mul_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x * y (integers wrap)."""
    if x.dtype not in _WIDEN:  # the common case, without a helper call
        if x.nbytes < memory.POOL_MIN_BYTES and y.nbytes < memory.POOL_MIN_BYTES:
            return (np.multiply(x, y),)
        out = memory.empty_like_broadcast(x, y)  # same dtype in, same out
        if parallel.ON and out is not None:
            return (parallel.ufunc(np.multiply, (x, y), out),)
        return (np.multiply(x, y, out=out),)
    return (_map2(np.multiply, x, y),)


KERNELS["mul"] = mul_kernel


def _int_rem(x: Array, y: Array) -> Array:
    # XLA: x % 0 == x. y == -1 always leaves 0 and avoids INT_MIN % -1.
    special = (y == 0) | (y == -1) if x.dtype in _SIGNED_INT else y == 0
    with np.errstate(divide="ignore"):
        r = np.fmod(x, np.where(special, np.ones((), x.dtype), y))
    return np.where(y == 0, x, r)


def _int_div(x: Array, y: Array) -> Array:
    # Truncating division with XLA's total definition: x / 0 == -1 (all ones for
    # unsigned), INT_MIN / -1 == INT_MIN. x - fmod(x, y) is an exact multiple of
    # y between 0 and x, so it cannot overflow.
    zero = y == 0
    safe = np.where(zero, np.ones((), x.dtype), y)
    if x.dtype in _SIGNED_INT:
        safe = np.where(safe == -1, np.ones((), x.dtype), safe)
        q = (x - np.fmod(x, safe)) // safe
        q = np.where(y == -1, np.negative(x), q)  # wraps INT_MIN to itself
        return np.where(zero, np.full((), -1, x.dtype), q)
    q = x // safe
    return np.where(zero, np.full((), _iinfo(x.dtype).max, x.dtype), q)


def div_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """lax.div: true division for inexact dtypes, truncating (XLA-total) for integers."""
    if x.dtype in _INTEGER:
        return (_map2(_int_div, x, y),)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return (_map2(np.true_divide, x, y),)


KERNELS["div"] = div_kernel


def rem_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """lax.rem: remainder with the sign of the dividend (C fmod)."""
    if x.dtype in _INTEGER:
        return (_map2(_int_rem, x, y),)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (_map2(np.fmod, x, y),)


KERNELS["rem"] = rem_kernel


def _int_pow(x: Array, y: Array) -> Array:
    # Binary exponentiation over every bit of a non-negative exponent, with wrapping
    # multiplies: x ** y modulo 2**bits, as NumPy and PyTorch compute it. (jnp.power reads
    # only the exponent's low 6 bits, so 2 ** 64 is 1 there, and it runs a negative exponent's
    # two's-complement bits: 2 ** -2 is 2 ** 62.) A negative exponent gives the value truncated
    # toward zero, PyTorch's powi: 1 ** -n == 1, (-1) ** -n == +-1 by the parity of n, and 0
    # for every other base (0 ** -n included). Whether a policy refuses a negative exponent
    # instead (NumPy) is decided before the kernel (``runtime.core.lax.binary.pow``).
    negative = y < 0 if y.dtype.kind == "i" else None
    unsigned = np.dtype(f"u{y.dtype.itemsize}")
    bits = (np.where(negative, 0, y) if negative is not None else y).astype(unsigned)
    one = np.ones((), unsigned)
    acc = np.ones(np.broadcast_shapes(x.shape, y.shape), x.dtype)
    base = np.asarray(x)
    with np.errstate(over="ignore"):
        for _ in range(8 * y.dtype.itemsize):
            if not bits.any():
                break
            acc = np.where((bits & one) != 0, np.multiply(acc, base), acc)
            base = np.multiply(base, base)
            bits = bits >> one
    if negative is not None and negative.any():
        odd = (y & np.ones((), y.dtype)) != 0
        minus_one = np.where(odd, np.array(-1, x.dtype), np.array(1, x.dtype))
        truncated = np.where(x == 1, np.array(1, x.dtype), np.where(x == -1, minus_one, np.array(0, x.dtype)))
        acc = np.where(negative, truncated, acc)
    return np.asarray(acc, dtype=x.dtype)


def pow_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """lax.pow for equal float/complex dtypes; for integers ``x ** y`` wrapping, a negative
    exponent truncated toward zero (see ``_int_pow``)."""
    if x.dtype in _INTEGER:
        return (_map2(_int_pow, x, y),)
    with np.errstate(all="ignore"):
        return (_map2(np.power, x, y),)


KERNELS["pow"] = pow_kernel


def _complex_pick(x: Array, y: Array, largest: bool) -> Array:
    # XLA's complex max/min: x where x > y (x < y) lexicographically, else y. A NaN in x
    # is not propagated (every comparison with it is false) and equal values give y.
    if x.dtype in _SMALL_COMPLEX:
        # compared in complex64 (exact): NumPy's .real of ml_dtypes' complex types is not the real part
        return _complex_pick(x.astype(np.complex64), y.astype(np.complex64), largest).astype(x.dtype)
    beats = np.greater if largest else np.less
    take_x = beats(x.real, y.real) | ((x.real == y.real) & beats(x.imag, y.imag))
    return np.where(take_x, x, y)


def _ieee_extreme(x: Array, y: Array, largest: bool) -> Array:
    """XLA's real max/min: NaN-propagating, with -0.0 < +0.0 (NumPy returns either zero)."""
    out = np.asarray((np.maximum if largest else np.minimum)(x, y))  # 0-d operands give a NumPy scalar
    if out.dtype.kind == "f":
        zeros = (x == 0) & (y == 0)
        if zeros.any():
            # both zero: the max is +0 unless both are -0 (x + y), the min -0 unless both are +0
            np.copyto(out, (x + y) if largest else -((-x) + (-y)), where=zeros)
    return out


def max_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """lax.max: NaN-propagating, +0.0 > -0.0; complex as XLA (x if x > y lexicographically, else y)."""
    with np.errstate(invalid="ignore"):
        if x.dtype.kind == "c" or x.dtype in _SMALL_COMPLEX:
            return (_complex_pick(x, y, largest=True),)
        return (_map2(functools.partial(_ieee_extreme, largest=True), x, y),)


KERNELS["max"] = max_kernel


def min_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """lax.min: NaN-propagating, -0.0 < +0.0; complex as XLA (x if x < y lexicographically, else y)."""
    with np.errstate(invalid="ignore"):
        if x.dtype.kind == "c" or x.dtype in _SMALL_COMPLEX:
            return (_complex_pick(x, y, largest=False),)
        return (_map2(functools.partial(_ieee_extreme, largest=False), x, y),)


KERNELS["min"] = min_kernel


def atan2_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """lax.atan2(x, y) = arctan(x / y) in the right quadrant."""
    return (_map2(np.arctan2, x, y),)


KERNELS["atan2"] = atan2_kernel


def _float_floor_div(x: Array, y: Array) -> Array:
    # jnp.floor_divide's float algorithm (CPython's float_divmod), one lax op at
    # a time; narrow floats round back after each op as XLA does, so the
    # quotient matches JAX bit for bit.
    storage = x.dtype
    narrow = storage in _NARROW_FLOAT
    xf, yf = (x.astype(_F32), y.astype(_F32)) if narrow else (x, y)

    def rnd(v: Array) -> Array:
        return _back(v, storage).astype(_F32) if narrow else v

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mod = rnd(np.fmod(xf, yf))
        corrected = np.where(yf == 0, xf, rnd(xf - mod))
        div = rnd(corrected / yf)
        fix = (mod != 0) & (np.sign(yf) != np.sign(mod))
        div = np.where(fix, rnd(div - 1), div)
        out = _round_half_away(div)
    return _back(out, storage) if narrow else out


def floor_div_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """Python ``//`` with jnp.floor_divide's results (integer x // 0 follows lax.div)."""
    if x.dtype in _UNSIGNED_INT:
        return (_map2(_int_div, x, y),)
    if x.dtype in _SIGNED_INT:

        def floor(a: Array, b: Array) -> Array:
            q = _int_div(a, b)
            fix = (np.sign(a) != np.sign(b)) & (_int_rem(a, b) != 0)
            return np.where(fix, q - np.ones((), a.dtype), q)

        return (_map2(floor, x, y),)
    return (_float_floor_div(x, y),)


KERNELS["floor_div"] = floor_div_kernel


def eq_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x == y."""
    return (_cmp(np.equal, x, y),)


KERNELS["eq"] = eq_kernel


def ne_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x != y."""
    return (_cmp(np.not_equal, x, y),)


KERNELS["ne"] = ne_kernel


def lt_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x < y."""
    return (_cmp(np.less, x, y),)


KERNELS["lt"] = lt_kernel


def le_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x <= y."""
    return (_cmp(np.less_equal, x, y),)


KERNELS["le"] = le_kernel


def gt_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x > y."""
    return (_cmp(np.greater, x, y),)


KERNELS["gt"] = gt_kernel


def ge_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x >= y."""
    return (_cmp(np.greater_equal, x, y),)


KERNELS["ge"] = ge_kernel


def and_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """Logical and for bool, bitwise and for integers."""
    return (_map2(np.bitwise_and, x, y),)


KERNELS["and"] = and_kernel


def or_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """Logical or for bool, bitwise or for integers."""
    return (_map2(np.bitwise_or, x, y),)


KERNELS["or"] = or_kernel


def xor_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """Logical xor for bool, bitwise xor for integers."""
    return (_map2(np.bitwise_xor, x, y),)


KERNELS["xor"] = xor_kernel


# -- rounding, tests, exponentials, trigonometric and hyperbolic ---------------------------------


def nextafter_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """The next representable value after x towards y, in x's own format (ml_dtypes' formats
    have their own nextafter loop: stepping in the float32 compute dtype would not move them)."""
    with np.errstate(over="ignore"):  # the largest finite value steps to infinity, as in lax
        return (np.nextafter(x, y),)


KERNELS["nextafter"] = nextafter_kernel


def complex_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x + i y, set by parts (x + 1j * y would turn an imaginary -0.0 into +0.0)."""
    x, y = np.broadcast_arrays(x, y)
    out = np.empty(x.shape, np.complex64 if x.dtype == _F32 else np.complex128)
    out.real = x
    out.imag = y
    return (out,)


KERNELS["complex"] = complex_kernel


# -- integer bit operations -----------------------------------------------------------------------


def _shift(x: Array, y: Array, kind: str) -> Array:
    """XLA's shifts: an amount outside [0, width) (read as unsigned) shifts every bit out,
    which gives 0, or the sign for an arithmetic right shift."""
    n = _bits(x.dtype)
    mask = np.uint64((1 << n) - 1) if n < 64 else np.uint64(2**64 - 1)
    p, s = np.broadcast_arrays(_pattern(x), _pattern(y))
    out = s >= np.uint64(n)
    amount = np.minimum(s, np.uint64(n - 1))
    if kind == "left":
        r = np.where(out, np.uint64(0), (p << amount) & mask)
    elif kind == "logical":
        r = np.where(out, np.uint64(0), p >> amount)
    else:  # arithmetic: the pattern as a signed n-bit value, shifted with sign fill
        sign = np.uint64(1 << (n - 1))
        v = p.view(np.int64) if n == 64 else (p ^ sign).astype(np.int64) - np.int64(1 << (n - 1))
        r = (v >> amount.astype(np.int64)).view(np.uint64) & mask
    return _from_pattern(np.asarray(r, np.uint64), x.dtype)


def shift_left_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x << y (0 for amounts outside [0, width))."""
    return (_shift(x, y, "left"),)


KERNELS["shift_left"] = shift_left_kernel


def shift_right_arithmetic_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x >> y with sign fill (of the pattern's top bit, unsigned formats too)."""
    return (_shift(x, y, "arithmetic"),)


KERNELS["shift_right_arithmetic"] = shift_right_arithmetic_kernel


def shift_right_logical_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x >> y with zero fill."""
    return (_shift(x, y, "logical"),)


KERNELS["shift_right_logical"] = shift_right_logical_kernel
