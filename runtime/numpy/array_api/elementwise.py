"""The standard's elementwise functions under its names and meanings, each composed of op
functions (``runtime.core.lax``), so it records, differentiates, vmaps and lowers.

Most are one op (``add`` is ``lax.add``, ``bitwise_left_shift`` is ``lax.shift_left``). The
rest are the standard's meanings built from ops: ``round`` half to even, ``logical_*`` on truth
values (lax's ``and``/``or``/``xor`` are bitwise), ``bitwise_right_shift`` arithmetic for signed
and logical for unsigned integers (as NumPy), ``copysign``, ``hypot`` without overflow,
``logaddexp``, ``signbit`` and ``trunc``. ``ceil``/``floor``/``round``/``trunc`` of an integer
or bool array return it unchanged, as the standard says.
"""

from __future__ import annotations

from typing import Any

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.promotion import result_type
from runtime.core.shapes import OpTypeError
from runtime.core.tensor import Tensor
from runtime.numpy import elementwise as E
from runtime.numpy import math_functions as npm
from runtime.numpy.array_api.common import operand, standard_error
from runtime.numpy.params import named

__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "ceil",
    "clip",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "expm1",
    "floor",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nextafter",
    "not_equal",
    "positive",
    "pow",
    "real",
    "reciprocal",
    "remainder",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "trunc",
]


def _binary(name: str, fn: Any, what: str) -> Any:
    """``fn`` under the standard's name ``name`` (its errors say ``name:``), positional-only."""

    @named(name)
    def function(x1: Any, x2: Any, /) -> Tensor:
        return fn(x1, x2)  # type: ignore[no-any-return]

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"The standard's ``{name}``: {what}, elementwise (the operands promoted by the policy)."
    return function


def _unary(name: str, fn: Any, what: str) -> Any:
    """``fn`` under the standard's name ``name`` (its errors say ``name:``), positional-only."""

    @named(name)
    def function(x: Any, /) -> Tensor:
        return fn(x)  # type: ignore[no-any-return]

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"The standard's ``{name}``: {what}, elementwise."
    return function


# -- one op each ----------------------------------------------------------------------------------

abs = F.abs  # noqa: A001
acos = F.acos
acosh = F.acosh
add = F.add
asin = F.asin
asinh = F.asinh
atan = F.atan
atan2 = F.atan2
atanh = F.atanh
bitwise_and = _binary("bitwise_and", F.logical_and, "lax's and: bitwise on integers, logical on bool")
bitwise_or = _binary("bitwise_or", F.logical_or, "lax's or: bitwise on integers, logical on bool")
bitwise_xor = _binary("bitwise_xor", F.logical_xor, "lax's xor: bitwise on integers, logical on bool")
bitwise_left_shift = _binary("bitwise_left_shift", F.shift_left, "lax.shift_left")
equal = _binary("equal", F.eq, "lax.eq")
greater = _binary("greater", F.gt, "lax.gt")
greater_equal = _binary("greater_equal", F.ge, "lax.ge")
less = _binary("less", F.lt, "lax.lt")
less_equal = _binary("less_equal", F.le, "lax.le")
multiply = _binary("multiply", F.mul, "lax.mul")
not_equal = _binary("not_equal", F.ne, "lax.ne")
subtract = _binary("subtract", F.sub, "lax.sub")
pow = _binary("pow", E.power, "NumPy's power")  # noqa: A001
bitwise_invert = _unary("bitwise_invert", F.bitwise_not, "lax.bitwise_not")
conj = F.conj
cos = F.cos
cosh = F.cosh
exp = F.exp
expm1 = F.expm1
imag = F.imag
log = F.log
log10 = F.log10
log1p = F.log1p
log2 = F.log2
nextafter = F.nextafter
real = F.real
reciprocal = F.reciprocal
sin = F.sin
sinh = F.sinh
sqrt = F.sqrt
square = F.square
tan = F.tan
tanh = F.tanh

# -- the NumPy-named layer's (NumPy's meaning already) -----------------------------------------

clip = E.clip
divide = E.divide
floor_divide = E.floor_divide
isfinite = E.isfinite
isinf = E.isinf
isnan = E.isnan
maximum = E.maximum
minimum = E.minimum
negative = E.negative
remainder = E.remainder


# -- the standard's meanings, composed -------------------------------------------------------------


def _exact(x: Tensor) -> bool:
    """Integer and bool arrays: rounding functions return them unchanged."""
    return x.dtype.kind in ("bool", "int", "uint")


@named("ceil")
def ceil(x: Any, /) -> Tensor:
    """The smallest integer-valued number not below each element (integers unchanged)."""
    t = operand("ceil", x)
    return t if _exact(t) else F.ceil(t)


@named("floor")
def floor(x: Any, /) -> Tensor:
    """The largest integer-valued number not above each element (integers unchanged)."""
    t = operand("floor", x)
    return t if _exact(t) else F.floor(t)


@named("trunc")
def trunc(x: Any, /) -> Tensor:
    """Each element rounded toward zero (``np.trunc``'s implementation; an integer operand is
    returned as it is)."""
    t = operand("trunc", x)
    if _exact(t):
        return t
    return npm.trunc(t)


@named("round")
def round(x: Any, /) -> Tensor:  # noqa: A001
    """Each element rounded to the nearest integer, halves to even (``lax.round`` with
    ``ROUND_TO_NEAREST_EVEN``; lax's default rounds halves away from zero). A complex element
    rounds its real and imaginary parts."""
    t = operand("round", x)
    if _exact(t):
        return t
    if t.dtype.kind == "complex":
        return F.complex(F.round(F.real(t), 1), F.round(F.imag(t), 1))
    return F.round(t, 1)


@named("sign")
def sign(x: Any, /) -> Tensor:
    """-1, 0 or 1 by each element's sign (of a complex one, ``x / |x|``; of bool, itself). The
    sign of a zero is ``+0`` (the standard's 0; lax's ``sign(-0.0)`` is ``-0.0``)."""
    t = operand("sign", x)
    if t.dtype is dt.bool_:
        return t
    out = F.sign(t)
    if t.dtype.kind != "float":
        return out
    zero = F.zeros((), t.dtype)
    return F.select(F.eq(t, zero), F.zeros(t.shape, t.dtype), out)


@named("positive")
def positive(x: Any, /) -> Tensor:
    """``+x``: a numeric array, as a new value (a recorded same-dtype ``convert``)."""
    t = operand("positive", x)
    if t.dtype is dt.bool_:
        raise standard_error(OpTypeError, "positive", "takes a numeric array, got bool", t)
    return F.convert(t, t.dtype)


def _truth(fn: str, x: Any, param: str) -> Tensor:
    """An operand of a logical function as bool: nonzero is True (a recorded ``ne``)."""
    t = operand(fn, x, param)
    return t if t.dtype is dt.bool_ else F.ne(t, F.zeros((), t.dtype))


@named("logical_and")
def logical_and(x1: Any, x2: Any, /) -> Tensor:
    """The logical AND of the truth values (lax's ``and`` is bitwise: ``3 & 4`` is 0)."""
    return F.logical_and(_truth("logical_and", x1, "x1"), _truth("logical_and", x2, "x2"))


@named("logical_or")
def logical_or(x1: Any, x2: Any, /) -> Tensor:
    """The logical OR of the truth values."""
    return F.logical_or(_truth("logical_or", x1, "x1"), _truth("logical_or", x2, "x2"))


@named("logical_xor")
def logical_xor(x1: Any, x2: Any, /) -> Tensor:
    """The logical XOR of the truth values."""
    return F.logical_xor(_truth("logical_xor", x1, "x1"), _truth("logical_xor", x2, "x2"))


@named("logical_not")
def logical_not(x: Any, /) -> Tensor:
    """The logical NOT of the truth values."""
    return F.logical_not(_truth("logical_not", x, "x"))


@named("bitwise_right_shift")
def bitwise_right_shift(x1: Any, x2: Any, /) -> Tensor:
    """``x1 >> x2``: arithmetic (sign-filling) for signed integers, logical for unsigned ones,
    as NumPy and the standard's C semantics; lax has the two as separate ops."""
    tensors = [t for t in (x1, x2) if isinstance(t, Tensor)]
    # unsigned only when every array operand is (a mix promotes to a signed dtype)
    if tensors and all(t.dtype.kind == "uint" for t in tensors):
        return F.shift_right_logical(x1, x2)
    return F.shift_right_arithmetic(x1, x2)


def _real_float(fn: str, x1: Any, x2: Any) -> tuple[Tensor, Tensor]:
    """Two real operands in the dtype the policy promotes them to (a Python scalar taking part as
    the policy treats Python scalars: weak under jax, NEP 50 under numpy), or the policy's
    inexact dtype for integers; recorded ``convert`` ops where a dtype changes."""
    a, b = operand(fn, x1, "x1"), operand(fn, x2, "x2")
    for t in (a, b):
        if t.dtype.kind == "complex":
            raise standard_error(OpTypeError, fn, f"takes real numbers, got {t.dtype.name}", a, b)
    common = result_type(
        *(x if isinstance(x, Tensor) or type(x) in (int, float, bool) else t for x, t in ((x1, a), (x2, b)))
    )
    common = npm.float_dtype(common)  # the policy's float for an integer operand
    a = a if a.dtype is common else F.convert(a, common)
    b = b if b.dtype is common else F.convert(b, common)
    return a, b


@named("copysign")
def copysign(x1: Any, x2: Any, /) -> Tensor:
    """``|x1|`` with the sign of ``x2`` (``-0.0`` counts as negative): ``np.copysign``'s
    implementation on the standard's real floating operands."""
    return npm.copysign(*_real_float("copysign", x1, x2))


@named("signbit")
def signbit(x: Any, /) -> Tensor:
    """Whether each element's sign bit is set (``np.signbit``'s implementation; complex refused
    with the standard's error)."""
    t = operand("signbit", x)
    if t.dtype.kind == "complex":
        raise standard_error(OpTypeError, "signbit", f"takes real numbers, got {t.dtype.name}", t)
    return npm.signbit(t)


@named("hypot")
def hypot(x1: Any, x2: Any, /) -> Tensor:
    """``sqrt(x1**2 + x2**2)`` without overflow or underflow (``np.hypot``'s implementation on the
    standard's real floating operands)."""
    return npm.hypot(*_real_float("hypot", x1, x2))


@named("logaddexp")
def logaddexp(x1: Any, x2: Any, /) -> Tensor:
    """``log(exp(x1) + exp(x2))`` without overflow (``np.logaddexp``'s implementation on the
    standard's real floating operands)."""
    return npm.logaddexp(*_real_float("logaddexp", x1, x2))
