"""Every op of the vocabulary as a function, plus a few compositions of them.

Each function accepts Tensors, NumPy arrays and Python scalars, and runs through
the one eager executor (``runtime.core.tensor.apply``), so promotion, errors and
recording behave the same whichever way an op is called.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from runtime.core import dtypes as dt
from runtime.core import ops, shapes
from runtime.core.ops import OpDef
from runtime.core.shapes import ArityError, OpTypeError, ShapeError
from runtime.core.tensor import Tensor, apply, apply_binary, as_tensor, asarray, op_error

Operand = Any  # Tensor | np.ndarray | Python scalar

__all__ = [
    "abs",
    "acos",
    "acosh",
    "add",
    "argmax",
    "argmin",
    "argsort",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "avg_pool",
    "basic_index",
    "bessel_i0e",
    "bessel_i1e",
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
    "cumlogsumexp",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "det",
    "digamma",
    "div",
    "dot_general",
    "dynamic_slice",
    "dynamic_update_slice",
    "eig",
    "eigh",
    "eigvals",
    "eq",
    "erf",
    "erf_inv",
    "erfc",
    "exp",
    "exp2",
    "expand_dims",
    "expm1",
    "floor",
    "floor_div",
    "fmax",
    "fmin",
    "full",
    "gather",
    "ge",
    "gt",
    "igamma",
    "igamma_grad_a",
    "igammac",
    "imag",
    "inv",
    "iota",
    "is_finite",
    "le",
    "lgamma",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logistic",
    "logsumexp",
    "lt",
    "lu",
    "lu_solve",
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
    "polygamma",
    "population_count",
    "pow",
    "qr",
    "real",
    "reciprocal",
    "reduce_and",
    "reduce_max",
    "reduce_min",
    "reduce_or",
    "reduce_precision",
    "reduce_prod",
    "reduce_sum",
    "reduce_window_max",
    "reduce_window_min",
    "reduce_window_sum",
    "reduce_xor",
    "rem",
    "repeat",
    "reshape",
    "reverse",
    "round",
    "rsqrt",
    "scatter",
    "scatter_add",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "select",
    "select_and_gather_add",
    "select_and_scatter_add",
    "select_n",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "sign",
    "sin",
    "sinh",
    "slice",
    "slogdet",
    "solve",
    "sort",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "sub",
    "sum",
    "sum_",
    "svd",
    "tan",
    "tanh",
    "tile",
    "top_k",
    "transpose",
    "triangular_solve",
    "where",
    "zeros",
    "zeta",
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


def _wrap_axes(axes: Any, x: Operand) -> Any:
    """Axes with the negative ones in range counted from the end (``-1`` is the last), as
    NumPy and jax.numpy take them; the recorded param is always non-negative. Anything out
    of range is left for the op's shape rule to refuse."""
    if type(axes) is not tuple:
        return axes  # an _Invalid value, for the shape rule
    for a in axes:
        if a < 0:
            break
    else:
        return axes
    ndim = x.ndim if isinstance(x, Tensor) else np.ndim(x)
    return tuple(a + ndim if -ndim <= a < 0 else a for a in axes)


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
    y_t = asarray(y) if not isinstance(y, Tensor) else y
    if r.dtype.kind in ("int", "uint") and not (type(y) is int and y != 0):
        # an integer x % 0 is 0, as jnp.remainder and np.remainder give (XLA's rem gives x),
        # recorded as a select; a Python divisor stays a Python scalar, so that it promotes as
        # one (int8 % 2 is int8)
        r = select(eq(y_t, 0), 0, r)
    if r.dtype.kind in ("uint", "bool"):
        return r
    wrong_sign = logical_and(ne(r, 0), ne(lt(r, 0), lt(y_t, 0)))
    return select(wrong_sign, add(r, y), r)


# -- contraction, selection, joining ---------------------------------------------------------


def dot_general(lhs: Operand, rhs: Operand, dimension_numbers: Any, *, preferred_element_type: Any = None) -> Tensor:
    """Generalised contraction, as ``jax.lax.dot_general``.

    ``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``;
    the output is batch dims, then lhs free dims, then rhs free dims.
    ``preferred_element_type``: the result's dtype, the products accumulated in it (int8
    operands summed in int32 do not wrap, bfloat16 ones accumulate in float32). Recorded as a
    ``convert`` of each promoted operand to it and the ordinary op; a type XLA would not
    accumulate in (one ranked below the operands', or one lax refuses) is refused.
    """
    try:
        dims: Any = shapes.dot_dimension_numbers(dimension_numbers)
    except shapes.ShapeError:
        dims = _Invalid(dimension_numbers)  # malformed: the shape rule refuses it, naming the op and operands
    if preferred_element_type is not None:
        return _with_preferred(ops.dot_general, lhs, rhs, preferred_element_type, {"dimension_numbers": dims})
    return _one(ops.dot_general, lhs, rhs, dimension_numbers=dims)


def matmul(x: Operand, y: Operand, *, preferred_element_type: Any = None) -> Tensor:
    """``x @ y`` for 1-D and 2-D operands, and batched matrices with equal batch dims
    (``preferred_element_type`` as in ``dot_general``)."""
    xt = as_tensor(x)
    yt = as_tensor(y)
    if xt.ndim == 0 or yt.ndim == 0:
        raise op_error(ShapeError, ops.dot_general, (xt, yt), "matmul's operands must have at least one dimension")
    if xt.ndim <= 2 and yt.ndim <= 2:
        return dot_general(xt, yt, (((xt.ndim - 1,), (0,)), ((), ())), preferred_element_type=preferred_element_type)
    if xt.ndim != yt.ndim or xt.shape[:-2] != yt.shape[:-2]:
        raise op_error(
            ShapeError,
            ops.dot_general,
            (xt, yt),
            "matmul's batched operands need equal batch dimensions (no broadcasting)",
        )
    batch = tuple(range(xt.ndim - 2))
    dims = (((xt.ndim - 1,), (yt.ndim - 2,)), (batch, batch))
    return dot_general(xt, yt, dims, preferred_element_type=preferred_element_type)


# -- preferred_element_type (dot_general, conv_general_dilated) ----------------------------------
#
# lax's meaning: the result has that dtype and the products are accumulated in it. castwise
# records it as what XLA computes where XLA widens: after the plan's promotion to the operands'
# common dtype, a ``convert`` of each operand to the preferred dtype, then the ordinary op. Where
# XLA instead computes in the operands' dtype and converts the result (a preferred type that
# ranks below theirs), that is not accumulation in the preferred type, and castwise refuses it.


def _xla_rank(d: dt.DType) -> tuple[bool, int, int, int, bool]:
    """Where ``d`` stands in XLA's order of element types (primitive_util's HigherPrecisionType,
    which lax's dot_general dtype rule mirrors): complex above real, then exponent range, mantissa
    bits, bit width, and signed above unsigned. XLA converts a dot's or convolution's operands to a
    preferred type ranked above theirs; for one ranked below, it computes in theirs and rounds."""
    part = dt.COMPLEX_PART.get(d, d)
    if part.kind == "float":
        info = ml_dtypes.finfo(part.storage) if part is not dt.float32r else ml_dtypes.finfo(np.float32)
        return (d.kind == "complex", int(info.maxexp), int(info.nmant), part.bits, True)
    return (False, -1, -1, 1 if d.kind == "bool" else d.bits, d.kind != "uint")


def _lax_bit_width(d: dt.DType) -> int:
    """lax's ``_bit_width``: 1 for bool, a complex type's part's width."""
    return 1 if d.kind == "bool" else dt.COMPLEX_PART.get(d, d).bits


def _dot_preferred_refusal(common: dt.DType, preferred: dt.DType) -> str | None:
    """lax.dot_general's rule (``_maybe_upcast``): a non-float result may not be narrowed."""
    if common.kind != "float" and _lax_bit_width(preferred) < _lax_bit_width(common):
        return f"it must not be narrower than the operands' {common} (as in lax)"
    return None


def _conv_preferred_refusal(common: dt.DType, preferred: dt.DType) -> str | None:
    """lax.conv_general_dilated's rule (``_validate_preferred_element_type``): integers may go to
    integers or floats, floats to floats, complex to complex; signed stays signed; no narrowing."""
    if not (common.is_integer and preferred.kind == "float"):
        for kinds in (("int", "uint"), ("float",), ("complex",)):
            if common.kind in kinds and preferred.kind not in kinds:
                return (
                    "the compatible (operands, preferred) kinds are (integer, integer), (integer, float), "
                    "(float, float) and (complex, complex) (as in lax)"
                )
        if common.kind == "int" and preferred.kind != "int":
            return "it must keep the operands' signedness (as in lax)"
    if preferred.itemsize < common.itemsize:
        return f"it must not be narrower than the operands' {common} (as in lax)"
    return None


_PREFERRED_RULES = {"dot_general": _dot_preferred_refusal, "conv_general_dilated": _conv_preferred_refusal}


def _with_preferred(op: OpDef, lhs: Operand, rhs: Operand, preferred: Any, params: dict[str, Any]) -> Tensor:
    """``op(lhs, rhs)`` with lax's ``preferred_element_type``: each operand promoted (the plan's
    common dtype), converted to ``preferred`` (recorded), then the ordinary op. Refusals come
    before anything is recorded."""
    from runtime.core.promotion import PromotionError, result_type

    lt, rt_ = as_tensor(lhs), as_tensor(rhs)
    try:
        pref = dt.dtype(preferred)
    except TypeError:
        raise op_error(
            OpTypeError, op, (lt, rt_), f"{op.name}: preferred_element_type {preferred!r} is not a dtype"
        ) from None
    try:  # the plan's common dtype (operands that agree ask the policy nothing, as in the plan)
        common = lt.dtype if lt.dtype is rt_.dtype else result_type(lt, rt_)
    except PromotionError as err:
        raise op_error(PromotionError, op, (lt, rt_), f"{op.name}: {err}") from None
    if pref is not common:
        why = _PREFERRED_RULES[op.name](common, pref)
        if why is None and common.is_integer and common.bits < 8:
            why = f"XLA's CPU backend does not compile a {op.name} of {common} operands to another result type"
        if why is None and not (common.is_integer and pref.is_integer) and _xla_rank(pref) <= _xla_rank(common):
            why = (
                f"XLA computes it in {common} and rounds the result to {pref}, which is no accumulation in {pref}; "
                f"call {op.name} without it and convert the result"
            )
        if why is not None:
            raise op_error(OpTypeError, op, (lt, rt_), f"{op.name}: preferred_element_type {pref} refused: {why}")
    try:  # the op's own checks (shapes, params, the kernel's dtypes) before a convert is recorded
        shapes.abstract_eval(op, [(pref, lt.shape), (pref, rt_.shape)], params)
    except (ShapeError, TypeError) as err:
        raise op_error(type(err), op, (lt, rt_), f"{err} (with preferred_element_type {pref})") from None
    operands = []
    for t in (lt, rt_):
        if t.dtype is not common:
            t = convert(t, common)  # the plan's promotion, written down
        operands.append(t if t.dtype is pref else convert(t, pref))
    return _one(op, *operands, **params)


def select(pred: Operand, on_true: Operand, on_false: Operand) -> Tensor:
    """``on_true`` where ``pred`` (bool) holds, else ``on_false``."""
    return _one(ops.select, pred, on_true, on_false)


def clamp(min: Operand, x: Operand, max: Operand) -> Tensor:  # noqa: A002
    """``min(max(x, min), max)``, as ``jax.lax.clamp(min, x, max)``."""
    return _one(ops.clamp, min, x, max)


def concatenate(operands: Sequence[Operand], dimension: int) -> Tensor:
    """Join ``operands`` along ``dimension`` (a negative one counts from the end)."""
    if not operands:
        raise op_error(ArityError, ops.concatenate, (), "at least one operand is required")
    dim = _index(dimension)
    if type(dim) is int and dim < 0:
        dim = _wrap_axes((dim,), operands[0])[0]
    return apply(ops.concatenate, operands, {"dimension": dim})  # type: ignore[return-value]


def stack(operands: Sequence[Operand], axis: int = 0) -> Tensor:
    """Stack equal-shaped operands along a new ``axis``: reshape each, then concatenate."""
    if not operands:
        raise op_error(ArityError, ops.concatenate, (), "stack needs at least one operand")
    ts = [as_tensor(x) for x in operands]
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


def scatter_mul(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """Multiply windows of ``operand`` by ``updates`` (``jax.lax.scatter_mul`` meaning).

    As in JAX, the derivative with respect to ``updates`` needs ``unique_indices=True``.
    """
    return _one(
        ops.scatter_mul, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
    )  # fmt: skip


def scatter_min(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """The elementwise min of windows of ``operand`` and ``updates`` (``jax.lax.scatter_min`` meaning)."""
    return _one(
        ops.scatter_min, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
    )  # fmt: skip


def scatter_max(
    operand: Operand,
    scatter_indices: Operand,
    updates: Operand,
    dimension_numbers: Any,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode: Any = None,
) -> Tensor:
    """The elementwise max of windows of ``operand`` and ``updates`` (``jax.lax.scatter_max`` meaning)."""
    return _one(
        ops.scatter_max, operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
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


def erf(x: Operand) -> Tensor:
    """The error function (real floats)."""
    return _one(ops.erf, x)


def erfc(x: Operand) -> Tensor:
    """The complementary error function 1 - erf(x), accurate where erf(x) is near 1."""
    return _one(ops.erfc, x)


def erf_inv(x: Operand) -> Tensor:
    """The inverse error function on [-1, 1]."""
    return _one(ops.erf_inv, x)


def lgamma(x: Operand) -> Tensor:
    """log|Gamma(x)|."""
    return _one(ops.lgamma, x)


def digamma(x: Operand) -> Tensor:
    """The digamma function, the derivative of lgamma."""
    return _one(ops.digamma, x)


def polygamma(m: Operand, x: Operand) -> Tensor:
    """The m-th derivative of digamma (m a whole number >= 0, no derivative in m)."""
    return apply_binary(ops.polygamma, m, x)


def zeta(x: Operand, q: Operand) -> Tensor:
    """The Hurwitz zeta function sum_i (q + i)**-x (no derivative, as in JAX)."""
    return apply_binary(ops.zeta, x, q)


def igamma(a: Operand, x: Operand) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x)."""
    return apply_binary(ops.igamma, a, x)


def igammac(a: Operand, x: Operand) -> Tensor:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return apply_binary(ops.igammac, a, x)


def igamma_grad_a(a: Operand, x: Operand) -> Tensor:
    """d igamma(a, x) / da (no derivative of its own, as in JAX)."""
    return apply_binary(ops.igamma_grad_a, a, x)


def bessel_i0e(x: Operand) -> Tensor:
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0."""
    return _one(ops.bessel_i0e, x)


def bessel_i1e(x: Operand) -> Tensor:
    """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1."""
    return _one(ops.bessel_i1e, x)


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
    """Sum over ``axes`` (negative axes count from the end)."""
    return _one(ops.reduce_sum, x, axes=_wrap_axes(_ints(axes, "axes"), x))


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
    t = as_tensor(x)
    axes = _reduced_axes(axis, t.ndim)
    if t.dtype in _SUM_IN_FLOAT32:
        return convert(reduce_sum(convert(t, dt.float32), axes), t.dtype)
    return reduce_sum(t, axes)


def sum(  # noqa: A001
    x: Operand, axis: Sequence[int] | int | None = None, *, keepdims: builtins.bool = False, dtype: Any = None
) -> Tensor:
    """``Tensor.sum`` as a function (``jnp.sum``/``np.sum``/``torch.sum`` per the policy):
    bool and small integers sum in int64 (uint64 for unsigned under jax/numpy), float16
    and bfloat16 in float32; negative axes count from the end."""
    from runtime.numpy import tensor_methods as tensor_api

    return tensor_api.sum_(x, axis, keepdims, dtype)


def mean(
    x: Operand, axis: Sequence[int] | int | None = None, *, keepdims: builtins.bool = False, dtype: Any = None
) -> Tensor:
    """``Tensor.mean`` as a function: the mean over ``axis``; integers and bool divide into
    the policy's float (float64 under numpy), converted before summing, so they do not overflow."""
    from runtime.numpy import tensor_methods as tensor_api

    return tensor_api.mean(x, axis, keepdims, dtype)


def where(condition: Operand, x: Operand = None, y: Operand = None) -> Any:
    """``jnp.where``/``np.where``/``torch.where``: ``x`` where ``condition`` holds, else ``y``
    (a ``select``, all three broadcast; a non-bool condition is compared with 0).
    ``where(condition)`` alone is ``nonzero``: one int64 index Tensor per axis."""
    from runtime.numpy import tensor_methods as tensor_api

    return tensor_api.where(condition, x, y)


def _mean(x: Operand, axis: Sequence[int] | int | None = None) -> Tensor:
    """``jnp.mean`` of an inexact ``x``: the sum over ``axis`` divided by the count.

    Integers divide into the policy's float; float16 and bfloat16 are summed and divided in float32, then rounded once
    (``convert -> reduce_sum -> div -> convert``, as jax.numpy records it), so the
    mean of many values does not overflow where JAX's does not.
    """
    t = as_tensor(x)
    wide = t.dtype in _SUM_IN_FLOAT32
    # reduce_sum validates the axes (its errors name it, the operands and the policy)
    total = reduce_sum(convert(t, dt.float32) if wide else t, _reduced_axes(axis, t.ndim))
    count = t.size // total.size if total.size else 1
    out = div(total, count)
    return convert(out, t.dtype) if wide else out


def _reduced_axes(axis: Sequence[int] | int | None, ndim: int) -> tuple[int, ...]:
    from runtime.core.tensor import _axes

    return _axes(axis, ndim)


def reduce_prod(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """Product over ``axes`` (negative axes count from the end)."""
    return _one(ops.reduce_prod, x, axes=_wrap_axes(_ints(axes, "axes"), x))


def reduce_max(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """Maximum over ``axes`` (negative axes count from the end)."""
    return _one(ops.reduce_max, x, axes=_wrap_axes(_ints(axes, "axes"), x))


def reduce_min(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """Minimum over ``axes`` (negative axes count from the end)."""
    return _one(ops.reduce_min, x, axes=_wrap_axes(_ints(axes, "axes"), x))


# -- index and bitwise reductions, precision, cumulative reductions --------------------------------


def _axis_param(axis: Any, ndim: int) -> Any:
    """An int axis, a negative one counted from the end; anything else unchanged, for the shape rule."""
    if _is_index(axis):
        a = operator.index(axis)
        return a % ndim if -ndim <= a < 0 else a
    return axis


def argmax(x: Operand, axis: int, index_dtype: Any = dt.int64) -> Tensor:
    """``lax.argmax``: the index of the largest value along ``axis``, in ``index_dtype``.

    Ties give the first index (``-0.0`` equals ``+0.0``) and a NaN beats every
    number: the result is the first NaN's index, as XLA computes it. Not
    differentiable (the result is an integer).
    """
    t = as_tensor(x)
    return _one(ops.argmax, t, axes=(_axis_param(axis, t.ndim),), index_dtype=_dtype_param(index_dtype))


def argmin(x: Operand, axis: int, index_dtype: Any = dt.int64) -> Tensor:
    """``lax.argmin``: the index of the smallest value along ``axis`` (first on ties, first NaN wins)."""
    t = as_tensor(x)
    return _one(ops.argmin, t, axes=(_axis_param(axis, t.ndim),), index_dtype=_dtype_param(index_dtype))


def reduce_and(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """``lax.reduce_and``: all (bool) or bitwise and (integers) over ``axes``."""
    return _one(ops.reduce_and, x, axes=_ints(axes, "axes"))


def reduce_or(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """``lax.reduce_or``: any (bool) or bitwise or (integers) over ``axes``."""
    return _one(ops.reduce_or, x, axes=_ints(axes, "axes"))


def reduce_xor(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """``lax.reduce_xor``: parity (bool) or bitwise xor (integers) over ``axes``."""
    return _one(ops.reduce_xor, x, axes=_ints(axes, "axes"))


def reduce_precision(x: Operand, exponent_bits: int, mantissa_bits: int) -> Tensor:
    """``lax.reduce_precision``: ``x`` rounded (to nearest even) to a float format with
    ``exponent_bits`` and ``mantissa_bits``, kept in ``x``'s dtype; out-of-range values become
    +-inf or +-0, as XLA computes them. Its derivative is itself applied to the tangent."""
    return _one(ops.reduce_precision, x, exponent_bits=_index(exponent_bits), mantissa_bits=_index(mantissa_bits))


def _scan(op: OpDef, x: Operand, axis: int, reverse: bool) -> Tensor:
    t = as_tensor(x)
    return _one(op, t, axis=_axis_param(axis, t.ndim), reverse=reverse)


def cumsum(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cumsum``: running sums along ``axis`` (from the end when ``reverse``)."""
    return _scan(ops.cumsum, x, axis, reverse)


def cumprod(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cumprod``: running products along ``axis``."""
    return _scan(ops.cumprod, x, axis, reverse)


def cummax(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cummax``: running maxima along ``axis`` (NaN-propagating)."""
    return _scan(ops.cummax, x, axis, reverse)


def cummin(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cummin``: running minima along ``axis`` (NaN-propagating)."""
    return _scan(ops.cummin, x, axis, reverse)


def cumlogsumexp(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cumlogsumexp``: running ``log(sum(exp(x)))`` along ``axis``, combined stably."""
    return _scan(ops.cumlogsumexp, x, axis, reverse)


def logsumexp(x: Operand, axis: Sequence[int] | int | None = None, keepdims: bool = False) -> Tensor:
    """``jax.nn.logsumexp`` (``jax.scipy.special.logsumexp``): ``log(sum(exp(x)))`` over ``axis``
    (every axis by default), computed stably as ``log(sum(exp(x - m))) + m`` with ``m`` the
    maximum where it is finite and 0 elsewhere, so all ``-inf`` gives ``-inf`` and an ``inf``
    gives ``inf``.

    A composition of ordinary ops (``reduce_max``, ``select``, ``exp``, ``reduce_sum``,
    ``log``), so its recording holds those and its gradient is the softmax. JAX stops the
    gradient through ``m``; castwise has no stop-gradient op, so ``m``'s path is recorded: its
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


# -- structural ----------------------------------------------------------------------------------


def reshape(x: Operand, new_sizes: Sequence[int]) -> Tensor:
    """``x`` with shape ``new_sizes`` (same number of elements, row-major)."""
    return _one(ops.reshape, x, new_sizes=_ints(new_sizes, "new_sizes"))


def transpose(x: Operand, permutation: Sequence[int]) -> Tensor:
    """Permute the axes of ``x`` (negative axes count from the end)."""
    return _one(ops.transpose, x, permutation=_wrap_axes(_ints(permutation, "permutation"), x))


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


def _fresh_copy(t: Tensor) -> Tensor:
    """``t``'s values in new memory, recorded as a ``broadcast_in_dim`` to its own shape: what a
    function whose arguments make it an identity returns (NumPy and PyTorch copy there)."""
    return broadcast_in_dim(t, t.shape, tuple(range(t.ndim)))


def reverse(x: Operand, dimensions: Sequence[int]) -> Tensor:
    """Reverse ``x`` along ``dimensions`` (negative ones count from the end)."""
    return _one(ops.reverse, x, dimensions=_wrap_axes(_ints(dimensions, "dimensions"), x))


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


# -- sorting, splitting, choosing, repeating ---------------------------------------------------


def _axis_of(op: OpDef, axis: Any, ndim: int, what: str = "axis") -> Any:
    """A possibly negative axis in ``[0, ndim)``; anything else unchanged, for the shape rule to refuse."""
    if not _is_index(axis):
        return axis
    axis = operator.index(axis)
    return axis + ndim if -ndim <= axis < 0 else axis


def sort(operand: Operand | Sequence[Operand], dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort ``operand`` along ``dimension`` (``jax.lax.sort`` meaning).

    Given a sequence of equal-shaped operands, all of them are permuted by the
    lexicographic order of the first ``num_keys`` and a tuple comes back. The order
    is lax's: -0.0 and +0.0 tie, NaNs come last, complex numbers compare by real
    part then imaginary part; the sort is stable.
    """
    single = not isinstance(operand, (list, tuple))
    operands = [as_tensor(operand)] if single else [as_tensor(x) for x in operand]  # type: ignore[union-attr]
    if not operands:
        raise op_error(ArityError, ops.sort, (), "at least one operand is required")
    params = {
        "dimension": _axis_of(ops.sort, dimension, operands[0].ndim, "dimension"),
        "is_stable": is_stable,
        "num_keys": _index(num_keys),
    }
    out = apply(ops.sort, tuple(operands), params)
    outs = out if isinstance(out, tuple) else (out,)
    return outs[0] if single else tuple(outs)


def argsort(x: Operand, axis: int = -1, *, descending: bool = False, stable: bool = True) -> Tensor:
    """The int64 indices that sort ``x`` along ``axis`` (``jax.numpy.argsort`` meaning: stable,
    NaNs last; ``descending`` keeps equal elements in their original order)."""
    t = as_tensor(x)
    if t.ndim == 0:
        t = reshape(t, (1,))
    ax = _axis_of(ops.sort, axis, t.ndim)
    if not (_is_index(ax) and 0 <= ax < t.ndim):
        raise op_error(ShapeError, ops.sort, (t,), f"argsort: axis {axis!r} out of range for rank {t.ndim}")
    index = iota(dt.int64, t.shape, ax)
    if not descending:
        return sort((t, index), ax, is_stable=stable, num_keys=1)[1]  # type: ignore[no-any-return]
    # descending and stable: sort the reversed array ascending, then reverse back and
    # count from the other end, so equal elements keep their original order
    perm = sort((reverse(t, (ax,)), index), ax, is_stable=stable, num_keys=1)[1]
    n = t.shape[ax]
    return sub(full((), n - 1, dt.int64), reverse(perm, (ax,)))


def top_k(x: Operand, k: int, axis: int = -1) -> tuple[Tensor, Tensor]:
    """The ``k`` largest entries along ``axis`` (the last by default; negative counts from the
    end), largest first, and their int32 indices (``jax.lax.top_k`` meaning: ties by the lower
    index, NaN above +inf).

    The ``top_k`` op works on the last axis, as XLA's does; another axis is recorded as a
    ``transpose`` that moves it last, the ``top_k``, and a ``transpose`` of both outputs back.
    """
    if not (_is_index(axis) and operator.index(axis) == -1):
        t = x = as_tensor(x)
        ax = _axis_of(ops.top_k, axis, t.ndim)
        if not (_is_index(ax) and 0 <= ax < t.ndim):
            raise op_error(ShapeError, ops.top_k, (t,), f"top_k: axis {axis!r} out of range for rank {t.ndim}")
        if ax != t.ndim - 1:
            n = t.shape[ax]
            if _is_index(k) and not 0 <= operator.index(k) <= n:
                raise op_error(ShapeError, ops.top_k, (t,), f"top_k: k {k} outside [0, {n}] (the size of axis {ax})")
            perm = (*(d for d in range(t.ndim) if d != ax), ax)
            back = tuple(perm.index(d) for d in range(t.ndim))
            try:  # the op's own checks (dtype, k's type) before the transpose is recorded
                shapes.abstract_eval(ops.top_k, [(t.dtype, tuple(t.shape[d] for d in perm))], {"k": _index(k)})
            except (ShapeError, TypeError) as err:
                raise op_error(type(err), ops.top_k, (t,), f"{err} (along axis {ax})") from None
            values, indices = top_k(transpose(t, perm), k)
            return transpose(values, back), transpose(indices, back)
    values, indices = apply(ops.top_k, (x,), {"k": _index(k)})  # type: ignore[misc]
    return values, indices


def split(x: Operand, sizes: Sequence[int], axis: int = 0) -> list[Tensor]:
    """Consecutive pieces of ``sizes`` along ``axis`` (``jax.lax.split`` meaning)."""
    t = as_tensor(x)
    params = {"sizes": _ints(sizes, "sizes"), "axis": _axis_of(ops.split, axis, t.ndim)}
    out = apply(ops.split, (t,), params)
    return list(out) if isinstance(out, tuple) else [out]


def select_n(which: Operand, *cases: Operand) -> Tensor:
    """``cases[which]`` elementwise (``jax.lax.select_n`` meaning): ``which`` is bool (at most
    two cases, False picks the first) or an integer; the cases are promoted to one dtype."""
    if not cases:
        raise op_error(ArityError, ops.select_n, (), "at least one case is required")
    return _one(ops.select_n, which, *cases)


def expand_dims(x: Operand, dimensions: Sequence[int] | int) -> Tensor:
    """``x`` with size-1 axes inserted at ``dimensions`` (positions in the result; negative
    counts from its end), as ``jax.lax.expand_dims`` (recorded as a ``reshape``)."""
    t = as_tensor(x)
    dims = _ints(dimensions, "dimensions")
    rank = t.ndim + len(dims)
    if isinstance(dims, _Invalid) or not builtins.all(-rank <= d < rank for d in dims):
        raise op_error(
            ShapeError, ops.reshape, (t,), f"expand_dims: dimensions {dimensions!r} out of range for rank {rank}"
        )
    normal = sorted(d % rank for d in dims)
    if len(set(normal)) != len(normal):
        raise op_error(ShapeError, ops.reshape, (t,), f"expand_dims: dimensions {dimensions!r} repeat an axis")
    shape = list(t.shape)
    for d in normal:
        shape.insert(d, 1)
    return reshape(t, shape)


def squeeze(x: Operand, dimensions: Sequence[int] | int | None = None) -> Tensor:
    """``x`` without the size-1 axes ``dimensions`` (every size-1 axis when ``None``), as
    ``jax.lax.squeeze`` / ``jax.numpy.squeeze`` (recorded as a ``reshape``)."""
    t = as_tensor(x)
    if dimensions is None:
        dims = tuple(i for i, n in enumerate(t.shape) if n == 1)
    else:
        raw = _ints(dimensions, "dimensions")
        if isinstance(raw, _Invalid) or not builtins.all(-t.ndim <= d < t.ndim for d in raw):
            raise op_error(ShapeError, ops.reshape, (t,), f"squeeze: dimensions {dimensions!r} out of range")
        dims = tuple(d % t.ndim for d in raw)
        bad = [d for d in dims if t.shape[d] != 1]
        if bad:
            raise op_error(ShapeError, ops.reshape, (t,), f"squeeze: axes {bad} do not have size 1")
    return reshape(t, [n for i, n in enumerate(t.shape) if i not in dims])


def tile(x: Operand, reps: Sequence[int] | int) -> Tensor:
    """``x`` repeated ``reps`` times along each axis (``jax.numpy.tile`` meaning: the shorter of
    ``x.shape`` and ``reps`` is padded with leading 1s); a ``broadcast_in_dim`` and a ``reshape``."""
    t = as_tensor(x)
    r = _ints(reps, "reps")
    if isinstance(r, _Invalid) or builtins.any(n < 0 for n in r):
        raise op_error(ShapeError, ops.broadcast_in_dim, (t,), f"tile: reps {reps!r} must be non-negative integers")
    rank = builtins.max(t.ndim, len(r))
    r = (1,) * (rank - len(r)) + tuple(r)
    shape = (1,) * (rank - t.ndim) + tuple(t.shape)
    if builtins.all(n == 1 for n in r):  # a copy, as np.tile's and torch's: never ``x``'s own memory
        return _fresh_copy(reshape(t, shape) if shape != t.shape else t)
    wide = tuple(v for pair in zip(r, shape, strict=True) for v in pair)  # (r0, n0, r1, n1, ...)
    base = reshape(t, shape) if shape != t.shape else t
    spread = broadcast_in_dim(base, wide, tuple(range(1, 2 * rank, 2)))
    return reshape(spread, [a * b for a, b in zip(r, shape, strict=True)])


def repeat(x: Operand, repeats: Any, axis: int | None = None, *, total_repeat_length: int | None = None) -> Tensor:
    """Each element of ``x`` repeated along ``axis`` (``jax.numpy.repeat`` meaning).

    ``repeats`` is an int or one non-negative count per element along ``axis``; its
    values must be concrete (the output shape depends on them). ``axis=None``
    flattens ``x`` first. ``total_repeat_length`` fixes the output length: extra
    entries are dropped, missing ones repeat the last element. An int count is a
    ``broadcast_in_dim`` and a ``reshape``; per-element counts are a ``gather``.
    """
    t = as_tensor(x)
    if axis is None:
        t = reshape(t, (t.size,))
        axis = 0
    ax = _axis_of(ops.gather, axis, t.ndim)
    if not (_is_index(ax) and 0 <= ax < t.ndim):
        raise op_error(ShapeError, ops.gather, (t,), f"repeat: axis {axis!r} out of range for rank {t.ndim}")
    n = t.shape[ax]
    counts = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1 or (counts.ndim == 1 and counts.shape[0] not in (1, n)):
        raise op_error(
            ShapeError, ops.gather, (t,),
            f"repeat: repeats must be an int or {n} integer counts along axis {ax}, got {repeats!r}",
        )  # fmt: skip
    if (counts < 0).any():
        raise op_error(ShapeError, ops.gather, (t,), f"repeat: repeats {repeats!r} must be non-negative")
    if counts.ndim == 1 and counts.shape[0] == 1:
        counts = counts.reshape(())
    if counts.ndim == 0 and total_repeat_length is None:
        c = int(counts)
        wide = (*t.shape[: ax + 1], c, *t.shape[ax + 1 :])
        spread = broadcast_in_dim(t, wide, tuple(d if d <= ax else d + 1 for d in range(t.ndim)))
        return reshape(spread, (*t.shape[:ax], n * c, *t.shape[ax + 1 :]))
    rows = np.repeat(np.arange(n, dtype=np.int64), np.broadcast_to(counts, (n,)))
    if total_repeat_length is not None:
        total = operator.index(total_repeat_length)
        if rows.size >= total or rows.size == 0:
            rows = rows[:total] if rows.size else np.zeros(0, np.int64)
        else:
            rows = np.concatenate([rows, np.full(total - rows.size, rows[-1], np.int64)])
    dn = shapes.GatherDimensionNumbers(
        offset_dims=tuple(d for d in range(t.ndim) if d != ax), collapsed_slice_dims=(ax,), start_index_map=(ax,)
    )
    sizes = tuple(1 if d == ax else s for d, s in enumerate(t.shape))
    return gather(t, rows.reshape(-1, 1), dn, sizes)


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


def lu(x: Operand) -> tuple[Tensor, Tensor, Tensor]:
    """LU decomposition with partial pivoting, as ``jax.lax.linalg.lu``: ``(lu, pivots, permutation)``.

    ``lu`` packs the unit lower-triangular L (below the diagonal) and the upper-triangular
    U; ``x[..., permutation, :] == L @ U``. ``pivots`` (LAPACK's row swaps) and
    ``permutation`` are int32 and carry no derivative.
    """
    packed, pivots, permutation = apply(ops.lu, (x,), {})  # type: ignore[misc]
    return packed, pivots, permutation


def qr(x: Operand, full_matrices: bool = True) -> tuple[Tensor, Tensor]:
    """QR decomposition ``x = q @ r``, as ``jax.lax.linalg.qr`` (LAPACK's signs, no normalisation)."""
    q, r = apply(ops.qr, (x,), {"full_matrices": builtins.bool(full_matrices)})  # type: ignore[misc]
    return q, r


def svd(x: Operand, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Singular value decomposition ``x = u @ diag(s) @ vh``, as ``jax.lax.linalg.svd``:
    ``(u, s, vh)``, or only ``s`` (real, descending) without ``compute_uv``."""
    params = {"full_matrices": builtins.bool(full_matrices), "compute_uv": builtins.bool(compute_uv)}
    out = apply(ops.svd, (x,), params)
    if not compute_uv:
        return out[0] if isinstance(out, tuple) else out
    u, s, vh = out  # type: ignore[misc]
    return u, s, vh


def eig(
    x: Operand, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True
) -> tuple[Tensor, ...]:
    """Eigen-decomposition of a general square matrix, as ``jax.lax.linalg.eig``:
    ``(w, vl, vr)`` (vectors only where asked for), complex whatever the input; only the
    eigenvalues are differentiable, as in JAX."""
    params = {
        "compute_left_eigenvectors": builtins.bool(compute_left_eigenvectors),
        "compute_right_eigenvectors": builtins.bool(compute_right_eigenvectors),
    }
    out = apply(ops.eig, (x,), params)
    return out if isinstance(out, tuple) else (out,)


def eigvals(x: Operand) -> Tensor:
    """The eigenvalues of a general square matrix (complex), as ``jax.numpy.linalg.eigvals``."""
    return eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def _square_matrix(x: Operand, what: str) -> Tensor:
    """``x`` as a Tensor of (a batch of) square matrices, else the error ``lu`` gives."""
    xt = as_tensor(x)
    if xt.ndim < 2 or xt.shape[-1] != xt.shape[-2]:
        raise op_error(ShapeError, ops.lu, (xt,), f"{what} takes (a batch of) square matrices")
    return xt


def _mask_like(shape: tuple[int, ...], compare: Any) -> Tensor:
    """``compare(row, col)`` over the last two axes of ``shape`` (bool, batch dims included)."""
    nd = len(shape)
    return compare(iota(dt.int32, shape, nd - 2), iota(dt.int32, shape, nd - 1))


def _diagonal(x: Tensor) -> Tensor:
    """``x[..., k, k]`` of square matrices, shape ``x.shape[:-1]`` (a masked sum: differentiable)."""
    zero = full(x.shape, 0, x.dtype)
    return reduce_sum(select(_mask_like(x.shape, eq), x, zero), (x.ndim - 2,))


def _permutation_matrix(permutation: Tensor, dtype: Any) -> Tensor:
    """``P`` with ``P @ b == b[..., permutation, :]``: ``P[..., i, j] = (permutation[..., i] == j)``."""
    m = permutation.shape[-1]
    shape = (*permutation.shape, m)
    nd = len(shape)
    rows = broadcast_in_dim(permutation, shape, tuple(range(nd - 1)))
    return convert(eq(rows, iota(permutation.dtype, shape, nd - 1)), dtype)


def _batch_matmul(x: Tensor, y: Tensor) -> Tensor:
    nd = x.ndim
    batch = tuple(range(nd - 2))
    return dot_general(x, y, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _broadcast_batch(x: Tensor, batch: tuple[int, ...]) -> Tensor:
    """``x`` (matrices) broadcast to the leading ``batch`` dims, recorded as ``broadcast_in_dim``."""
    if x.shape[:-2] == batch:
        return x
    shape = (*batch, *x.shape[-2:])
    return broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


def lu_solve(packed: Tensor, permutation: Tensor, b: Tensor) -> Tensor:
    """Solve ``a @ x = b`` for matrices ``b`` from ``a``'s ``lu``: ``U^-1 L^-1 P b``, two
    triangular solves reading the packed factors' triangles."""
    pb = _batch_matmul(_permutation_matrix(permutation, b.dtype), b)
    y = triangular_solve(packed, pb, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(packed, y, left_side=True, lower=False)


def _common_inexact(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``a`` and ``b`` converted (recorded) to their dtype under the active policy."""
    if a.dtype is b.dtype:
        return a, b  # nothing to decide (and no lattice question, which a policy without complex refuses)
    from runtime.core.promotion import result_type

    common = result_type(a, b)
    return (a if a.dtype is common else convert(a, common)), (b if b.dtype is common else convert(b, common))


def solve(a: Operand, b: Operand) -> Tensor:
    """``x`` with ``a @ x = b``, as ``jax.numpy.linalg.solve``: ``b`` is a vector ``[n]`` (when
    1-D) or matrices ``[..., n, k]``; batch dims broadcast. Composed of ``lu`` and two
    ``triangular_solve``\\ s, so it records, differentiates and lowers as those ops."""
    at = _square_matrix(a, "solve")
    bt = as_tensor(b)
    at, bt = _common_inexact(at, bt)
    vector = bt.ndim == 1
    if vector:
        bt = reshape(bt, (bt.shape[0], 1))
    if bt.ndim < 2 or bt.shape[-2] != at.shape[-1]:
        raise op_error(
            ShapeError, ops.triangular_solve, (at, bt), "solve: b must be [n] or [..., n, k] for a [..., n, n]"
        )
    batch = tuple(np.broadcast_shapes(at.shape[:-2], bt.shape[:-2]))
    at, bt = _broadcast_batch(at, batch), _broadcast_batch(bt, batch)
    packed, _, permutation = lu(at)
    x = lu_solve(packed, permutation, convert(bt, packed.dtype) if bt.dtype is not packed.dtype else bt)
    return reshape(x, x.shape[:-1]) if vector else x


def inv(a: Operand) -> Tensor:
    """The inverse of (a batch of) square matrices, as ``jax.numpy.linalg.inv``: ``solve(a, I)``."""
    at = _square_matrix(a, "inv")
    packed, _, permutation = lu(at)
    eye = convert(_mask_like(packed.shape, eq), packed.dtype)
    return lu_solve(packed, permutation, eye)


def _lu_sign_and_diagonal(a: Operand, what: str) -> tuple[Tensor, Tensor]:
    """The permutation's sign (+-1, of ``lu``'s dtype) and U's diagonal."""
    packed, pivots, _ = lu(_square_matrix(a, what))
    k = pivots.ndim - 1
    # each pivot that is not its own row is a swap: the sign is the product of -1 per swap (in the
    # factors' dtype, with no Python scalar: a policy without int32 arithmetic still computes it)
    swapped = ne(pivots, iota(dt.int32, pivots.shape, k))
    flips = select(swapped, full(pivots.shape, -1, packed.dtype), full(pivots.shape, 1, packed.dtype))
    return reduce_prod(flips, (k,)), _diagonal(packed)


def det(a: Operand) -> Tensor:
    """The determinant, as ``jax.numpy.linalg.det``: the permutation's sign times U's diagonal product."""
    sign, diagonal = _lu_sign_and_diagonal(a, "det")
    return mul(sign, reduce_prod(diagonal, (diagonal.ndim - 1,)))


def slogdet(a: Operand) -> tuple[Tensor, Tensor]:
    """``(sign, log|det|)``, as ``jax.numpy.linalg.slogdet``: ``sign`` of ``a``'s dtype (a unit
    complex number for complex ``a``, 0 for a singular matrix), ``log|det|`` real."""
    sign, diagonal = _lu_sign_and_diagonal(a, "slogdet")
    size = abs(diagonal)
    last = (diagonal.ndim - 1,)
    safe = select(eq(size, full(size.shape, 0, size.dtype)), full(size.shape, 1, size.dtype), size)
    phase = div(diagonal, convert(safe, diagonal.dtype) if safe.dtype is not diagonal.dtype else safe)
    return mul(sign, reduce_prod(phase, last)), reduce_sum(log(size), last)


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
    n_real = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    if builtins.sum(1 for i in items if i is Ellipsis) > 1:
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
    preferred_element_type: Any = None,
) -> Tensor:
    """General dilated convolution, as ``jax.lax.conv_general_dilated`` (a correlation: rhs is not flipped).

    ``dimension_numbers``: ``None`` (``('NCHW', 'OIHW', 'NCHW')`` and its 1-D/3-D analogues), a
    ``jax.lax.ConvDimensionNumbers``, three permutations, or three strings such as
    ``('NHWC', 'HWIO', 'NHWC')``; strides, padding and dilations follow rhs's spatial order.
    ``padding`` is ``(low, high)`` pairs or ``'SAME'`` / ``'SAME_LOWER'`` / ``'VALID'`` (computed
    from the dilated rhs, as lax does; string padding refuses an lhs dilation, as lax does).
    Operands promote together, as dot_general's. ``preferred_element_type``: the result's dtype,
    the products accumulated in it, recorded as in ``dot_general`` (with lax's stricter rule for
    convolutions: integer to integer or float, float to float, complex to complex, signed stays
    signed, never narrower).
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
    params = {
        "window_strides": strides, "padding": pads, "lhs_dilation": ldil, "rhs_dilation": rdil,
        "dimension_numbers": dnums, "feature_group_count": _index(feature_group_count),
        "batch_group_count": _index(batch_group_count),
    }  # fmt: skip
    if preferred_element_type is not None:
        return _with_preferred(ops.conv_general_dilated, lhs, rhs, preferred_element_type, params)
    return _one(ops.conv_general_dilated, lhs, rhs, **params)


def conv(lhs: Operand, rhs: Operand, window_strides: Sequence[int], padding: str | Sequence[tuple[int, int]]) -> Tensor:
    """``jax.lax.conv``: ``conv_general_dilated`` in the NCHW / OIHW layout without dilation or groups."""
    return conv_general_dilated(lhs, rhs, window_strides, padding)
