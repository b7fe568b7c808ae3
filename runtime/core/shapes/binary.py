"""Shape rules of the elementwise binary ops (``runtime.core.ops`` families ``binary``, ``compare``,
``logical``).

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
    _accept,
    _elementwise_shape,
    _fail,
    _same_dtype,
)

# -- small helpers ----------------------------------------------------------------------------

_REAL_NUM: Final = frozenset({"int", "uint", "float"})


# -- elementwise binary, compare, logical ------------------------------------------------------


def _binary(op: OpDef, avals: Sequence[Aval], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _same_dtype(op, avals, (0, 1))
    _accept(op, avals, 0, kinds)
    return ((dtype, _elementwise_shape(op, avals, (0, 1))),)


def _compare(op: OpDef, avals: Sequence[Aval], kinds: frozenset[str]) -> tuple[Aval, ...]:
    _same_dtype(op, avals, (0, 1))
    _accept(op, avals, 0, kinds)
    return ((dt.bool_, _elementwise_shape(op, avals, (0, 1))),)


def add_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.add: numbers (not bool)."""
    return _binary(op, avals, _NUM)


SHAPE_RULES["add"] = add_rule


def sub_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.sub: numbers (not bool)."""
    return _binary(op, avals, _NUM)


SHAPE_RULES["sub"] = sub_rule


def mul_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.mul: numbers (not bool)."""
    return _binary(op, avals, _NUM)


SHAPE_RULES["mul"] = mul_rule


def div_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.div: numbers; integers divide truncating toward zero (the plan normally avoids that)."""
    return _binary(op, avals, _NUM)


SHAPE_RULES["div"] = div_rule


def rem_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.rem: integers and floats (no complex)."""
    return _binary(op, avals, _REAL_NUM)


SHAPE_RULES["rem"] = rem_rule


def pow_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """pow with equal dtypes: lax.pow for floats and complex, plus integers with jnp.power's algorithm.

    lax.pow rejects integer bases; ``int ** int`` is common enough (and
    jnp.power defines it) that castwise accepts it rather than forcing a float.
    """
    return _binary(op, avals, _NUM)


SHAPE_RULES["pow"] = pow_rule


def max_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.max: every dtype (complex ordered lexicographically, as lax does)."""
    return _binary(op, avals, _ALL)


SHAPE_RULES["max"] = max_rule


def min_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.min: every dtype."""
    return _binary(op, avals, _ALL)


SHAPE_RULES["min"] = min_rule


def atan2_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """atan2: real floats only.

    jax.lax.atan2 also takes complex operands (an analytic continuation with no
    NumPy counterpart); castwise keeps atan2 real.
    """
    return _binary(op, avals, _FLOAT)


SHAPE_RULES["atan2"] = atan2_rule


def floor_div_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """Python ``//`` (jnp.floor_divide): integers and floats."""
    return _binary(op, avals, _REAL_NUM)


SHAPE_RULES["floor_div"] = floor_div_rule


def eq_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.eq: every dtype, bool result."""
    return _compare(op, avals, _ALL)


SHAPE_RULES["eq"] = eq_rule


def ne_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.ne: every dtype, bool result."""
    return _compare(op, avals, _ALL)


SHAPE_RULES["ne"] = ne_rule


def lt_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.lt: ordered dtypes (complex rejected, as in lax)."""
    return _compare(op, avals, _ORDERED)


SHAPE_RULES["lt"] = lt_rule


def le_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.le: ordered dtypes."""
    return _compare(op, avals, _ORDERED)


SHAPE_RULES["le"] = le_rule


def gt_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.gt: ordered dtypes."""
    return _compare(op, avals, _ORDERED)


SHAPE_RULES["gt"] = gt_rule


def ge_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.ge: ordered dtypes."""
    return _compare(op, avals, _ORDERED)


SHAPE_RULES["ge"] = ge_rule


def and_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.bitwise_and: bool and integers."""
    return _binary(op, avals, _BOOL_INT)


SHAPE_RULES["and"] = and_rule


def or_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.bitwise_or: bool and integers."""
    return _binary(op, avals, _BOOL_INT)


SHAPE_RULES["or"] = or_rule


def xor_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.bitwise_xor: bool and integers."""
    return _binary(op, avals, _BOOL_INT)


SHAPE_RULES["xor"] = xor_rule


# -- rounding, tests, exponentials, trigonometric and hyperbolic ---------------------------------


def _shift_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.shift_left / shift_right_arithmetic / shift_right_logical: integers of one dtype."""
    return _binary(op, avals, _INTEGER)


SHAPE_RULES["shift_left"] = _shift_rule
SHAPE_RULES["shift_right_arithmetic"] = _shift_rule
SHAPE_RULES["shift_right_logical"] = _shift_rule


def nextafter_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.nextafter: real floats of one dtype."""
    return _binary(op, avals, _FLOAT)


SHAPE_RULES["nextafter"] = nextafter_rule

#: lax.complex's part dtypes and the complex dtype each makes.
COMPLEX_OF: Final[dict[DType, DType]] = {dt.float32: dt.complex64, dt.float64: dt.complex128}


def complex_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.complex(re, im): float32 -> complex64, float64 -> complex128 (as lax, no narrow parts)."""
    dtype = _same_dtype(op, avals, (0, 1))
    if dtype not in COMPLEX_OF:
        raise _fail(OpTypeError, op, avals, f"x dtype {dtype.short} not accepted (accepts float32, float64)")
    return ((COMPLEX_OF[dtype], _elementwise_shape(op, avals, (0, 1))),)


SHAPE_RULES["complex"] = complex_rule
