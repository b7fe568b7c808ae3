"""Batching rules of the linear-algebra ops.

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from autodiff.batching_rules._common import BATCH_RULES, BatchResult, Dims, Params, _front_all, _run
from runtime.core import ops
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor

# -- linear algebra ------------------------------------------------------------------------------------------


def batch_linalg(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """The linear-algebra ops take leading batch dimensions (every operand the same ones): the
    batch dimension goes first on every operand, unbatched ones broadcast."""
    outs = _run(op, _front_all(args, dims), params)
    return outs, [0] * len(outs)


for _op in ops.OPS.values():
    if _op.family == ops.LINALG:
        BATCH_RULES[_op.name] = batch_linalg
