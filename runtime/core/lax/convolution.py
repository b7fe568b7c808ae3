"""The op functions of convolution (conv_general_dilated).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from runtime.core import ops, shapes
from runtime.core.lax._common import Operand, _index, _ints, _Invalid, _named, _one
from runtime.core.lax.contraction import _precision_param, _with_preferred
from runtime.core.lax.windowed import _pairs, _shape_of, padtype_to_pads
from runtime.core.shapes import ShapeError
from runtime.core.tensor import Tensor

__all__ = ["conv", "conv_general_dilated"]


def conv_general_dilated(
    lhs: Operand,
    rhs: Operand,
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    lhs_dilation: Sequence[int] | None = None,
    rhs_dilation: Sequence[int] | None = None,
    dimension_numbers: Any = None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Tensor:
    """General dilated convolution, as ``jax.lax.conv_general_dilated`` (a correlation: rhs is not flipped).

    ``dimension_numbers``: ``None`` (``('NCHW', 'OIHW', 'NCHW')`` and its 1-D/3-D analogues), a
    ``jax.lax.ConvDimensionNumbers``, three permutations, or three strings such as
    ``('NHWC', 'HWIO', 'NHWC')``; strides, padding and dilations follow rhs's spatial order.
    ``padding`` is ``(low, high)`` pairs or ``'SAME'`` / ``'SAME_LOWER'`` / ``'VALID'`` (computed
    from the dilated rhs, as lax does; string padding refuses an lhs dilation, as lax does).
    Operands promote together, as dot_general's. ``preferred_element_type``: the result's dtype,
    the products accumulated in it, recorded as in ``dot_general`` (with lax's stricter rule for
    convolutions: integer to integer or float, float to float, complex to complex, signed stays
    signed, never narrower). ``precision`` as in ``dot_general``: recorded, kept by the
    derivatives, batching and the lowering; eager kernels compute at full precision.
    """
    lshape, rshape = _shape_of(lhs), _shape_of(rhs)
    nsp = builtins.max(len(lshape) - 2, 0)
    ones = (1,) * nsp
    try:
        dnums: Any = shapes.conv_dimension_numbers(dimension_numbers, len(lshape))
    except ShapeError:
        dnums = dimension_numbers  # malformed: the shape rule refuses it, naming the op and operands
    strides = _ints(window_strides, "window_strides")
    ldil = ones if lhs_dilation is None else _ints(lhs_dilation, "lhs_dilation")
    rdil = ones if rhs_dilation is None else _ints(rhs_dilation, "rhs_dilation")
    if isinstance(padding, str):
        if isinstance(ldil, tuple) and builtins.any(d != 1 for d in ldil):
            raise ShapeError(
                "conv_general_dilated: string padding is not defined with an lhs_dilation (as in lax); "
                "give explicit (low, high) pairs"
            )
        if dnums is dimension_numbers or len(rshape) != len(lshape):
            pads: Any = _Invalid(padding)
        else:
            lsp = [lshape[d] for d in dnums[0][2:]]
            rsp = [shapes.dilate_dim(rshape[d], r) for d, r in zip(dnums[1][2:], rdil, strict=False)]
            pads = padtype_to_pads(lsp, rsp, strides, padding)
    else:
        pads = _pairs(padding)
    params = {
        "window_strides": strides, "padding": pads, "lhs_dilation": ldil, "rhs_dilation": rdil,
        "dimension_numbers": dnums, "feature_group_count": _index(feature_group_count),
        "batch_group_count": _index(batch_group_count), **_precision_param(precision),
    }  # fmt: skip
    if preferred_element_type is not None:
        return _with_preferred(ops.conv_general_dilated, lhs, rhs, preferred_element_type, params)
    return _one(ops.conv_general_dilated, lhs, rhs, **params)


@_named("conv")
def conv(
    lhs: Operand,
    rhs: Operand,
    window_strides: Sequence[int],
    padding: str | Sequence[tuple[int, int]],
    precision: Any = None,
    preferred_element_type: Any = None,
) -> Tensor:
    """``jax.lax.conv``: ``conv_general_dilated`` in the NCHW / OIHW layout without dilation or groups."""
    return conv_general_dilated(
        lhs, rhs, window_strides, padding, precision=precision, preferred_element_type=preferred_element_type
    )
