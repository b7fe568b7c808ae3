"""The standard's statistical and utility functions under its signatures: reductions
(``max``/``min`` reduce, as NumPy's), ``cumulative_sum``/``cumulative_prod`` with
``include_initial``, ``diff``, ``all``/``any``.

They are the Tensor methods' reductions (``runtime.numpy.tensor_methods``), so a reduction's
dtype where the standard leaves it to the library (``sum`` of int8) is the active policy's, and
every one is a composition of recorded ops.
"""

from __future__ import annotations

from typing import Any

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.shapes import ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import tensor_methods as TM
from runtime.numpy.array_api.common import operand, standard_error
from runtime.numpy.common import is_int, normalize_axes
from runtime.numpy.params import dtype_param, named

__all__ = [
    "all",
    "any",
    "cumulative_prod",
    "cumulative_sum",
    "diff",
    "max",
    "mean",
    "min",
    "prod",
    "std",
    "sum",
    "var",
]


@named("max")
def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The largest element over ``axis`` (a reduction; NaN propagates)."""
    return TM.extreme(operand("max", x), axis, keepdims, True)


@named("min")
def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The smallest element over ``axis`` (a reduction; NaN propagates)."""
    return TM.extreme(operand("min", x), axis, keepdims, False)


@named("sum")
def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The sum over ``axis``; without ``dtype``, the policy's accumulation dtype."""
    return TM.sum_(operand("sum", x), axis, keepdims, dtype)


@named("prod")
def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    """The product over ``axis``; without ``dtype``, the policy's accumulation dtype."""
    return TM.prod(operand("prod", x), axis, keepdims, dtype)


@named("mean")
def mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The arithmetic mean over ``axis``."""
    return TM.mean(operand("mean", x), axis, keepdims)


@named("var")
def var(x: Any, /, *, axis: Any = None, correction: Any = 0.0, keepdims: bool = False) -> Tensor:
    """The variance over ``axis`` with ``correction`` degrees of freedom removed (0 by default,
    under every policy: the standard's default)."""
    return TM.var(operand("var", x), axis, None, keepdims, correction=correction)


@named("std")
def std(x: Any, /, *, axis: Any = None, correction: Any = 0.0, keepdims: bool = False) -> Tensor:
    """The standard deviation over ``axis`` with ``correction`` degrees of freedom removed."""
    return TM.std(operand("std", x), axis, None, keepdims, correction=correction)


@named("all")
def all(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element over ``axis`` is nonzero."""
    return TM.any_all(operand("all", x), axis, keepdims, False)


@named("any")
def any(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether some element over ``axis`` is nonzero."""
    return TM.any_all(operand("any", x), axis, keepdims, True)


def _cumulative(fn: str, x: Any, axis: Any, dtype: Any, include_initial: bool, product: bool) -> Tensor:
    t = operand(fn, x)
    if axis is None:
        if t.ndim > 1:
            raise standard_error(ShapeError, fn, "axis is required for an array of rank 2 or more", t)
        axis = 0
    if t.ndim == 0:
        raise standard_error(ShapeError, fn, "takes an array of rank 1 or more", t)
    (a,) = normalize_axes(t, axis, fn)
    target = dtype_param(fn, dtype, (t,)) if dtype is not None else TM.sum_dtype(t.dtype)
    if t.dtype is not target:
        t = F.convert(t, target)
    out = (F.cumprod if product else F.cumsum)(t, a)
    if not include_initial:
        return out
    shape = (*t.shape[:a], 1, *t.shape[a + 1 :])
    first = F.full(shape, 1 if product else 0, target)
    return F.concatenate([first, out], a)


@named("cumulative_sum")
def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Tensor:
    """The running sum along ``axis`` (required above rank 1), in ``sum``'s dtype; with
    ``include_initial``, a leading 0."""
    return _cumulative("cumulative_sum", x, axis, dtype, include_initial, False)


@named("cumulative_prod")
def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Tensor:
    """The running product along ``axis`` (required above rank 1), in ``prod``'s dtype; with
    ``include_initial``, a leading 1."""
    return _cumulative("cumulative_prod", x, axis, dtype, include_initial, True)


@named("diff")
def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Tensor:
    """The ``n``-th forward difference along ``axis`` (``x[1:] - x[:-1]``, ``n`` times), after
    joining ``prepend`` and ``append``; of a bool array, ``!=``."""
    t = operand("diff", x)
    if t.ndim == 0:
        raise standard_error(ShapeError, "diff", "takes an array of rank 1 or more", t)
    if not is_int(n) or n < 0:
        raise standard_error(ShapeError, "diff", f"n must be a non-negative int, got {n!r}", t)
    (a,) = normalize_axes(t, axis, "diff")
    parts = [
        operand("diff", p, name) for p, name in ((prepend, "prepend"), (t, "x"), (append, "append")) if p is not None
    ]
    if len(parts) > 1:
        t = F.concatenate(parts, a)
    for _ in range(n):
        length = t.shape[a]
        if length == 0:
            break
        later = F.slice(t, [0 if i != a else 1 for i in range(t.ndim)], t.shape)
        earlier = F.slice(t, [0] * t.ndim, [s if i != a else length - 1 for i, s in enumerate(t.shape)])
        t = F.ne(later, earlier) if t.dtype is dt.bool_ else F.sub(later, earlier)
    return t
