"""NumPy's elementwise math functions that have no op of their own (``np.logaddexp``,
``np.hypot``, ``np.copysign``, ``np.sinc``, ``np.deg2rad`` ...), under NumPy's names.

Each is a composition of op functions, as jax.numpy writes them, so a tracked operand records
those ops, and the recording replays, differentiates, batches and lowers like any program.
Integer and bool operands of a floating function go to the inexact dtype the active policy gives
a float-only op (``np.logaddexp(int8, int8)`` is float16 under ``numpy``, as NumPy's loop
selection gives; float64 under ``jax``), recorded as a ``convert``. A complex operand of a
function NumPy defines only for real numbers (``hypot``, ``copysign``, ``fabs``, ``signbit``,
``heaviside``, ``logaddexp``) raises ``OpTypeError`` naming it, as NumPy and jax.numpy do.
"""

from __future__ import annotations

import math
from typing import Any

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core import ops
from runtime.core.dtypes import DType
from runtime.core.promotion import get_policy_object, result_type
from runtime.core.shapes import OpTypeError
from runtime.core.tensor import Tensor
from runtime.numpy.common import library
from runtime.numpy.elementwise import isinf
from runtime.numpy.params import as_operand, concrete_flag, error, named

__all__ = [
    "angle",
    "around",
    "copysign",
    "deg2rad",
    "degrees",
    "fabs",
    "float_power",
    "fmod",
    "heaviside",
    "hypot",
    "iscomplex",
    "iscomplexobj",
    "isneginf",
    "isposinf",
    "isreal",
    "isrealobj",
    "logaddexp",
    "logaddexp2",
    "positive",
    "rad2deg",
    "radians",
    "rint",
    "signbit",
    "sinc",
    "trunc",
]


def float_dtype(d: DType) -> DType:
    """The dtype a float-only op computes an operand of dtype ``d`` in, under the active policy
    (what ``F.exp`` of it would give: NumPy's float loops under ``numpy``), without running one."""
    if d.is_inexact:
        return d
    from runtime.core.plan import inexact_dtype

    return inexact_dtype(ops.exp, d, get_policy_object())


def inexact_operands(fn: str, *xs: Any, real: bool = False) -> list[Tensor]:
    """The operands as Tensors of their common inexact dtype (complex refused where ``real``)."""
    ts = [as_operand(fn, x, f"x{i + 1}" if len(xs) > 1 else "x") for i, x in enumerate(xs)]
    same = all(t.dtype is ts[0].dtype for t in ts)  # (a policy without complex cannot promote complex)
    common = float_dtype(ts[0].dtype if same else result_type(*ts))
    if real and common.kind == "complex":
        raise error(OpTypeError, fn, f"{fn} is not defined for complex operands (as in NumPy)", *ts)
    return [t if t.dtype is common else F.convert(t, common) for t in ts]


def _float_operand(fn: str, x: Any) -> Tensor:
    """An operand of a function jax.numpy converts to its default float when integral (``rint``,
    ``angle``: float64, where its other functions promote int32 to float32); NumPy's float loops
    otherwise."""
    t = as_operand(fn, x)
    if t.dtype.is_inexact:
        return t
    if library() == "jax":
        from runtime.core.default_dtype import get_default_dtype

        return F.convert(t, get_default_dtype())
    return F.convert(t, float_dtype(t.dtype))


def _const(value: float, like: Tensor) -> Tensor:
    return F.full((), value, like.dtype)


def _real_kind(fn: str, x: Tensor) -> None:
    if x.dtype.kind == "complex":
        raise error(OpTypeError, fn, f"{fn} is not defined for complex operands (as in NumPy)", x)


# -- exponentials and logarithms ------------------------------------------------------------------


@named("logaddexp")
def logaddexp(x1: Any, x2: Any) -> Tensor:
    """``log(exp(x1) + exp(x2))`` without overflow (``np.logaddexp``): ``max + log1p(exp(-|x1 - x2|))``,
    and ``x1 + x2`` where the difference is NaN (both infinite of one sign), as jax.numpy's."""
    a, b = inexact_operands("logaddexp", x1, x2, real=True)
    delta = F.sub(a, b)
    spread = F.add(F.max(a, b), F.log1p(F.exp(F.neg(F.abs(delta)))))
    return F.select(F.ne(delta, delta), F.add(a, b), spread)


@named("logaddexp2")
def logaddexp2(x1: Any, x2: Any) -> Tensor:
    """``log2(2**x1 + 2**x2)`` without overflow (``np.logaddexp2``), as ``logaddexp`` in base 2."""
    a, b = inexact_operands("logaddexp2", x1, x2, real=True)
    delta = F.sub(a, b)
    tail = F.mul(F.log1p(F.exp2(F.neg(F.abs(delta)))), _const(1 / math.log(2), a))  # log2(1 + 2^-|d|)
    return F.select(F.ne(delta, delta), F.add(a, b), F.add(F.max(a, b), tail))


# -- magnitudes and signs --------------------------------------------------------------------------


@named("hypot")
def hypot(x1: Any, x2: Any) -> Tensor:
    """``sqrt(x1**2 + x2**2)`` without overflow (``np.hypot``): the larger magnitude times
    ``sqrt(1 + (smaller / larger)**2)``; infinite where either is (even with a NaN), as NumPy."""
    a, b = (F.abs(t) for t in inexact_operands("hypot", x1, x2, real=True))
    big, small = F.max(a, b), F.min(a, b)
    zero = F.eq(big, _const(0.0, big))
    safe = F.select(zero, _const(1.0, big), big)  # no 0/0 (and no NaN in its derivative)
    scaled = F.mul(big, F.sqrt(F.add(_const(1.0, big), F.square(F.div(small, safe)))))
    out = F.select(zero, big, scaled)
    infinite = F.logical_or(isinf(a), isinf(b))
    return F.select(infinite, _const(math.inf, out), out)


@named("copysign")
def copysign(x1: Any, x2: Any) -> Tensor:
    """``|x1|`` with the sign bit of ``x2`` (``np.copysign``; ``-0.0`` and ``-nan`` count as negative)."""
    a, b = inexact_operands("copysign", x1, x2, real=True)
    magnitude = F.abs(a)
    return F.select(signbit(b), F.neg(magnitude), magnitude)


_UNSIGNED_OF_WIDTH = {d.bits: d for d in (dt.uint4, dt.uint8, dt.uint16, dt.uint32, dt.uint64)}


@named("signbit")
def signbit(x: Any) -> Tensor:
    """Whether each element's sign bit is set, read from the bits themselves (``np.signbit``): True
    below zero, for ``-0.0`` and for a NaN with its sign bit set (the only NaN of the ``fnuz``
    floats included); ``float8_e8m0fnu`` has no sign bit, so all False, as bool and unsigned
    integers. The 6-bit floats (no same-width unsigned dtype to read the bits as) have no NaN,
    and arithmetic tells their sign: ``x < 0``, and ``1/x < 0`` for ``-0.0``. Complex is refused."""
    t = as_operand("signbit", x)
    if t.dtype.kind in ("bool", "uint") or t.dtype is dt.float8_e8m0fnu:
        return F.zeros(t.shape, dt.bool_)
    _real_kind("signbit", t)
    zero = F.zeros((), t.dtype)
    if not t.dtype.is_inexact:
        return F.lt(t, zero)
    unsigned = _UNSIGNED_OF_WIDTH.get(t.dtype.bits)
    if unsigned is not None:
        bits = F.bitcast_convert_type(F.stop_gradient(t), unsigned)
        return F.ge(bits, F.full((), 1 << (t.dtype.bits - 1), unsigned))
    negative_zero = F.logical_and(F.eq(t, zero), F.lt(F.div(F.ones((), t.dtype), t), zero))
    return F.logical_or(F.lt(t, zero), negative_zero)


@named("fabs")
def fabs(x: Any) -> Tensor:
    """``|x|`` as a float (``np.fabs``: integers become floats; complex is refused)."""
    (t,) = inexact_operands("fabs", x, real=True)
    return F.abs(t)


@named("positive")
def positive(x: Any) -> Tensor:
    """``+x``, a new array of the same dtype (``np.positive``; bool refused, as NumPy 2 does)."""
    t = as_operand("positive", x)
    if t.dtype.kind == "bool":
        raise error(OpTypeError, "positive", "positive is not defined for bool (as in NumPy 2)", t)
    return F.mul(t, F.full((), 1, t.dtype))


@named("heaviside")
def heaviside(x1: Any, x2: Any) -> Tensor:
    """The step function (``np.heaviside``): 0 below zero, 1 above, ``x2`` at zero (NaN stays NaN)."""
    a, b = inexact_operands("heaviside", x1, x2, real=True)
    zero = _const(0.0, a)
    step = F.select(F.lt(a, zero), F.full(a.shape, 0.0, a.dtype), F.full(a.shape, 1.0, a.dtype))
    at_zero = F.select(F.eq(a, zero), b, step)
    return F.select(F.ne(a, a), a, at_zero)


# -- angles ----------------------------------------------------------------------------------------


@named("deg2rad")
def deg2rad(x: Any) -> Tensor:
    """Degrees to radians, ``x * pi / 180`` (``np.deg2rad``, ``np.radians``)."""
    (t,) = inexact_operands("deg2rad", x)
    return F.mul(t, _const(math.pi / 180, t))


@named("radians")
def radians(x: Any) -> Tensor:
    """Degrees to radians (``np.radians``: ``deg2rad``)."""
    return deg2rad(x)


@named("rad2deg")
def rad2deg(x: Any) -> Tensor:
    """Radians to degrees, ``x * 180 / pi`` (``np.rad2deg``, ``np.degrees``)."""
    (t,) = inexact_operands("rad2deg", x)
    return F.mul(t, _const(180 / math.pi, t))


@named("degrees")
def degrees(x: Any) -> Tensor:
    """Radians to degrees (``np.degrees``: ``rad2deg``)."""
    return rad2deg(x)


@named("angle")
def angle(z: Any, deg: Any = False) -> Tensor:
    """The argument of ``z`` (``np.angle``): ``atan2(imag, real)``, in degrees with ``deg=True``;
    a real ``z`` gives 0 or pi."""
    t = as_operand("angle", z, "z")
    in_degrees = concrete_flag("angle", "deg", deg, (t,))
    if t.dtype.kind == "complex":
        out = F.atan2(F.imag(t), F.real(t))
    else:
        r = _float_operand("angle", t)
        out = F.atan2(F.full(r.shape, 0.0, r.dtype), r)  # the imaginary part: +0 (so -0.0 and -inf give pi)
    return F.mul(out, _const(180 / math.pi, out)) if in_degrees else out


@named("sinc")
def sinc(x: Any) -> Tensor:
    """``sin(pi x) / (pi x)``, 1 at 0 (``np.sinc``). The quotient reads 1 in place of 0, so its
    derivative at 0 is the limit's (0), not 0/0."""
    t = as_operand("sinc", x)
    if not t.dtype.is_inexact and library() != "jax":  # np.sinc computes integers in float64
        t = F.convert(t, dt.float64)
    (t,) = inexact_operands("sinc", t)
    zero = F.eq(t, _const(0.0, t))
    ones = F.full(t.shape, 1.0, t.dtype)
    scaled = F.mul(F.select(zero, ones, t), _const(math.pi, t))
    return F.select(zero, ones, F.div(F.sin(scaled), scaled))


# -- rounding, powers and remainders ---------------------------------------------------------------


@named("trunc")
def trunc(x: Any) -> Tensor:
    """Round toward zero (``np.trunc``): integers and bool unchanged, floats ``floor`` above zero
    and ``ceil`` below."""
    t = as_operand("trunc", x)
    _real_kind("trunc", t)
    if not t.dtype.is_inexact:
        return F.mul(t, F.full((), 1, t.dtype)) if t.dtype.kind != "bool" else F.logical_and(t, t)
    return F.select(F.lt(t, _const(0.0, t)), F.ceil(t), F.floor(t))


@named("rint")
def rint(x: Any) -> Tensor:
    """Round to the nearest integer, halves to even (``np.rint``; integers become floats, as NumPy)."""
    t = _float_operand("rint", x)
    if t.dtype.kind == "complex":
        return F.complex(rint(F.real(t)), rint(F.imag(t)))
    return F.round(t, 1)  # lax.RoundingMethod.TO_NEAREST_EVEN


@named("around")
def around(a: Any, decimals: Any = 0) -> Tensor:
    """``np.around``: ``round`` (halves to even, ``decimals=``)."""
    from runtime.numpy.shared_names import round as numpy_round

    return numpy_round(a, decimals)


@named("float_power")
def float_power(x1: Any, x2: Any) -> Tensor:
    """``x1 ** x2`` in float64, or complex128 where an operand is complex (``np.float_power``); in
    the operands' promoted inexact dtype under ``jax`` (``jnp.float_power``)."""
    if library() == "jax":
        return F.pow(*inexact_operands("float_power", x1, x2))
    a, b = as_operand("float_power", x1, "x1"), as_operand("float_power", x2, "x2")
    complex_ = a.dtype.kind == "complex" or b.dtype.kind == "complex"
    target = dt.complex128 if complex_ else dt.float64
    return F.pow(*(t if t.dtype is target else F.convert(t, target) for t in (a, b)))


@named("fmod")
def fmod(x1: Any, x2: Any) -> Tensor:
    """C's ``fmod`` (``np.fmod``): the remainder of truncated division, with the sign of ``x1``
    (``rem``; ``np.remainder`` takes the divisor's sign)."""
    a, b = as_operand("fmod", x1, "x1"), as_operand("fmod", x2, "x2")
    _real_kind("fmod", a)
    _real_kind("fmod", b)
    return F.rem(a, b)


# -- classification --------------------------------------------------------------------------------


@named("isposinf")
def isposinf(x: Any) -> Tensor:
    """``x == +inf`` (``np.isposinf``; integers are never infinite; complex refused, as NumPy)."""
    t = as_operand("isposinf", x)
    _real_kind("isposinf", t)
    if not t.dtype.is_inexact:
        return F.full(t.shape, False, dt.bool_)
    return F.eq(t, _const(math.inf, t))


@named("isneginf")
def isneginf(x: Any) -> Tensor:
    """``x == -inf`` (``np.isneginf``)."""
    t = as_operand("isneginf", x)
    _real_kind("isneginf", t)
    if not t.dtype.is_inexact or t.dtype is dt.float8_e8m0fnu:
        return F.full(t.shape, False, dt.bool_)
    return F.eq(t, _const(-math.inf, t))


def _imaginary_test(fn: str, x: Any, nonzero: bool) -> Tensor:
    """Whether each imaginary part is non-zero (``nonzero``) or zero; real dtypes have zero ones."""
    t = as_operand(fn, x)
    if t.dtype.kind != "complex":
        return F.full(t.shape, not nonzero, dt.bool_)
    imag = F.imag(t)
    return (F.ne if nonzero else F.eq)(imag, _const(0.0, imag))


@named("iscomplex")
def iscomplex(x: Any) -> Tensor:
    """Whether each element has a non-zero imaginary part (``np.iscomplex``): all False for real dtypes."""
    return _imaginary_test("iscomplex", x, True)


@named("isreal")
def isreal(x: Any) -> Tensor:
    """Whether each element has a zero imaginary part (``np.isreal``): all True for real dtypes."""
    return _imaginary_test("isreal", x, False)


def iscomplexobj(x: Any) -> bool:
    """Whether ``x``'s dtype is complex (``np.iscomplexobj``), a Python bool."""
    return as_operand("iscomplexobj", x).dtype.kind == "complex"


def isrealobj(x: Any) -> bool:
    """Whether ``x``'s dtype is not complex (``np.isrealobj``), a Python bool."""
    return as_operand("isrealobj", x).dtype.kind != "complex"
