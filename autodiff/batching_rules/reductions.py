"""Batching rules of the reductions (``reduce_*``, ``reduce_precision``, the cumulative reductions).

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from autodiff.batching_rules._common import BATCH_RULES, BatchResult, Dims, Params, _run, _shift, batch_elementwise
from runtime.core import ops
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor

# -- elementwise ops: one rule for all, ``batch_elementwise`` (``_common``) ------------------------

BATCH_RULES["reduce_precision"] = batch_elementwise


# -- reductions -----------------------------------------------------------------------------------------


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
