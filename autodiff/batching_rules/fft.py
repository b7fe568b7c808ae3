"""Batching rules of the Fourier transforms (``fft``).

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from autodiff.batching_rules._common import BATCH_RULES, BatchResult, Dims, Params, _run, move_batch_dim
from runtime.core.ops import OpDef
from runtime.core.tensor import Tensor


def batch_fft(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """The transform runs over the innermost ``len(fft_lengths)`` axes: a batch dimension before
    them stays where it is; one among them moves to the front first."""
    (x,), (k,) = args, dims
    assert k is not None
    if k >= x.ndim - len(params["fft_lengths"]):
        x, k = move_batch_dim(x, k, 0), 0
    return _run(op, [x], params), [k]


BATCH_RULES["fft"] = batch_fft
