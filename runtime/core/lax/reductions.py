"""The op functions of reductions and cumulative reductions.

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from runtime.core import dtypes as dt
from runtime.core import ops
from runtime.core.executor import as_tensor
from runtime.core.lax._common import Operand, _dtype_param, _index, _ints, _is_index, _named, _one, _wrap_axes
from runtime.core.lax.binary import div
from runtime.core.lax.conversion import convert
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor

__all__ = [
    "argmax",
    "argmin",
    "cumlogsumexp",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "reduce_and",
    "reduce_max",
    "reduce_min",
    "reduce_or",
    "reduce_precision",
    "reduce_prod",
    "reduce_sum",
    "reduce_xor",
    "sum_",
]


def reduce_sum(x: Operand, axes: Sequence[int] | int) -> Tensor:
    """Sum over ``axes`` (negative axes count from the end)."""
    return _one(ops.reduce_sum, x, axes=_wrap_axes(_ints(axes, "axes"), x))


#: jnp.sum and jnp.mean accumulate these in float32 (jax.numpy's ``_upcast_f16``); lax.reduce_sum does not.
_SUM_IN_FLOAT32 = frozenset({dt.float16, dt.bfloat16})


@_named("sum_")
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


def _axes(axis: Any, ndim: int) -> Any:
    """Axes of a reduction method, negative ones wrapped; anything else (a float, an axis
    out of range) is passed on unchanged, for the op's shape rule to report with the op,
    the operands and the policy named."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int) and not isinstance(axis, bool):
        axes: Any = (axis,)
    else:
        try:
            axes = tuple(axis)
        except TypeError:
            return axis
    if not all(type(a) is int and -ndim <= a < ndim for a in axes):
        return axes
    return tuple(a % ndim for a in axes)


def _reduced_axes(axis: Sequence[int] | int | None, ndim: int) -> tuple[int, ...]:
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


def _axis_param(axis: Any, ndim: int) -> Any:
    """An int axis, a negative one counted from the end; anything else unchanged, for the shape rule."""
    if _is_index(axis):
        a = operator.index(axis)
        return a % ndim if -ndim <= a < 0 else a
    return axis


@_named("argmax")
def argmax(x: Operand, axis: int, index_dtype: Any = dt.int64) -> Tensor:
    """``lax.argmax``: the index of the largest value along ``axis``, in ``index_dtype``.

    Ties give the first index (``-0.0`` equals ``+0.0``) and a NaN beats every
    number: the result is the first NaN's index, as XLA computes it. Not
    differentiable (the result is an integer).
    """
    t = as_tensor(x)
    return _one(ops.argmax, t, axes=(_axis_param(axis, t.ndim),), index_dtype=_dtype_param(index_dtype))


@_named("argmin")
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


@_named("cumsum")
def cumsum(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cumsum``: running sums along ``axis`` (from the end when ``reverse``)."""
    return _scan(ops.cumsum, x, axis, reverse)


@_named("cumprod")
def cumprod(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cumprod``: running products along ``axis``."""
    return _scan(ops.cumprod, x, axis, reverse)


@_named("cummax")
def cummax(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cummax``: running maxima along ``axis`` (NaN-propagating)."""
    return _scan(ops.cummax, x, axis, reverse)


@_named("cummin")
def cummin(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cummin``: running minima along ``axis`` (NaN-propagating)."""
    return _scan(ops.cummin, x, axis, reverse)


@_named("cumlogsumexp")
def cumlogsumexp(x: Operand, axis: int = 0, reverse: bool = False) -> Tensor:
    """``lax.cumlogsumexp``: running ``log(sum(exp(x)))`` along ``axis``, combined stably."""
    return _scan(ops.cumlogsumexp, x, axis, reverse)
