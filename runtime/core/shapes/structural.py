"""Shape rules of the structural ops (``runtime.core.ops`` families ``structural``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from runtime.core import dtypes as dt
from runtime.core.ops import OpDef
from runtime.core.shapes._common import (
    _ORDERED,
    SHAPE_RULES,
    Aval,
    OpTypeError,
    ShapeError,
    _accept,
    _axes,
    _axis,
    _check_scalar_param,
    _dtype_param,
    _fail,
    _int,
    _ints,
    _shape_param,
    param,
)


def reshape_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reshape: same number of elements; no -1 inference."""
    dtype, shape = avals[0]
    new = _shape_param(op, avals, params["new_sizes"], "new_sizes")
    if math.prod(new) != math.prod(shape):
        raise _fail(ShapeError, op, avals, f"cannot reshape to {list(new)}")
    return ((dtype, new),)


SHAPE_RULES["reshape"] = reshape_rule


def transpose_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.transpose: permutation of all dimensions."""
    dtype, shape = avals[0]
    perm = _ints(params["permutation"], "permutation")
    if sorted(perm) != list(range(len(shape))):
        raise _fail(ShapeError, op, avals, f"permutation {perm} is not a permutation of range({len(shape)})")
    return ((dtype, tuple(shape[p] for p in perm)),)


SHAPE_RULES["transpose"] = transpose_rule


def broadcast_in_dim_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.broadcast_in_dim: operand dim i goes to output dim broadcast_dimensions[i] (size 1 or equal)."""
    dtype, shape = avals[0]
    out = _shape_param(op, avals, params["shape"], "shape")
    bdims = _ints(params["broadcast_dimensions"], "broadcast_dimensions")
    if len(bdims) != len(shape):
        raise _fail(ShapeError, op, avals, f"broadcast_dimensions {bdims} must have one entry per operand dim")
    if any(not 0 <= d < len(out) for d in bdims) or any(a >= b for a, b in itertools.pairwise(bdims)):
        raise _fail(ShapeError, op, avals, f"broadcast_dimensions {bdims} must be strictly increasing and < {len(out)}")
    for i, d in enumerate(bdims):
        if shape[i] not in (1, out[d]):
            raise _fail(ShapeError, op, avals, f"operand dim {i} cannot broadcast to size {out[d]}")
    return ((dtype, out),)


SHAPE_RULES["broadcast_in_dim"] = broadcast_in_dim_rule


def slice_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.slice: 0 <= start <= limit <= size, strides >= 1."""
    dtype, shape = avals[0]
    start = _ints(params["start_indices"], "start_indices")
    limit = _ints(params["limit_indices"], "limit_indices")
    raw_strides = param(op, params, "strides")
    strides = (1,) * len(shape) if raw_strides is None else _ints(raw_strides, "strides")
    if not len(start) == len(limit) == len(strides) == len(shape):
        raise _fail(ShapeError, op, avals, "start_indices, limit_indices and strides need one entry per dim")
    out: list[int] = []
    for d, (s, e, st, n) in enumerate(zip(start, limit, strides, shape, strict=True)):
        if not 0 <= s <= e <= n or st < 1:
            raise _fail(ShapeError, op, avals, f"bad slice {s}:{e}:{st} for dimension {d} of size {n}")
        out.append(-(-(e - s) // st))
    return ((dtype, tuple(out)),)


SHAPE_RULES["slice"] = slice_rule


def pad_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.pad: (lo, hi, interior) per dim, lo/hi may be negative, interior >= 0."""
    dtype, shape = avals[0]
    config = params["padding_config"]
    try:
        triples = [_ints(c, "padding_config") for c in config]
    except TypeError:
        raise _fail(ShapeError, op, avals, f"bad padding_config {config!r}") from None
    if len(triples) != len(shape) or any(len(t) != 3 for t in triples):
        raise _fail(ShapeError, op, avals, "padding_config needs one (lo, hi, interior) per dim")
    _check_scalar_param(op, avals, param(op, params, "padding_value"), dtype, "padding_value", must_fit=True)
    out: list[int] = []
    for d, ((lo, hi, interior), n) in enumerate(zip(triples, shape, strict=True)):
        size = lo + hi + n + max(n - 1, 0) * interior
        if interior < 0 or size < 0:
            raise _fail(ShapeError, op, avals, f"padding {(lo, hi, interior)} invalid for dimension {d}")
        out.append(size)
    return ((dtype, tuple(out)),)


SHAPE_RULES["pad"] = pad_rule


def reverse_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.rev: distinct dimensions in range."""
    dtype, shape = avals[0]
    _axes(op, avals, params["dimensions"], len(shape), "dimension")
    return ((dtype, shape),)


SHAPE_RULES["reverse"] = reverse_rule


def iota_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.broadcasted_iota(dtype, shape, dimension): numbers (lax rejects bool)."""
    dtype = _dtype_param(op, avals, params["dtype"], "dtype")
    shape = _shape_param(op, avals, params["shape"], "shape")
    if dtype.kind == "bool":
        raise _fail(OpTypeError, op, avals, "dtype bool not accepted (accepts int, uint, float, complex)")
    _axis(op, avals, params["dimension"], len(shape), "dimension")
    return ((dtype, shape),)


SHAPE_RULES["iota"] = iota_rule


def full_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.full(shape, fill_value, dtype): the fill converts like convert_element_type."""
    dtype = _dtype_param(op, avals, params["dtype"], "dtype")
    shape = _shape_param(op, avals, params["shape"], "shape")
    _check_scalar_param(op, avals, params["fill_value"], dtype, "fill_value")
    return ((dtype, shape),)


SHAPE_RULES["full"] = full_rule


# -- sorting, splitting -------------------------------------------------------------------------


def _flag(op: OpDef, avals: Sequence[Aval], value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(ShapeError, op, avals, f"{what} must be True or False, got {value!r}")
    return value


def sort_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.sort: operands of one shape (each keeps its dtype) sorted along ``dimension`` by the
    first ``num_keys``; one output per operand, shaped and typed like it."""
    shape = avals[0][1]
    if any(a[1] != shape for a in avals[1:]):
        raise _fail(ShapeError, op, avals, "operands must have equal shapes")
    if not shape:
        raise _fail(ShapeError, op, avals, "operands must have rank >= 1")
    try:
        _axis(op, avals, params["dimension"], len(shape), "dimension")
        keys = _int(param(op, params, "num_keys"), "num_keys")
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err).removeprefix(f"{op.name}: ")) from None
    if not 1 <= keys <= len(avals):
        raise _fail(ShapeError, op, avals, f"num_keys {keys} outside [1, {len(avals)}] (the number of operands)")
    _flag(op, avals, param(op, params, "is_stable"), "is_stable")
    return tuple((d, shape) for d, _ in avals)


SHAPE_RULES["sort"] = sort_rule


def top_k_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.top_k along the last axis: (the k largest values, their int32 indices); real dtypes only."""
    dtype, shape = avals[0]
    _accept(op, avals, 0, _ORDERED)
    if not shape:
        raise _fail(ShapeError, op, avals, "operand must have rank >= 1")
    try:
        k = _int(params["k"], "k")
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err)) from None
    if not 0 <= k <= shape[-1]:
        raise _fail(ShapeError, op, avals, f"k {k} outside [0, {shape[-1]}] (the size of the last axis)")
    if shape[-1] > 2**31:
        raise _fail(ShapeError, op, avals, "the last axis is too long for int32 indices")
    out = (*shape[:-1], k)
    return ((dtype, out), (dt.int32, out))


SHAPE_RULES["top_k"] = top_k_rule


def split_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.split: pieces of ``sizes`` (non-negative, summing to the axis' size) along ``axis``."""
    dtype, shape = avals[0]
    try:
        axis = _axis(op, avals, params["axis"], len(shape), "axis")
        sizes = _ints(params["sizes"], "sizes")
    except ShapeError as err:
        raise _fail(ShapeError, op, avals, str(err).removeprefix(f"{op.name}: ")) from None
    if any(n < 0 for n in sizes) or sum(sizes) != shape[axis]:
        raise _fail(ShapeError, op, avals, f"sizes {sizes} must be non-negative and sum to {shape[axis]} (axis {axis})")
    return tuple((dtype, (*shape[:axis], n, *shape[axis + 1 :])) for n in sizes)


SHAPE_RULES["split"] = split_rule


def optimization_barrier_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.optimization_barrier: any operands, each output the aval of its operand."""
    return tuple((d, shape) for d, shape in avals)


SHAPE_RULES["optimization_barrier"] = optimization_barrier_rule
