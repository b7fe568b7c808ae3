"""Every op of the vocabulary as a function, plus a few compositions of them.

Each function accepts Tensors, NumPy arrays and Python scalars, and runs through
the one eager executor (``runtime.tensor.apply``), so promotion, errors and
recording behave the same whichever way an op is called.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime import dtypes as dt
from runtime import ops, shapes
from runtime.ops import OpDef
from runtime.shapes import ArityError, ShapeError
from runtime.tensor import Tensor, apply, apply_binary, asarray, op_error

Operand = Any  # Tensor | np.ndarray | Python scalar

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
    "avg_pool",
    "basic_index",
    "bitwise_not",
    "broadcast_in_dim",
    "cbrt",
    "ceil",
    "cholesky",
    "clamp",
    "clz",
    "complex",
    "concatenate",
    "conj",
    "conv",
    "conv_general_dilated",
    "convert",
    "cos",
    "cosh",
    "div",
    "dot_general",
    "dynamic_slice",
    "dynamic_update_slice",
    "eigh",
    "eq",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "floor_div",
    "fmax",
    "fmin",
    "full",
    "gather",
    "ge",
    "gt",
    "imag",
    "iota",
    "is_finite",
    "le",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logistic",
    "lt",
    "matmul",
    "max",
    "max_pool",
    "mean",
    "min",
    "mod",
    "mul",
    "ne",
    "neg",
    "nextafter",
    "ones",
    "pad",
    "padtype_to_pads",
    "population_count",
    "pow",
    "real",
    "reciprocal",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "reduce_window_max",
    "reduce_window_min",
    "reduce_window_sum",
    "rem",
    "reshape",
    "reverse",
    "round",
    "rsqrt",
    "scatter",
    "scatter_add",
    "select",
    "select_and_gather_add",
    "select_and_scatter_add",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "sign",
    "sin",
    "sinh",
    "slice",
    "sqrt",
    "square",
    "stack",
    "sub",
    "sum_",
    "tan",
    "tanh",
    "transpose",
    "triangular_solve",
    "zeros",
]


def _one(op: OpDef, *operands: Operand, **params: Any) -> Tensor:
    return apply(op, operands, params)  # type: ignore[return-value]


def _ints(values: Sequence[int] | int, what: str) -> tuple[int, ...]:
    """``values`` (an int or a sequence of ints, NumPy's included) as an int tuple.

    Anything else (a float, a bool, a non-sequence) is passed on as ``_Invalid``: the
    op's shape rule, the one validator, refuses it with the op, operands and policy named.
    """
    if type(values) is tuple:
        for v in values:
            if type(v) is not int:
                break
        else:
            return values  # already normalised (what derivative rules pass)
    if _is_index(values):
        return (operator.index(values),)  # type: ignore[arg-type]
    try:
        items = tuple(values)  # type: ignore[arg-type]
    except TypeError:
        return _Invalid(values)  # type: ignore[return-value]
    if not builtins.all(_is_index(v) for v in items):
        return _Invalid(values)  # type: ignore[return-value]
    return tuple(operator.index(v) for v in items)


class _Invalid:
    """A param value that failed normalisation, on its way to the shape rule that reports it.

    Unhashable on purpose: ``(1.0, 0)`` hashes and compares like ``(1, 0)``, so the
    executor's signature cache would otherwise serve it a plan validated for ints.
    """

    __slots__ = ("value",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def _index(value: Any) -> Any:
    """An int param (a dimension) as an int; anything else unchanged, for the shape rule to refuse."""
    return operator.index(value) if _is_index(value) else value


def _is_index(value: Any) -> bool:
    """An integer that is not a bool (``True`` is never a meaningful size or axis)."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _dtype_param(value: Any) -> Any:
    """A dtype param as a DType; anything else unchanged, for the shape rule to refuse."""
    try:
        return dt.dtype(value)
    except TypeError:
        return value


# -- elementwise binary ------------------------------------------------------------------


def add(x: Operand, y: Operand) -> Tensor:
    """x + y."""
    return apply_binary(ops.add, x, y)


def sub(x: Operand, y: Operand) -> Tensor:
    """x - y."""
    return apply_binary(ops.sub, x, y)


def mul(x: Operand, y: Operand) -> Tensor:
    """x * y."""
    return apply_binary(ops.mul, x, y)


def div(x: Operand, y: Operand) -> Tensor:
    """True division x / y (integer operands go to the policy's float)."""
    return apply_binary(ops.div, x, y)


def rem(x: Operand, y: Operand) -> Tensor:
    """Remainder with the sign of the dividend (C fmod, ``lax.rem``)."""
    return apply_binary(ops.rem, x, y)


def pow(x: Operand, y: Operand) -> Tensor:  # noqa: A001
    """x ** y."""
    return apply_binary(ops.pow, x, y)


def max(x: Operand, y: Operand) -> Tensor:  # noqa: A001
    """Elementwise maximum (NaN-propagating)."""
    return apply_binary(ops.max, x, y)


def min(x: Operand, y: Operand) -> Tensor:  # noqa: A001
    """Elementwise minimum (NaN-propagating)."""
    return apply_binary(ops.min, x, y)


def atan2(x: Operand, y: Operand) -> Tensor:
    """atan2(x, y), the angle of the point (y, x)."""
    return _one(ops.atan2, x, y)


def floor_div(x: Operand, y: Operand) -> Tensor:
    """Python's x // y."""
    return apply_binary(ops.floor_div, x, y)


def eq(x: Operand, y: Operand) -> Tensor:
    """x == y (bool)."""
    return apply_binary(ops.eq, x, y)


def ne(x: Operand, y: Operand) -> Tensor:
    """x != y (bool)."""
    return apply_binary(ops.ne, x, y)


def lt(x: Operand, y: Operand) -> Tensor:
    """x < y (bool)."""
    return apply_binary(ops.lt, x, y)


def le(x: Operand, y: Operand) -> Tensor:
    """x <= y (bool)."""
    return apply_binary(ops.le, x, y)


def gt(x: Operand, y: Operand) -> Tensor:
    """x > y (bool)."""
    return apply_binary(ops.gt, x, y)


def ge(x: Operand, y: Operand) -> Tensor:
    """x >= y (bool)."""
    return apply_binary(ops.ge, x, y)


def logical_and(x: Operand, y: Operand) -> Tensor:
    """x & y on bool (logical) or integers (bitwise)."""
    return apply_binary(ops.logical_and, x, y)


def logical_or(x: Operand, y: Operand) -> Tensor:
    """x | y on bool (logical) or integers (bitwise)."""
    return apply_binary(ops.logical_or, x, y)


def logical_xor(x: Operand, y: Operand) -> Tensor:
    """x ^ y on bool (logical) or integers (bitwise)."""
    return apply_binary(ops.logical_xor, x, y)


def mod(x: Operand, y: Operand) -> Tensor:
    """Python's x % y: the remainder takes the sign of the divisor.

    Composed from ``rem``, comparisons and ``select``, so it records and
    differentiates like its parts.
    """
    r = rem(x, y)
    if r.dtype.kind in ("uint", "bool"):
        return r
    y_t = asarray(y) if not isinstance(y, Tensor) else y
    zero = 0
    wrong_sign = logical_and(ne(r, zero), ne(lt(r, zero), lt(y_t, zero)))
    return select(wrong_sign, add(r, y), r)


# -- contraction, selection, joining ---------------------------------------------------------


def dot_general(lhs: Operand, rhs: Operand, dimension_numbers: Any) -> Tensor:
    """Generalised contraction, as ``jax.lax.dot_general``.

    ``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``;
    the output is batch dims, then lhs free dims, then rhs free dims.
    """
    try:
        dims: Any = shapes.dot_dimension_numbers(dimension_numbers)
    except shapes.ShapeError:
        dims = _Invalid(dimension_numbers)  # malformed: the shape rule refuses it, naming the op and operands
    return _one(ops.dot_general, lhs, rhs, dimension_numbers=dims)


def matmul(x: Operand, y: Operand) -> Tensor:
    """``x @ y`` for 1-D and 2-D operands, and batched matrices with equal batch dims."""
    xt = x if isinstance(x, Tensor) else asarray(x)
    yt = y if isinstance(y, Tensor) else asarray(y)
    if xt.ndim == 0 or yt.ndim == 0:
        raise op_error(ShapeError, ops.dot_general, (xt, yt), "matmul's operands must have at least one dimension")
    if xt.ndim <= 2 and yt.ndim <= 2:
        return dot_general(xt, yt, (((xt.ndim - 1,), (0,)), ((), ())))
    if xt.ndim != yt.ndim or xt.shape[:-2] != yt.shape[:-2]:
        raise op_error(
            ShapeError,
            ops.dot_general,
            (xt, yt),
            "matmul's batched operands need equal batch dimensions (no broadcasting)",
        )
    batch = tuple(range(xt.ndim - 2))
    return dot_general(xt, yt, (((xt.ndim - 1,), (yt.ndim - 2,)), (batch, batch)))


def select(pred: Operand, on_true: Operand, on_false: Operand) -> Tensor:
    """``on_true`` where ``pred`` (bool) holds, else ``on_false``."""
    return _one(ops.select, pred, on_true, on_false)


def clamp(min: Operand, x: Operand, max: Operand) -> Tensor:  # noqa: A002
    """``min(max(x, min), max)``, as ``jax.lax.clamp(min, x, max)``."""
    return _one(ops.clamp, min, x, max)


def concatenate(operands: Sequence[Operand], dimension: int) -> Tensor:
    """Join ``operands`` along ``dimension``."""
    if not operands:
        raise op_error(ArityError, ops.concatenate, (), "at least one operand is required")
    return apply(ops.concatenate, operands, {"dimension": _index(dimension)})  # type: ignore[return-value]


def stack(operands: Sequence[Operand], axis: int = 0) -> Tensor:
    """Stack equal-shaped operands along a new ``axis``: reshape each, then concatenate."""
    if not operands:
        raise op_error(ArityError, ops.concatenate, (), "stack needs at least one operand")
    ts = [x if isinstance(x, Tensor) else asarray(x) for x in operands]
    ndim = ts[0].ndim
    if not -ndim - 1 <= axis <= ndim:
        raise ShapeError(f"stack: axis {axis} is out of range for operands of rank {ndim}")
    axis %= ndim + 1
    expanded = [reshape(t, (*t.shape[:axis], 1, *t.shape[axis:])) for t in ts]
    return concatenate(expanded, axis)


# -- indexing -----------------------------------------------------------------------------------


def scatter(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """Overwrite windows of ``operand`` with ``updates`` (``jax.lax.scatter`` meaning)."""
    return _one(
        ops.scatter, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
    )  # fmt: skip


def scatter_add(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """Add ``updates`` into windows of ``operand`` (``jax.lax.scatter_add`` meaning)."""
    return _one(
        ops.scatter_add, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
    )  # fmt: skip


def gather(
    operand: Operand,
    start_indices: Operand,
    dimension_numbers: Any,
    slice_sizes: Sequence[int],
    *,
    mode: Any = None,
    fill_value: Any = None,
) -> Tensor:
    """Gather slices of ``operand`` (``jax.lax.gather`` meaning)."""
    return _one(
        ops.gather, operand, start_indices, dimension_numbers=dimension_numbers,
        slice_sizes=_ints(slice_sizes, "slice_sizes"), mode=mode, fill_value=fill_value,
    )  # fmt: skip


def dynamic_slice(operand: Operand, start_indices: Sequence[Operand], slice_sizes: Sequence[int]) -> Tensor:
    """The ``slice_sizes`` window of ``operand`` at ``start_indices`` (clamped into range)."""
    return apply(ops.dynamic_slice, (operand, *start_indices), {"slice_sizes": _ints(slice_sizes, "slice_sizes")})  # type: ignore[return-value]


def dynamic_update_slice(operand: Operand, update: Operand, start_indices: Sequence[Operand]) -> Tensor:
    """``operand`` with ``update`` written at ``start_indices`` (clamped into range)."""
    return apply(ops.dynamic_update_slice, (operand, update, *start_indices), {})  # type: ignore[return-value]


# -- unary ---------------------------------------------------------------------------------------


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


# -- rounding, tests, exponentials, trigonometric and hyperbolic ------------------------------------


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


def nextafter(x: Operand, y: Operand) -> Tensor:
    """The next value of x's format after x towards y (floats; no derivative)."""
    return apply_binary(ops.nextafter, x, y)


def complex(x: Operand, y: Operand) -> Tensor:  # noqa: A001
    """x + i y from float32 (complex64) or float64 (complex128) parts."""
    return apply_binary(ops.complex, x, y)


def fmax(x: Operand, y: Operand) -> Tensor:
    """PyTorch's ``fmax``: the larger operand, ignoring a NaN (NaN only where both are).

    A composition, no op of its own: ``select(x >= y or y != y, x, y)``, so its
    derivative is select's: the whole cotangent goes to the operand picked, to x on
    ties (as PyTorch's ``fmax`` backward does; ``max`` splits ties, as JAX does).
    """
    return select(logical_or(ge(x, y), ne(y, y)), x, y)


def fmin(x: Operand, y: Operand) -> Tensor:
    """PyTorch's ``fmin``: the smaller operand, ignoring a NaN (NaN only where both are).

    ``select(x <= y or y != y, x, y)``; ties send the cotangent to x, as PyTorch does.
    """
    return select(logical_or(le(x, y), ne(y, y)), x, y)


# -- integer bit operations ---------------------------------------------------------------------------


def logical_not(x: Operand) -> Tensor:
    """``lax.bitwise_not``: not for bool, every bit flipped for integers (op ``not``)."""
    return _one(ops.logical_not, x)


bitwise_not = logical_not


def population_count(x: Operand) -> Tensor:
    """The number of set bits of each integer (two's complement)."""
    return _one(ops.population_count, x)


def clz(x: Operand) -> Tensor:
    """The number of leading zero bits of each integer in its own width."""
    return _one(ops.clz, x)


def shift_left(x: Operand, y: Operand) -> Tensor:
    """x << y (0 where y is outside [0, bit width))."""
    return apply_binary(ops.shift_left, x, y)


def shift_right_arithmetic(x: Operand, y: Operand) -> Tensor:
    """x >> y, filling with the sign bit (all sign bits where y is outside [0, bit width))."""
    return apply_binary(ops.shift_right_arithmetic, x, y)


def shift_right_logical(x: Operand, y: Operand) -> Tensor:
    """x >> y, filling with zeros (0 where y is outside [0, bit width))."""
    return apply_binary(ops.shift_right_logical, x, y)


def convert(x: Operand, dtype: Any) -> Tensor:
    """``x`` converted to ``dtype`` (``jax.lax.convert_element_type`` values)."""
    return _one(ops.convert, x, new_dtype=_dtype_param(dtype))


# -- reductions ----------------------------------------------------------------------------------


def reduce_sum(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """Sum over ``axes``."""
    return _one(ops.reduce_sum, x, axes=_ints(axes, "axes"))


#: jnp.sum and jnp.mean accumulate these in float32 (jax.numpy's ``_upcast_f16``); lax.reduce_sum does not.
_SUM_IN_FLOAT32 = frozenset({dt.float16, dt.bfloat16})


def sum_(x: Operand, axis: Sequence[int] | int | None = None) -> Tensor:
    """``jnp.sum`` (``Tensor.sum``): the sum over ``axis`` (every axis by default).

    float16 and bfloat16 are summed in float32 and rounded once, as jax.numpy
    does, and recorded as it records them: ``convert -> reduce_sum -> convert``.
    ``reduce_sum`` itself stays in the input dtype, as ``lax.reduce_sum`` does
    (10000 float16 tens: ``reduce_sum`` and ``sum_`` give inf, as in JAX, since
    1e5 does not fit float16, but ``mean`` gives 10).
    """
    t = x if isinstance(x, Tensor) else asarray(x)
    axes = _reduced_axes(axis, t.ndim)
    if t.dtype in _SUM_IN_FLOAT32:
        return convert(reduce_sum(convert(t, dt.float32), axes), t.dtype)
    return reduce_sum(t, axes)


def mean(x: Operand, axis: Sequence[int] | int | None = None) -> Tensor:
    """``jnp.mean`` (``Tensor.mean``): the sum over ``axis`` divided by the count.

    Integers divide into the policy's float; float16 and bfloat16 are summed and divided in float32, then rounded once
    (``convert -> reduce_sum -> div -> convert``, as jax.numpy records it), so the
    mean of many values does not overflow where JAX's does not.
    """
    t = x if isinstance(x, Tensor) else asarray(x)
    wide = t.dtype in _SUM_IN_FLOAT32
    # reduce_sum validates the axes (its errors name it, the operands and the policy)
    total = reduce_sum(convert(t, dt.float32) if wide else t, _reduced_axes(axis, t.ndim))
    count = t.size // total.size if total.size else 1
    out = div(total, count)
    return convert(out, t.dtype) if wide else out


def _reduced_axes(axis: Sequence[int] | int | None, ndim: int) -> tuple[int, ...]:
    from runtime.tensor import _axes

    return _axes(axis, ndim)


def reduce_prod(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """Product over ``axes``."""
    return _one(ops.reduce_prod, x, axes=_ints(axes, "axes"))


def reduce_max(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """Maximum over ``axes``."""
    return _one(ops.reduce_max, x, axes=_ints(axes, "axes"))


def reduce_min(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """Minimum over ``axes``."""
    return _one(ops.reduce_min, x, axes=_ints(axes, "axes"))


# -- structural ----------------------------------------------------------------------------------


def reshape(x: Operand, new_sizes: Sequence[int]) -> Tensor:
    """``x`` with shape ``new_sizes`` (same number of elements, row-major)."""
    return _one(ops.reshape, x, new_sizes=_ints(new_sizes, "new_sizes"))


def transpose(x: Operand, permutation: Sequence[int]) -> Tensor:
    """Permute the axes of ``x``."""
    return _one(ops.transpose, x, permutation=_ints(permutation, "permutation"))


def broadcast_in_dim(x: Operand, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> Tensor:
    """Broadcast ``x`` to ``shape``; operand axis i becomes output axis ``broadcast_dimensions[i]``."""
    return _one(
        ops.broadcast_in_dim, x, shape=_ints(shape, "shape"),
        broadcast_dimensions=_ints(broadcast_dimensions, "broadcast_dimensions"),
    )  # fmt: skip


def slice(  # noqa: A001
    x: Operand, start_indices: Sequence[int], limit_indices: Sequence[int], strides: Sequence[int] | None = None
) -> Tensor:
    """The static slice ``x[start:limit:stride]`` on every axis (positive strides)."""
    return _one(
        ops.slice, x, start_indices=_ints(start_indices, "start_indices"),
        limit_indices=_ints(limit_indices, "limit_indices"),
        strides=None if strides is None else _ints(strides, "strides"),
    )  # fmt: skip


def pad(
    x: Operand, padding_value: bool | int | float | builtins.complex, padding_config: Sequence[Sequence[int]]
) -> Tensor:
    """Pad with ``(low, high, interior)`` per axis, as ``jax.lax.pad`` (negative low/high crop)."""
    try:
        config: Any = tuple(tuple(_ints(c, "padding_config")) for c in padding_config)
    except TypeError:
        config = _Invalid(padding_config)  # not a sequence of triples: the shape rule refuses it
    return _one(ops.pad, x, padding_config=config, padding_value=padding_value)


def reverse(x: Operand, dimensions: Sequence[int]) -> Tensor:
    """Reverse ``x`` along ``dimensions``."""
    return _one(ops.reverse, x, dimensions=_ints(dimensions, "dimensions"))


def iota(dtype: Any, shape: Sequence[int] | int, dimension: int = 0) -> Tensor:
    """0, 1, 2, ... along ``dimension`` of an array of ``shape``."""
    params = {"dtype": _dtype_param(dtype), "shape": _ints(shape, "shape"), "dimension": _index(dimension)}
    return apply(ops.iota, (), params)  # type: ignore[return-value]


def full(shape: Sequence[int] | int, fill_value: bool | int | float | builtins.complex, dtype: Any = None) -> Tensor:
    """An array of ``shape`` filled with ``fill_value`` (dtype: given, or the policy's default).

    Without ``dtype``, a Python int/float/complex fill gives a weakly typed result under
    the policies with weak types, as ``jax.numpy.full`` does."""
    out = _full(shape, fill_value, dtype)
    if dtype is None:
        out.weak = asarray(fill_value).weak
    return out


def _full(shape: Sequence[int] | int, fill_value: bool | int | float | builtins.complex, dtype: Any = None) -> Tensor:
    if dtype is None:
        try:
            dtype = asarray(fill_value).dtype
        except (TypeError, ValueError, OverflowError):
            dtype = dt.float64  # not a scalar: the shape rule refuses the fill value, naming full
    params = {"shape": _ints(shape, "shape"), "fill_value": fill_value, "dtype": _dtype_param(dtype)}
    return apply(ops.full, (), params)  # type: ignore[return-value]


def zeros(shape: Sequence[int] | int, dtype: Any = None) -> Tensor:
    """``full(shape, 0, dtype)``; strongly typed, as ``jax.numpy.zeros``."""
    return _full(shape, 0.0 if dtype is None else 0, dtype)


def ones(shape: Sequence[int] | int, dtype: Any = None) -> Tensor:
    """``full(shape, 1, dtype)``; strongly typed, as ``jax.numpy.ones``."""
    return _full(shape, 1.0 if dtype is None else 1, dtype)


# -- linear algebra ---------------------------------------------------------------------------


def eigh(x: Operand, lower: bool = True) -> tuple[Tensor, Tensor]:
    """Eigen-decomposition of a symmetric / Hermitian matrix: ``(eigenvectors, eigenvalues)``.

    Eigenvalues ascend and are real; like ``jax.lax.linalg.eigh`` only the
    ``lower`` (or upper) triangle is read.
    """
    v, w = apply(ops.eigh, (x,), {"lower": builtins.bool(lower)})  # type: ignore[misc]
    return v, w


def cholesky(x: Operand) -> Tensor:
    """Lower Cholesky factor L with ``x = L @ L^H``."""
    return _one(ops.cholesky, x)


def triangular_solve(
    a: Operand,
    b: Operand,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
) -> Tensor:
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b``, as ``jax.lax.linalg.triangular_solve``."""
    return _one(
        ops.triangular_solve, a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
        conjugate_a=conjugate_a, unit_diagonal=unit_diagonal,
    )  # fmt: skip


# -- basic indexing ----------------------------------------------------------------------------


def basic_index(x: Tensor, index: Any) -> Tensor:
    """``x[index]`` for ints, slices (any step), ``...`` and ``None``.

    Lowered to ``reverse`` (negative steps), one ``slice`` and a ``reshape``, so
    it records and differentiates like any op. Other indices raise ``TypeError``
    (use ``gather``).
    """
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if not (item is None or item is Ellipsis or isinstance(item, builtins.slice) or _is_int(item)):
            raise TypeError(
                f"only basic indexing (ints, slices, ..., None) is supported, got {type(item).__name__}; "
                "use runtime.gather for advanced indexing"
            )
    n_real = sum(1 for i in items if i is not None and i is not Ellipsis)
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > x.ndim:
        raise IndexError(f"too many indices for a tensor of rank {x.ndim}: {index!r}")
    expanded: list[Any] = []
    for item in items:
        if item is Ellipsis:
            expanded.extend([builtins.slice(None)] * (x.ndim - n_real))
        else:
            expanded.append(item)
    if Ellipsis not in items:
        expanded.extend([builtins.slice(None)] * (x.ndim - n_real))
    starts, limits, strides, flips, out_shape = [], [], [], [], []
    axis = 0
    for item in expanded:
        if item is None:
            out_shape.append(1)
            continue
        n = x.shape[axis]
        if isinstance(item, builtins.slice):
            start, stop, step = item.indices(n)
            count = len(range(start, stop, step))
            if step < 0:
                flips.append(axis)
                start, step = n - 1 - start, -step
            limit = start + (count - 1) * step + 1 if count else start
            starts.append(start if count else 0)
            limits.append(limit if count else 0)
            strides.append(step)
            out_shape.append(count)
        else:
            i = operator.index(item)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i %= n
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
        axis += 1
    out: Tensor = x
    if flips:
        out = reverse(out, flips)
    if tuple(starts) != (0,) * x.ndim or tuple(limits) != x.shape or builtins.any(s != 1 for s in strides):
        out = slice(out, starts, limits, strides)
    if tuple(out_shape) != out.shape:
        out = reshape(out, out_shape)
    return out


def _is_int(item: Any) -> bool:
    if isinstance(item, builtins.bool):
        return False
    try:
        operator.index(item)
    except TypeError:
        return False
    return True


# -- windowed reductions and convolution -----------------------------------------------------------


def _shape_of(x: Operand) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, (Tensor, np.ndarray)) else tuple(np.shape(x))


def padtype_to_pads(
    in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int], padding: str
) -> tuple[tuple[int, int], ...]:
    """``(low, high)`` per dimension for a padding name, as ``jax.lax.padtype_to_pads``.

    ``'VALID'``: none. ``'SAME'``: ``ceil(n / stride)`` outputs, the odd element of padding at the
    high end; ``'SAME_LOWER'``: the same amount, the odd element at the low end.
    """
    kind = padding.upper()
    if kind == "VALID":
        return tuple((0, 0) for _ in in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ShapeError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or (low, high) pairs, got {padding!r}")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides, strict=True):
        out = -(-n // s)
        total = builtins.max((out - 1) * s + k - n, 0)
        lo = total // 2 if kind == "SAME" else total - total // 2
        pads.append((lo, total - lo))
    return tuple(pads)


def _pairs(padding: Any) -> Any:
    """Explicit padding as a tuple of int pairs; anything else unchanged, for the shape rule to refuse."""
    try:
        return tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        return _Invalid(padding)


def _window_params(
    x: Operand,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None,
    padding: str | Sequence[tuple[int, int]],
    base_dilation: Sequence[int] | None,
    window_dilation: Sequence[int] | None,
) -> dict[str, Any]:
    dims = _ints(window_dimensions, "window_dimensions")
    ones = (1,) * len(dims) if isinstance(dims, tuple) else ()
    strides = ones if window_strides is None else _ints(window_strides, "window_strides")
    if isinstance(padding, str):
        pads: Any = padtype_to_pads(_shape_of(x), dims, strides, padding)
    else:
        pads = _pairs(padding)
    return {
        "window_dimensions": dims,
        "window_strides": strides,
        "padding": pads,
        "base_dilation": ones if base_dilation is None else _ints(base_dilation, "base_dilation"),
        "window_dilation": ones if window_dilation is None else _ints(window_dilation, "window_dilation"),
    }


def reduce_window_sum(
    x: Operand,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Tensor:
    """The sum of every window of ``x`` (``jax.lax.reduce_window`` with ``lax.add``).

    One entry per dimension of ``x`` in ``window_dimensions``, ``window_strides`` (default 1),
    ``base_dilation`` / ``window_dilation`` (default 1); ``padding`` is ``(low, high)`` pairs or
    ``'VALID'`` / ``'SAME'`` / ``'SAME_LOWER'``, filled with 0.
    """
    return _one(ops.reduce_window_sum, x, **_window_params(x, window_dimensions, window_strides, padding,
                                                          base_dilation, window_dilation))  # fmt: skip


def reduce_window_max(
    x: Operand,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Tensor:
    """The maximum of every window of ``x`` (``jax.lax.reduce_window`` with ``lax.max``); padding is -inf."""
    return _one(ops.reduce_window_max, x, **_window_params(x, window_dimensions, window_strides, padding,
                                                          base_dilation, window_dilation))  # fmt: skip


def reduce_window_min(
    x: Operand,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int] | None = None,
    padding: str | Sequence[tuple[int, int]] = "VALID",
    base_dilation: Sequence[int] | None = None,
    window_dilation: Sequence[int] | None = None,
) -> Tensor:
    """The minimum of every window of ``x`` (``jax.lax.reduce_window`` with ``lax.min``); padding is +inf."""
    return _one(ops.reduce_window_min, x, **_window_params(x, window_dimensions, window_strides, padding,
                                                          base_dilation, window_dilation))  # fmt: skip


def max_pool(
    x: Operand, window_shape: Sequence[int], strides: Sequence[int] | None = None, padding: str = "VALID"
) -> Tensor:
    """Max pooling over the spatial dimensions of a channels-last ``x`` (batch, *spatial, features), as flax's."""
    shape = _shape_of(x)
    window = (1, *window_shape, 1)
    step = (1, *(strides if strides is not None else (1,) * len(window_shape)), 1)
    if len(window) != len(shape):
        raise op_error(ShapeError, ops.reduce_window_max, (asarray(x),), f"window_shape {window_shape} needs "
                       "one entry per spatial dimension of (batch, *spatial, features)")  # fmt: skip
    return reduce_window_max(x, window, step, padding)


def avg_pool(
    x: Operand, window_shape: Sequence[int], strides: Sequence[int] | None = None, padding: str = "VALID"
) -> Tensor:
    """Average pooling over the spatial dimensions of a channels-last ``x``; padding counts as 0 (flax's default)."""
    shape = _shape_of(x)
    window = (1, *window_shape, 1)
    step = (1, *(strides if strides is not None else (1,) * len(window_shape)), 1)
    if len(window) != len(shape):
        raise op_error(ShapeError, ops.reduce_window_sum, (asarray(x),), f"window_shape {window_shape} needs "
                       "one entry per spatial dimension of (batch, *spatial, features)")  # fmt: skip
    total = reduce_window_sum(x, window, step, padding)
    count = 1
    for k in window_shape:
        count *= int(k)
    return div(total, count)


def select_and_gather_add(
    tangents: Operand,
    operand: Operand,
    select_prim: str,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    base_dilation: Sequence[int],
    window_dilation: Sequence[int],
) -> Tensor:
    """Per window, ``tangents`` where ``operand`` has its first max (``select_prim='ge'``) or min (``'le'``).

    The JVP of ``reduce_window_max`` / ``reduce_window_min`` (lax's internal op of that name).
    """
    params = _window_params(operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return _one(ops.select_and_gather_add, tangents, operand, select_prim=select_prim, **params)


def select_and_scatter_add(
    source: Operand,
    operand: Operand,
    select_prim: str,
    window_dimensions: Sequence[int],
    window_strides: Sequence[int],
    padding: Sequence[tuple[int, int]],
    base_dilation: Sequence[int],
    window_dilation: Sequence[int],
) -> Tensor:
    """Each window's ``source`` value added where ``operand`` has the window's first max (``'ge'``) / min (``'le'``).

    The transpose of ``select_and_gather_add``: the VJP of ``reduce_window_max`` / ``reduce_window_min``.
    """
    params = _window_params(operand, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return _one(ops.select_and_scatter_add, source, operand, select_prim=select_prim, **params)


def conv_general_dilated(
    lhs: Operand,
    rhs: Operand,
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
) -> Tensor:
    """General dilated convolution, as ``jax.lax.conv_general_dilated`` (a correlation: rhs is not flipped).

    ``dimension_numbers``: ``None`` (``('NCHW', 'OIHW', 'NCHW')`` and its 1-D/3-D analogues), a
    ``jax.lax.ConvDimensionNumbers``, three permutations, or three strings such as
    ``('NHWC', 'HWIO', 'NHWC')``; strides, padding and dilations follow rhs's spatial order.
    ``padding`` is ``(low, high)`` pairs or ``'SAME'`` / ``'SAME_LOWER'`` / ``'VALID'`` (computed
    from the dilated rhs, as lax does; string padding refuses an lhs dilation, as lax does).
    Operands promote together, as dot_general's.
    """
    lshape, rshape = _shape_of(lhs), _shape_of(rhs)
    nsp = builtins.max(len(lshape) - 2, 0)
    ones = (1,) * nsp
    try:
        dnums: Any = shapes.conv_dimension_numbers(dimension_numbers, len(lshape))
    except ShapeError:
        dnums = dimension_numbers  # malformed: the shape rule refuses it, naming the op and operands
    strides = _ints(window_strides, "window_strides")
    ldil = ones if lhs_dilation is None else _ints(lhs_dilation, "lhs_dilation")
    rdil = ones if rhs_dilation is None else _ints(rhs_dilation, "rhs_dilation")
    if isinstance(padding, str):
        if isinstance(ldil, tuple) and builtins.any(d != 1 for d in ldil):
            raise ShapeError(
                "conv_general_dilated: string padding is not defined with an lhs_dilation (as in lax); "
                "give explicit (low, high) pairs"
            )
        if dnums is dimension_numbers or len(rshape) != len(lshape):
            pads: Any = _Invalid(padding)
        else:
            lsp = [lshape[d] for d in dnums[0][2:]]
            rsp = [shapes.dilate_dim(rshape[d], r) for d, r in zip(dnums[1][2:], rdil, strict=False)]
            pads = padtype_to_pads(lsp, rsp, strides, padding)
    else:
        pads = _pairs(padding)
    return _one(
        ops.conv_general_dilated, lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=ldil,
        rhs_dilation=rdil, dimension_numbers=dnums, feature_group_count=_index(feature_group_count),
        batch_group_count=_index(batch_group_count),
    )  # fmt: skip


def conv(lhs: Operand, rhs: Operand, window_strides: Sequence[int], padding: str | Sequence[tuple[int, int]]) -> Tensor:
    """``jax.lax.conv``: ``conv_general_dilated`` in the NCHW / OIHW layout without dilation or groups."""
    return conv_general_dilated(lhs, rhs, window_strides, padding)
