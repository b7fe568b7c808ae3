"""Shape rules of the indexing ops (``runtime.core.ops`` families ``scatter``, ``gather``,
``dynamic_slice``, ``dynamic_update_slice``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from runtime.core.ops import OpDef
from runtime.core.shapes._common import (
    _ALL,
    _INTEGER,
    _NUM,
    SHAPE_RULES,
    ArityError,
    Aval,
    Shape,
    ShapeError,
    _accept,
    _check_scalar_param,
    _fail,
    _ints,
    _same_dtype,
    _shape_param,
    describe,
    param,
)

# -- dimension numbers and modes -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GatherDimensionNumbers:
    """Same fields and meaning as ``jax.lax.GatherDimensionNumbers`` (index vector dim last)."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ScatterDimensionNumbers:
    """Same fields and meaning as ``jax.lax.ScatterDimensionNumbers`` (index vector dim last)."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


Mode = Literal["clip", "fill_or_drop", "promise_in_bounds"]

_MODE_NAMES: Final[dict[str, Mode]] = {
    "clip": "clip",
    "fill": "fill_or_drop",
    "drop": "fill_or_drop",
    "fill_or_drop": "fill_or_drop",
    "promise_in_bounds": "promise_in_bounds",
}

#: ``jax.lax.gather`` treats ``mode=None`` as PROMISE_IN_BOUNDS (XLA's native
#: clamping gather); ``jax.lax.scatter*`` treats it as FILL_OR_DROP.
GATHER_DEFAULT_MODE: Final[Mode] = "promise_in_bounds"
SCATTER_DEFAULT_MODE: Final[Mode] = "fill_or_drop"


def parse_mode(mode: Any, default: Mode) -> Mode:
    """Normalise a gather/scatter mode.

    Accepts ``None`` (the default), ``"clip"``, ``"fill"``, ``"drop"``,
    ``"fill_or_drop"``, ``"promise_in_bounds"``, or an enum member with one of
    those names (``jax.lax.GatherScatterMode.CLIP`` works without importing JAX
    here). Anything else, including JAX's ``ONE_HOT``, raises ``ShapeError``.
    """
    if mode is None:
        return default
    key = mode if isinstance(mode, str) else getattr(mode, "name", None)
    found = _MODE_NAMES.get(key.lower()) if isinstance(key, str) else None
    if found is None:
        raise ShapeError(f"unsupported gather/scatter mode {mode!r}; use clip, fill/drop or promise_in_bounds")
    return found


def _dnum_field(obj: Any, field: str, default: tuple[int, ...] | None) -> tuple[int, ...]:
    value = getattr(obj, field, default)
    if value is None:
        raise ShapeError(f"dimension numbers {obj!r} have no field {field!r}")
    return _ints(value, field)


def gather_dimension_numbers(obj: Any) -> GatherDimensionNumbers:
    """Our ``GatherDimensionNumbers`` from ours, JAX's, or any object with those fields."""
    if isinstance(obj, GatherDimensionNumbers):
        return obj
    return GatherDimensionNumbers(
        _dnum_field(obj, "offset_dims", None),
        _dnum_field(obj, "collapsed_slice_dims", None),
        _dnum_field(obj, "start_index_map", None),
        _dnum_field(obj, "operand_batching_dims", ()),
        _dnum_field(obj, "start_indices_batching_dims", ()),
    )


def scatter_dimension_numbers(obj: Any) -> ScatterDimensionNumbers:
    """Our ``ScatterDimensionNumbers`` from ours, JAX's, or any object with those fields."""
    if isinstance(obj, ScatterDimensionNumbers):
        return obj
    return ScatterDimensionNumbers(
        _dnum_field(obj, "update_window_dims", None),
        _dnum_field(obj, "inserted_window_dims", None),
        _dnum_field(obj, "scatter_dims_to_operand_dims", None),
        _dnum_field(obj, "operand_batching_dims", ()),
        _dnum_field(obj, "scatter_indices_batching_dims", ()),
    )


# -- indexing -------------------------------------------------------------------------------


def _check_dims(
    op: OpDef, avals: Sequence[Aval], dims: tuple[int, ...], rank: int, what: str, *, sorted_: bool = False
) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise _fail(ShapeError, op, avals, f"{what} {dims} out of range for rank {rank}")
    if len(set(dims)) != len(dims):
        raise _fail(ShapeError, op, avals, f"{what} {dims} repeat a dimension")
    if sorted_ and list(dims) != sorted(dims):
        raise _fail(ShapeError, op, avals, f"{what} {dims} must be sorted")


def _check_indices(op: OpDef, avals: Sequence[Aval], i: int) -> Shape:
    _accept(op, avals, i, _INTEGER)
    shape = avals[i][1]
    if not shape:
        raise _fail(ShapeError, op, avals, "indices must have rank >= 1 (the last dimension is the index vector)")
    return shape


def gather_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.gather (index vector dimension last, as in JAX)."""
    dtype, operand = avals[0]
    indices = _check_indices(op, avals, 1)
    try:
        dn = gather_dimension_numbers(params["dimension_numbers"])
        parse_mode(param(op, params, "mode"), GATHER_DEFAULT_MODE)
        sizes = _ints(params["slice_sizes"], "slice_sizes")
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err)) from None
    rank = len(operand)
    if len(sizes) != rank:
        raise _fail(ShapeError, op, avals, f"slice_sizes {sizes} must have one entry per operand dimension")
    for d, (s, n) in enumerate(zip(sizes, operand, strict=True)):
        if not 0 <= s <= n:
            raise _fail(ShapeError, op, avals, f"slice_sizes[{d}] = {s} outside [0, {n}]")
    batch = indices[:-1]
    _check_dims(op, avals, dn.collapsed_slice_dims, rank, "collapsed_slice_dims", sorted_=True)
    _check_dims(op, avals, dn.operand_batching_dims, rank, "operand_batching_dims", sorted_=True)
    _check_dims(op, avals, dn.start_index_map, rank, "start_index_map")
    _check_dims(op, avals, dn.start_indices_batching_dims, len(batch), "start_indices_batching_dims")
    if set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims):
        raise _fail(ShapeError, op, avals, "collapsed_slice_dims and operand_batching_dims overlap")
    if set(dn.start_index_map) & set(dn.operand_batching_dims):
        raise _fail(ShapeError, op, avals, "start_index_map and operand_batching_dims overlap")
    if len(dn.operand_batching_dims) != len(dn.start_indices_batching_dims):
        raise _fail(ShapeError, op, avals, "operand_batching_dims and start_indices_batching_dims differ in length")
    if indices[-1] != len(dn.start_index_map):
        raise _fail(
            ShapeError,
            op,
            avals,
            f"index vector size {indices[-1]} != len(start_index_map) {len(dn.start_index_map)}",
        )
    for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
        if sizes[d] > 1:
            raise _fail(ShapeError, op, avals, f"slice_sizes[{d}] must be 0 or 1 for a collapsed/batching dim")
    for od, bd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True):
        if operand[od] != batch[bd]:
            raise _fail(ShapeError, op, avals, f"operand batching dim {od} and indices batching dim {bd} differ")
    kept = tuple(
        sizes[d] for d in range(rank) if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    )
    out_rank = len(batch) + len(dn.offset_dims)
    _check_dims(op, avals, dn.offset_dims, out_rank, "offset_dims", sorted_=True)
    if len(dn.offset_dims) != len(kept):
        raise _fail(ShapeError, op, avals, f"offset_dims {dn.offset_dims} must have {len(kept)} entries")
    fill = param(op, params, "fill_value")
    if fill is not None:
        _check_scalar_param(op, avals, fill, dtype, "fill_value")
    out: list[int] = []
    batch_iter, kept_iter = iter(batch), iter(kept)
    for i in range(out_rank):
        out.append(next(kept_iter) if i in dn.offset_dims else next(batch_iter))
    return ((dtype, tuple(out)),)


SHAPE_RULES["gather"] = gather_rule


def scatter_window(operand: Shape, updates: Shape, dn: ScatterDimensionNumbers) -> tuple[int, ...]:
    """Update window size along each operand dimension (1 for inserted and batching dims)."""
    window: list[int] = []
    pos = 0
    for d in range(len(operand)):
        if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
            window.append(1)
        else:
            window.append(updates[dn.update_window_dims[pos]])
            pos += 1
    return tuple(window)


def _scatter(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _same_dtype(op, avals, (0, 2))
    _accept(op, avals, 0, kinds)
    operand, updates = avals[0][1], avals[2][1]
    indices = _check_indices(op, avals, 1)
    try:
        dn = scatter_dimension_numbers(params["dimension_numbers"])
        parse_mode(param(op, params, "mode"), SCATTER_DEFAULT_MODE)
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err)) from None
    rank = len(operand)
    batch = indices[:-1]
    _check_dims(op, avals, dn.update_window_dims, len(updates), "update_window_dims", sorted_=True)
    _check_dims(op, avals, dn.inserted_window_dims, rank, "inserted_window_dims", sorted_=True)
    _check_dims(op, avals, dn.operand_batching_dims, rank, "operand_batching_dims", sorted_=True)
    _check_dims(op, avals, dn.scatter_dims_to_operand_dims, rank, "scatter_dims_to_operand_dims")
    _check_dims(op, avals, dn.scatter_indices_batching_dims, len(batch), "scatter_indices_batching_dims")
    if set(dn.inserted_window_dims) & set(dn.operand_batching_dims):
        raise _fail(ShapeError, op, avals, "inserted_window_dims and operand_batching_dims overlap")
    if set(dn.scatter_dims_to_operand_dims) & set(dn.operand_batching_dims):
        raise _fail(ShapeError, op, avals, "scatter_dims_to_operand_dims and operand_batching_dims overlap")
    if len(dn.operand_batching_dims) != len(dn.scatter_indices_batching_dims):
        raise _fail(ShapeError, op, avals, "operand_batching_dims and scatter_indices_batching_dims differ in length")
    if indices[-1] != len(dn.scatter_dims_to_operand_dims):
        raise _fail(
            ShapeError,
            op,
            avals,
            f"index vector size {indices[-1]} != len(scatter_dims_to_operand_dims) "
            f"{len(dn.scatter_dims_to_operand_dims)}",
        )
    n_window = rank - len(dn.inserted_window_dims) - len(dn.operand_batching_dims)
    if len(dn.update_window_dims) != n_window:
        raise _fail(ShapeError, op, avals, f"update_window_dims {dn.update_window_dims} must have {n_window} entries")
    if len(updates) != len(batch) + n_window:
        raise _fail(ShapeError, op, avals, f"updates must have rank {len(batch) + n_window}")
    scatter_dims = tuple(updates[i] for i in range(len(updates)) if i not in dn.update_window_dims)
    if scatter_dims != batch:
        raise _fail(ShapeError, op, avals, f"updates scatter dims {scatter_dims} != indices batch dims {batch}")
    window = scatter_window(operand, updates, dn)
    for d, (w, n) in enumerate(zip(window, operand, strict=True)):
        # (inserted and batching dims hold no window: an empty one is fine, as in lax.scatter)
        if w > n and d not in dn.inserted_window_dims and d not in dn.operand_batching_dims:
            raise _fail(ShapeError, op, avals, f"update window size {w} exceeds operand dim {d} (size {n})")
    for od, bd in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims, strict=True):
        if operand[od] != batch[bd]:
            raise _fail(ShapeError, op, avals, f"operand batching dim {od} and indices batching dim {bd} differ")
    return ((dtype, operand),)


def scatter_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.scatter (set): every dtype; result shaped like operand."""
    return _scatter(op, avals, params, _ALL)


SHAPE_RULES["scatter"] = scatter_rule


def scatter_add_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.scatter_add: numbers (add rejects bool)."""
    return _scatter(op, avals, params, _NUM)


SHAPE_RULES["scatter_add"] = scatter_add_rule


def scatter_mul_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.scatter_mul: numbers (mul rejects bool)."""
    return _scatter(op, avals, params, _NUM)


SHAPE_RULES["scatter_mul"] = scatter_mul_rule


def scatter_min_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.scatter_min: every dtype (lax.min takes bool and complex too)."""
    return _scatter(op, avals, params, _ALL)


SHAPE_RULES["scatter_min"] = scatter_min_rule


def scatter_max_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.scatter_max: every dtype (lax.max takes bool and complex too)."""
    return _scatter(op, avals, params, _ALL)


SHAPE_RULES["scatter_max"] = scatter_max_rule


def _start_indices(op: OpDef, avals: Sequence[Aval], first: int, rank: int) -> None:
    if len(avals) - first != rank:
        raise ArityError(
            f"{op.name}: expected {rank} start indices (one per operand dimension), "
            f"got {len(avals) - first}: {describe(op, avals)}"
        )
    for i in range(first, len(avals)):
        _accept(op, avals, i, _INTEGER)
        if avals[i][1] != ():
            raise _fail(ShapeError, op, avals, "start indices must be 0-d")


def dynamic_slice_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.dynamic_slice(operand, *start_indices, slice_sizes): output shape is slice_sizes."""
    dtype, shape = avals[0]
    _start_indices(op, avals, 1, len(shape))
    sizes = _shape_param(op, avals, params["slice_sizes"], "slice_sizes")
    if len(sizes) != len(shape) or any(s > n for s, n in zip(sizes, shape, strict=True)):
        raise _fail(ShapeError, op, avals, f"slice_sizes {sizes} do not fit the operand")
    return ((dtype, sizes),)


SHAPE_RULES["dynamic_slice"] = dynamic_slice_rule


def dynamic_update_slice_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.dynamic_update_slice(operand, update, *start_indices): result shaped like operand."""
    dtype = _same_dtype(op, avals, (0, 1))
    shape, update = avals[0][1], avals[1][1]
    if len(update) != len(shape) or any(u > n for u, n in zip(update, shape, strict=True)):
        raise _fail(ShapeError, op, avals, "update does not fit in operand")
    _start_indices(op, avals, 2, len(shape))
    return ((dtype, shape),)


SHAPE_RULES["dynamic_update_slice"] = dynamic_update_slice_rule
