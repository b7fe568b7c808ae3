"""Batching rules: one per op of the vocabulary, for ``autodiff.vmap``.

A batching rule runs an op on operands that carry an extra *batch* dimension::

    rule(op, args, dims, params) -> (outputs, out_dims)

``args`` are Tensors; ``dims[i]`` is the position of ``args[i]``'s batch
dimension, or ``None`` for an operand that is the same for every example (it
has the op's per-example shape). At least one operand is batched. The rule
returns the outputs and the position of each output's batch dimension.

Rules are written with the eager executor (``runtime.core.executor.apply``) on the
vocabulary's own ops, so a batched op under a recorder is recorded as
ordinary equations (``grad`` of a ``vmap`` is the ordinary VJP of those), and
they never change an operand's dtype: the operands of every equation vmap
replays already share the dtype its plan chose (the recording wrote the
promotion down as ``convert`` equations, which are batched like any unary
op), so a batched op plans exactly as the unbatched one did. What a rule adds
is shape plumbing: ``transpose`` to move a batch dimension, ``broadcast_in_dim``
for an unbatched operand the op needs batched, and the op's params rewritten
for one more dimension. Each rule is a named function followed by its
registration line (shared rules register once per op of their family).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from runtime.core import ops
from runtime.core.executor import apply
from runtime.core.ops import OpDef
from runtime.core.shapes import (
    GatherDimensionNumbers,
    ScatterDimensionNumbers,
    conv_geometry,
    dot_dimension_numbers,
    gather_dimension_numbers,
    scatter_dimension_numbers,
)
from runtime.core.tensor import Tensor

Dims = Sequence[int | None]
Params = dict[str, Any]
BatchResult = tuple[list[Tensor], list[int | None]]
BatchRule = Callable[[OpDef, Sequence[Tensor], Dims, Params], BatchResult]

#: op name -> batching rule
BATCH_RULES: dict[str, BatchRule] = {}


def missing_batch_rules() -> list[str]:
    """Ops of the vocabulary without a batching rule (empty when complete)."""
    return [name for name in ops.OPS if name not in BATCH_RULES]


# -- helpers --------------------------------------------------------------------------------------


def _run(op: OpDef, args: Sequence[Tensor], params: Params) -> list[Tensor]:
    """``op`` through the eager executor; its outputs as a list."""
    result = apply(op, tuple(args), params)
    return list(result) if isinstance(result, tuple) else [result]


def batch_size(args: Sequence[Tensor], dims: Dims) -> int:
    """The size of the batch dimension (every batched operand has the same)."""
    for a, d in zip(args, dims, strict=True):
        if d is not None:
            return a.shape[d]
    raise ValueError("a batching rule was called with no batched operand")


def example_shape(x: Tensor, d: int | None) -> tuple[int, ...]:
    """``x``'s per-example shape: its shape without the batch dimension."""
    return x.shape if d is None else x.shape[:d] + x.shape[d + 1 :]


def move_batch_dim(x: Tensor, src: int, dst: int) -> Tensor:
    """``x`` with its batch dimension moved from ``src`` to ``dst`` (a ``transpose``; nothing when equal)."""
    if src == dst:
        return x
    rest = [i for i in range(x.ndim) if i != src]
    rest.insert(dst, src)
    return _run(ops.transpose, [x], {"permutation": tuple(rest)})[0]


def broadcast_batch(x: Tensor, size: int, dst: int = 0) -> Tensor:
    """An unbatched ``x`` repeated ``size`` times along a new dimension ``dst`` (``broadcast_in_dim``)."""
    shape = (*x.shape[:dst], size, *x.shape[dst:])
    kept = tuple(i for i in range(len(shape)) if i != dst)
    return _run(ops.broadcast_in_dim, [x], {"shape": shape, "broadcast_dimensions": kept})[0]


def at_front(x: Tensor, d: int | None, size: int) -> Tensor:
    """``x`` with its batch dimension first, broadcast there when ``x`` is unbatched."""
    return broadcast_batch(x, size) if d is None else move_batch_dim(x, d, 0)


def _shift(dims: Sequence[int], k: int) -> tuple[int, ...]:
    """Per-example dimension numbers in an operand whose batch dimension sits at ``k``."""
    return tuple(d + (d >= k) for d in dims)


def _up(dims: Sequence[int]) -> tuple[int, ...]:
    """Per-example dimension numbers in an operand whose batch dimension is first."""
    return tuple(d + 1 for d in dims)


def _front_all(args: Sequence[Tensor], dims: Dims) -> list[Tensor]:
    """Every operand with its batch dimension first (unbatched ones broadcast)."""
    size = batch_size(args, dims)
    return [at_front(a, d, size) for a, d in zip(args, dims, strict=True)]


# -- elementwise: binary, compare, logical, unary, convert, select, clamp ---------------------------


def batch_elementwise(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Elementwise ops take operands of one shape, or 0-d ones (lax's scalar rule).

    When every batched operand has its batch dimension at the same place and
    the full shape, and every unbatched operand is 0-d, the op runs as it is
    and the batch dimension stays where it was. Otherwise the batch dimensions
    move to the front; an unbatched non-0-d operand is broadcast along it, and
    so is a batched operand whose examples are 0-d beside shaped ones.
    """
    if len(args) == 1:  # unary ops and convert: the batch dimension stays where it is
        outs = _run(op, args, params)
        return outs, [dims[0]] * len(outs)
    shapes = [example_shape(a, d) for a, d in zip(args, dims, strict=True)]
    shape = next((s for s in shapes if s != ()), ())
    batched = {d for d in dims if d is not None}
    if len(batched) == 1 and all(
        (s == shape) if d is not None else (s == ()) for s, d in zip(shapes, dims, strict=True)
    ):
        outs = _run(op, args, params)
        return outs, [next(iter(batched))] * len(outs)
    size = batch_size(args, dims)
    full = (size, *shape)
    moved = []
    for a, d, s in zip(args, dims, shapes, strict=True):
        if d is None:
            moved.append(a if s == () else broadcast_batch(a, size))
        else:
            a = move_batch_dim(a, d, 0)
            if s == () and shape != ():
                a = _run(ops.broadcast_in_dim, [a], {"shape": full, "broadcast_dimensions": (0,)})[0]
            moved.append(a)
    outs = _run(op, moved, params)
    return outs, [0] * len(outs)


for _op in ops.OPS.values():
    if _op.family in (ops.BINARY, ops.COMPARE, ops.LOGICAL, ops.UNARY, ops.CONVERT, ops.SELECT, ops.CLAMP):
        BATCH_RULES[_op.name] = batch_elementwise


# -- contraction and joining ------------------------------------------------------------------------


def batch_dot_general(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Both batched: the batch dimension joins the op's batch dimensions (first in the output).
    One batched: it is a free dimension of its side, and the output's batch dimension is where
    that free dimension lands (after the batch dims, lhs free dims before rhs ones)."""
    lhs, rhs = args
    dl, dr = dims
    (lc, rc), (lb, rb) = dot_dimension_numbers(params["dimension_numbers"])
    if dl is not None and dr is not None:
        dn = ((_shift(lc, dl), _shift(rc, dr)), ((dl, *_shift(lb, dl)), (dr, *_shift(rb, dr))))
        return _run(op, args, {**params, "dimension_numbers": dn}), [0]
    if dl is not None:
        dn = ((_shift(lc, dl), rc), (_shift(lb, dl), rb))
        free_before = sum(1 for d in range(lhs.ndim - 1) if d < dl and d not in lc and d not in lb)
        return _run(op, args, {**params, "dimension_numbers": dn}), [len(lb) + free_before]
    assert dr is not None
    dn = ((lc, _shift(rc, dr)), (lb, _shift(rb, dr)))
    lhs_free = lhs.ndim - len(lc) - len(lb)
    free_before = sum(1 for d in range(rhs.ndim - 1) if d < dr and d not in rc and d not in rb)
    return _run(op, args, {**params, "dimension_numbers": dn}), [len(lb) + lhs_free + free_before]


BATCH_RULES["dot_general"] = batch_dot_general


def batch_concatenate(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Every operand batched at the front; the joined dimension moves up by one."""
    return _run(op, _front_all(args, dims), {**params, "dimension": params["dimension"] + 1}), [0]


BATCH_RULES["concatenate"] = batch_concatenate


# -- reductions and structural ops ----------------------------------------------------------------------


def batch_reduce(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """The reduced axes skip the batch dimension, which stays (less the reduced axes before it)."""
    (k,) = dims
    assert k is not None
    axes = tuple(params["axes"])
    out = k - sum(1 for a in axes if a < k)
    return _run(op, args, {**params, "axes": _shift(axes, k)}), [out]


for _op in ops.OPS.values():
    if _op.family == ops.REDUCE:
        BATCH_RULES[_op.name] = batch_reduce


def batch_scan(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """A cumulative reduction: its axis skips the batch dimension, which stays where it is."""
    (k,) = dims
    assert k is not None
    axis = params["axis"]
    return _run(op, args, {**params, "axis": axis + (axis >= k)}), [k]


BATCH_RULES["cumsum"] = batch_scan
BATCH_RULES["cumprod"] = batch_scan
BATCH_RULES["cummax"] = batch_scan
BATCH_RULES["cummin"] = batch_scan
BATCH_RULES["cumlogsumexp"] = batch_scan


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
    sizes = (1, *params["slice_sizes"])
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
    gather_params = {"dimension_numbers": dn, "slice_sizes": (1, *sizes), "mode": "clip", "fill_value": None}
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


# -- linear algebra ------------------------------------------------------------------------------------------


def batch_linalg(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """The linear-algebra ops take leading batch dimensions (every operand the same ones): the
    batch dimension goes first on every operand, unbatched ones broadcast."""
    outs = _run(op, _front_all(args, dims), params)
    return outs, [0] * len(outs)


for _op in ops.OPS.values():
    if _op.family == ops.LINALG:
        BATCH_RULES[_op.name] = batch_linalg


# -- user rule calls --------------------------------------------------------------------------------


def _example(x: Tensor, i: int) -> Tensor:
    """Example ``i`` of an operand whose batch dimension is first."""
    rest = x.shape[1:]
    one = _run(ops.slice, [x], {"start_indices": (i, *(0,) * len(rest)), "limit_indices": (i + 1, *rest),
                                 "strides": None})[0]  # fmt: skip
    return _run(ops.reshape, [one], {"new_sizes": rest})[0]


def batch_user_call(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """``custom_jvp_call`` / ``custom_vjp_call``: the user's function is arbitrary Python with
    a rule for one example's shapes, so the call runs once per example (each recorded as the
    same user call, so derivatives still use the user's rule) and the results are stacked."""
    from autodiff.custom import example_params

    size = batch_size(args, dims)
    if size == 0 and "out_avals" in params:  # no example to run: empty results (as JAX returns)
        return [Tensor(np.zeros((0, *s), d.storage), d) for d, s in params["out_avals"]], [0] * len(params["out_avals"])
    front = [None if d is None else move_batch_dim(a, d, 0) for a, d in zip(args, dims, strict=True)]
    per = []
    for i in range(size):
        example = [a if f is None else _example(f, i) for a, f in zip(args, front, strict=True)]
        # the example's own params: a custom_vjp call's residuals are per example (example_params)
        per.append(_run(op, example, example_params(op, params, example)))
    outs = []
    for k in range(len(per[0])):
        rows = [_run(ops.reshape, [p[k]], {"new_sizes": (1, *p[k].shape)})[0] for p in per]
        outs.append(_run(ops.concatenate, rows, {"dimension": 0})[0])
    return outs, [0] * len(outs)


BATCH_RULES["custom_jvp_call"] = batch_user_call
BATCH_RULES["custom_vjp_call"] = batch_user_call


# -- windowed reductions and convolution ------------------------------------------------------------


def batch_window(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """A window of one element along the batch dimension (no stride, padding or dilation there);
    the select_and_* ops take both operands batched at the front."""
    if len(args) == 1:
        (k,) = dims
        assert k is not None
        moved = list(args)
    else:
        k, moved = 0, _front_all(args, dims)

    def grow(values: Any, one: Any) -> tuple[Any, ...]:
        values = list(values)
        values.insert(k, one)
        return tuple(values)

    new = {
        **params,
        "window_dimensions": grow(params["window_dimensions"], 1),
        "window_strides": grow(params["window_strides"], 1),
        "padding": grow(params["padding"], (0, 0)),
        "base_dilation": grow(params["base_dilation"], 1),
        "window_dilation": grow(params["window_dilation"], 1),
    }
    return _run(op, moved, new), [k]


BATCH_RULES["reduce_window_sum"] = batch_window
BATCH_RULES["reduce_window_max"] = batch_window
BATCH_RULES["reduce_window_min"] = batch_window
BATCH_RULES["select_and_gather_add"] = batch_window
BATCH_RULES["select_and_scatter_add"] = batch_window


def batch_conv(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Only lhs batched (no batch groups): the batch joins lhs's batch dimension (major) and is split
    back out of the output's. Otherwise (a batched kernel) the convolution runs once per example and
    the results are stacked, as the user calls are."""
    dl, dr = dims
    c = conv_geometry(params, args[0].ndim - (dl is not None))
    if dl is not None and dr is None and c.batch_group_count == 1:
        lhs, rhs = args
        lspec, _, ospec = c.dimension_numbers
        size = lhs.shape[dl]
        # lhs's batch dimension numbered without dl, then the added one merged into it
        merged = _run(ops.reshape, [_merge_axis(lhs, dl, lspec[0])], {"new_sizes": _merged_shape(lhs, dl, lspec[0])})[0]
        (out,) = _run(op, [merged, rhs], params)
        shape = list(out.shape)
        shape[ospec[0] : ospec[0] + 1] = [size, shape[ospec[0]] // size]
        return [_run(ops.reshape, [out], {"new_sizes": tuple(shape)})[0]], [ospec[0]]
    return batch_user_call(op, args, dims, params)


def _merge_axis(x: Tensor, src: int, dst: int) -> Tensor:
    """``x`` with axis ``src`` moved just before axis ``dst`` (numbered without ``src``)."""
    perm = [i for i in range(x.ndim) if i != src]
    perm.insert(dst, src)
    if perm == list(range(x.ndim)):
        return x
    return _run(ops.transpose, [x], {"permutation": tuple(perm)})[0]


def _merged_shape(x: Tensor, src: int, dst: int) -> tuple[int, ...]:
    shape = [n for i, n in enumerate(x.shape) if i != src]
    shape[dst] *= x.shape[src]
    return tuple(shape)


BATCH_RULES["conv_general_dilated"] = batch_conv
