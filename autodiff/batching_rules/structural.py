"""Batching rules of the structural ops.

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from autodiff.batching_rules._common import (
    BATCH_RULES,
    BatchResult,
    Dims,
    Params,
    _front_all,
    _run,
    _shift,
    _up,
    move_batch_dim,
)
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor

# -- structural ops -------------------------------------------------------------------------------------


def batch_reshape(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Row-major reshape of each example: batch dimension first, then ``(size, *new_sizes)``."""
    (x,) = _front_all(args, dims)
    return _run(op, [x], {**params, "new_sizes": (x.shape[0], *params["new_sizes"])}), [0]


BATCH_RULES["reshape"] = batch_reshape


def batch_transpose(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """One transpose that also brings the batch dimension to the front."""
    (k,) = dims
    assert k is not None
    perm = (k, *_shift(params["permutation"], k))
    return _run(op, args, {**params, "permutation": perm}), [0]


BATCH_RULES["transpose"] = batch_transpose


def batch_broadcast_in_dim(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Batch dimension first on both sides (``broadcast_dimensions`` stay increasing)."""
    (x,) = _front_all(args, dims)
    shape = (x.shape[0], *params["shape"])
    bdims = (0, *_up(params["broadcast_dimensions"]))
    return _run(op, [x], {**params, "shape": shape, "broadcast_dimensions": bdims}), [0]


BATCH_RULES["broadcast_in_dim"] = batch_broadcast_in_dim


def batch_slice(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """The whole batch dimension is kept: start 0, limit size, stride 1 there."""
    (x,), (k,) = args, dims
    assert k is not None
    start = list(params["start_indices"])
    limit = list(params["limit_indices"])
    start.insert(k, 0)
    limit.insert(k, x.shape[k])
    new = {**params, "start_indices": tuple(start), "limit_indices": tuple(limit)}
    strides = params.get("strides")
    if strides is not None:
        new["strides"] = (*strides[:k], 1, *strides[k:])
    return _run(op, args, new), [k]


BATCH_RULES["slice"] = batch_slice


def batch_pad(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """No padding along the batch dimension."""
    (k,) = dims
    assert k is not None
    config = [tuple(c) for c in params["padding_config"]]
    config.insert(k, (0, 0, 0))
    return _run(op, args, {**params, "padding_config": tuple(config)}), [k]


BATCH_RULES["pad"] = batch_pad


def batch_reverse(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """The reversed dimensions skip the batch dimension."""
    (k,) = dims
    assert k is not None
    return _run(op, args, {**params, "dimensions": _shift(params["dimensions"], k)}), [k]


BATCH_RULES["reverse"] = batch_reverse


def batch_sort(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Every operand batched at the front (they must share one shape); the sorted dimension moves up by one."""
    outs = _run(op, _front_all(args, dims), {**params, "dimension": params["dimension"] + 1})
    return outs, [0] * len(outs)


BATCH_RULES["sort"] = batch_sort


def batch_top_k(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """top_k works on the last axis: the batch dimension stays where it is unless it is last (then it goes first)."""
    (x,), (k,) = args, dims
    assert k is not None
    if k == x.ndim - 1:
        x, k = move_batch_dim(x, k, 0), 0
    return _run(op, [x], params), [k, k]


BATCH_RULES["top_k"] = batch_top_k


def batch_split(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """The split axis skips the batch dimension, which every piece keeps in place."""
    (k,) = dims
    assert k is not None
    outs = _run(op, args, {**params, "axis": _shift((params["axis"],), k)[0]})
    return outs, [k] * len(outs)


BATCH_RULES["split"] = batch_split


def batch_nullary(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """``iota`` and ``full`` take no operand, so nothing about them is batched: they run as they are."""
    outs = _run(op, args, params)
    return outs, [None] * len(outs)


BATCH_RULES["iota"] = batch_nullary
BATCH_RULES["full"] = batch_nullary


def batch_optimization_barrier(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Each operand through the barrier with its batch dimension where it is (or none)."""
    return _run(op, args, params), list(dims)


BATCH_RULES["optimization_barrier"] = batch_optimization_barrier
