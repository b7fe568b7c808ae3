"""Batching rules of the convolution.

See ``autodiff.batching_rules`` for the rule signature and the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from autodiff.batching_rules._common import BATCH_RULES, BatchResult, Dims, Params, _run, batch_size, batch_user_call
from runtime.core import ops, shapes
from runtime.core.ops import OpDef
from runtime.core.shapes import conv_geometry
from runtime.core.tensor import Tensor

# -- convolution ------------------------------------------------------------------------------------


def batch_conv(op: OpDef, args: Sequence[Tensor], dims: Dims, params: Params) -> BatchResult:
    """Only lhs batched (no batch groups): the batch joins lhs's batch dimension (major) and is split
    back out of the output's. Otherwise (a batched kernel) the convolution runs once per example and
    the results are stacked, as the user calls are."""
    dl, dr = dims
    c = conv_geometry(params, args[0].ndim - (dl is not None))
    if batch_size(args, dims) == 0:
        # no example: an empty batch of the convolution's result (jax.vmap's answer), sized by
        # the shape rule over one example's avals
        avals = [(a.dtype, tuple(n for i, n in enumerate(a.shape) if i != d)) for a, d in zip(args, dims, strict=True)]
        ((dtype, example),) = shapes.abstract_eval(op, avals, params)
        return [Tensor(np.zeros((0, *example), dtype.storage), dtype)], [0]
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
