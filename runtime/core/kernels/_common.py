"""The kernel table and what several op families' kernels share: the storage classes, computing
narrow formats in a wider dtype and rounding back as XLA CPU does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import ml_dtypes
import numpy as np

from runtime.core import dtypes as dt
from runtime.core import memory, parallel

Array = np.ndarray[Any, Any]
Kernel = Callable[..., tuple[Array, ...]]

#: op name -> kernel.
KERNELS: dict[str, Kernel] = {}


# -- floating-point errors ------------------------------------------------------------------------
#
# Kernels compute XLA's IEEE results (inf - inf is NaN, 1/0 is inf, a float16 sum past 65504 is inf)
# without NumPy's RuntimeWarnings, as JAX does: every kernel call, and the executor's ufunc fast
# paths and conversions, run with NumPy's floating-point errors ignored, in that call only (the
# caller's own NumPy error state is left as it is). ``np.errstate(all="ignore")`` costs about 2 us,
# three times a small NumPy add; setting the context variable it sets costs a tenth of that, so
# castwise sets it directly where NumPy has it (NumPy 2's ``_extobj_contextvar``), with np.errstate
# as the fallback. Use it as ``token = FPE_STATE.set(FPE_IGNORE)`` ... ``FPE_STATE.reset(token)``.


class _ErrstateVar:
    """``np.errstate(all="ignore")`` behind the context variable's ``set``/``reset`` interface."""

    def set(self, _value: object) -> Any:
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def reset(self, token: Any) -> None:
        token.__exit__(None, None, None)


try:
    from numpy._core.umath import _extobj_contextvar, _make_extobj  # type: ignore[attr-defined]

    FPE_STATE: Any = _extobj_contextvar
    FPE_IGNORE: Any = _make_extobj(all="ignore")
except (ImportError, TypeError):  # another NumPy: the public, slower way
    FPE_STATE = _ErrstateVar()
    FPE_IGNORE = None


# -- storage classes ------------------------------------------------------------------------------

_F32: Final = np.dtype(np.float32)
_F64: Final = np.dtype(np.float64)
_I64: Final = np.dtype(np.int64)

#: Floats narrower than 32 bits: XLA CPU computes them in float32 and rounds back.
_NARROW_FLOAT: Final[frozenset[np.dtype[Any]]] = frozenset(
    d.storage for d in dt.ALL_DTYPES if d.kind == "float" and d.bits < 32
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
_COMPLEX_PART: Final[dict[np.dtype[Any], np.dtype[Any]]] = {c.storage: p.storage for c, p in dt.COMPLEX_PART.items()}


def _kind(storage: np.dtype[Any]) -> str:
    return dt.from_numpy(storage).kind


def _f32_to_e8m0(v: Any) -> Any:
    """float32 -> float8_e8m0fnu as XLA CPU rounds it.

    XLA sends every value strictly between 2**-127 and 2**-126 (float32's
    subnormals there) up to 2**-126; ml_dtypes 0.6 did too, 0.7 rounds them to
    nearest. Elsewhere the two agree, so only that interval is decided here.
    """
    v = np.asarray(v, dtype=_F32)
    between = (v > np.float32(2.0**-127)) & (v < np.float32(2.0**-126))
    return np.where(between, np.float32(2.0**-126), v).astype(_E8M0)


def _from_f32(v: Any, storage: np.dtype[Any]) -> Any:
    """float32 (or narrower) -> ``storage`` in one rounding; float8_e8m0fnu as XLA rounds it."""
    return _f32_to_e8m0(v) if storage == _E8M0 else v.astype(storage)


def _back(v: Any, storage: np.dtype[Any]) -> Any:
    """Round a value computed in the wide dtype back to ``storage`` the way XLA CPU does."""
    if storage in _NO_NAN:
        v = np.where(np.isnan(v), np.float32(-0.0), v)
    if storage in _VIA_F16:
        v = v.astype(_F16)
    return _from_f32(v, storage)


#: ufuncs whose result has their operands' dtype for NumPy's own float and complex types: a
#: large result of theirs is written into a cached buffer (runtime.core.memory)
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
            out = memory.empty(x.shape, x.dtype)
            return parallel.ufunc(f, (x,), out) if parallel.ON else f(x, out=out)
        return f(x)
    return _back(f(x.astype(wide)), x.dtype)


def _map2(f: Callable[..., Any], x: Array, y: Array) -> Any:
    """Binary ``_map1``: both operands share one storage dtype."""
    wide = _WIDEN.get(x.dtype)
    if wide is None:
        big = x.nbytes >= memory.POOL_MIN_BYTES or y.nbytes >= memory.POOL_MIN_BYTES
        if big and f in _KEEPS_DTYPE and x.dtype.kind in "fc":
            out = memory.empty_like_broadcast(x, y)
            if parallel.ON and out is not None:
                return parallel.ufunc(f, (x, y), out)
            return f(x, y, out=out)
        return f(x, y)
    return _back(f(x.astype(wide), y.astype(wide)), x.dtype)


def _iinfo(storage: np.dtype[Any]) -> Any:
    return ml_dtypes.iinfo(storage) if storage in _SUB_BYTE_INT else np.iinfo(storage)


# -- elementwise binary ---------------------------------------------------------------------------


def _round_half_away(v: Array) -> Array:
    # lax.round's default (AWAY_FROM_ZERO), exactly: floor(|v| + 0.5) would
    # misround odd integers above 2**(p-1).
    t = np.trunc(v)
    return np.where(np.abs(v - t) >= 0.5, t + np.sign(v), t)


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
