"""Shape rules of the elementwise unary ops (``runtime.core.ops`` families ``unary``).

Each rule is a named function followed by its registration in ``SHAPE_RULES``; the checks and
their order are described in ``runtime.core.shapes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from runtime.core import dtypes as dt
from runtime.core.ops import OpDef
from runtime.core.shapes._common import (
    _BOOL_INT,
    _FLOAT,
    _INEXACT,
    _INTEGER,
    _NUM,
    REAL_DTYPE,
    SHAPE_RULES,
    Aval,
    OpTypeError,
    ShapeError,
    _accept,
    _fail,
    param,
)

# -- small helpers ----------------------------------------------------------------------------

_COMPLEX: Final = frozenset({"complex"})
_SIGNED: Final = frozenset({"int", "float", "complex"})


# -- elementwise unary -------------------------------------------------------------------------


def _unary(op: OpDef, avals: Sequence[Aval], kinds: frozenset[str]) -> tuple[Aval, ...]:
    dtype = _accept(op, avals, 0, kinds)
    return ((dtype, avals[0][1]),)


def neg_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.neg: numbers (unsigned wraps)."""
    return _unary(op, avals, _NUM)


SHAPE_RULES["neg"] = neg_rule


def abs_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.abs: signed ints, floats, complex; complex gives its real dtype."""
    dtype = _accept(op, avals, 0, _SIGNED)
    return ((REAL_DTYPE.get(dtype, dtype), avals[0][1]),)


SHAPE_RULES["abs"] = abs_rule


def sign_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.sign: numbers."""
    return _unary(op, avals, _NUM)


SHAPE_RULES["sign"] = sign_rule


def exp_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.exp: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["exp"] = exp_rule


def log_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.log: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["log"] = log_rule


def expm1_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.expm1: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["expm1"] = expm1_rule


def log1p_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.log1p: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["log1p"] = log1p_rule


def sin_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.sin: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["sin"] = sin_rule


def cos_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.cos: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["cos"] = cos_rule


def tanh_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.tanh: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["tanh"] = tanh_rule


def logistic_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.logistic: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["logistic"] = logistic_rule


def sqrt_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.sqrt: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["sqrt"] = sqrt_rule


def rsqrt_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.rsqrt: floats and complex."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["rsqrt"] = rsqrt_rule


def conj_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """conj: floats and complex, same dtype out.

    jax.lax.conj turns a real float32/float64 into complex; castwise keeps the
    dtype (like jnp.conj), so conj of a real tensor stays real and its value
    is unchanged.
    """
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["conj"] = conj_rule


def real_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.real: complex only, real dtype out."""
    dtype = _accept(op, avals, 0, _COMPLEX)
    return ((REAL_DTYPE[dtype], avals[0][1]),)


SHAPE_RULES["real"] = real_rule


def imag_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.imag: complex only, real dtype out."""
    dtype = _accept(op, avals, 0, _COMPLEX)
    return ((REAL_DTYPE[dtype], avals[0][1]),)


SHAPE_RULES["imag"] = imag_rule


def square_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.square: numbers."""
    return _unary(op, avals, _NUM)


SHAPE_RULES["square"] = square_rule


def reciprocal_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.reciprocal: floats and complex (lax rejects integers)."""
    return _unary(op, avals, _INEXACT)


SHAPE_RULES["reciprocal"] = reciprocal_rule


# -- rounding, tests, exponentials, trigonometric and hyperbolic ---------------------------------


def _float_unary_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.floor / ceil / cbrt: real floats only."""
    return _unary(op, avals, _FLOAT)


def _inexact_unary_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.exp2 / sinh / cosh / tan / asin / acos / atan / asinh / acosh / atanh: floats and complex."""
    return _unary(op, avals, _INEXACT)


def _integer_unary_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.population_count / clz: signed and unsigned integers."""
    return _unary(op, avals, _INTEGER)


SHAPE_RULES["floor"] = _float_unary_rule
SHAPE_RULES["ceil"] = _float_unary_rule
SHAPE_RULES["cbrt"] = _float_unary_rule
SHAPE_RULES["exp2"] = _inexact_unary_rule
SHAPE_RULES["sinh"] = _inexact_unary_rule
SHAPE_RULES["cosh"] = _inexact_unary_rule
SHAPE_RULES["tan"] = _inexact_unary_rule
SHAPE_RULES["asin"] = _inexact_unary_rule
SHAPE_RULES["acos"] = _inexact_unary_rule
SHAPE_RULES["atan"] = _inexact_unary_rule
SHAPE_RULES["asinh"] = _inexact_unary_rule
SHAPE_RULES["acosh"] = _inexact_unary_rule
SHAPE_RULES["atanh"] = _inexact_unary_rule
SHAPE_RULES["population_count"] = _integer_unary_rule
SHAPE_RULES["clz"] = _integer_unary_rule

#: lax.RoundingMethod's values: 0 rounds half away from zero, 1 half to even.
ROUNDING_METHODS: Final = (0, 1)


def round_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.round: real floats; ``rounding_method`` 0 (half away from zero) or 1 (half to even)."""
    method = param(op, params, "rounding_method")
    if isinstance(method, bool) or not isinstance(method, (int, np.integer)) or int(method) not in ROUNDING_METHODS:
        raise _fail(ShapeError, op, avals, f"rounding_method must be 0 (away from zero) or 1 (to even), got {method!r}")
    return _unary(op, avals, _FLOAT)


SHAPE_RULES["round"] = round_rule


def is_finite_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.is_finite: real floats, bool result."""
    _accept(op, avals, 0, _FLOAT)
    return ((dt.bool_, avals[0][1]),)


SHAPE_RULES["is_finite"] = is_finite_rule


def not_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.bitwise_not: bool and integers."""
    return _unary(op, avals, _BOOL_INT)


SHAPE_RULES["not"] = not_rule


# -- integer_pow and stop_gradient ----------------------------------------------------------------


def integer_pow_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.integer_pow: numbers (not bool), a Python int ``y``; negative ``y`` only for inexact dtypes."""
    dtype = _accept(op, avals, 0, _NUM)
    y = param(op, params, "y")
    if not isinstance(y, (int, np.integer)) or isinstance(y, (bool, np.bool_)):
        raise _fail(OpTypeError, op, avals, f"y must be a Python int, got {y!r}")
    if y < 0 and dtype.kind in _INTEGER:
        raise _fail(OpTypeError, op, avals, f"integers cannot be raised to the negative power {y}")  # TypeError, as JAX
    return ((dtype, avals[0][1]),)


SHAPE_RULES["integer_pow"] = integer_pow_rule


def stop_gradient_rule(op: OpDef, avals: Sequence[Aval], params: Mapping[str, Any]) -> tuple[Aval, ...]:
    """lax.stop_gradient: any dtype, the same aval out."""
    return ((avals[0][0], avals[0][1]),)


SHAPE_RULES["stop_gradient"] = stop_gradient_rule
