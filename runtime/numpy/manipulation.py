"""NumPy-named array manipulation and products: ``moveaxis``, ``flip``, ``roll``, ``take``,
``dot``, ``tensordot``, ``einsum`` and the rest a jax.numpy / NumPy / PyTorch user reaches for.

Each function is a composition of castwise's public functions (``transpose``, ``reshape``,
``reverse``, ``slice``, ``concatenate``, ``broadcast_in_dim``, ``gather``, ``mul``,
``dot_general``, ``reduce_sum`` ...), so a tracked operand records ordinary ops: the result
replays, differentiates (JVP, VJP), batches under ``autodiff.vmap`` and lowers like any other
graph. Two-operand products promote through the plan of ``mul`` / ``dot_general`` (a recorded
``convert`` where an operand's dtype changes), so the result dtype is the policy's; an
``einsum`` of three or more operands converts them to their result type first, as jax.numpy
and NumPy type it (all operands at once, which is not a fold of the pairwise contractions).

Where the libraries disagree, the active policy's library decides (``tensor_api.library()``):
jax.numpy for ``jax``/``jax-strict`` (and the policies not modelled on a library), NumPy for
``numpy``, PyTorch for ``torch`` and ``kael``:

- out-of-bounds ``take`` / ``take_along_axis`` indices: jax.numpy fills (NaN, the most negative
  int, the largest unsigned int, True), NumPy and PyTorch raise ``IndexError`` (``mode=`` picks
  another rule under any policy);
- ``flip(x)`` without ``axis`` flips every axis (NumPy, jax.numpy); ``torch.flip`` needs ``dims``;
- ``dot`` and ``outer`` take 1-D operands only under PyTorch (``torch.dot``, ``torch.outer``).

Every error is checked before anything is recorded, and names the function, the operands'
dtypes and shapes, and the policy.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.core import dtypes as dt
from runtime.core import lax as F
from runtime.core.executor import asarray
from runtime.core.promotion import PromotionError, get_policy, result_type
from runtime.core.shapes import ArityError, GatherDimensionNumbers, OpTypeError, PrecisionError, ShapeError
from runtime.core.tensor import Tensor
from runtime.numpy import tensor_methods as tensor_api
from runtime.numpy.params import as_operand, concrete_scalar, named

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "broadcast_to",
    "einsum",
    "flip",
    "hstack",
    "inner",
    "moveaxis",
    "outer",
    "ravel",
    "roll",
    "swapaxes",
    "take",
    "take_along_axis",
    "tensordot",
    "vstack",
]


# -- errors and arguments --------------------------------------------------------------------------


def _error(cls: type[Exception], fn: str, operands: Sequence[Any], message: str) -> Exception:
    """``cls`` with a message naming ``fn``, each operand's dtype and shape, and the policy."""
    described = " ".join(tensor_api._describe(x) for x in operands) or "(none)"
    return cls(f"{fn}: {message} [operands {described}; policy {get_policy()!r}]")


def _is_int(value: Any) -> bool:
    return tensor_api._is_int(value)


def _axis(
    fn: str, x: Tensor, axis: Any, ndim: int | None = None, others: Sequence[Any] = (), param: str = "axis"
) -> int:
    """One axis of a rank-``ndim`` tensor (``x.ndim`` by default), negative counted from the end;
    errors name ``param``, the parameter it came from."""
    n = x.ndim if ndim is None else ndim
    if not _is_int(axis):
        raise _error(ShapeError, fn, (x, *others), f"{param} must be an int, got {axis!r}")
    a = operator.index(axis)
    if not -n <= a < n:
        raise _error(ShapeError, fn, (x, *others), f"{param} {a} is out of bounds for rank {n}")
    return a % n


def _axis_list(
    fn: str, x: Tensor, axes: Any, ndim: int | None = None, others: Sequence[Any] = (), param: str = "axes"
) -> list[int]:
    """An int or a sequence of ints, each an axis of ``x`` (repeats allowed: callers decide)."""
    if _is_int(axes):
        return [_axis(fn, x, axes, ndim, others, param)]
    try:
        items = list(axes)
    except TypeError:
        raise _error(
            ShapeError, fn, (x, *others), f"{param} must be an int or a sequence of ints, got {axes!r}"
        ) from None
    return [_axis(fn, x, a, ndim, others, param) for a in items]


def _unique(fn: str, x: Tensor, axes: list[int], what: str, others: Sequence[Any] = ()) -> list[int]:
    if len(set(axes)) != len(axes):
        raise _error(ShapeError, fn, (x, *others), f"{what} {axes} repeats an axis")
    return axes


# -- axes and shapes --------------------------------------------------------------------------------


@named("moveaxis")
def moveaxis(x: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """``jnp.moveaxis`` / ``np.moveaxis`` / ``torch.movedim``: the axes ``source`` moved to the
    positions ``destination``, the others in their order (one ``transpose``)."""
    t = as_operand("moveaxis", x)
    src = _unique("moveaxis", t, _axis_list("moveaxis", t, source, param="source"), "source")
    dst = _unique("moveaxis", t, _axis_list("moveaxis", t, destination, param="destination"), "destination")
    if len(src) != len(dst):
        raise _error(
            ShapeError, "moveaxis", (t,), f"source {source!r} and destination {destination!r} differ in length"
        )
    order = [a for a in range(t.ndim) if a not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return F.transpose(t, order)


@named("swapaxes")
def swapaxes(x: Any, axis1: int, axis2: int) -> Tensor:
    """``jnp.swapaxes`` / ``np.swapaxes`` / ``torch.swapaxes``: axes ``axis1`` and ``axis2``
    exchanged (one ``transpose``)."""
    t = as_operand("swapaxes", x)
    a, b = _axis("swapaxes", t, axis1, param="axis1"), _axis("swapaxes", t, axis2, param="axis2")
    order = list(range(t.ndim))
    order[a], order[b] = b, a
    return F.transpose(t, order)


@named("flip")
def flip(x: Any, axis: int | Sequence[int] | None = None) -> Tensor:
    """``jnp.flip`` / ``np.flip`` / ``torch.flip``: ``x`` reversed along ``axis`` (every axis
    when ``None``, as NumPy and jax.numpy; PyTorch's ``flip`` needs its ``dims``). One ``reverse``."""
    t = as_operand("flip", x)
    if axis is None:
        if tensor_api.library() == "torch":
            raise _error(ShapeError, "flip", (t,), "torch.flip needs the axes to flip (dims); pass axis=")
        axes = list(range(t.ndim))
    else:
        axes = _unique("flip", t, _axis_list("flip", t, axis, param="axis"), "axis")
    return F.reverse(t, sorted(axes))


@named("roll")
def roll(x: Any, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Tensor:
    """``jnp.roll`` / ``np.roll`` / ``torch.roll``: elements shifted ``shift`` places along
    ``axis``, those past the end coming back at the start; ``axis=None`` rolls the flattened
    tensor and restores the shape. ``shift`` and ``axis`` broadcast against each other; shifts
    of a repeated axis add up. Each rolled axis is two ``slice``s and a ``concatenate``."""
    t = as_operand("roll", x)
    shifts_in: list[Any] | None = [shift] if _is_int(shift) else _seq(shift)
    if shifts_in is None or not builtins.all(_is_int(s) for s in shifts_in):
        raise _error(ShapeError, "roll", (t,), f"shift must be an int or a sequence of ints, got {shift!r}")
    shifts = [operator.index(s) for s in shifts_in]
    if axis is None:  # the flattened tensor, every shift along its one axis (NumPy's broadcasting)
        return F.reshape(roll(ravel(t), builtins.sum(shifts), 0), t.shape)
    axes = _axis_list("roll", t, axis, param="axis")
    if (len(shifts) != len(axes) and 1 not in (len(shifts), len(axes))) or 0 in (len(shifts), len(axes)):
        if not shifts and not axes:
            return F._fresh_copy(t)
        raise _error(ShapeError, "roll", (t,), f"shift {shift!r} and axis {axis!r} do not broadcast together")
    n = builtins.max(len(shifts), len(axes))
    total = [0] * t.ndim
    for s, a in zip(shifts * (n // len(shifts)), axes * (n // len(axes)), strict=True):
        total[a] += s
    out = t
    for a, s in enumerate(total):
        size = t.shape[a]
        if size == 0 or s % size == 0:
            continue
        cut = size - s % size  # the tail [cut, size) comes first
        start, limit = [0] * t.ndim, list(t.shape)
        limit[a] = cut
        head = F.slice(out, start, limit)
        start[a], limit[a] = cut, size
        tail = F.slice(out, start, limit)
        out = F.concatenate([tail, head], a)
    return F._fresh_copy(t) if out is t else out  # nothing rolled: new memory, as np.roll and torch.roll


def _seq(value: Any) -> list[Any] | None:
    try:
        return list(value)
    except TypeError:
        return None


@named("broadcast_to")
def broadcast_to(x: Any, shape: int | Sequence[int]) -> Tensor:
    """``jnp.broadcast_to`` / ``np.broadcast_to`` / ``torch.broadcast_to``: ``x`` broadcast to
    ``shape`` by NumPy's rule (trailing axes aligned; a size-1 axis stretches). One
    ``broadcast_in_dim``."""
    t = as_operand("broadcast_to", x)
    target: list[Any] | None = [shape] if _is_int(shape) else _seq(shape)
    if target is None or not builtins.all(_is_int(n) and operator.index(n) >= 0 for n in target):
        raise _error(ShapeError, "broadcast_to", (t,), f"shape must be non-negative ints, got {shape!r}")
    out = tuple(operator.index(n) for n in target)
    lead = len(out) - t.ndim
    if lead < 0 or builtins.any(n not in (1, out[lead + i]) for i, n in enumerate(t.shape)):
        raise _error(ShapeError, "broadcast_to", (t,), f"cannot broadcast shape {t.shape} to {out}")
    return F.broadcast_in_dim(t, out, tuple(range(lead, len(out))))


def _atleast(fn: str, arys: tuple[Any, ...], rank: int) -> Any:
    if not arys:
        raise _error(ArityError, fn, (), "needs at least one array")
    out = []
    for x in arys:
        t = as_operand(fn, x)
        shape = _atleast_shape(t.shape, rank)
        out.append(t if shape == t.shape else F.reshape(t, shape))
    return out[0] if len(out) == 1 else out


def _atleast_shape(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    if len(shape) >= rank:
        return shape
    if rank == 3 and len(shape) == 2:
        return (*shape, 1)  # NumPy's atleast_3d: (M, N) -> (M, N, 1)
    if rank == 3 and len(shape) == 1:
        return (1, *shape, 1)  # (N,) -> (1, N, 1)
    return (1,) * (rank - len(shape)) + shape


@named("atleast_1d")
def atleast_1d(*arys: Any) -> Any:
    """``jnp.atleast_1d`` / ``np.atleast_1d`` / ``torch.atleast_1d``: 0-d becomes shape (1,); a
    list of results for several arguments (a ``reshape`` where the rank grows)."""
    return _atleast("atleast_1d", arys, 1)


@named("atleast_2d")
def atleast_2d(*arys: Any) -> Any:
    """``atleast_2d``: (N,) becomes (1, N), 0-d becomes (1, 1)."""
    return _atleast("atleast_2d", arys, 2)


@named("atleast_3d")
def atleast_3d(*arys: Any) -> Any:
    """``atleast_3d``: (M, N) becomes (M, N, 1), (N,) becomes (1, N, 1), 0-d (1, 1, 1)."""
    return _atleast("atleast_3d", arys, 3)


@named("ravel")
def ravel(x: Any) -> Tensor:
    """``jnp.ravel`` / ``np.ravel`` / ``torch.ravel``: the row-major elements as a vector (a ``reshape``)."""
    t = as_operand("ravel", x)
    return F.reshape(t, (t.size,))


def _stack_along(fn: str, xs: Any, rank: int) -> tuple[list[Tensor], int]:
    items = [xs[i] for i in range(xs.shape[0])] if isinstance(xs, Tensor) and xs.ndim else _seq(xs)
    if not items:
        raise _error(ArityError, fn, (), "needs a non-empty sequence of arrays")
    ts = [as_operand(fn, x) for x in items]
    shapes = [_atleast_shape(t.shape, rank) for t in ts]
    axis = 0 if rank == 2 or len(shapes[0]) == 1 else 1
    first = shapes[0]
    for shape in shapes[1:]:
        if len(shape) != len(first) or builtins.any(
            a != b for i, (a, b) in enumerate(zip(shape, first, strict=True)) if i != axis
        ):
            raise _error(ShapeError, fn, ts, "the arrays' shapes must agree except along the joined axis")
    _dry_run(fn, lambda ps: F.concatenate(ps, 0), ts, vectors=True)  # only the dtypes matter here
    return [t if s == t.shape else F.reshape(t, s) for t, s in zip(ts, shapes, strict=True)], axis


@named("vstack")
def vstack(xs: Sequence[Any]) -> Tensor:
    """``jnp.vstack`` / ``np.vstack`` / ``torch.vstack``: ``atleast_2d`` of each, joined along
    axis 0 (one ``concatenate``; mixed dtypes promote per the policy)."""
    grown, axis = _stack_along("vstack", xs, 2)
    return F.concatenate(grown, axis)


@named("hstack")
def hstack(xs: Sequence[Any]) -> Tensor:
    """``jnp.hstack`` / ``np.hstack`` / ``torch.hstack``: ``atleast_1d`` of each, joined along
    axis 1 (axis 0 for vectors)."""
    grown, axis = _stack_along("hstack", xs, 1)
    return F.concatenate(grown, axis)


# -- take --------------------------------------------------------------------------------------------


def _index_operand(fn: str, x: Tensor, indices: Any) -> np.ndarray | Tensor:
    """``indices`` as int64 NumPy data (constants) or an integer Tensor (an operand of the
    gather, kept as one when it is recorded); anything not integral raises ``IndexError``."""
    if isinstance(indices, Tensor):
        if indices.dtype.kind not in ("int", "uint"):
            raise _error(IndexError, fn, (x, indices), f"indices must be integers, got {indices.dtype.name}")
        return indices if indices.node is not None else indices._array.astype(np.int64)
    if isinstance(indices, (builtins.bool, np.bool_)):
        raise _error(IndexError, fn, (x,), f"indices must be integers, got {indices!r}")
    try:
        array = np.asarray(indices)
    except (TypeError, ValueError):
        raise _error(IndexError, fn, (x,), f"indices must be integers, got {indices!r}") from None
    if array.dtype.kind not in "iu" and not (array.size == 0 and array.dtype.kind == "f"):
        raise _error(IndexError, fn, (x,), f"indices must be integers, got {array.dtype} data {indices!r}")
    return array.astype(np.int64)


_MODES = ("fill", "clip", "wrap", "raise")


def _mode(fn: str, x: Tensor, mode: Any) -> str:
    """The out-of-bounds rule: the policy library's default (jax.numpy fills, NumPy and PyTorch
    raise), or the one asked for."""
    if mode is None:
        return "fill" if tensor_api.library() == "jax" else "raise"
    if not isinstance(mode, str) or mode not in _MODES:
        raise _error(ShapeError, fn, (x,), f"mode must be one of {', '.join(map(repr, _MODES))}, got {mode!r}")
    return str(mode)


def _check_positions(
    fn: str, x: Tensor, value: np.ndarray | Tensor, n: int, axis: int, mode: str, explicit: bool
) -> None:
    """``IndexError`` for positions ``mode`` refuses, before anything is recorded: out of
    ``[-n, n)`` under ``raise``, any position of an empty axis under ``clip`` and ``wrap``.
    Traced indices under ``raise`` are refused (``ConcretizationIndexError``): the check would
    see this trace's values only (``explicit``: ``mode='raise'`` was asked for, not the policy's
    default)."""
    if mode in ("clip", "wrap") and n == 0 and value.size:
        raise _error(IndexError, fn, (x,), f"cannot take from the empty axis {axis} in mode {mode!r}")
    if mode == "raise" and isinstance(value, Tensor) and value.size:
        rule = "mode='raise'" if explicit else tensor_api._bounds_rule()
        tensor_api.refuse_traced_bounds(
            fn, "indices", value, x, rule,
            "use mode='clip', 'fill' or 'wrap' (traced: each call's indices get that rule), or take with "
            "concrete indices (a NumPy array, or a Tensor computed outside the traced function)",
        )  # fmt: skip
    concrete = value._array if isinstance(value, Tensor) else value
    if mode == "raise" and concrete.size:
        bad = concrete[(concrete < -n) | (concrete >= n)]
        if bad.size:
            raise _error(
                IndexError, fn, (x,), f"index {int(bad.flat[0])} is out of bounds for axis {axis} with size {n}"
            )


def _positions(value: np.ndarray | Tensor, n: int, mode: str, clip_negative: bool) -> np.ndarray | Tensor:
    """Checked positions along an axis of size ``n``, for a gather (``clip`` mode for all but
    ``fill``): ``raise`` and ``fill`` count negative ones from the end (``fill`` leaves the
    rest to the gather's fill), ``wrap`` takes them modulo ``n``, ``clip`` clamps them into
    range (negative ones first counted from the end unless ``clip_negative``: ``np.take``'s
    clip sends -1 to 0). A recorded integer Tensor is transformed by recorded ops (``lt``,
    ``add``, ``select``; ``rem`` and its sign fix for ``wrap``)."""
    if not isinstance(value, Tensor):
        if mode == "wrap":
            return np.mod(value, n).astype(np.int64)
        if mode == "clip" and clip_negative:
            return value
        return np.where(value < 0, value + n, value).astype(np.int64)
    t = value if value.dtype is dt.int64 else F.convert(value, dt.int64)
    if mode == "wrap":
        return F.mod(t, asarray(np.asarray(n, np.int64), dt.int64))
    if mode == "clip" and clip_negative:
        return t
    zero = asarray(np.zeros((), np.int64), dt.int64)
    size = asarray(np.asarray(n, np.int64), dt.int64)
    return F.select(F.lt(t, zero), F.add(t, size), t)


def _fill_value(fn: str, fill_value: Any, x: Tensor) -> Any:
    """``fill_value`` as the gather's param takes it: concrete (a traced 0-d Tensor is refused, as
    ``jnp.take`` under ``jax.jit`` refuses one: a param is baked into the graph)."""
    if isinstance(fill_value, Tensor):
        return concrete_scalar(
            fn, "fill_value", fill_value, ("bool", "int", "uint", "float", "complex"),
            "it is a parameter of the gather, not an operand", (x, fill_value),
        )  # fmt: skip
    return fill_value


def _gather_mode(how: str) -> str:
    return "fill" if how == "fill" else "clip"


@named("take")
def take(x: Any, indices: Any, axis: int | None = None, *, mode: str | None = None, fill_value: Any = None) -> Tensor:
    """``jnp.take`` / ``np.take`` (``torch.index_select`` / ``torch.take``): the elements of
    ``x`` at ``indices`` along ``axis`` (of the flattened ``x`` when ``None``); the result's
    shape is ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``. One ``gather``.
    Negative indices count from the end; out-of-bounds ones follow ``mode``: by default they
    fill under jax.numpy (NaN, the most negative int, the largest unsigned int, True, or
    ``fill_value``) and raise ``IndexError`` under NumPy and PyTorch; ``"clip"`` clamps (-1 to
    0, as ``np.take``), ``"wrap"`` takes them modulo the axis size, ``"fill"`` and ``"raise"``
    pick those rules under any policy."""
    x_t = as_operand("take", x)
    idx = _index_operand("take", x_t, indices)
    ax = 0 if axis is None else _axis("take", x_t, axis)
    n = x_t.size if axis is None else x_t.shape[ax]
    how = _mode("take", x_t, mode)
    _check_positions("take", x_t, idx, n, ax, how, mode is not None)
    fill_value = _fill_value("take", fill_value, x_t)
    t = ravel(x_t) if axis is None else x_t
    pos = _positions(idx, n, how, clip_negative=True)
    k = pos.ndim
    if isinstance(pos, Tensor):
        start: Tensor | np.ndarray = F.reshape(pos, (*pos.shape, 1))
    else:
        start = pos.reshape(*pos.shape, 1)
    dn = GatherDimensionNumbers(
        offset_dims=tuple(d if d < ax else d - 1 + k for d in range(t.ndim) if d != ax),
        collapsed_slice_dims=(ax,),
        start_index_map=(ax,),
    )
    sizes = tuple(1 if d == ax else size for d, size in enumerate(t.shape))
    return F.gather(t, start, dn, sizes, mode=_gather_mode(how), fill_value=fill_value)


@named("take_along_axis")
def take_along_axis(
    x: Any, indices: Any, axis: int | None, *, mode: str | None = None, fill_value: Any = None
) -> Tensor:
    """``jnp.take_along_axis`` / ``np.take_along_axis`` / ``torch.take_along_dim``: ``out[..., i,
    ...] = x[..., indices[..., i, ...], ...]`` along ``axis`` (``None``: the flattened ``x``, 1-D
    indices). ``indices`` has ``x``'s rank; the other axes broadcast. One ``gather`` whose index
    vector pairs positions along the other axes with ``indices``. Out-of-bounds indices follow
    ``mode`` as in ``take``, except that ``"clip"`` counts negative ones from the end first
    (jax.numpy's ``take_along_axis``)."""
    x_t = as_operand("take_along_axis", x)
    idx = _index_operand("take_along_axis", x_t, indices)
    shape = (x_t.size,) if axis is None else x_t.shape
    ax = 0 if axis is None else _axis("take_along_axis", x_t, axis)
    operands = (x_t, indices) if isinstance(indices, Tensor) else (x_t,)
    if idx.ndim != len(shape):
        raise _error(
            ShapeError,
            "take_along_axis",
            operands,
            f"indices of rank {idx.ndim} must have the rank of x ({len(shape)})",
        )
    out_shape = []
    for d, (a, b) in enumerate(zip(shape, idx.shape, strict=True)):
        if d == ax:
            out_shape.append(b)
        elif a == b or 1 in (a, b):
            out_shape.append(a if b == 1 else b)
        else:
            raise _error(
                ShapeError, "take_along_axis", operands,
                f"indices of shape {tuple(idx.shape)} do not broadcast with x of shape {shape} (axis {ax})",
            )  # fmt: skip
    out = tuple(out_shape)
    how = _mode("take_along_axis", x_t, mode)
    _check_positions("take_along_axis", x_t, idx, shape[ax], ax, how, mode is not None)
    fill_value = _fill_value("take_along_axis", fill_value, x_t)
    t = ravel(x_t) if axis is None else x_t
    wide = tuple(n if d == ax else out[d] for d, n in enumerate(shape))
    if wide != t.shape:
        t = F.broadcast_in_dim(t, wide, tuple(range(t.ndim)))
    pos = _positions(idx, shape[ax], how, clip_negative=False)
    if tuple(pos.shape) != out:
        if isinstance(pos, Tensor):
            pos = F.broadcast_in_dim(pos, out, tuple(range(len(out))))
        else:
            pos = np.broadcast_to(pos, out)
    grids = [np.broadcast_to(np.arange(n, dtype=np.int64).reshape([-1 if i == d else 1 for i in range(len(out))]), out)
             for d, n in enumerate(out)]  # fmt: skip
    if isinstance(pos, Tensor):
        columns = [
            F.reshape(pos, (*out, 1)) if d == ax else asarray(np.ascontiguousarray(g[..., None]), dt.int64)
            for d, g in enumerate(grids)
        ]
        start: Tensor | np.ndarray = columns[0] if len(columns) == 1 else F.concatenate(columns, len(out))
    else:
        start = np.stack([pos if d == ax else g for d, g in enumerate(grids)], axis=-1).astype(np.int64)
    dims = tuple(range(t.ndim))
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=dims, start_index_map=dims)
    return F.gather(t, start, dn, (1,) * t.ndim, mode=_gather_mode(how), fill_value=fill_value)


# -- products ----------------------------------------------------------------------------------------


def _pair(fn: str, a: Any, b: Any) -> tuple[Tensor, Tensor]:
    x = as_operand(fn, a, "a")
    return x, as_operand(fn, b, "b", x)


def _contract(
    fn: str,
    a: Tensor,
    b: Tensor,
    axes_a: Sequence[int],
    axes_b: Sequence[int],
    preferred: Any = None,
    precision: Any = None,
) -> Tensor:
    """``dot_general`` contracting ``axes_a`` of ``a`` with ``axes_b`` of ``b`` (sizes checked
    first, so the error names ``fn``): the result is ``a``'s free axes, then ``b``'s."""
    for i, j in zip(axes_a, axes_b, strict=True):
        if a.shape[i] != b.shape[j]:
            raise _error(
                ShapeError, fn, (a, b), f"axis {i} of a (size {a.shape[i]}) and axis {j} of b "
                f"(size {b.shape[j]}) are contracted and must have equal sizes",
            )  # fmt: skip
    try:
        dims = ((tuple(axes_a), tuple(axes_b)), ((), ()))
        return F.dot_general(a, b, dims, precision, preferred_element_type=preferred)
    except (OpTypeError, PromotionError, PrecisionError) as err:  # a refused preferred type: name the function too
        raise _restated(err, fn, (a, b)) from None


def _check_precision(fn: str, operands: Sequence[Tensor], precision: Any) -> None:
    """``dot_general``'s refusal of ``precision`` (``PrecisionError``), before anything is recorded
    (a contraction of two empty constants, which records nothing), naming ``fn``; jax.numpy checks
    it up front too, even where no product is computed (a 0-d operand)."""
    if precision is None:
        return
    probe = Tensor(np.zeros(0, np.float32), dt.float32)
    try:
        F.dot_general(probe, probe, (((0,), (0,)), ((), ())), precision)
    except PrecisionError as err:
        raise _restated(err, fn, operands) from None


def _check_preferred(fn: str, operands: Sequence[Tensor], preferred: Any) -> None:
    """``dot_general``'s refusals of ``preferred`` for the operands' common dtype, before anything
    is recorded (a contraction of two empty constants, which records nothing)."""
    if preferred is None:
        return
    try:
        common = result_type(*operands)
        probe = Tensor(np.zeros(0, common.storage), common)
        F.dot_general(probe, probe, (((0,), (0,)), ((), ())), preferred_element_type=preferred)
    except (OpTypeError, PromotionError) as err:
        raise _restated(err, fn, operands) from None


def _restated(err: Exception, fn: str, operands: Sequence[Any]) -> Exception:
    """``err`` (same type) from an op ``fn`` called, restated as ``fn``'s: its text without the
    op's operand list, then ``fn``'s operands and the policy."""
    return _error(type(err), fn, operands, str(err).rsplit(" [", 1)[0])


def _dry_run(fn: str, op: Any, operands: Sequence[Tensor], vectors: bool = False) -> None:
    """Run ``op`` (``mul``, ``concatenate`` ...) on empty untracked stand-ins of ``operands`` (same
    dtypes, weak flags, 0-d kept 0-d): its plan refuses what it would refuse on them (a policy
    that does not promote, say), before the reshapes that precede it are recorded. ``vectors``:
    every stand-in is a vector (for a contraction)."""
    probes = []
    for t in operands:
        probe = Tensor(np.zeros(() if t.ndim == 0 and not vectors else (0,), t.dtype.storage), t.dtype)
        probe.weak = t.weak
        probes.append(probe)
    try:
        op(probes)
    except (OpTypeError, PromotionError) as err:
        raise _restated(err, fn, operands) from None


def _scale(fn: str, a: Tensor, b: Tensor, preferred: Any) -> Tensor:
    """The product with a 0-d operand: a ``mul`` (of the operands converted to ``preferred``)."""
    if preferred is not None:
        _check_preferred(fn, (a, b), preferred)
    else:
        _dry_run(fn, lambda ps: F.mul(*ps), (a, b))
    if preferred is not None:
        a, b = F.convert(a, preferred), F.convert(b, preferred)
    return F.mul(a, b)


@named("outer")
def outer(a: Any, b: Any) -> Tensor:
    """``jnp.outer`` / ``np.outer`` / ``torch.outer``: ``ravel(a)[:, None] * ravel(b)[None, :]``
    (a ``mul``, promoted per the policy). PyTorch takes vectors only."""
    x, y = _pair("outer", a, b)
    if tensor_api.library() == "torch" and (x.ndim != 1 or y.ndim != 1):
        raise _error(ShapeError, "outer", (x, y), "torch.outer takes 1-D operands")
    _dry_run("outer", lambda ps: F.mul(*ps), (x, y))
    return F.mul(F.reshape(x, (x.size, 1)), F.reshape(y, (1, y.size)))


@named("inner")
def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
    """``jnp.inner`` / ``np.inner`` / ``torch.inner``: the sum over the last axes of ``a`` and
    ``b``; the result's shape is ``a.shape[:-1] + b.shape[:-1]``. A 0-d operand multiplies.
    ``preferred_element_type``: the result's dtype, the products accumulated in it (as
    ``dot_general``'s; ``precision`` too)."""
    x, y = _pair("inner", a, b)
    _check_precision("inner", (x, y), precision)
    if x.ndim == 0 or y.ndim == 0:
        return _scale("inner", x, y, preferred_element_type)
    return _contract("inner", x, y, (x.ndim - 1,), (y.ndim - 1,), preferred_element_type, precision)


@named("tensordot")
def tensordot(
    a: Any, b: Any, axes: int | Sequence[Any] = 2, *, precision: Any = None, preferred_element_type: Any = None
) -> Tensor:
    """``jnp.tensordot`` / ``np.tensordot`` / ``torch.tensordot``: ``axes=N`` contracts the last
    ``N`` axes of ``a`` with the first ``N`` of ``b``; ``axes=(axes_a, axes_b)`` names them
    (ints or sequences, negative from the end). The result is ``a``'s free axes, then ``b``'s
    (one ``dot_general``; ``precision`` and ``preferred_element_type`` as its)."""
    x, y = _pair("tensordot", a, b)
    _check_precision("tensordot", (x, y), precision)
    if _is_int(axes):
        n = operator.index(axes)  # type: ignore[arg-type]
        if not 0 <= n <= builtins.min(x.ndim, y.ndim):
            raise _error(ShapeError, "tensordot", (x, y), f"axes={n} must be between 0 and both operands' ranks")
        pa, pb = list(range(x.ndim - n, x.ndim)), list(range(n))
    else:
        pair = _seq(axes)
        if pair is None or len(pair) != 2:
            raise _error(ShapeError, "tensordot", (x, y), f"axes must be an int or a pair of axis lists, got {axes!r}")
        pa = _axis_list("tensordot", x, pair[0], others=(y,), param="axes")
        pb = _axis_list("tensordot", y, pair[1], others=(x,), param="axes")
        if len(pa) != len(pb):
            raise _error(ShapeError, "tensordot", (x, y), f"axes {axes!r} name different numbers of axes")
        _unique("tensordot", x, pa, "axes of a", (y,))
        _unique("tensordot", y, pb, "axes of b", (x,))
    return _contract("tensordot", x, y, pa, pb, preferred_element_type, precision)


# -- einsum ------------------------------------------------------------------------------------------


def _parse_term(fn: str, term: str, operands: Sequence[Any]) -> tuple[list[str], bool]:
    """A term's letters (``"."`` marks where ``...`` stood) and whether it had one."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise _error(ShapeError, fn, operands, f"subscript {term!r}: '...' may appear once, and '.' only in it")
    letters = []
    for part_i, part in enumerate(term.split("...")):
        if part_i:
            letters.append(".")
        for c in part:
            if not ("a" <= c <= "z" or "A" <= c <= "Z"):
                raise _error(ShapeError, fn, operands, f"subscript {term!r}: {c!r} is not a letter")
            letters.append(c)
    return letters, "..." in term


def _einsum_labels(subscripts: str, ts: Sequence[Tensor]) -> tuple[list[list[Any]], list[Any], dict[Any, int]]:
    """Each operand's axis labels (letters; ``...`` axes become ints -E..-1, right-aligned),
    the output's labels and every label's (broadcast) size."""
    fn = "einsum"
    if not isinstance(subscripts, str):
        raise _error(ShapeError, fn, ts, f"subscripts must be a string, got {subscripts!r}")
    spec = subscripts.replace(" ", "")
    if spec.count("->") > 1:
        raise _error(ShapeError, fn, ts, f"subscripts {subscripts!r} have more than one '->'")
    lhs, arrow, rhs = spec.partition("->")
    if "-" in lhs or ">" in lhs or "-" in rhs or ">" in rhs:
        raise _error(ShapeError, fn, ts, f"subscripts {subscripts!r}: '-' and '>' only as '->'")
    terms = lhs.split(",")
    if len(terms) != len(ts):
        raise _error(ArityError, fn, ts, f"subscripts {subscripts!r} name {len(terms)} operands, got {len(ts)}")
    parsed = [_parse_term(fn, term, ts) for term in terms]
    ellipsis_rank = 0
    labels: list[list[Any]] = []
    for (letters, has_dots), t in zip(parsed, ts, strict=True):
        named = len(letters) - has_dots
        if (has_dots and named > t.ndim) or (not has_dots and named != t.ndim):
            raise _error(
                ShapeError, fn, ts, f"subscript {''.join(letters).replace('.', '...')!r} does not fit an operand of "
                f"rank {t.ndim}",
            )  # fmt: skip
        ellipsis_rank = builtins.max(ellipsis_rank, t.ndim - named)
    for (letters, has_dots), t in zip(parsed, ts, strict=True):
        k = t.ndim - (len(letters) - has_dots)
        row: list[Any] = []
        for c in letters:
            row.extend(range(-k, 0) if c == "." else [c])
        labels.append(row)
    sizes: dict[Any, int] = {}
    for row, t in zip(labels, ts, strict=True):
        own: dict[Any, int] = {}
        for label, n in zip(row, t.shape, strict=True):
            if own.setdefault(label, n) != n:  # a diagonal needs equal sizes (no broadcasting)
                raise _error(
                    ShapeError, fn, ts, f"index {label!r} repeated in one operand has sizes {own[label]} and {n}"
                )
            seen = sizes.get(label, 1)
            if n != seen and 1 not in (n, seen):
                name = "'...'" if isinstance(label, int) else repr(label)
                raise _error(ShapeError, fn, ts, f"index {name} has sizes {seen} and {n}, which do not broadcast")
            sizes[label] = builtins.max(n, seen) if label in sizes else n
    if arrow:
        out_letters, out_dots = _parse_term(fn, rhs, ts)
        if ellipsis_rank and not out_dots:
            raise _error(ShapeError, fn, ts, f"output {rhs!r} needs '...' for the operands' broadcast axes")
        output: list[Any] = []
        for c in out_letters:
            if c == ".":
                output.extend(range(-ellipsis_rank, 0))
                continue
            if c in output:
                raise _error(ShapeError, fn, ts, f"output {rhs!r} repeats index {c!r}")
            if c not in sizes:
                raise _error(ShapeError, fn, ts, f"output index {c!r} appears in no operand")
            output.append(c)
    else:  # implicit: the broadcast axes, then the letters used once, in character order
        counts: dict[str, int] = {}
        for row in labels:
            for label in row:
                if isinstance(label, str):
                    counts[label] = counts.get(label, 0) + 1
        output = [*range(-ellipsis_rank, 0), *sorted(c for c, m in counts.items() if m == 1)]
    return labels, output, sizes


def _sum_axes(t: Tensor, axes: Sequence[int]) -> Tensor:
    """A sum over ``axes`` in the operand's dtype, as einsum sums (bool: logical or)."""
    if not axes:
        return t
    if t.dtype is dt.bool_:
        return F.reduce_or(t, tuple(axes))
    return F.reduce_sum(t, tuple(axes))


def _diagonal(t: Tensor, labels: list[Any]) -> tuple[Tensor, list[Any]]:
    """``t`` with each index repeated in ``labels`` reduced to its diagonal (a ``transpose``,
    a ``reshape`` and a strided ``slice`` per repeat), and the remaining labels."""
    while True:
        repeated = next((lab for lab in labels if labels.count(lab) > 1), None)
        if repeated is None:
            return t, labels
        i = labels.index(repeated)
        j = labels.index(repeated, i + 1)
        rest = [d for d in range(t.ndim) if d not in (i, j)]
        n = t.shape[i]
        moved = F.transpose(t, (*rest, i, j))
        flat = F.reshape(moved, (*(t.shape[d] for d in rest), n * n))
        start = [0] * flat.ndim
        strides = [1] * flat.ndim
        strides[-1] = n + 1
        t = F.slice(flat, start, flat.shape, strides) if n else F.reshape(flat, (*flat.shape[:-1], 0))
        labels = [labels[d] for d in rest] + [repeated]


@named("einsum")
def einsum(subscripts: str, *operands: Any, precision: Any = None, preferred_element_type: Any = None) -> Tensor:
    """``jnp.einsum`` / ``np.einsum`` / ``torch.einsum``: Einstein summation over letter indices.

    Explicit (``"ij,jk->ik"``) and implicit (``"ij,jk"``: the indices used once, in character
    order) outputs, ``...`` for broadcast leading axes, size-1 axes broadcast, and an index
    repeated in one operand (``"ii->i"`` a diagonal, ``"ii"`` a trace). Built from ``transpose``,
    ``reshape``, ``slice`` (diagonals), ``reduce_sum`` (indices used by one operand only),
    ``broadcast_in_dim`` and one ``dot_general`` per further operand, contracted left to right;
    the operands promote through ``dot_general``'s plan. The result is always new memory (a
    write into an operand never shows in it). ``preferred_element_type``: the
    result's dtype, the products and sums accumulated in it (each ``dot_general`` takes it;
    an operand summed on its own is converted to it first). ``precision``: each ``dot_general``'s.
    """
    if not operands:
        raise _error(ArityError, "einsum", (), "needs at least one operand")
    ts = [as_operand("einsum", x, f"operand {i}") for i, x in enumerate(operands)]
    labels, output, sizes = _einsum_labels(subscripts, ts)
    _check_preferred("einsum", ts, preferred_element_type)
    _check_precision("einsum", ts, precision)
    if len(ts) > 2 and len({t.dtype for t in ts}) > 1 and not builtins.any(t.weak for t in ts):
        # jax.numpy and NumPy: the result type of all the operands at once, which is not a
        # pairwise fold of the contractions (JAX: u64, i64, f32 -> f32; (u64, i64) -> f64)
        try:
            joined = result_type(*ts)
        except PromotionError as err:
            raise _restated(err, "einsum", ts) from None
        ts = [t if t.dtype is joined else F.convert(t, joined) for t in ts]
    elif len(ts) == 2:
        _dry_run("einsum", lambda ps: F.dot_general(ps[0], ps[1], (((0,), (0,)), ((), ()))), ts, vectors=True)
    # indices still needed after operand k: those of the output and of the later operands
    later: list[set[Any]] = [set(output) for _ in ts]
    for k in range(len(ts) - 2, -1, -1):
        later[k] = later[k + 1] | set(labels[k + 1])
    prepared: list[tuple[Tensor, list[Any]]] = []
    summed_early = False  # an index of one operand only, summed before any product (``"ii"``)
    for k, (t, row) in enumerate(zip(ts, labels, strict=True)):
        t, row = _diagonal(t, list(row))
        others = set(output).union(*(set(r) for i, r in enumerate(labels) if i != k))
        gone = [d for d, lab in enumerate(row) if lab not in others]
        if gone and preferred_element_type is not None:
            t = F.convert(t, preferred_element_type)
        t = _sum_axes(t, gone)
        summed_early = summed_early or bool(gone)
        row = [lab for lab in row if lab in others]
        wide = tuple(sizes[lab] for lab in row)
        if wide != t.shape:
            t = F.broadcast_in_dim(t, wide, tuple(range(t.ndim)))
        prepared.append((t, row))
    acc, acc_row = prepared[0]
    for k in range(1, len(prepared)):
        t, row = prepared[k]
        common = [lab for lab in acc_row if lab in row]
        batch = [lab for lab in common if lab in later[k]]
        contract = [lab for lab in common if lab not in later[k]]
        dims = (
            (tuple(acc_row.index(lab) for lab in contract), tuple(row.index(lab) for lab in contract)),
            (tuple(acc_row.index(lab) for lab in batch), tuple(row.index(lab) for lab in batch)),
        )
        acc = F.dot_general(acc, t, dims, precision, preferred_element_type=preferred_element_type)
        acc_row = batch + [lab for lab in acc_row if lab not in common] + [lab for lab in row if lab not in common]
    computed = len(prepared) > 1  # a dot_general, a sum or a convert writes new memory
    if len(prepared) == 1:
        summed = [d for d, lab in enumerate(acc_row) if lab not in output]
        acc = _sum_axes(acc, summed)
        acc_row = [lab for lab in acc_row if lab in output]
        computed = bool(summed) or summed_early
    if preferred_element_type is not None and acc.dtype is not dt.dtype(preferred_element_type):
        acc = F.convert(acc, preferred_element_type)
        computed = True
    perm = [acc_row.index(lab) for lab in output]
    out = acc if perm == list(range(acc.ndim)) else F.transpose(acc, perm)
    # one operand and nothing computed: the diagonal slices, reshapes and transposes may be views
    # of it (or it itself, for "ij->ij"), depending on its layout; the result is new memory whatever
    # the layout, as every op outside the view family's is (diagonal's rule; NumPy returns a view)
    return out if computed else F._fresh_copy(out)
