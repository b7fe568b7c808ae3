"""The op functions of structural ops (reshape, transpose, slicing, padding, sorting, splitting, creation).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import ops, shapes
from runtime.core.executor import apply, as_tensor, asarray, op_error
from runtime.core.lax._common import Operand, _dtype_param, _index, _ints, _Invalid, _is_index, _named, _one, _wrap_axes
from runtime.core.lax.binary import sub
from runtime.core.lax.contraction import concatenate, select
from runtime.core.ops import OpDef
from runtime.core.promotion import get_policy
from runtime.core.shapes import ArityError, OpTypeError, ShapeError
from runtime.core.tensor import Tensor

__all__ = [
    "argsort",
    "broadcast_in_dim",
    "broadcast_shapes",
    "expand_dims",
    "full",
    "iota",
    "ones",
    "optimization_barrier",
    "pad",
    "reshape",
    "reverse",
    "slice",
    "sort",
    "split",
    "squeeze",
    "stack",
    "tile",
    "top_k",
    "transpose",
    "unstack",
    "zeros",
]


@_named("stack")
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


def pad(x: Operand, padding_value: Any, padding_config: Sequence[Sequence[int]]) -> Tensor:
    """Pad with ``(low, high, interior)`` per axis, as ``jax.lax.pad`` (negative low/high crop).

    A Python (or NumPy) scalar ``padding_value`` is the op's param. A 0-d Tensor (or NumPy
    array) is an operand, as in ``jax.lax.pad``: differentiable (its cotangent is the sum of
    the output's cotangent over the padded positions), batchable and traced, recorded as
    ``select(pad(ones, False), pad(x, 0), broadcast(value))``. Its dtype must be ``x``'s, as
    ``jax.lax.pad`` requires of an array value (a weak one too)."""
    try:
        config: Any = tuple(tuple(_ints(c, "padding_config")) for c in padding_config)
    except TypeError:
        config = _Invalid(padding_config)  # not a sequence of triples: the shape rule refuses it
    if not isinstance(padding_value, Tensor | np.ndarray):
        return _one(ops.pad, x, padding_config=config, padding_value=padding_value)
    t, value = as_tensor(x), as_tensor(padding_value)
    if value.ndim != 0:
        raise op_error(ShapeError, ops.pad, (t, value), f"padding_value must be 0-d, got shape {list(value.shape)}")
    if value.dtype is not t.dtype:
        raise op_error(
            OpTypeError, ops.pad, (t, value),
            f"padding_value dtype {value.dtype.name} differs from the operand's {t.dtype.name} "
            "(jax.lax.pad takes one dtype; convert the value first)",
        )  # fmt: skip
    padded = _one(ops.pad, t, padding_config=config, padding_value=0)
    inside = _one(ops.pad, _full(t.shape, True, dt.bool_), padding_config=config, padding_value=False)
    fill = broadcast_in_dim(value, padded.shape, ())
    return select(inside, padded, fill)  # x where it was copied, the value at every padded position


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


@_named("zeros")
def zeros(shape: Sequence[int] | int, dtype: Any = None) -> Tensor:
    """``full(shape, 0, dtype)``; strongly typed, as ``jax.numpy.zeros``."""
    return _full(shape, 0.0 if dtype is None else 0, dtype)


@_named("ones")
def ones(shape: Sequence[int] | int, dtype: Any = None) -> Tensor:
    """``full(shape, 1, dtype)``; strongly typed, as ``jax.numpy.ones``."""
    return _full(shape, 1.0 if dtype is None else 1, dtype)


def _axis_of(op: OpDef, axis: Any, ndim: int, what: str = "axis") -> Any:
    """A possibly negative axis in ``[0, ndim)``; anything else unchanged, for the shape rule to refuse."""
    if not _is_index(axis):
        return axis
    axis = operator.index(axis)
    return axis + ndim if -ndim <= axis < 0 else axis


@_named("sort")
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


@_named("argsort")
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


@_named("split")
def split(x: Operand, sizes: Sequence[int], axis: int = 0) -> list[Tensor]:
    """Consecutive pieces of ``sizes`` along ``axis`` (``jax.lax.split`` meaning)."""
    t = as_tensor(x)
    params = {"sizes": _ints(sizes, "sizes"), "axis": _axis_of(ops.split, axis, t.ndim)}
    out = apply(ops.split, (t,), params)
    return list(out) if isinstance(out, tuple) else [out]


@_named("expand_dims")
def expand_dims(x: Operand, dimensions: Sequence[int] | int) -> Tensor:
    """``x`` with size-1 axes inserted at ``dimensions`` (positions in the result; negative
    counts from its end), as ``jax.lax.expand_dims`` (recorded as a ``reshape``)."""
    t = as_tensor(x)
    dims = _ints(dimensions, "dimensions")
    rank = t.ndim + (0 if isinstance(dims, _Invalid) else len(dims))
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


@_named("squeeze")
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


@_named("tile")
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


@_named("optimization_barrier")
def optimization_barrier(operand: Any) -> Any:
    """``lax.optimization_barrier``: ``operand`` (an array, or a tuple or list of arrays)
    unchanged, through one op that a recorded graph and its lowering keep, so XLA does not
    move computations across it. Its derivatives and batching pass through the barrier."""
    leaves = list(operand) if isinstance(operand, tuple | list) else [operand]
    if not leaves:
        return type(operand)()
    out = apply(ops.optimization_barrier, tuple(as_tensor(v) for v in leaves), {})
    outs = list(out) if isinstance(out, tuple) else [out]
    return type(operand)(outs) if isinstance(operand, tuple | list) else outs[0]


def broadcast_shapes(*shapes_: Sequence[int]) -> tuple[int, ...]:
    """``lax.broadcast_shapes``: the shape the ``shapes_`` broadcast to (NumPy's rule: ranks
    aligned at the end, size-1 axes stretched); ``ShapeError`` naming them when they do not."""
    if not shapes_:
        raise ShapeError(f"broadcast_shapes: needs at least one shape [policy {get_policy()!r}]")
    given: list[tuple[int, ...]] = []
    for s in shapes_:
        dims = _ints(s, "shape")
        if isinstance(dims, _Invalid) or builtins.any(d < 0 for d in dims):
            raise ShapeError(
                f"broadcast_shapes: {s!r} is not a shape (a sequence of non-negative ints) [policy {get_policy()!r}]"
            )
        given.append(tuple(dims))
    rank = builtins.max(len(s) for s in given)
    out: list[int] = []
    for i in range(rank):
        sizes = {s[i - rank + len(s)] for s in given if i - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise ShapeError(
                f"broadcast_shapes: incompatible shapes for broadcasting: {[list(s) for s in given]} "
                f"[policy {get_policy()!r}]"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


@_named("unstack")
def unstack(x: Operand, axis: int = 0) -> tuple[Tensor, ...]:
    """``lax.unstack``: the slices of ``x`` along ``axis``, each without that axis (a ``split``
    into size-1 pieces and a ``reshape`` of each); the inverse of ``stack``."""
    t = as_tensor(x)
    if not _is_index(axis) or not -t.ndim <= operator.index(axis) < t.ndim:
        raise op_error(ShapeError, ops.split, (t,), f"unstack: axis {axis!r} is out of range for rank {t.ndim}")
    k = operator.index(axis) % t.ndim
    rest = (*t.shape[:k], *t.shape[k + 1 :])
    if t.shape[k] == 0:
        return ()
    return tuple(reshape(piece, rest) for piece in split(t, (1,) * t.shape[k], k))
