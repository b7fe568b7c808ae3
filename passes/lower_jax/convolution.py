"""Lowering of ``conv_general_dilated`` (``runtime.core.ops`` family ``conv``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from typing import Any

from passes.lower_jax._common import LOWERINGS, Lowered, _lax_precision
from runtime.core import shapes
from runtime.core.graph import Eqn

# -- convolution --------------------------------------------------------------------------------


def conv_general_dilated_lowering(eqn: Eqn, lhs: Any, rhs: Any) -> Lowered:
    """lax.conv_general_dilated at the recorded precision (Precision.HIGHEST without one), the
    dimension numbers as lax.ConvDimensionNumbers."""
    from jax import lax

    p = eqn.params
    c = shapes.conv_geometry(p, len(eqn.inputs[0].shape))
    dnums = lax.ConvDimensionNumbers(*c.dimension_numbers)
    return (lax.conv_general_dilated(lhs, rhs, c.window_strides, c.padding, c.lhs_dilation, c.rhs_dilation, dnums,
                                     c.feature_group_count, c.batch_group_count,
                                     precision=_lax_precision(eqn)),)  # fmt: skip


LOWERINGS["conv_general_dilated"] = conv_general_dilated_lowering
