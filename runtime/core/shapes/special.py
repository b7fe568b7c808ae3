"""Shape rules of the special functions (``runtime.core.ops`` section "special functions").

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``. As in ``jax.lax``, every one takes real floats
only (the promotion plan converts integer and bool operands first: ``ops.FLOAT_ONLY``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runtime.core.ops import OpDef
from runtime.core.shapes._common import _FLOAT, SHAPE_RULES, Aval
from runtime.core.shapes.binary import _binary
from runtime.core.shapes.unary import _unary


def _special_unary_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.erf / erfc / erf_inv / lgamma / digamma / bessel_i0e / bessel_i1e: real floats."""
    return _unary(op, avals, _FLOAT)


def _special_binary_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.polygamma / zeta / igamma / igammac / igamma_grad_a: real floats of one dtype."""
    return _binary(op, avals, _FLOAT)


SHAPE_RULES["erf"] = _special_unary_rule
SHAPE_RULES["erfc"] = _special_unary_rule
SHAPE_RULES["erf_inv"] = _special_unary_rule
SHAPE_RULES["lgamma"] = _special_unary_rule
SHAPE_RULES["digamma"] = _special_unary_rule
SHAPE_RULES["bessel_i0e"] = _special_unary_rule
SHAPE_RULES["bessel_i1e"] = _special_unary_rule
SHAPE_RULES["polygamma"] = _special_binary_rule
SHAPE_RULES["zeta"] = _special_binary_rule
SHAPE_RULES["igamma"] = _special_binary_rule
SHAPE_RULES["igammac"] = _special_binary_rule
SHAPE_RULES["igamma_grad_a"] = _special_binary_rule
