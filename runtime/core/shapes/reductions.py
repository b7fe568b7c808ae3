"""Shape rules of the reduction ops (``runtime.core.ops`` families ``reduce``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from runtime.core import dtypes as dt
from runtime.core.dtypes import DType
from runtime.core.ops import OpDef
from runtime.core.shapes._common import (
    _ALL,
    _BOOL_INT,
    _FLOAT,
    _INTEGER,
    _NUM,
    _ORDERED,
    SHAPE_RULES,
    Aval,
    OpTypeError,
    ShapeError,
    _accept,
    _axes,
    _axis,
    _dtype_param,
    _fail,
    _int,
)


def _reduce(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _accept(op, avals, 0, kinds)
    shape = avals[0][1]
    axes = _axes(op, avals, params["axes"], len(shape), "axis")
    return ((dtype, tuple(s for d, s in enumerate(shape) if d not in axes)),)


def reduce_sum_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_sum: numbers; result keeps the input dtype."""
    return _reduce(op, avals, params, _NUM)


SHAPE_RULES["reduce_sum"] = reduce_sum_rule


def reduce_prod_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_prod: numbers."""
    return _reduce(op, avals, params, _NUM)


SHAPE_RULES["reduce_prod"] = reduce_prod_rule


def reduce_max_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_max: every dtype."""
    return _reduce(op, avals, params, _ALL)


SHAPE_RULES["reduce_max"] = reduce_max_rule


def reduce_min_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_min: every dtype."""
    return _reduce(op, avals, params, _ALL)


SHAPE_RULES["reduce_min"] = reduce_min_rule


# -- index and bitwise reductions --------------------------------------------------------------------


#: lax refuses bitwise reductions of the sub-byte ints, and XLA on CPU cannot compile an argmax of
#: the 2-bit ints: castwise refuses them too.
_NO_BIT_REDUCTION: Final = frozenset(d for d in dt.SUB_BYTE_INTS)
_NO_ARG_EXTREME: Final = frozenset({dt.int2, dt.uint2})


def _refuse(op: OpDef, avals: Sequence[Aval], refused: frozenset[DType], why: str) -> None:
    if avals[0][0] in refused:
        raise _fail(OpTypeError, op, avals, f"x dtype {avals[0][0].short} not accepted ({why})")


def _arg_extreme(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    _accept(op, avals, 0, _ORDERED)
    _refuse(op, avals, _NO_ARG_EXTREME, "XLA compiles no 2-bit argmax/argmin")
    shape = avals[0][1]
    axes = _axes(op, avals, params["axes"], len(shape), "axis")
    if len(axes) != 1:
        raise _fail(ShapeError, op, avals, f"axes {axes} must name exactly one axis")
    if shape[axes[0]] == 0:
        raise _fail(ShapeError, op, avals, f"axis {axes[0]} is empty (an empty reduction has no index)")
    index_dtype = _dtype_param(op, avals, params["index_dtype"], "index_dtype")
    if index_dtype.kind not in _INTEGER:
        raise _fail(OpTypeError, op, avals, f"index_dtype {index_dtype.short} must be an integer dtype")
    return ((index_dtype, tuple(s for d, s in enumerate(shape) if d != axes[0])),)


def argmax_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.argmax: bool, integers and floats (lax refuses complex); one non-empty axis; an integer index_dtype."""
    return _arg_extreme(op, avals, params)


SHAPE_RULES["argmax"] = argmax_rule


def argmin_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.argmin: as argmax."""
    return _arg_extreme(op, avals, params)


SHAPE_RULES["argmin"] = argmin_rule


def reduce_and_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_and: bool and integers; result keeps the input dtype."""
    _refuse(op, avals, _NO_BIT_REDUCTION, "lax takes no sub-byte integers here")
    return _reduce(op, avals, params, _BOOL_INT)


SHAPE_RULES["reduce_and"] = reduce_and_rule


def reduce_or_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_or: bool and integers."""
    _refuse(op, avals, _NO_BIT_REDUCTION, "lax takes no sub-byte integers here")
    return _reduce(op, avals, params, _BOOL_INT)


SHAPE_RULES["reduce_or"] = reduce_or_rule


def reduce_xor_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_xor: bool and integers."""
    _refuse(op, avals, _NO_BIT_REDUCTION, "lax takes no sub-byte integers here")
    return _reduce(op, avals, params, _BOOL_INT)


SHAPE_RULES["reduce_xor"] = reduce_xor_rule


def reduce_precision_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reduce_precision: floats; ``exponent_bits >= 1``, ``mantissa_bits >= 0``; same aval out."""
    dtype = _accept(op, avals, 0, _FLOAT)
    exponent_bits = _int(params["exponent_bits"], "exponent_bits")
    mantissa_bits = _int(params["mantissa_bits"], "mantissa_bits")
    if exponent_bits < 1 or mantissa_bits < 0:
        raise _fail(
            ShapeError, op, avals,
            f"exponent_bits {exponent_bits} must be at least 1 and mantissa_bits {mantissa_bits} at least 0",
        )  # fmt: skip
    return ((dtype, avals[0][1]),)


SHAPE_RULES["reduce_precision"] = reduce_precision_rule


# -- cumulative reductions ---------------------------------------------------------------------------


def _scan(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _accept(op, avals, 0, kinds)
    shape = avals[0][1]
    if len(shape) == 0:
        raise _fail(ShapeError, op, avals, "a cumulative reduction needs an operand of rank 1 or more")
    _axis(op, avals, params["axis"], len(shape), "axis")
    if not isinstance(params["reverse"], bool):
        raise _fail(ShapeError, op, avals, f"reverse must be a bool, got {params['reverse']!r}")
    return ((dtype, shape),)


def cumsum_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.cumsum: numbers (lax refuses bool); the operand's aval."""
    return _scan(op, avals, params, _NUM)


SHAPE_RULES["cumsum"] = cumsum_rule


def cumprod_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.cumprod: numbers."""
    return _scan(op, avals, params, _NUM)


SHAPE_RULES["cumprod"] = cumprod_rule


def cummax_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.cummax: numbers (complex ordered as lax.max orders it)."""
    return _scan(op, avals, params, _NUM)


SHAPE_RULES["cummax"] = cummax_rule


def cummin_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.cummin: numbers."""
    return _scan(op, avals, params, _NUM)


SHAPE_RULES["cummin"] = cummin_rule


def cumlogsumexp_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.cumlogsumexp: floats (lax's integer cumlogsumexp fails on its -inf identity; castwise
    does not take complex operands yet, which lax does)."""
    return _scan(op, avals, params, _FLOAT)


SHAPE_RULES["cumlogsumexp"] = cumlogsumexp_rule
