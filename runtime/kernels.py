"""Same-dtype NumPy kernels for every op of the vocabulary.

A kernel takes NumPy arrays in the storage dtype of their castwise ``DType``
(promotion already happened: ``runtime.plan`` converted the operands) plus the
op's params as keyword arguments, and returns a tuple of output arrays. Values
follow ``jax.lax`` on CPU, not NumPy, where the two differ:

* floats narrower than 32 bits (float16, bfloat16, the float8/float6/float4
  families) are computed in float32 and rounded back after every op, which is
  what XLA's CPU backend does, so results match JAX bit for bit for the
  correctly rounded ops;
* int1/int2/int4 and their unsigned twins are computed in 8 bits and wrapped
  back;
* complex32 and bcomplex32 (no XLA type; PyTorch computes complex32 in
  complex64, its "opmath" type) are computed in complex64 and each part is
  rounded back to float16 / bfloat16 after every op, as XLA does for the narrow
  floats; ``abs``/``real``/``imag`` give the part's dtype;
* integer ``div``/``rem`` use XLA's total definitions (``x / 0 == -1``,
  ``x % 0 == x``, ``INT_MIN / -1 == INT_MIN``);
* ``convert`` saturates float -> int and maps NaN to 0, like XLA;
  float8_e8m0fnu (no zero, sign or infinity) turns 0, negative values, +-inf
  and float64 values below 2**-127 into NaN, and none of its values is zero
  (so all convert to True);
* ``max`` / ``min`` and their reductions order -0.0 < +0.0, as XLA does;
  complex ``max`` / ``min`` pick ``x`` or ``y`` as XLA does (docs/parity.md);
* ``reduce_sum`` / ``reduce_prod`` fold in XLA CPU's order, rounding after
  every step (``_xla_fold``: windows of 32, then left to right); float8_e8m0fnu
  sums, maxima and minima are NaN, like XLA's, whose identity converts to NaN.

One deliberate departure: subnormal floats keep IEEE gradual underflow (as in
NumPy), where XLA on CPU flushes them to zero, inputs and results alike. A
value below the smallest normal number of its dtype can be tiny but non-zero
here and 0 in JAX (pinned by ``tests/passes/test_lower_jax.py``). In
float8_e8m0fnu, which has no zero, XLA's flushed value is NaN: e8m0 arithmetic
whose float32 result is below 2**-126 gives NaN there.

``run_kernel`` is the checked entry point the eager executor and the graph
interpreter use: it validates the call with ``runtime.shapes.abstract_eval``
before any array work and checks that the kernel returned exactly the avals
promised. Kernels may return views of their inputs (reshape, transpose,
slice ...): callers that mutate buffers in place must copy first.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import ml_dtypes
import numpy as np

from runtime import dtypes as dt
from runtime import memory, shapes
from runtime.dtypes import DType
from runtime.ops import OpDef
from runtime.shapes import ArityError, Aval, KernelDTypeError

Array = np.ndarray[Any, Any]
Kernel = Callable[..., tuple[Array, ...]]

#: op name -> kernel.
KERNELS: dict[str, Kernel] = {}


class KernelOutputError(RuntimeError):
    """A kernel returned an array whose dtype or shape differs from its abstract value (a castwise bug)."""


# -- storage classes ------------------------------------------------------------------------------

_F32: Final = np.dtype(np.float32)
_F64: Final = np.dtype(np.float64)
_I64: Final = np.dtype(np.int64)

#: Floats narrower than 32 bits: XLA CPU computes them in float32 and rounds back.
_NARROW_FLOAT: Final[frozenset[np.dtype[Any]]] = frozenset(
    d.storage for d in dt.ALL_DTYPES if d.kind == "float" and d.bits < 32
)
#: Floats of at most 8 bits: converting float64 to them must round once (see _to_float).
_TINY_FLOAT: Final[frozenset[np.dtype[Any]]] = frozenset(
    d.storage for d in dt.ALL_DTYPES if d.kind == "float" and d.bits <= 8
)
#: storage -> the wider storage its arithmetic is done in.
_WIDEN: Final[dict[np.dtype[Any], np.dtype[Any]]] = {
    **{s: _F32 for s in _NARROW_FLOAT},
    **{d.storage: np.dtype(np.int8 if d.kind == "int" else np.uint8) for d in dt.SUB_BYTE_INTS},
    **{d.storage: np.dtype(np.complex64) for d in dt.SMALL_COMPLEX},
}
#: The sub-byte integer formats: ml_dtypes casts between two of them only through a wider integer.
_SUB_BYTE_INT: Final[frozenset[np.dtype[Any]]] = frozenset(d.storage for d in dt.SUB_BYTE_INTS)
#: complex32 / bcomplex32 (NumPy kind "V"): computed in complex64.
_SMALL_COMPLEX: Final[frozenset[np.dtype[Any]]] = frozenset(d.storage for d in dt.SMALL_COMPLEX)
_F16: Final = np.dtype(np.float16)
#: XLA CPU normalises the 8/6/4-bit floats to float16, whose ops LLVM runs in
#: float32 and rounds to float16; the float16 result is then rounded to the
#: narrow type. (float8_e8m0fnu's range does not fit float16: it goes through
#: float32 directly.) Verified bit for bit against JAX on CPU.
_VIA_F16: Final[frozenset[np.dtype[Any]]] = frozenset(
    d.storage for d in dt.ALL_DTYPES if d.kind == "float" and d.bits <= 8 and d is not dt.float8_e8m0fnu
)
#: Formats without NaN: XLA turns a NaN result into -0.0 (ml_dtypes' cast depends on the NaN's sign bit).
_NO_NAN: Final[frozenset[np.dtype[Any]]] = frozenset(
    d.storage for d in (dt.float4_e2m1fn, dt.float6_e2m3fn, dt.float6_e3m2fn)
)
#: float8_e8m0fnu: powers of two only, no zero, sign or infinity (XLA converts 0, negative
#: values and +-inf to NaN, so reductions from the identity 0 or -+inf are NaN throughout).
_E8M0: Final = dt.float8_e8m0fnu.storage
_SIGNED_INT: Final[frozenset[np.dtype[Any]]] = frozenset(d.storage for d in dt.ALL_DTYPES if d.kind == "int")
_UNSIGNED_INT: Final[frozenset[np.dtype[Any]]] = frozenset(d.storage for d in dt.ALL_DTYPES if d.kind == "uint")
_INTEGER: Final = _SIGNED_INT | _UNSIGNED_INT
_COMPLEX_PART: Final[dict[np.dtype[Any], np.dtype[Any]]] = {c.storage: p.storage for c, p in dt.COMPLEX_PART.items()}


def _kind(storage: np.dtype[Any]) -> str:
    return dt.from_numpy(storage).kind


def _back(v: Any, storage: np.dtype[Any]) -> Any:
    """Round a value computed in the wide dtype back to ``storage`` the way XLA CPU does."""
    if storage in _NO_NAN:
        v = np.where(np.isnan(v), np.float32(-0.0), v)
    if storage in _VIA_F16:
        v = v.astype(_F16)
    return v.astype(storage)


#: ufuncs whose result has their operands' dtype for NumPy's own float and complex types: a
#: large result of theirs is written into a cached buffer (runtime.memory)
_KEEPS_DTYPE: Final[frozenset[Any]] = frozenset(
    {
        np.add, np.subtract, np.multiply, np.true_divide, np.fmod, np.power, np.maximum, np.minimum,
        np.negative, np.square, np.sqrt, np.exp, np.expm1, np.log, np.log1p, np.sin, np.cos, np.tan, np.tanh,
    }
)  # fmt: skip


def _map1(f: Callable[..., Any], x: Array) -> Any:
    """Apply ``f`` in the compute dtype of ``x`` and round back to ``x``'s storage."""
    wide = _WIDEN.get(x.dtype)
    if wide is None:
        if x.nbytes >= memory.POOL_MIN_BYTES and f in _KEEPS_DTYPE and x.dtype.kind in "fc":
            return f(x, out=memory.empty(x.shape, x.dtype))
        return f(x)
    return _back(f(x.astype(wide)), x.dtype)


def _map2(f: Callable[..., Any], x: Array, y: Array) -> Any:
    """Binary ``_map1``: both operands share one storage dtype."""
    wide = _WIDEN.get(x.dtype)
    if wide is None:
        big = x.nbytes >= memory.POOL_MIN_BYTES or y.nbytes >= memory.POOL_MIN_BYTES
        if big and f in _KEEPS_DTYPE and x.dtype.kind in "fc":
            return f(x, y, out=memory.empty_like_broadcast(x, y))
        return f(x, y)
    return _back(f(x.astype(wide), y.astype(wide)), x.dtype)


def _cmp(f: Callable[[Any, Any], Any], x: Array, y: Array) -> Any:
    """A comparison in the compute dtype (widening is exact, so no rounding back)."""
    wide = _WIDEN.get(x.dtype)
    if wide is not None:
        x, y = x.astype(wide), y.astype(wide)
    return f(x, y)


def _iinfo(storage: np.dtype[Any]) -> Any:
    return ml_dtypes.iinfo(storage) if storage in _SUB_BYTE_INT else np.iinfo(storage)


# -- conversion -----------------------------------------------------------------------------------


def _round_to_odd_f32(x: Array) -> Array:
    """float64 -> float32 rounding to odd.

    XLA rounds float64 -> 8-bit floats once; going through a round-to-nearest
    float32 would round twice. Rounding to odd into float32 (which has more
    than p + 2 bits for every <= 8-bit format) and then to nearest gives the
    once-rounded result.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.asarray(x.astype(_F32))
        back = r.astype(_F64)
        # Step results that were rounded away from zero back toward zero (truncation) ...
        r = np.where(np.abs(back) > np.abs(x), np.nextafter(r, np.float32(0)), r)
        # ... and make inexact ones odd.
        inexact = (r.astype(_F64) != x) & ~np.isnan(x)
        bits = r.view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(_F32)


def _to_float(x: Array, target: np.dtype[Any]) -> Array:
    """Real (bool excluded) -> float storage ``target``, rounding like XLA CPU."""
    src = x.dtype
    if target in _NO_NAN and _kind(src) == "float":
        x = np.where(np.isnan(x), np.array(-0.0).astype(src), x)  # XLA: NaN -> -0.0
    if target in _TINY_FLOAT:
        if src == _F32 or src in _NARROW_FLOAT:
            return x.astype(_F32).astype(target)
        if target == _E8M0 and src == _F64:
            # XLA converts float64 to e8m0 directly: below its smallest value, 2**-127, is NaN
            # (from float32 the subnormals round to 2**-127, as ml_dtypes rounds them).
            x = np.where(x < 2.0**-127, np.nan, x)
        # float64 and integers: one rounding (integers pass through float64 exactly up to 2**53).
        return _round_to_odd_f32(x.astype(_F64)).astype(target)
    if target in _NARROW_FLOAT:
        # float16 / bfloat16: XLA goes through float32 (double rounding from float64, verified).
        return x.astype(_F32).astype(target)
    if src in _NARROW_FLOAT:
        return x.astype(_F32).astype(target)
    return x.astype(target)


def _float_to_int(x: Array, target: np.dtype[Any]) -> Array:
    """Float -> integer: truncate, saturate at the integer range, NaN -> 0 (XLA CPU)."""
    info = _iinfo(target)
    lo, hi = int(info.min), int(info.max)
    with np.errstate(invalid="ignore", over="ignore"):
        t = np.trunc(np.asarray(x, dtype=_F64) if x.dtype != _F64 else x)
        # float(hi) may round up (2**63): anything at or above it saturates.
        high = t >= float(hi)
        low = t <= float(lo)
        nan = np.isnan(t)
        safe = np.where(high | low | nan, 0.0, t)
        wide = _WIDEN.get(target, target)
        out = safe.astype(wide)
        out = np.where(high, wide.type(hi), np.where(low, wide.type(lo), out))
    return np.asarray(out).astype(target)


def convert_array(x: Array, target: DType) -> Array:
    """``x`` converted to ``target`` with ``jax.lax.convert_element_type`` semantics.

    complex -> real takes the real part; float -> int truncates and saturates
    (NaN -> 0); anything -> bool is ``x != 0``; integers wrap when narrowed.
    Returns ``x`` itself when the storage already matches.
    """
    dst = target.storage
    src = x.dtype
    if src == dst:
        return x
    kind = _kind(src)
    if src in _SMALL_COMPLEX:
        # NumPy's real/imag do not split ml_dtypes' complex types: go through complex64 (exact).
        x, src = x.astype(np.complex64), np.dtype(np.complex64)
        if src == dst:
            return x
    if kind == "complex":
        if target.kind == "complex":
            # per part, as the part's own conversion (complex128 -> complex32 goes
            # through float32, like float64 -> float16)
            return x.astype(dst)
        # JAX takes the real part before any complex -> real conversion, bool included.
        x, kind = np.real(x), "float"
        src = x.dtype
    if target.kind == "bool":
        # x != 0 in the compute dtype: float8_e8m0fnu has no zero (its bits 0x00 are 2**-127).
        wide = _WIDEN.get(src)
        return np.asarray((x if wide is None else x.astype(wide)) != 0)
    if kind == "bool":
        x, kind = x.astype(np.uint8), "uint"
    if target.kind in ("int", "uint"):
        if kind == "float":
            return _float_to_int(x, dst)
        if src in _SUB_BYTE_INT or dst in _SUB_BYTE_INT:
            # ml_dtypes has no cast between two sub-byte formats: go through int64 (wrapping
            # modulo 2**64 keeps the low bits the narrow target keeps)
            x = x.astype(_I64)
        return x.astype(dst)  # integer -> integer wraps, as in XLA
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the defined result
        if target.kind == "float":
            return _to_float(x, dst)
        # real -> complex: round the real part to the complex's component type first.
        return _to_float(x, _COMPLEX_PART[dst]).astype(dst)


def scalar_array(value: Any, target: DType) -> Array:
    """A 0-d array of ``target`` holding a Python/NumPy scalar param, converted like ``convert``.

    Python ints are taken as int64 (uint64 above 2**63 - 1) and then wrap into
    narrower integers, as ``jax.lax.full`` does; floats as float64.
    """
    if isinstance(value, (np.ndarray, np.generic)):
        src = np.asarray(value)
    elif isinstance(value, bool):
        src = np.asarray(value, dtype=np.bool_)
    elif isinstance(value, int):
        src = np.asarray(value, dtype=np.int64 if value < 2**63 else np.uint64)
    elif isinstance(value, float):
        src = np.asarray(value, dtype=np.float64)
    else:
        src = np.asarray(value, dtype=np.complex128)
    return np.asarray(convert_array(src, target))


def _default_fill(storage: np.dtype[Any]) -> Any:
    """jax.lax.gather's FILL_OR_DROP default: NaN, the most negative int, the largest uint, True."""
    kind = _kind(storage)
    if kind in ("float", "complex"):
        return np.nan
    if kind == "bool":
        return True
    info = _iinfo(storage)
    return int(info.min) if kind == "int" else int(info.max)


# -- elementwise binary ---------------------------------------------------------------------------


def add_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x + y (integers wrap)."""
    if x.dtype not in _WIDEN:  # the common case, without a helper call
        if x.nbytes < memory.POOL_MIN_BYTES and y.nbytes < memory.POOL_MIN_BYTES:
            return (np.add(x, y),)
        return (np.add(x, y, out=memory.empty_like_broadcast(x, y)),)  # same dtype in, same out
    return (_map2(np.add, x, y),)


KERNELS["add"] = add_kernel


def sub_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x - y (integers wrap)."""
    if x.dtype not in _WIDEN:  # the common case, without a helper call
        if x.nbytes < memory.POOL_MIN_BYTES and y.nbytes < memory.POOL_MIN_BYTES:
            return (np.subtract(x, y),)
        return (np.subtract(x, y, out=memory.empty_like_broadcast(x, y)),)  # same dtype in, same out
    return (_map2(np.subtract, x, y),)


KERNELS["sub"] = sub_kernel


def mul_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """x * y (integers wrap)."""
    if x.dtype not in _WIDEN:  # the common case, without a helper call
        if x.nbytes < memory.POOL_MIN_BYTES and y.nbytes < memory.POOL_MIN_BYTES:
            return (np.multiply(x, y),)
        return (np.multiply(x, y, out=memory.empty_like_broadcast(x, y)),)  # same dtype in, same out
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
    # jnp.power's integer algorithm (lax.pow has none): binary exponentiation
    # over the exponent's low 6 bits, shifting it as unsigned, with wrapping
    # multiplies; pow(0, y) is 0 for y != 0. A negative exponent therefore acts
    # on its two's-complement bits, exactly as in JAX.
    bits = y.view(np.dtype(f"u{y.dtype.itemsize}"))
    one = np.ones((), bits.dtype)
    acc = np.where((x == 0) & (y != 0), np.zeros((), x.dtype), np.ones((), x.dtype))
    base = np.asarray(x)
    with np.errstate(over="ignore"):
        for _ in range(6):
            acc = np.where((bits & one) != 0, np.multiply(acc, base), acc)
            base = np.multiply(base, base)
            bits = bits >> one
    return acc


def pow_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """lax.pow for equal float/complex dtypes; jnp.power's algorithm for integers."""
    if x.dtype in _INTEGER:
        return (_map2(_int_pow, x, y),)
    with np.errstate(all="ignore"):
        return (_map2(np.power, x, y),)


KERNELS["pow"] = pow_kernel


def _complex_pick(x: Array, y: Array, largest: bool) -> Array:
    # XLA's complex max/min: x where x > y (x < y) lexicographically, else y. A NaN in x
    # is not propagated (every comparison with it is false) and equal values give y.
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
        if x.dtype.kind == "c":
            return (_complex_pick(x, y, largest=True),)
        return (_map2(functools.partial(_ieee_extreme, largest=True), x, y),)


KERNELS["max"] = max_kernel


def min_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """lax.min: NaN-propagating, -0.0 < +0.0; complex as XLA (x if x < y lexicographically, else y)."""
    with np.errstate(invalid="ignore"):
        if x.dtype.kind == "c":
            return (_complex_pick(x, y, largest=False),)
        return (_map2(functools.partial(_ieee_extreme, largest=False), x, y),)


KERNELS["min"] = min_kernel


def atan2_kernel(x: Array, y: Array) -> tuple[Array, ...]:
    """lax.atan2(x, y) = arctan(x / y) in the right quadrant."""
    return (_map2(np.arctan2, x, y),)


KERNELS["atan2"] = atan2_kernel


def _round_half_away(v: Array) -> Array:
    # lax.round's default (AWAY_FROM_ZERO), exactly: floor(|v| + 0.5) would
    # misround odd integers above 2**(p-1).
    t = np.trunc(v)
    return np.where(np.abs(v - t) >= 0.5, t + np.sign(v), t)


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


# -- contraction, selection, joining ---------------------------------------------------------------


def dot_general_kernel(lhs: Array, rhs: Array, *, dimension_numbers: Any) -> tuple[Array, ...]:
    """lax.dot_general: batch dims + lhs free dims + rhs free dims, in the operand dtype.

    Narrow floats accumulate in float32 and round once at the end (XLA CPU);
    integers wrap; bool is or-of-ands.
    """
    (lc, rc), (lb, rb) = shapes.dot_dimension_numbers(dimension_numbers)
    if lhs.ndim == 2 and rhs.ndim == 2 and len(lc) == 1 and not lb and lhs.dtype not in _WIDEN:
        # a plain matrix product (the common case): one BLAS call on transposed views
        left = lhs if lc[0] == 1 else lhs.T
        right = rhs if rc[0] == 0 else rhs.T
        return (np.matmul(left, right),)
    lfree = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    batch_shape = tuple(lhs.shape[d] for d in lb)
    lfree_shape = tuple(lhs.shape[d] for d in lfree)
    rfree_shape = tuple(rhs.shape[d] for d in rfree)
    b, m, n = math.prod(batch_shape), math.prod(lfree_shape), math.prod(rfree_shape)
    k = math.prod(lhs.shape[d] for d in lc)
    storage = lhs.dtype
    wide = _WIDEN.get(storage)
    if wide is not None:
        lhs, rhs = lhs.astype(wide), rhs.astype(wide)
    left = np.transpose(lhs, [*lb, *lfree, *lc]).reshape(b, m, k)
    right = np.transpose(rhs, [*rb, *rc, *rfree]).reshape(b, k, n)
    if k == 1 and storage.kind in "biuf":
        # no contraction (an outer product, as in a batch of per-example gradients): each output is one
        # exactly rounded real product, so a broadcast multiply gives the same bits as matmul, which is
        # many times slower for a stack of k=1 products
        out = np.multiply(left, right).reshape(batch_shape + lfree_shape + rfree_shape)
    else:
        out = np.matmul(left, right).reshape(batch_shape + lfree_shape + rfree_shape)
    return (_back(out, storage) if wide is not None else out,)


KERNELS["dot_general"] = dot_general_kernel


def select_kernel(pred: Array, on_true: Array, on_false: Array) -> tuple[Array, ...]:
    """lax.select: on_true where pred, else on_false (0-d operands broadcast)."""
    return (np.where(pred, on_true, on_false),)


KERNELS["select"] = select_kernel


def clamp_kernel(lo: Array, x: Array, hi: Array) -> tuple[Array, ...]:
    """lax.clamp(min, operand, max) = min(max(operand, min), max), NaN-propagating."""
    storage = x.dtype
    wide = _WIDEN.get(storage)
    if wide is not None:
        lo, x, hi = lo.astype(wide), x.astype(wide), hi.astype(wide)
    with np.errstate(invalid="ignore"):
        out = np.minimum(np.maximum(x, lo), hi)
    return (_back(out, storage) if wide is not None else out,)


KERNELS["clamp"] = clamp_kernel


def concatenate_kernel(*operands: Array, dimension: int) -> tuple[Array, ...]:
    """lax.concatenate along ``dimension``."""
    return (np.concatenate(operands, axis=dimension),)


KERNELS["concatenate"] = concatenate_kernel


# -- indexing ------------------------------------------------------------------------------------


def _index_array(indices: Array) -> Array:
    # Work in int64; huge uint64 indices are out of bounds either way, so
    # saturate them instead of letting them wrap negative.
    if indices.dtype == np.uint64:
        indices = np.minimum(indices, np.uint64(np.iinfo(np.int64).max))
    return np.asarray(indices).astype(_I64)


def _batch_iota(batch: tuple[int, ...], axis: int) -> Array:
    shape = [1] * len(batch)
    shape[axis] = batch[axis]
    return np.arange(batch[axis], dtype=_I64).reshape(shape)


def _window_index(starts: Sequence[Any], batch: tuple[int, ...], window: Sequence[int]) -> list[Array]:
    """Per operand dim, index arrays of shape batch + window: start + offset within the window."""
    rank = len(window)
    nb = len(batch)
    out: list[Array] = []
    for d, size in enumerate(window):
        start = np.broadcast_to(np.asarray(starts[d], dtype=_I64), batch).reshape(batch + (1,) * rank)
        offset = np.arange(size, dtype=_I64).reshape((1,) * (nb + d) + (size,) + (1,) * (rank - d - 1))
        out.append(start + offset)
    return out


def gather_kernel(
    operand: Array,
    start_indices: Array,
    *,
    dimension_numbers: Any,
    slice_sizes: Sequence[int],
    mode: Any = None,
    fill_value: Any = None,
) -> tuple[Array, ...]:
    """lax.gather (index vector dim last).

    clip / promise_in_bounds clamp each start so the slice fits (XLA's native
    gather); fill_or_drop returns ``fill_value`` (default: NaN, the most
    negative int, the largest uint, True) for every slice that would leave the
    operand.
    """
    dn = shapes.gather_dimension_numbers(dimension_numbers)
    mode_name = shapes.parse_mode(mode, shapes.GATHER_DEFAULT_MODE)
    sizes = tuple(int(s) for s in slice_sizes)
    idx = _index_array(start_indices)
    batch = idx.shape[:-1]
    nb, rank = len(batch), operand.ndim
    starts: list[Any] = [0] * rank
    valid: Array | None = None
    for k, d in enumerate(dn.start_index_map):
        s = idx[..., k]
        upper = operand.shape[d] - sizes[d]
        if mode_name == "fill_or_drop":
            ok = (s >= 0) & (s <= upper)
            valid = ok if valid is None else valid & ok
        starts[d] = np.clip(s, 0, upper)
    for od, bd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True):
        starts[od] = _batch_iota(batch, bd)
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    kept = tuple(sizes[d] for d in range(rank) if d not in dropped)
    if rank == 0:
        g = np.broadcast_to(operand, batch)
    else:
        g = operand[tuple(_window_index(starts, batch, sizes))]
    if g.size != math.prod(batch + kept):
        # A collapsed dim of slice size 0 (only possible on an empty operand
        # dim): there is no data to take; the result is all fill.
        g = np.full(batch + kept, scalar_array(_default_fill(operand.dtype), dt.from_numpy(operand.dtype)))
    g = g.reshape(batch + kept)
    out_rank = nb + len(kept)
    batch_pos = [i for i in range(out_rank) if i not in dn.offset_dims]
    perm = [0] * out_rank
    for j, pos in enumerate(batch_pos):
        perm[pos] = j
    for j, pos in enumerate(dn.offset_dims):
        perm[pos] = nb + j
    out = np.transpose(g, perm)
    if valid is not None:
        fill = _default_fill(operand.dtype) if fill_value is None else fill_value
        mask_shape = [1] * out_rank
        for j, pos in enumerate(batch_pos):
            mask_shape[pos] = batch[j]
        out = np.where(valid.reshape(mask_shape), out, scalar_array(fill, dt.from_numpy(operand.dtype)))
    return (np.ascontiguousarray(out),)


KERNELS["gather"] = gather_kernel


def _scatter(
    operand: Array, scatter_indices: Array, updates: Array, dimension_numbers: Any, mode: Any, add: bool
) -> Array:
    dn = shapes.scatter_dimension_numbers(dimension_numbers)
    mode_name = shapes.parse_mode(mode, shapes.SCATTER_DEFAULT_MODE)
    idx = _index_array(scatter_indices)
    batch = idx.shape[:-1]
    rank = operand.ndim
    window = shapes.scatter_window(operand.shape, updates.shape, dn)
    scatter_dims = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
    # Updates as batch + full-rank window (inserted/batching dims get size 1).
    vals = np.transpose(updates, [*scatter_dims, *dn.update_window_dims]).reshape(batch + window)
    starts: list[Any] = [0] * rank
    valid: Array | None = None
    for k, d in enumerate(dn.scatter_dims_to_operand_dims):
        s = idx[..., k]
        upper = operand.shape[d] - window[d]
        if mode_name == "clip":
            s = np.clip(s, 0, upper)
        else:
            # FILL_OR_DROP and PROMISE_IN_BOUNDS lower to XLA's native scatter,
            # which skips a whole update window that would leave the operand.
            ok = (s >= 0) & (s <= upper)
            valid = ok if valid is None else valid & ok
        starts[d] = s
    for od, bd in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims, strict=True):
        starts[od] = _batch_iota(batch, bd)
    out = operand.copy()
    full = batch + window
    if rank == 0:
        flat = vals.reshape(-1) if valid is None else vals[np.broadcast_to(valid, batch)]
        if flat.size:
            out[()] = _map2(np.add, out, np.sum(flat, dtype=out.dtype)) if add else flat[-1]
        return out
    index = [np.broadcast_to(ix, full) for ix in _window_index(starts, batch, window)]
    if valid is None:
        where = tuple(ix.reshape(-1) for ix in index)
        flat = vals.reshape(-1)
    else:
        keep = np.broadcast_to(valid.reshape(batch + (1,) * rank), full)
        where = tuple(ix[keep] for ix in index)
        flat = vals[keep]
    if add:
        # ufunc.at adds one update at a time in index order, each rounded to the
        # storage dtype (for narrow floats NumPy/ml_dtypes add in float32 and
        # round back), as XLA's sequential CPU scatter does.
        np.add.at(out, where, flat)
    else:
        out[where] = flat
    return out


def scatter_kernel(
    operand: Array,
    scatter_indices: Array,
    updates: Array,
    *,
    dimension_numbers: Any,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> tuple[Array, ...]:
    """lax.scatter: a copy of operand with update windows written (last write wins on duplicates)."""
    return (_scatter(operand, scatter_indices, updates, dimension_numbers, mode, add=False),)


KERNELS["scatter"] = scatter_kernel


def scatter_add_kernel(
    operand: Array,
    scatter_indices: Array,
    updates: Array,
    *,
    dimension_numbers: Any,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> tuple[Array, ...]:
    """lax.scatter_add: a copy of operand with update windows added (duplicates accumulate)."""
    return (_scatter(operand, scatter_indices, updates, dimension_numbers, mode, add=True),)


KERNELS["scatter_add"] = scatter_add_kernel


def _clamped_window(shape: Sequence[int], starts: Sequence[Array], sizes: Sequence[int]) -> tuple[slice, ...]:
    # XLA clamps each start into [0, dim - size]; negative starts do not wrap
    # (jax.lax's allow_negative_indices=True wrapper adds the dim size first).
    out: list[slice] = []
    for n, s, size in zip(shape, starts, sizes, strict=True):
        begin = min(max(int(s), 0), n - size)
        out.append(slice(begin, begin + size))
    return tuple(out)


def dynamic_slice_kernel(operand: Array, *start_indices: Array, slice_sizes: Sequence[int]) -> tuple[Array, ...]:
    """lax.dynamic_slice with XLA's start clamping."""
    sizes = [int(s) for s in slice_sizes]
    return (operand[_clamped_window(operand.shape, start_indices, sizes)],)


KERNELS["dynamic_slice"] = dynamic_slice_kernel


def dynamic_update_slice_kernel(operand: Array, update: Array, *start_indices: Array) -> tuple[Array, ...]:
    """lax.dynamic_update_slice with XLA's start clamping; returns a new array."""
    out = operand.copy()
    out[_clamped_window(operand.shape, start_indices, update.shape)] = update
    return (out,)


KERNELS["dynamic_update_slice"] = dynamic_update_slice_kernel


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


def expm1_kernel(x: Array) -> tuple[Array, ...]:
    """e**x - 1, accurate near 0 (narrow floats follow XLA's float16 algorithm)."""
    if x.dtype == _F16 or x.dtype in _VIA_F16:
        return (_expm1_f16(x),)
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


_EXPANDED: list[tuple[str, Callable[[Any], Any], Callable[..., Array], str]] = [
    ("asin", np.arcsin, _asin_steps, "Inverse sine (principal branch)."),
    ("acos", np.arccos, _acos_steps, "Inverse cosine (principal branch)."),
    ("asinh", np.arcsinh, _asinh_steps, "Inverse hyperbolic sine."),
    ("acosh", np.arccosh, _acosh_steps, "Inverse hyperbolic cosine (NaN below 1 for reals)."),
    ("atanh", np.arctanh, _atanh_steps, "Inverse hyperbolic tangent."),
]
for _name, _f, _steps, _doc in _EXPANDED:
    KERNELS[_name] = _expanded_kernel(_name, _f, _steps, _doc)


_PLAIN: list[tuple[str, Callable[[Any], Any], str]] = [
    ("sinh", np.sinh, "Hyperbolic sine."),
    ("cosh", np.cosh, "Hyperbolic cosine."),
    ("tan", np.tan, "Tangent."),
    ("atan", np.arctan, "Inverse tangent (principal branch)."),
    ("cbrt", np.cbrt, "Real cube root."),
]
for _name, _f, _doc in _PLAIN:
    KERNELS[_name] = _unary_float_kernel(_name, _f, _doc)


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


def _bits(storage: np.dtype[Any]) -> int:
    return dt.from_numpy(storage).bits


def _pattern(x: Array) -> Array:
    """The two's complement bit pattern of integers (or bools) as uint64, masked to the format's width."""
    n = _bits(x.dtype)
    if x.dtype in _SUB_BYTE_INT:
        x = x.astype(_WIDEN[x.dtype])
    p = x.astype(np.int64).view(np.uint64) if x.dtype.kind != "u" else x.astype(np.uint64)
    return p if n == 64 else p & np.uint64((1 << n) - 1)


def _from_pattern(p: Array, storage: np.dtype[Any]) -> Array:
    """Integers of ``storage`` from n-bit patterns (sign-extended for signed formats)."""
    n = _bits(storage)
    if storage.kind == "b":
        return p.astype(np.bool_)
    if storage in _SIGNED_INT and n < 64:
        sign = np.uint64(1 << (n - 1))
        v = (p ^ sign).astype(np.int64) - np.int64(1 << (n - 1))
    else:
        v = p.view(np.int64) if storage in _SIGNED_INT else p
    return np.asarray(v).astype(storage)


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


def convert_kernel(x: Array, *, new_dtype: Any, weak_type: bool = False) -> tuple[Array, ...]:
    """lax.convert_element_type to a castwise dtype (see ``convert_array``); ``weak_type``
    only marks the result's abstract value (``runtime.weak``)."""
    return (np.asarray(convert_array(x, dt.dtype(new_dtype))),)


KERNELS["convert"] = convert_kernel


# -- reductions -----------------------------------------------------------------------------------

#: XLA's CPU compiler (its tree-reduction rewrite) splits every reduced dimension longer than
#: this into windows of this size, padded with the identity evenly at both ends (the odd
#: element at the high end); it reduces each window, then reduces the window results the
#: same way until no reduced dimension is longer, and the last reduce runs over what is left.
_TREE_WINDOW: Final = 32
#: XLA CPU hands float32/float64 sums of at least this many elements to YNNPACK, whose blocked,
#: vectorised order castwise does not replicate: NumPy's pairwise sum stands in for it there.
_YNN_MIN_ELEMENTS: Final = 4096
_FLOAT64_LIKE: Final = frozenset({_F32, _F64})
#: Below this many elements per step, ``_fold`` makes one ``accumulate`` call instead of one call per step.
_FOLD_CALL_MIN: Final = 256
#: Formats without an infinity take -+finfo.max as the max/min identity (jax.lax's choice).
_NO_INF: Final[frozenset[np.dtype[Any]]] = frozenset(
    d.storage for d in (dt.float8_e4m3fn, dt.float8_e4m3fnuz, dt.float8_e4m3b11fnuz, dt.float8_e5m2fnuz)
)


def _fold(y: Array, ufunc: np.ufunc, axis: int) -> Array:
    """Left fold of ``ufunc`` along ``axis``, rounded to the dtype at every step.

    Vectorised over the other axes: one in-place ufunc call per step (the
    narrow formats' ufuncs compute in float32 and round back once, as XLA's
    reducers do), or ``accumulate`` (sequential by definition, unlike
    ``reduce``, which sums pairwise) when each step would be too small to pay
    for its call.
    """
    axis %= y.ndim
    n = y.shape[axis]
    head: tuple[Any, ...] = (slice(None),) * axis
    if n > 2 and y.size < _FOLD_CALL_MIN * n:
        return np.array(ufunc.accumulate(y, axis=axis)[(*head, n - 1)])
    acc = np.array(y[(*head, 0)])
    for k in range(1, n):
        ufunc(acc, y[(*head, k)], out=acc)
    return acc


def _windows(y: Array, axis: int, init: Array) -> tuple[Array, int]:
    """``y`` padded with ``init`` along ``axis`` to whole windows, and the number of windows."""
    n = y.shape[axis]
    pad = -n % _TREE_WINDOW
    if pad:
        shape = list(y.shape)
        shape[axis] = n + pad
        padded = np.full(shape, init, dtype=y.dtype)
        inner = [slice(None)] * y.ndim
        inner[axis] = slice(pad // 2, pad // 2 + n)
        padded[tuple(inner)] = y
        y = padded
    return y, (n + pad) // _TREE_WINDOW


def _xla_fold(x: Array, axes: Sequence[int], ufunc: np.ufunc, init: Array) -> Array:
    """``ufunc`` over ``axes`` in XLA CPU's order, one rounding per step.

    Each window (see ``_TREE_WINDOW``) and the final reduce run in row-major
    order over the reduced dimensions, from the identity ``init``. That is
    XLA's order for every reduction over one axis. XLA marks its reducer
    ``reassoc``, and LLVM vectorises some loops over several reduced axes
    across the outer one (a tree over the lanes at the end): float16/32/64 and
    complex reductions over several axes may then differ in the last bits.
    bfloat16 and the 8-bit formats round through a conversion after every
    step, which pins the order: they match XLA bit for bit over any axes.
    """
    if len(axes) == 1:
        axis = int(axes[0])
        y = x
        while (n := y.shape[axis]) > _TREE_WINDOW:
            y, groups = _windows(y, axis, init)
            y = _fold(y.reshape((*y.shape[:axis], groups, _TREE_WINDOW, *y.shape[axis + 1 :])), ufunc, axis + 1)
        if n == 0:
            return np.full(y.shape[:axis] + y.shape[axis + 1 :], init, dtype=x.dtype)
        return _fold(y, ufunc, axis)
    axes = sorted(int(a) for a in axes)
    out_shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
    if any(x.shape[a] == 0 for a in axes):
        return np.full(out_shape, init, dtype=x.dtype)
    # Several axes: the reduced ones go last, in order; each level folds its windows flattened
    # row-major (window offsets along the first reduced axis outermost).
    k = len(out_shape)
    y = np.transpose(x, [d for d in range(x.ndim) if d not in axes] + axes)
    while any(n > _TREE_WINDOW for n in y.shape[k:]):
        split: list[int] = []
        for i, n in enumerate(y.shape[k:]):
            if n > _TREE_WINDOW:
                y, groups = _windows(y, k + i, init)
                split += [groups, _TREE_WINDOW]
            else:
                split += [1, n]
        m = len(split) // 2
        y = y.reshape(out_shape + tuple(split))
        y = np.transpose(y, [*range(k), *(k + 2 * i for i in range(m)), *(k + 2 * i + 1 for i in range(m))])
        y = _fold(y.reshape((*out_shape, *split[0::2], -1)), ufunc, -1)
    return _fold(y.reshape((*out_shape, -1)), ufunc, -1)


@functools.cache
def _identity(storage: np.dtype[Any], value: int) -> Array:
    """The 0-d identity of a sum (0) or product (1) in ``storage``, converted as XLA converts it."""
    out = scalar_array(value, dt.from_numpy(storage))
    out.setflags(write=False)
    return out


_POSITIVE_ZERO: Final[dict[np.dtype[Any], Array]] = {_F32: np.zeros((), _F32), _F64: np.zeros((), _F64)}


def _reduce_arith(x: Array, axes: Sequence[int], ufunc: np.ufunc, identity: int) -> Array:
    storage = x.dtype
    if math.prod(x.shape[a] for a in axes) == 1:
        # One element per group: XLA simplifies the reduce to a reshape (no identity is combined).
        return np.array(x.reshape(tuple(n for d, n in enumerate(x.shape) if d not in axes)))
    if ufunc is np.add and storage in _FLOAT64_LIKE and (x.size >= _YNN_MIN_ELEMENTS or len(axes) > 1):
        # Big float32/float64 sums (YNNPACK's blocked order) and sums over several axes
        # (vectorised with reassociation) have no fixed order in XLA either: NumPy's sum,
        # within the dtype's tolerance, at NumPy's speed (first, as every backward of a
        # broadcast runs it; float32/float64 reduce in their own dtype).
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.add.reduce(x, axis=axes[0] if len(axes) == 1 else tuple(axes))
            if type(total) is np.ndarray:
                return np.add(total, _POSITIVE_ZERO[storage], out=total)  # XLA starts at +0.0
            return np.asarray(total + _POSITIVE_ZERO[storage])
    kind = _kind(storage)
    with np.errstate(over="ignore", invalid="ignore"):
        if kind in ("bool", "int", "uint"):
            # Integer arithmetic wraps and is associative: any order gives XLA's result.
            wide = _WIDEN.get(storage)
            if wide is None:
                return np.asarray(ufunc.reduce(x, axis=tuple(axes), dtype=storage))
            return np.asarray(ufunc.reduce(x.astype(wide), axis=tuple(axes), dtype=wide)).astype(storage)
        init = _identity(storage, identity)
        if storage == _E8M0 and ufunc is np.add:  # 0 is NaN in float8_e8m0fnu: so is every sum
            return np.full(tuple(n for d, n in enumerate(x.shape) if d not in axes), init, dtype=storage)
        out = np.asarray(_xla_fold(x, axes, ufunc, init))
        if ufunc is np.add:
            out = np.add(out, init, out=out)  # XLA starts at +0.0: no sum ends at -0.0
    return out


def reduce_sum_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """Sum over ``axes`` in the input dtype, in XLA CPU's order (integers wrap)."""
    return (_reduce_arith(x, axes, np.add, 0),)


KERNELS["reduce_sum"] = reduce_sum_kernel


def reduce_prod_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """Product over ``axes`` in the input dtype, in XLA CPU's order (integers wrap)."""
    return (_reduce_arith(x, axes, np.multiply, 1),)


KERNELS["reduce_prod"] = reduce_prod_kernel


def _extreme_identity(storage: np.dtype[Any], largest: bool) -> Array:
    # The identity lax uses for an empty max (min): -inf (+inf), or -+finfo.max in the formats
    # without an infinity; the int range's end; False (True). float8_e8m0fnu's is NaN.
    kind = _kind(storage)
    target = dt.from_numpy(storage)
    if kind == "bool":
        return np.asarray(not largest)
    if kind in ("int", "uint"):
        info = _iinfo(storage)
        return scalar_array(int(info.min if largest else info.max), target)
    big = float(ml_dtypes.finfo(storage).max) if storage in _NO_INF else np.inf
    return scalar_array(-big if largest else big, target)


def _reduce_extreme(x: Array, axes: Sequence[int], largest: bool) -> Array:
    axes = tuple(axes)
    identity = _extreme_identity(x.dtype, largest)
    size = math.prod(x.shape[a] for a in axes)
    if size == 0 or (size > 1 and x.dtype == _E8M0):
        # Empty, or float8_e8m0fnu, whose identity is NaN: max/min propagate it everywhere
        # (a group of one element is a reshape in XLA: no identity is combined).
        out_shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return np.full(out_shape, identity, dtype=x.dtype)
    f = np.max if largest else np.min
    with np.errstate(invalid="ignore"):
        return np.asarray(_map1(lambda v: _order_zeros(v, f(v, axis=axes), axes, largest), x))


def _order_zeros(v: Array, out: Any, axes: tuple[int, ...], largest: bool) -> Any:
    """``out`` (NumPy's max/min of ``v`` over ``axes``) with XLA's -0.0 < +0.0.

    NumPy returns whichever zero it meets; XLA's max of a group whose largest
    value is zero is +0.0 when the group holds a +0.0 (its min is -0.0 when the
    group holds a -0.0). XLA's float32/float64 reductions of 4096 elements or
    more (YNNPACK) do not order zeros; castwise orders them everywhere.
    """
    if v.dtype.kind != "f":
        return out
    out = np.asarray(out)
    zero = out == 0
    if not zero.any():
        return out
    wanted = (v == 0) & (np.signbit(v) != largest)  # +0.0 for the max, -0.0 for the min
    found = np.any(wanted, axis=axes)
    signed = np.where(found, np.zeros((), v.dtype) if largest else -np.zeros((), v.dtype), out)
    return np.where(zero, signed, out).astype(v.dtype)


def reduce_max_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """Max over ``axes`` (NaN-propagating; an empty reduction gives -inf / the int minimum / False)."""
    return (_reduce_extreme(x, axes, largest=True),)


KERNELS["reduce_max"] = reduce_max_kernel


def reduce_min_kernel(x: Array, *, axes: Sequence[int]) -> tuple[Array, ...]:
    """Min over ``axes`` (NaN-propagating; an empty reduction gives +inf / the int maximum / True)."""
    return (_reduce_extreme(x, axes, largest=False),)


KERNELS["reduce_min"] = reduce_min_kernel


# -- structural ------------------------------------------------------------------------------------


def reshape_kernel(x: Array, *, new_sizes: Sequence[int]) -> tuple[Array, ...]:
    """Row-major reshape (a view when possible)."""
    return (np.reshape(x, tuple(int(n) for n in new_sizes)),)


KERNELS["reshape"] = reshape_kernel


def transpose_kernel(x: Array, *, permutation: Sequence[int]) -> tuple[Array, ...]:
    """Output dim i is input dim permutation[i] (a view)."""
    return (np.transpose(x, tuple(int(p) for p in permutation)),)


KERNELS["transpose"] = transpose_kernel


def broadcast_in_dim_kernel(
    x: Array, *, shape: Sequence[int], broadcast_dimensions: Sequence[int]
) -> tuple[Array, ...]:
    """lax.broadcast_in_dim; the result is a fresh, writable array."""
    out_shape = tuple(int(n) for n in shape)
    expanded = [1] * len(out_shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[int(d)] = x.shape[i]
    # copyto broadcasts into a fresh C-order array (np.array of a broadcast view keeps its
    # zero-stride axis order, and a strided result slows every op that reads it)
    out = memory.empty(out_shape, x.dtype)
    np.copyto(out, x.reshape(expanded))
    return (out,)


KERNELS["broadcast_in_dim"] = broadcast_in_dim_kernel


def slice_kernel(
    x: Array,
    *,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],
    strides: Sequence[int] | None = None,
) -> tuple[Array, ...]:
    """lax.slice (a view)."""
    steps = [1] * x.ndim if strides is None else strides
    return (
        x[tuple(slice(int(s), int(e), int(st)) for s, e, st in zip(start_indices, limit_indices, steps, strict=True))],
    )


KERNELS["slice"] = slice_kernel


def pad_kernel(x: Array, *, padding_config: Sequence[Sequence[int]], padding_value: Any = 0) -> tuple[Array, ...]:
    """lax.pad: low/high padding (negative crops) and interior padding per dim."""
    value = scalar_array(padding_value, dt.from_numpy(x.dtype))
    big: list[int] = []
    place: list[slice] = []
    crop: list[slice] = []
    for (lo, hi, interior), n in zip(((int(a), int(b), int(c)) for a, b, c in padding_config), x.shape, strict=True):
        core = n + max(n - 1, 0) * interior
        plo, phi = max(lo, 0), max(hi, 0)
        big.append(plo + core + phi)
        place.append(slice(plo, plo + core, interior + 1))
        crop.append(slice(max(-lo, 0), plo + core + phi - max(-hi, 0)))
    out = np.full(big, value, dtype=x.dtype)
    out[tuple(place)] = x
    # np.asarray, not np.ascontiguousarray: the latter makes a 0-d operand's result 1-d
    return (np.asarray(out[tuple(crop)], order="C"),)


KERNELS["pad"] = pad_kernel


def reverse_kernel(x: Array, *, dimensions: Sequence[int]) -> tuple[Array, ...]:
    """lax.rev along ``dimensions`` (a view)."""
    return (np.flip(x, axis=tuple(int(d) for d in dimensions)),)


KERNELS["reverse"] = reverse_kernel


def iota_kernel(*, dtype: Any, shape: Sequence[int], dimension: int) -> tuple[Array, ...]:
    """lax.broadcasted_iota: the index along ``dimension``, converted to ``dtype``."""
    target = dt.dtype(dtype)
    out_shape = tuple(int(n) for n in shape)
    line = convert_array(np.arange(out_shape[dimension], dtype=_I64), target)
    out = np.empty(out_shape, line.dtype)
    np.copyto(out, line.reshape([n if i == dimension else 1 for i, n in enumerate(out_shape)]))
    return (out,)


KERNELS["iota"] = iota_kernel


def full_kernel(*, shape: Sequence[int], fill_value: Any, dtype: Any) -> tuple[Array, ...]:
    """lax.full: ``fill_value`` converted to ``dtype`` like convert_element_type."""
    target = dt.dtype(dtype)
    return (np.full(tuple(int(n) for n in shape), scalar_array(fill_value, target), dtype=target.storage),)


KERNELS["full"] = full_kernel


# -- linear algebra ------------------------------------------------------------------------------


def eigh_kernel(x: Array, *, lower: bool = True) -> tuple[Array, ...]:
    """(eigenvectors, eigenvalues ascending) reading only the ``lower`` (or upper) triangle."""
    w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    return (v, w)


KERNELS["eigh"] = eigh_kernel


def cholesky_kernel(x: Array) -> tuple[Array, ...]:
    """Lower Cholesky factor from the lower triangle; a non-positive-definite matrix gives NaNs (like JAX)."""
    try:
        return (np.linalg.cholesky(x),)
    except np.linalg.LinAlgError:
        pass
    # NumPy fails the whole batch; JAX marks only the failing matrices (NaN on
    # and below the diagonal, zeros above).
    flat = x.reshape((-1, *x.shape[-2:]))
    out = np.empty_like(flat)
    failed = np.tril(np.full(x.shape[-2:], np.nan, dtype=x.dtype))
    for i, m in enumerate(flat):
        try:
            out[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            out[i] = failed
    return (out.reshape(x.shape),)


KERNELS["cholesky"] = cholesky_kernel


def triangular_solve_kernel(
    a: Array,
    b: Array,
    *,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
) -> tuple[Array, ...]:
    """lax.linalg.triangular_solve: op(a) @ x = b (left_side) or x @ op(a) = b.

    op(a) is a, a.T, conj(a) or a.H per transpose_a/conjugate_a; only the
    ``lower`` (or upper) triangle of a is read, and its diagonal is taken as
    ones when ``unit_diagonal``. Solved by substitution, so a zero pivot gives
    inf/NaN as in LAPACK's trsm instead of an exception.
    """
    storage = a.dtype
    m = a.shape[-1]
    if storage == _E8M0 and m > 1:
        # XLA solves float8_e8m0fnu systems by inverting the triangle, whose zeros and
        # negated entries are NaN in a format without zero or sign: every result is NaN.
        return (np.full(b.shape, np.nan, dtype=storage),)
    wide = _WIDEN.get(storage)
    if wide is not None:
        a, b = a.astype(wide), b.astype(wide)
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        tri = tri.copy()
        idx = np.arange(m)
        tri[..., idx, idx] = 1
    mat = np.swapaxes(tri, -1, -2) if transpose_a else tri
    if conjugate_a and np.iscomplexobj(mat):
        mat = np.conjugate(mat)
    is_lower = lower != transpose_a
    rhs = b
    if not left_side:
        # x op(a) = b  <=>  op(a)^T x^T = b^T: transposing flips the triangle.
        mat = np.swapaxes(mat, -1, -2)
        rhs = np.swapaxes(b, -1, -2)
        is_lower = not is_lower
    x = np.zeros(rhs.shape, dtype=np.result_type(mat, rhs))
    order = range(m) if is_lower else range(m - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            done = slice(0, i) if is_lower else slice(i + 1, m)
            acc = rhs[..., i, :] - np.matmul(mat[..., i : i + 1, done], x[..., done, :])[..., 0, :]
            x[..., i, :] = acc if unit_diagonal else acc / mat[..., i, i, None]
    if not left_side:
        x = np.swapaxes(x, -1, -2)
    x = np.ascontiguousarray(x)
    return (_back(x, storage) if wide is not None else x,)


KERNELS["triangular_solve"] = triangular_solve_kernel


# -- checked entry point ---------------------------------------------------------------------------


class _Plan:
    """What run_kernel memoises per call signature: input storages and output avals."""

    __slots__ = ("in_storage", "out_avals", "out_expect", "single")

    def __init__(self, in_storage: list[np.dtype[Any]], out_avals: tuple[Aval, ...]) -> None:
        self.in_storage = in_storage
        self.out_avals = out_avals
        self.out_expect = tuple((d.storage, s) for d, s in out_avals)
        self.single = len(out_avals) == 1


_PLANS: dict[Any, _Plan] = {}
_PLAN_LIMIT: Final = 8192


def _prepare(name: str, in_dtypes: Sequence[Any], arrays: Sequence[Array], params: Mapping[str, Any]) -> _Plan:
    opdef = shapes.resolve(name)
    dtypes = tuple(d if isinstance(d, DType) else dt.dtype(d) for d in in_dtypes)
    if len(dtypes) != len(arrays):
        raise ArityError(f"{name}: {len(dtypes)} dtypes for {len(arrays)} arrays")
    avals = tuple((d, tuple(a.shape)) for d, a in zip(dtypes, arrays, strict=True))
    out_avals = shapes.abstract_eval_cached(opdef, avals, params)
    if name not in KERNELS:
        raise NotImplementedError(f"{name}: no kernel")
    return _Plan([d.storage for d in dtypes], out_avals)


def _storage_error(name: str, in_dtypes: Sequence[Any], arrays: Sequence[Array]) -> KernelDTypeError:
    opdef = shapes.resolve(name)
    dtypes = [d if isinstance(d, DType) else dt.dtype(d) for d in in_dtypes]
    names = shapes.operand_names(opdef, len(arrays))
    for operand, d, a in zip(names, dtypes, arrays, strict=True):
        if a.dtype != d.storage:
            return KernelDTypeError(
                f"{name}: {shapes.format_aval(operand, (d, tuple(a.shape)))} holds {a.dtype} data, expected {d.storage}"
            )
    raise AssertionError("no storage mismatch")  # pragma: no cover


def run_kernel(
    op: OpDef | str, in_dtypes: Sequence[DType], arrays: Sequence[Array], params: Mapping[str, Any]
) -> tuple[tuple[Array, ...], tuple[Aval, ...]]:
    """Run ``op``'s kernel on ``arrays`` (NumPy arrays in the storage of ``in_dtypes``).

    Validates the call first (``abstract_eval``: arity, dtypes, shapes,
    params; the same errors), checks each array holds its dtype's storage
    (``KernelDTypeError``), runs the kernel and checks that each output has
    exactly its aval's storage dtype and shape (``KernelOutputError``
    otherwise). Returns ``(outputs, output_avals)``. Validation is memoised
    per (op, dtypes, shapes, params), so a repeated small op costs a
    dictionary lookup and a few identity checks on top of the NumPy call.
    """
    name = op if isinstance(op, str) else op.name
    try:
        key: Any = (
            name,
            shapes.freeze_params(params) if params else None,
            tuple(in_dtypes),
            tuple([a.shape for a in arrays]),
        )
        plan = _PLANS.get(key)
    except TypeError:  # an unhashable param (an ndarray fill value): validate every time
        key, plan = None, None
    if plan is None:
        plan = _prepare(name, in_dtypes, arrays, params)
        if key is not None:
            if len(_PLANS) >= _PLAN_LIMIT:
                _PLANS.clear()  # crude bound: a long run can see unboundedly many shapes
            _PLANS[key] = plan
    # Built-in NumPy dtypes are singletons, so ``is`` settles the common case.
    if [a.dtype for a in arrays] != plan.in_storage:
        raise _storage_error(name, in_dtypes, arrays)
    # Looked up per call (not memoised) so a kernel replaced in KERNELS takes effect.
    outs = KERNELS[name](*arrays, **params)
    if plan.single and len(outs) == 1:
        out = outs[0]
        storage, shape = plan.out_expect[0]
        if type(out) is not np.ndarray:
            out = np.asarray(out)  # NumPy returns scalars for 0-d results
        if (out.dtype is not storage and out.dtype != storage) or out.shape != shape:
            raise _output_error(name, out, storage, shape)
        return (out,), plan.out_avals
    if len(outs) != len(plan.out_expect):
        raise KernelOutputError(f"{name}: kernel returned {len(outs)} outputs, expected {len(plan.out_expect)}")
    checked: list[Array] = []
    for out, (storage, shape) in zip(outs, plan.out_expect, strict=True):
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        if out.dtype != storage or out.shape != shape:
            raise _output_error(name, out, storage, shape)
        checked.append(out)
    return tuple(checked), plan.out_avals


def _output_error(name: str, out: Array, storage: np.dtype[Any], shape: tuple[int, ...]) -> KernelOutputError:
    return KernelOutputError(f"{name}: kernel returned {out.dtype}{list(out.shape)}, expected {storage}{list(shape)}")


def custom_call_kernel(*arrays: Array, fun: Callable[..., Sequence[Any]], in_avals: Any, **_: Any) -> tuple[Array, ...]:
    """Replay a user function recorded as one call: ``fun`` on the operands as Tensors, with
    recording off (its derivative is the call's rule, not the ops inside)."""
    from runtime import hooks
    from runtime.tensor import Tensor

    with hooks.recorder_override(None):
        outs = fun(*[Tensor(a, d) for a, (d, _) in zip(arrays, in_avals, strict=True)])
    return tuple(o.numpy() for o in outs)


KERNELS["custom_jvp_call"] = custom_call_kernel
KERNELS["custom_vjp_call"] = custom_call_kernel


def _check_complete() -> None:
    # Import-time guard: every declared op needs a kernel.
    missing = [name for name in shapes.ops.OPS if name not in KERNELS]
    if missing:
        raise ImportError(f"runtime.kernels: no kernel for {', '.join(missing)}")


_check_complete()
