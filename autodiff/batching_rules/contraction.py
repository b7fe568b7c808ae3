"""Batching rules of the contraction, selection and joining ops.

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
    batch_elementwise,
)
from runtime.core.ops import OpDef
from runtime.core.shapes import dot_dimension_numbers
from runtime.core.tensor import Tensor

# -- elementwise ops: one rule for all, ``batch_elementwise`` (``_common``) ------------------------

BATCH_RULES["select"] = batch_elementwise
BATCH_RULES["clamp"] = batch_elementwise
BATCH_RULES["select_n"] = batch_elementwise


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
