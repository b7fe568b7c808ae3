"""Kernels of the conversion ops (``runtime.core.ops`` families ``convert``).

Each kernel is a named function followed by its registration in ``KERNELS``; the conventions are
in ``runtime.core.kernels``. The conversions here are shared by the other families' kernels.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.kernels._common import (
    _COMPLEX_PART,
    _E8M0,
    _F32,
    _F64,
    _I64,
    _NARROW_FLOAT,
    _NO_NAN,
    _SMALL_COMPLEX,
    _SUB_BYTE_INT,
    _WIDEN,
    FPE_IGNORE,
    FPE_STATE,
    KERNELS,
    Array,
    _from_f32,
    _iinfo,
    _kind,
)

# -- storage classes ------------------------------------------------------------------------------


#: Floats of at most 8 bits: converting float64 to them must round once (see _to_float).
_TINY_FLOAT: Final[frozenset[np.dtype[Any]]] = frozenset(
    d.storage for d in dt.ALL_DTYPES if d.kind == "float" and d.bits <= 8
)


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
            return _from_f32(x.astype(_F32), target)
        if target == _E8M0 and src == _F64:
            # XLA converts float64 to e8m0 directly: below its smallest value, 2**-127, is NaN
            # (from float32 the subnormals round to 2**-127, as ml_dtypes rounds them).
            x = np.where(x < 2.0**-127, np.nan, x)
        # float64 and integers: one rounding (integers pass through float64 exactly up to 2**53).
        return _from_f32(_round_to_odd_f32(x.astype(_F64)), target)
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
    """``x`` converted to ``target`` with ``jax.lax.convert_element_type`` semantics (``_convert_array``),
    overflow to inf and NaN to 0 without NumPy's warnings: other kernels and tests call it directly,
    not through ``run_kernel`` (``_common.FPE_STATE``)."""
    token = FPE_STATE.set(FPE_IGNORE)
    try:
        return _convert_array(x, target)
    finally:
        FPE_STATE.reset(token)


def _convert_array(x: Array, target: DType) -> Array:
    """``x`` converted to ``target`` with ``jax.lax.convert_element_type`` semantics.

    complex -> float or int takes the real part; float -> int truncates and saturates
    (NaN -> 0); anything -> bool is ``x != 0`` (for complex: either part non-zero, as
    NumPy, jax.numpy's ``astype`` and PyTorch give it; ``jax.lax.convert_element_type``
    would drop the imaginary part); integers wrap when narrowed.
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
        if target.kind == "bool":
            # x != 0 with both parts: 1j is True (NumPy's astype(bool), torch's .bool(),
            # jnp.astype; jax.lax.convert_element_type alone looks at the real part only).
            return np.asarray(x != 0)
        # complex -> float / int takes the real part, as JAX (and NumPy, with a warning) do.
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


# -- integer bit operations -----------------------------------------------------------------------


def convert_kernel(x: Array, *, new_dtype: Any, weak_type: bool = False) -> tuple[Array, ...]:
    """lax.convert_element_type to a castwise dtype (see ``convert_array``); ``weak_type``
    only marks the result's abstract value (``runtime.core.weak``). The result never shares
    ``x``'s memory, even for the same dtype (``astype`` copies, as NumPy's does: a write
    into the result must not change ``x``)."""
    out = np.asarray(convert_array(x, dt.dtype(new_dtype)))
    return (out.copy() if np.may_share_memory(out, x) else out,)


KERNELS["convert"] = convert_kernel


def _bits_of(x: Array, bits: int) -> Array:
    """The bit patterns of ``x`` (``bits`` wide each) as uint64."""
    raw = x.view(np.dtype(f"uint{8 * x.dtype.itemsize}")).astype(np.uint64)
    return raw & np.uint64((1 << bits) - 1) if bits < 64 else raw


def _from_bits(raw: Array, target: DType) -> Array:
    """An array of ``target`` with the bit patterns ``raw`` (uint64)."""
    storage = np.dtype(target.storage)
    if target.bits < 8:  # the storage holds the value in a byte: sign-extended for signed ints
        small = raw.astype(np.int16)
        if target.kind == "int":
            small = np.where(small >= 1 << (target.bits - 1), small - (1 << target.bits), small)
        return np.ascontiguousarray(small.astype(np.int8).view(np.uint8)).view(storage)
    return np.ascontiguousarray(raw.astype(np.dtype(f"uint{8 * storage.itemsize}"))).view(storage)


def bitcast_convert_type_kernel(x: Array, *, new_dtype: DType) -> tuple[Array, ...]:
    """lax.bitcast_convert_type: ``x``'s bits read as ``new_dtype``, little-endian as XLA's CPU
    backend (a narrower target's trailing axis holds the low bits first), into new memory."""
    target = np.dtype(new_dtype.storage)
    flat = np.asarray(x, order="C")  # (np.ascontiguousarray would make a 0-d operand 1-d)
    source = dt.from_numpy(flat.dtype)
    if source.bits % 8 == 0 and new_dtype.bits % 8 == 0:  # whole bytes: NumPy's view
        if target.itemsize == flat.dtype.itemsize:
            return (flat.view(target).copy(),)
        if target.itemsize < flat.dtype.itemsize:
            ratio = flat.dtype.itemsize // target.itemsize
            return (flat.reshape(*flat.shape, 1).view(target).reshape(*flat.shape, ratio).copy(),)
        return (flat.view(target).reshape(flat.shape[:-1]).copy(),)
    raw = _bits_of(flat, source.bits)  # a sub-byte side: by bit patterns
    if new_dtype.bits < source.bits:
        width = new_dtype.bits
        shifts = np.arange(source.bits // width, dtype=np.uint64) * np.uint64(width)
        raw = (raw[..., None] >> shifts) & np.uint64((1 << width) - 1)
    elif new_dtype.bits > source.bits:
        shifts = np.arange(new_dtype.bits // source.bits, dtype=np.uint64) * np.uint64(source.bits)
        raw = np.bitwise_or.reduce(raw << shifts, axis=-1)
    return (_from_bits(raw, new_dtype),)


KERNELS["bitcast_convert_type"] = bitcast_convert_type_kernel
