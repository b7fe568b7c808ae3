"""Shape rules of the conversion ops (``runtime.core.ops`` families ``convert``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runtime.core.ops import OpDef
from runtime.core.shapes._common import SHAPE_RULES, Aval, OpTypeError, ShapeError, _dtype_param, _fail


def convert_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.convert_element_type: any dtype to any dtype, same shape."""
    target = _dtype_param(op, avals, params["new_dtype"], "new_dtype")
    return ((target, avals[0][1]),)


SHAPE_RULES["convert"] = convert_rule


def bitcast_convert_type_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.bitcast_convert_type: bool and complex only as themselves; the same width keeps the shape,
    a narrower target adds a trailing axis of size old/new bits, a wider one needs (and removes) a
    trailing axis of size new/old bits."""
    dtype, shape = avals[0]
    target = _dtype_param(op, avals, params["new_dtype"], "new_dtype")
    if target is not dtype and (dtype.kind in ("bool", "complex") or target.kind in ("bool", "complex")):
        raise _fail(
            OpTypeError, op, avals,
            f"a {dtype.name} operand cannot be read as {target.name}: bool and complex bits are reinterpreted "
            "only as their own dtype (as lax)",
        )  # fmt: skip
    if max(dtype.bits, target.bits) % min(dtype.bits, target.bits):
        raise _fail(OpTypeError, op, avals, f"{dtype.bits} and {target.bits} bits: one width must divide the other")
    if target.bits == dtype.bits:
        return ((target, shape),)
    if target.bits < dtype.bits:
        return ((target, (*shape, dtype.bits // target.bits)),)
    ratio = target.bits // dtype.bits
    if not shape or shape[-1] != ratio:
        raise _fail(
            ShapeError, op, avals,
            f"a {dtype.bits}-bit operand read as {target.name} ({target.bits} bits) needs a last axis of size {ratio}",
        )  # fmt: skip
    return ((target, shape[:-1]),)


SHAPE_RULES["bitcast_convert_type"] = bitcast_convert_type_rule
