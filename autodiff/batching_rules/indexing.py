"""Batching rules of the indexing ops.

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from autodiff.batching_rules._common import (
    BATCH_RULES,
    BatchResult,
    Dims,
    Params,
    _front_all,
    _run,
    _up,
    at_front,
    batch_size,
    broadcast_batch,
    move_batch_dim,
)
from runtime.core import ops
from runtime.core.ops import OpDef
from runtime.core.shapes import (
    GatherDimensionNumbers,
    ScatterDimensionNumbers,
    gather_dimension_numbers,
    scatter_dimension_numbers,
)
from runtime.core.tensor import Tensor

# -- indexing --------------------------------------------------------------------------------------------


def batch_gather(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Indices batched: their batch dimension is the first batch dimension of the output
    (``offset_dims`` move up by one). Operand batched too: it is paired with the indices'
    through ``operand_batching_dims`` / ``start_indices_batching_dims`` (unbatched indices
    are broadcast first, which costs an index array, not an operand copy)."""
    operand, indices = args
    d_op, d_idx = dims
    dn = gather_dimension_numbers(params["dimension_numbers"])
    size = batch_size(args, dims)
    indices = at_front(indices, d_idx, size)
    if d_op is None:
        new_dn = GatherDimensionNumbers(
            offset_dims=_up(dn.offset_dims),
            collapsed_slice_dims=dn.collapsed_slice_dims,
            start_index_map=dn.start_index_map,
            operand_batching_dims=dn.operand_batching_dims,
            start_indices_batching_dims=_up(dn.start_indices_batching_dims),
        )
        return _run(op, [operand, indices], {**params, "dimension_numbers": new_dn}), [0]
    operand = move_batch_dim(operand, d_op, 0)
    new_dn = GatherDimensionNumbers(
        offset_dims=_up(dn.offset_dims),
        collapsed_slice_dims=_up(dn.collapsed_slice_dims),
        start_index_map=_up(dn.start_index_map),
        operand_batching_dims=(0, *_up(dn.operand_batching_dims)),
        start_indices_batching_dims=(0, *_up(dn.start_indices_batching_dims)),
    )
    # (one example per batch index: a slice of size 1 along the batch dimension, 0 when the batch is
    # empty, as JAX's rule sizes it, since a size-1 slice does not fit in an empty dimension)
    sizes = (min(size, 1), *params["slice_sizes"])
    return _run(op, [operand, indices], {**params, "dimension_numbers": new_dn, "slice_sizes": sizes}), [0]


BATCH_RULES["gather"] = batch_gather


def batch_scatter(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Every operand batched at the front (the result is a batched operand in any case); the
    batch dimension pairs operand and indices through the batching dimension numbers and is
    the first scatter dimension of the updates."""
    operand, indices, updates = _front_all(args, dims)
    dn = scatter_dimension_numbers(params["dimension_numbers"])
    new_dn = ScatterDimensionNumbers(
        update_window_dims=_up(dn.update_window_dims),
        inserted_window_dims=_up(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=_up(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=(0, *_up(dn.operand_batching_dims)),
        scatter_indices_batching_dims=(0, *_up(dn.scatter_indices_batching_dims)),
    )
    return _run(op, [operand, indices, updates], {**params, "dimension_numbers": new_dn}), [0]


BATCH_RULES["scatter"] = batch_scatter
BATCH_RULES["scatter_add"] = batch_scatter
BATCH_RULES["scatter_mul"] = batch_scatter
BATCH_RULES["scatter_min"] = batch_scatter
BATCH_RULES["scatter_max"] = batch_scatter


def _zero_index(indices: Sequence[Tensor]) -> Tensor:
    """A 0-d start index of the other indices' dtype (int32 when there are none)."""
    from runtime.core import dtypes as dt

    dtype = indices[0].dtype if indices else dt.int32
    return Tensor(np.zeros((), dtype.storage), dtype)


def _index_vectors(indices: Sequence[Tensor], dims: Dims, size: int) -> Tensor:
    """Scalar start indices (batched ``[size]`` or unbatched 0-d) as one ``[size, n]`` index array."""
    columns = []
    for x, d in zip(indices, dims, strict=True):
        col = broadcast_batch(x, size) if d is None else x
        columns.append(_run(ops.reshape, [col], {"new_sizes": (size, 1)})[0])
    if len({c.dtype for c in columns}) > 1:  # start indices may differ in dtype; an index array may not
        from runtime.core import dtypes as dt

        columns = [c if c.dtype is dt.int64 else _run(ops.convert, [c], {"new_dtype": dt.int64})[0] for c in columns]
    return columns[0] if len(columns) == 1 else _run(ops.concatenate, columns, {"dimension": 1})[0]


def batch_dynamic_slice(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Only the operand batched: one more start index, 0, for the whole batch dimension.
    Batched start indices: a ``gather`` of each example's window, with ``clip`` (the clamping
    ``dynamic_slice`` does) as its mode."""
    operand, *indices = args
    d_op, *d_idx = dims
    size = batch_size(args, dims)
    sizes = tuple(params["slice_sizes"])
    if all(d is None for d in d_idx):
        operand = move_batch_dim(operand, d_op, 0) if d_op is not None else operand
        new_params = {**params, "slice_sizes": (size, *sizes)}
        return _run(op, [operand, _zero_index(indices), *indices], new_params), [0]
    starts = _index_vectors(indices, d_idx, size)
    n = len(indices)
    if d_op is None:
        dn = GatherDimensionNumbers(offset_dims=tuple(range(1, n + 1)), collapsed_slice_dims=(),
                                    start_index_map=tuple(range(n)))  # fmt: skip
        gather_params = {"dimension_numbers": dn, "slice_sizes": sizes, "mode": "clip", "fill_value": None}
        return _run(ops.gather, [operand, starts], gather_params), [0]
    operand = move_batch_dim(operand, d_op, 0)
    dn = GatherDimensionNumbers(offset_dims=tuple(range(1, n + 1)), collapsed_slice_dims=(),
                                start_index_map=tuple(range(1, n + 1)), operand_batching_dims=(0,),
                                start_indices_batching_dims=(0,))  # fmt: skip
    gather_params = {"dimension_numbers": dn, "slice_sizes": (min(size, 1), *sizes), "mode": "clip",
                     "fill_value": None}  # fmt: skip
    return _run(ops.gather, [operand, starts], gather_params), [0]


BATCH_RULES["dynamic_slice"] = batch_dynamic_slice


def batch_dynamic_update_slice(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Unbatched start indices: operand and update batched at the front, start index 0 for
    the batch dimension. Batched start indices: a ``scatter`` of each example's update with
    ``clip`` (the clamping ``dynamic_update_slice`` does) as its mode."""
    operand, update, *indices = args
    d_op, d_up, *d_idx = dims
    size = batch_size(args, dims)
    operand, update = at_front(operand, d_op, size), at_front(update, d_up, size)
    if all(d is None for d in d_idx):
        return _run(op, [operand, update, _zero_index(indices), *indices], params), [0]
    starts = _index_vectors(indices, d_idx, size)
    n = len(indices)
    dn = ScatterDimensionNumbers(update_window_dims=tuple(range(1, n + 1)), inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=tuple(range(1, n + 1)), operand_batching_dims=(0,),
                                 scatter_indices_batching_dims=(0,))  # fmt: skip
    scatter_params = {"dimension_numbers": dn, "indices_are_sorted": True, "unique_indices": True, "mode": "clip"}
    return _run(ops.scatter, [operand, starts, update], scatter_params), [0]


BATCH_RULES["dynamic_update_slice"] = batch_dynamic_update_slice
