"""Shape rules of the conversion ops (``runtime.core.ops`` families ``convert``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runtime.core.ops import OpDef
from runtime.core.shapes._common import SHAPE_RULES, Aval, _dtype_param


def convert_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.convert_element_type: any dtype to any dtype, same shape."""
    target = _dtype_param(op, avals, params["new_dtype"], "new_dtype")
    return ((target, avals[0][1]),)


SHAPE_RULES["convert"] = convert_rule
