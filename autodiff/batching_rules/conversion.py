"""Batching rules of ``convert``.

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from autodiff.batching_rules._common import BATCH_RULES, BatchResult, Dims, Params, _run, batch_elementwise
from runtime.core.lax import transpose
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor

# -- elementwise ops: one rule for all, ``batch_elementwise`` (``_common``) ------------------------

BATCH_RULES["convert"] = batch_elementwise


def batch_bitcast_convert_type(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """The batch dimension moved to the front (the trailing axis is the one the width change adds or removes)."""
    (x,), (k,) = args, dims
    assert k is not None
    if k != 0:
        x = transpose(x, (k, *[d for d in range(x.ndim) if d != k]))
    return _run(op, [x], params), [0]


BATCH_RULES["bitcast_convert_type"] = batch_bitcast_convert_type
