"""The standard's searching, sorting and set functions, composed of op functions.

``argmax``/``argmin``, ``sort``/``argsort``, ``searchsorted``, ``where`` and ``count_nonzero``
have static output shapes and work under every transform. ``nonzero`` and the ``unique_*``
functions have data-dependent output shapes: castwise computes them eagerly from ops
(``sort``, comparisons, ``cumsum``, ``gather``), reading only the number of results, and under
``rt.trace``, ``autodiff.jit`` and ``autodiff.vmap`` they raise ``ConcretizationError`` (a
traced array has no concrete count), as jax.numpy does without a ``size=``.

The standard's set functions treat each NaN as distinct and ``-0.0`` equal to ``0.0``; the
inverse indices have ``x``'s shape. Index outputs are int64 (castwise's index dtype under
every policy, as ``argsort``'s).
"""

from __future__ import annotations

import builtins
from typing import Any, NamedTuple

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.shapes import OpValueError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import elementwise as E
from runtime.numpy import manipulation as M
from runtime.numpy import numerics as npx
from runtime.numpy.array_api.common import operand, standard_error
from runtime.numpy.common import normalize_axes
from runtime.numpy.params import named, refuse_traced

__all__ = [
    "UniqueAllResult",
    "UniqueCountsResult",
    "UniqueInverseResult",
    "argmax",
    "argmin",
    "argsort",
    "count_nonzero",
    "isin",
    "nonzero",
    "searchsorted",
    "sort",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "where",
]

INDEX = dt.int64


@named("argmax")
def argmax(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The index of the first largest element (over the flattened array without ``axis``)."""
    t = operand("argmax", x)
    _nonempty("argmax", t, axis)
    return t.argmax(axis, keepdims=keepdims)


@named("argmin")
def argmin(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The index of the first smallest element (over the flattened array without ``axis``)."""
    t = operand("argmin", x)
    _nonempty("argmin", t, axis)
    return t.argmin(axis, keepdims=keepdims)


def _nonempty(fn: str, t: Tensor, axis: Any) -> None:
    axes = normalize_axes(t, axis, fn)
    if builtins.any(t.shape[a] == 0 for a in axes) or (axis is None and t.size == 0):
        raise standard_error(ShapeError, fn, "an empty axis has no extreme element", t)


@named("sort")
def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """``x`` sorted along ``axis`` (NaNs last ascending, first descending)."""
    t = operand("sort", x)
    (a,) = normalize_axes(t, axis, "sort")
    out = F.sort(t, a, is_stable=stable)
    return F.reverse(out, (a,)) if descending else out


@named("argsort")
def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """The indices that sort ``x`` along ``axis`` (a stable descending sort keeps equal elements
    in their order)."""
    t = operand("argsort", x)
    (a,) = normalize_axes(t, axis, "argsort")
    return F.argsort(t, a, descending=descending, stable=stable)


@named("count_nonzero")
def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The number of nonzero elements over ``axis`` (int64)."""
    return E.count_nonzero(x, axis, keepdims)


@named("where")
def where(condition: Any, x1: Any, x2: Any, /) -> Tensor:
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast, promoted by the policy)."""
    return E.where(condition, x1, x2)  # type: ignore[no-any-return]


@named("searchsorted")
def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Tensor:
    """The positions at which ``x2``'s elements would be inserted into the sorted 1-D ``x1`` to
    keep it sorted: the count of ``x1``'s elements before each (a comparison and a
    ``reduce_sum``, so it records and works under every transform)."""
    a, v = operand("searchsorted", x1, "x1"), operand("searchsorted", x2, "x2")
    if a.ndim != 1:
        raise standard_error(ShapeError, "searchsorted", "x1 must be 1-D", a, v)
    if side not in ("left", "right"):
        raise standard_error(OpValueError, "searchsorted", f"side must be 'left' or 'right', got {side!r}", a, v)
    if sorter is not None:
        a = _take(a, operand("searchsorted", sorter, "sorter"))
    return npx.count_before(a, v, side == "right", INDEX)


@named("isin")
def isin(x1: Any, x2: Any, /, *, invert: bool = False) -> Tensor:
    """Whether each element of ``x1`` equals some element of ``x2`` (``invert``: equals none); a
    comparison against every element and a ``reduce_or``, so it has ``x1``'s shape under every
    transform. NaN is in no array (it equals nothing). The standard adds it in 2025.12, with this
    signature."""
    found = npx.contains(operand("isin", x1, "x1"), operand("isin", x2, "x2"))
    return F.logical_not(found) if invert else found


def _take(a: Tensor, indices: Tensor) -> Tensor:
    return M.take(a, indices, 0)


def _count(fn: str, t: Tensor, flags: Tensor, why: str) -> int:
    """The number of True ``flags``: read from the values, so a traced ``t`` raises first."""
    refuse_traced(fn, "x", t, why, "call it eagerly, outside rt.trace, autodiff.jit and autodiff.vmap", (t,))
    count = F.reduce_sum(F.convert(flags, INDEX), tuple(range(flags.ndim))).item()
    return builtins.int(count)  # type: ignore[arg-type]  # an int64 sum: a Python int


def _positions(flags: Tensor, k: int) -> Tensor:
    """The positions (int64) of the ``k`` True entries of the 1-D ``flags``, in order: a stable
    sort puts them first."""
    order = F.argsort(F.logical_not(flags), 0, stable=True)
    return F.slice(order, (0,), (k,))


@named("nonzero")
def nonzero(x: Any, /) -> tuple[Tensor, ...]:
    """The indices of the nonzero elements, one int64 array per axis, in row-major order.
    Their number depends on the values: a traced ``x`` raises ``ConcretizationError``."""
    t = operand("nonzero", x)
    if t.ndim == 0:
        raise standard_error(ShapeError, "nonzero", "takes an array of rank 1 or more", t)
    flat = F.reshape(t, (t.size,))
    flags = flat if flat.dtype is dt.bool_ else F.ne(flat, F.zeros((), flat.dtype))
    k = _count("nonzero", t, flags, "the number of nonzero elements decides the output's length")
    where_ = _positions(flags, k)
    out = []
    stride = t.size
    for n in t.shape:
        stride //= n
        out.append(F.rem(F.floor_div(where_, F.full((), stride, INDEX)), F.full((), n, INDEX)))
    return tuple(out)


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


class _Runs(NamedTuple):
    values: Tensor  # the unique values, ascending (NaNs, each its own, last)
    first: Tensor  # the position in the sorted array where each run starts
    order: Tensor  # the stable sorting permutation of the flattened input
    run_of_sorted: Tensor  # for each sorted position, the index of its run
    n: int


def _runs(fn: str, x: Any) -> _Runs:
    t = operand(fn, x)
    n = t.size
    flat = F.reshape(t, (n,))
    order = F.argsort(flat, 0, stable=True)
    ordered = _take(flat, order) if n else flat
    if n == 0:
        empty = F.zeros((0,), INDEX)
        return _Runs(flat, empty, empty, empty, 0)
    # a run starts where the sorted value differs from the one before it (NaN != NaN: each
    # NaN starts its own run, as the standard asks)
    starts = F.concatenate(
        [F.full((1,), True, dt.bool_), F.ne(F.slice(ordered, (1,), (n,)), F.slice(ordered, (0,), (n - 1,)))], 0
    )
    k = _count(fn, t, starts, "the number of unique values decides the output's length")
    first = _positions(starts, k)
    values = _take(ordered, first)
    run_of_sorted = F.sub(F.cumsum(F.convert(starts, INDEX), 0), F.ones((), INDEX))
    return _Runs(values, first, order, run_of_sorted, n)


def _counts(r: _Runs) -> Tensor:
    if r.n == 0:
        return r.first
    ends = F.concatenate([F.slice(r.first, (1,), (r.first.shape[0],)), F.full((1,), r.n, INDEX)], 0)
    return F.sub(ends, r.first)


def _inverse(r: _Runs, shape: tuple[int, ...]) -> Tensor:
    if r.n == 0:
        return F.reshape(F.zeros((0,), INDEX), shape)
    unsort = F.argsort(r.order, 0, stable=True)  # the inverse permutation
    return F.reshape(_take(r.run_of_sorted, unsort), shape)


@named("unique_values")
def unique_values(x: Any, /) -> Tensor:
    """The unique elements of ``x``, ascending (eager only: the count depends on the values)."""
    return _runs("unique_values", x).values


@named("unique_counts")
def unique_counts(x: Any, /) -> UniqueCountsResult:
    """The unique elements and how often each occurs."""
    r = _runs("unique_counts", x)
    return UniqueCountsResult(r.values, _counts(r))


@named("unique_inverse")
def unique_inverse(x: Any, /) -> UniqueInverseResult:
    """The unique elements, and for each element of ``x`` the index of its value (``x``'s shape)."""
    t = operand("unique_inverse", x)
    r = _runs("unique_inverse", t)
    return UniqueInverseResult(r.values, _inverse(r, t.shape))


@named("unique_all")
def unique_all(x: Any, /) -> UniqueAllResult:
    """The unique elements, the index of each one's first occurrence in the flattened ``x``, the
    inverse indices (``x``'s shape) and the counts."""
    t = operand("unique_all", x)
    r = _runs("unique_all", t)
    indices = _take(r.order, r.first) if r.n else r.first
    return UniqueAllResult(r.values, indices, _inverse(r, t.shape), _counts(r))
