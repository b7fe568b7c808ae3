"""Batching rules of the windowed reductions.

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autodiff.batching_rules._common import BATCH_RULES, BatchResult, Dims, Params, _front_all, _run
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor

# -- windowed reductions ----------------------------------------------------------------------------


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
