"""The op functions of elementwise unary ops (arithmetic, rounding, exponentials, trigonometric, bit counts).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.core import dtypes as dt
from runtime.core import ops
from runtime.core.executor import as_tensor, asarray
from runtime.core.lax._common import Operand, _named, _one
from runtime.core.lax.binary import add, complex, div, ge, le, logical_or, mul, ne, sub  # noqa: A004
from runtime.core.lax.contraction import select
from runtime.core.lax.conversion import convert
from runtime.core.lax.reductions import _reduced_axes, reduce_max, reduce_sum
from runtime.core.lax.structural import broadcast_in_dim, full, reshape
from runtime.core.tensor import Tensor

__all__ = [
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bitwise_not",
    "cbrt",
    "ceil",
    "clz",
    "conj",
    "cos",
    "cosh",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "fmax",
    "fmin",
    "imag",
    "integer_pow",
    "is_finite",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_not",
    "logistic",
    "logsumexp",
    "neg",
    "population_count",
    "real",
    "reciprocal",
    "round",
    "rsqrt",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "stop_gradient",
    "tan",
    "tanh",
]


def neg(x: Operand) -> Tensor:
    """-x."""
    return _one(ops.neg, x)


def abs(x: Operand) -> Tensor:  # noqa: A001
    """|x| (real dtype for complex x)."""
    return _one(ops.abs, x)


def sign(x: Operand) -> Tensor:
    """sign(x) (x / |x| for complex)."""
    return _one(ops.sign, x)


def exp(x: Operand) -> Tensor:
    """e ** x."""
    return _one(ops.exp, x)


def log(x: Operand) -> Tensor:
    """Natural logarithm."""
    return _one(ops.log, x)


def expm1(x: Operand) -> Tensor:
    """e ** x - 1, accurate near 0."""
    return _one(ops.expm1, x)


def log1p(x: Operand) -> Tensor:
    """log(1 + x), accurate near 0."""
    return _one(ops.log1p, x)


def sin(x: Operand) -> Tensor:
    """Sine."""
    return _one(ops.sin, x)


def cos(x: Operand) -> Tensor:
    """Cosine."""
    return _one(ops.cos, x)


def tanh(x: Operand) -> Tensor:
    """Hyperbolic tangent."""
    return _one(ops.tanh, x)


def logistic(x: Operand) -> Tensor:
    """1 / (1 + e ** -x)."""
    return _one(ops.logistic, x)


def sqrt(x: Operand) -> Tensor:
    """Square root."""
    return _one(ops.sqrt, x)


def rsqrt(x: Operand) -> Tensor:
    """1 / sqrt(x)."""
    return _one(ops.rsqrt, x)


def conj(x: Operand) -> Tensor:
    """Complex conjugate."""
    return _one(ops.conj, x)


def real(x: Operand) -> Tensor:
    """Real part."""
    return _one(ops.real, x)


def imag(x: Operand) -> Tensor:
    """Imaginary part."""
    return _one(ops.imag, x)


def square(x: Operand) -> Tensor:
    """x * x."""
    return _one(ops.square, x)


def reciprocal(x: Operand) -> Tensor:
    """1 / x."""
    return _one(ops.reciprocal, x)


def floor(x: Operand) -> Tensor:
    """Largest integer not above x (floats; no derivative)."""
    return _one(ops.floor, x)


def ceil(x: Operand) -> Tensor:
    """Smallest integer not below x (floats; no derivative)."""
    return _one(ops.ceil, x)


def round(x: Operand, rounding_method: int = 0) -> Tensor:  # noqa: A001
    """x rounded to an integer: halves away from zero (``rounding_method=0``, lax's default)
    or to even (``1``, NumPy's ``rint``); ``jax.lax.RoundingMethod`` values are accepted too."""
    method = int(rounding_method) if isinstance(rounding_method, int) else rounding_method
    return _one(ops.round, x, rounding_method=method)


def is_finite(x: Operand) -> Tensor:
    """True where x is neither infinite nor NaN (floats; a bool result)."""
    return _one(ops.is_finite, x)


def exp2(x: Operand) -> Tensor:
    """2 ** x."""
    return _one(ops.exp2, x)


@_named("log2")
def log2(x: Operand) -> Tensor:
    """Base-2 logarithm, as jax.numpy builds it: ``log(x) / log(2)`` (parts divided for complex).

    No op of its own (lax has none): it records ``log``, ``full`` and ``div``.
    """
    x = asarray(x)
    if x.dtype in (dt.complex64, dt.complex128):
        r = log(x)
        ln2 = log(full((), 2, real(r).dtype))
        return complex(div(real(r), ln2), div(imag(r), ln2))
    return div(log(x), log(full((), 2, x.dtype)))


#: 1 / log(10), the constant jnp.log10 multiplies by.
_ONE_OVER_LOG10 = 0.4342944819032518


@_named("log10")
def log10(x: Operand) -> Tensor:
    """Base-10 logarithm, as jax.numpy builds it: ``log(x) * (1 / log(10))`` (parts for complex).

    No op of its own (lax has none): it records ``log``, ``full`` and ``mul``.
    """
    x = asarray(x)
    if x.dtype in (dt.complex64, dt.complex128):
        r = log(x)
        c = full((), _ONE_OVER_LOG10, real(r).dtype)
        return complex(mul(real(r), c), mul(imag(r), c))
    return mul(log(x), full((), _ONE_OVER_LOG10, dt.COMPLEX_PART.get(x.dtype, x.dtype)))


def sinh(x: Operand) -> Tensor:
    """Hyperbolic sine."""
    return _one(ops.sinh, x)


def cosh(x: Operand) -> Tensor:
    """Hyperbolic cosine."""
    return _one(ops.cosh, x)


def tan(x: Operand) -> Tensor:
    """Tangent."""
    return _one(ops.tan, x)


def asin(x: Operand) -> Tensor:
    """Inverse sine."""
    return _one(ops.asin, x)


def acos(x: Operand) -> Tensor:
    """Inverse cosine."""
    return _one(ops.acos, x)


def atan(x: Operand) -> Tensor:
    """Inverse tangent."""
    return _one(ops.atan, x)


def asinh(x: Operand) -> Tensor:
    """Inverse hyperbolic sine."""
    return _one(ops.asinh, x)


def acosh(x: Operand) -> Tensor:
    """Inverse hyperbolic cosine."""
    return _one(ops.acosh, x)


def atanh(x: Operand) -> Tensor:
    """Inverse hyperbolic tangent."""
    return _one(ops.atanh, x)


def cbrt(x: Operand) -> Tensor:
    """Real cube root (floats)."""
    return _one(ops.cbrt, x)


@_named("fmax")
def fmax(x: Operand, y: Operand) -> Tensor:
    """PyTorch's ``fmax``: the larger operand, ignoring a NaN (NaN only where both are).

    A composition, no op of its own: ``select(x >= y or y != y, x, y)``, so its
    derivative is select's: the whole cotangent goes to the operand picked, to x on
    ties (as PyTorch's ``fmax`` backward does; ``max`` splits ties, as JAX does).
    """
    return select(logical_or(ge(x, y), ne(y, y)), x, y)


@_named("fmin")
def fmin(x: Operand, y: Operand) -> Tensor:
    """PyTorch's ``fmin``: the smaller operand, ignoring a NaN (NaN only where both are).

    ``select(x <= y or y != y, x, y)``; ties send the cotangent to x, as PyTorch does.
    """
    return select(logical_or(le(x, y), ne(y, y)), x, y)


@_named("logical_not")
def logical_not(x: Operand) -> Tensor:
    """``lax.bitwise_not``: not for bool, every bit flipped for integers (op ``not``)."""
    return _one(ops.logical_not, x)


@_named("bitwise_not")
def bitwise_not(x: Operand) -> Tensor:
    """``lax.bitwise_not``, ``logical_not`` under the name its errors carry (op ``not``)."""
    return _one(ops.logical_not, x)


def population_count(x: Operand) -> Tensor:
    """The number of set bits of each integer (two's complement)."""
    return _one(ops.population_count, x)


def clz(x: Operand) -> Tensor:
    """The number of leading zero bits of each integer in its own width."""
    return _one(ops.clz, x)


@_named("logsumexp")
def logsumexp(x: Operand, axis: Sequence[int] | int | None = None, keepdims: bool = False) -> Tensor:
    """``jax.nn.logsumexp`` (``jax.scipy.special.logsumexp``): ``log(sum(exp(x)))`` over ``axis``
    (every axis by default), computed stably as ``log(sum(exp(x - m))) + m`` with ``m`` the
    maximum where it is finite and 0 elsewhere, so all ``-inf`` gives ``-inf`` and an ``inf``
    gives ``inf``.

    A composition of ordinary ops (``reduce_max``, ``select``, ``exp``, ``reduce_sum``,
    ``log``), so its recording holds those and its gradient is the softmax. JAX stops the
    gradient through ``m``; castwise does not use ``stop_gradient`` there, so ``m``'s path is recorded: its
    contribution ``(1 - sum(softmax)) dm`` is zero up to rounding. Integer inputs go to the
    policy's float (``exp``'s plan).
    """
    t = as_tensor(x)
    if not t.dtype.is_inexact:
        from runtime.core.plan import inexact_dtype
        from runtime.core.promotion import get_policy_object

        # jax.nn.logsumexp's integers become floats: exp's target under the policy (recorded as a convert)
        t = convert(t, inexact_dtype(ops.exp, t.dtype, get_policy_object()))
    axes = _reduced_axes(axis, t.ndim)
    kept = tuple(d for d in range(t.ndim) if d not in axes) if type(axes) is tuple else ()
    m = reduce_max(t, axes)
    zero = full((), 0, m.dtype)
    m = select(is_finite(m), m, broadcast_in_dim(zero, m.shape, ())) if m.dtype.kind == "float" else m
    wide = broadcast_in_dim(m, t.shape, kept)
    out = add(log(reduce_sum(exp(sub(t, wide)), axes)), m)
    if keepdims:
        out = reshape(out, tuple(1 if d in axes else n for d, n in enumerate(t.shape)))
    return out


def integer_pow(x: Operand, y: int) -> Tensor:
    """``lax.integer_pow``: ``x ** y`` for a Python int ``y``, by repeated multiplication as XLA
    computes it (integers wrap; a negative ``y`` is the reciprocal, for inexact ``x`` only)."""
    return _one(ops.integer_pow, x, y=y)


def stop_gradient(x: Any) -> Any:
    """``lax.stop_gradient``: ``x`` unchanged, with zero derivative (a tuple, list or dict of
    arrays: each leaf). Its own op, so a recorded graph and its lowering keep it."""
    if isinstance(x, tuple | list):
        return type(x)(stop_gradient(v) for v in x)
    if isinstance(x, dict):
        return {k: stop_gradient(v) for k, v in x.items()}
    return _one(ops.stop_gradient, x)
