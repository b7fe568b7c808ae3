"""The parity sweep's rows of the convolution (``runtime.core.ops`` family ``conv``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows. The reference is
``jax.lax.conv_general_dilated`` at ``Precision.HIGHEST``; operands promote together, as
dot_general's. Integer and bool results are exact; float sums run in another order than XLA's
(BLAS's), so floats compare within the dtype's tolerance.
"""

from __future__ import annotations

from typing import Any, Final

from autodiff.parity._common import _INT_EXACT, Spec, _lax
from runtime.core import lax as F

#: strides, padding, both dilations, two feature groups, channels-last layout
_GROUPED: Final[dict[str, Any]] = {
    "window_strides": (2, 1),
    "padding": ((1, 0), (0, 1)),
    "lhs_dilation": (1, 2),
    "rhs_dilation": (2, 1),
    "dimension_numbers": ("NHWC", "HWIO", "NHWC"),
    "feature_group_count": 2,
}
#: lax's default layout (NCHW, OIHW), SAME padding resolved to pairs, two batch groups
_BATCH_GROUPED: Final[dict[str, Any]] = {
    "window_strides": (1, 1),
    "padding": ((0, 1), (1, 1)),
    "batch_group_count": 2,
}


#: lax's default layout with a precision per operand (recorded, kept by the derivatives, lowered;
#: the kernels and XLA's CPU backend compute at full precision whatever it asks)
_PRECISION: Final[dict[str, Any]] = {
    "window_strides": (1, 2),
    "padding": ((1, 0), (0, 0)),
    "precision": ("high", "highest"),
}


def _conv(lhs: Any, rhs: Any, p: dict[str, Any]) -> Any:
    lax = _lax()
    return lax.conv_general_dilated(lhs, rhs, **{"precision": lax.Precision.HIGHEST, **p})


def specs() -> list[Spec]:
    """The sweep's rows of the convolution."""
    return [
        Spec("conv_general_dilated", "conv_general_dilated",
             lambda x, w: F.conv_general_dilated(x, w, **_GROUPED), lambda x, w: _conv(x, w, _GROUPED),
             ("lhs", "rhs"), ((1, 4, 3, 2), (2, 2, 1, 2)), ("any", "any"), promoted=(0, 1), plan_layout=(0, 1),
             exact=_INT_EXACT),
        Spec("conv_general_dilated-batch_groups", "conv_general_dilated",
             lambda x, w: F.conv_general_dilated(x, w, **_BATCH_GROUPED), lambda x, w: _conv(x, w, _BATCH_GROUPED),
             ("lhs", "rhs"), ((2, 1, 3, 3), (2, 1, 2, 2)), ("any", "any"), promoted=(0, 1), plan_layout=(0, 1),
             exact=_INT_EXACT),
        Spec("conv_general_dilated-precision", "conv_general_dilated",
             lambda x, w: F.conv_general_dilated(x, w, **_PRECISION), lambda x, w: _conv(x, w, _PRECISION),
             ("lhs", "rhs"), ((1, 2, 3, 3), (2, 2, 2, 1)), ("any", "any"), promoted=(0, 1), plan_layout=(0, 1),
             exact=_INT_EXACT),
    ]  # fmt: skip
