"""Lowerings of the elementwise unary ops (``runtime.core.ops`` family ``unary``; the special functions are
in ``special``, ``reduce_precision`` in ``reductions``, as in ``runtime.core.kernels``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from typing import Any

from passes.lower_jax._common import LOWERINGS, Lowered, _kind, _lax_unary_lowering, _param
from runtime.core.graph import Eqn

# -- elementwise unary ------------------------------------------------------------------------


def neg_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.neg."""
    from jax import lax

    return (lax.neg(x),)


LOWERINGS["neg"] = neg_lowering


def abs_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.abs (complex gives its real dtype)."""
    from jax import lax

    return (lax.abs(x),)


LOWERINGS["abs"] = abs_lowering


def sign_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.sign."""
    from jax import lax

    return (lax.sign(x),)


LOWERINGS["sign"] = sign_lowering


def exp_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.exp."""
    from jax import lax

    return (lax.exp(x),)


LOWERINGS["exp"] = exp_lowering


def log_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.log."""
    from jax import lax

    return (lax.log(x),)


LOWERINGS["log"] = log_lowering


def expm1_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.expm1."""
    from jax import lax

    return (lax.expm1(x),)


LOWERINGS["expm1"] = expm1_lowering


def log1p_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.log1p."""
    from jax import lax

    return (lax.log1p(x),)


LOWERINGS["log1p"] = log1p_lowering


def sin_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.sin."""
    from jax import lax

    return (lax.sin(x),)


LOWERINGS["sin"] = sin_lowering


def cos_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cos."""
    from jax import lax

    return (lax.cos(x),)


LOWERINGS["cos"] = cos_lowering


def tanh_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.tanh."""
    from jax import lax

    return (lax.tanh(x),)


LOWERINGS["tanh"] = tanh_lowering


def logistic_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.logistic."""
    from jax import lax

    return (lax.logistic(x),)


LOWERINGS["logistic"] = logistic_lowering


def sqrt_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.sqrt."""
    from jax import lax

    return (lax.sqrt(x),)


LOWERINGS["sqrt"] = sqrt_lowering


def rsqrt_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.rsqrt."""
    from jax import lax

    return (lax.rsqrt(x),)


LOWERINGS["rsqrt"] = rsqrt_lowering


def conj_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.conj for complex; a real value is returned as is (castwise keeps conj real, like jnp.conj)."""
    from jax import lax

    return (lax.conj(x) if _kind(x) == "complex" else x,)


LOWERINGS["conj"] = conj_lowering


def real_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.real."""
    from jax import lax

    return (lax.real(x),)


LOWERINGS["real"] = real_lowering


def imag_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.imag."""
    from jax import lax

    return (lax.imag(x),)


LOWERINGS["imag"] = imag_lowering


def square_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.square."""
    from jax import lax

    return (lax.square(x),)


LOWERINGS["square"] = square_lowering


def reciprocal_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reciprocal."""
    from jax import lax

    return (lax.reciprocal(x),)


LOWERINGS["reciprocal"] = reciprocal_lowering


for _op_name, _lax_name in (
    ("floor", "floor"), ("ceil", "ceil"), ("is_finite", "is_finite"), ("exp2", "exp2"), ("sinh", "sinh"),
    ("cosh", "cosh"), ("tan", "tan"), ("asin", "asin"), ("acos", "acos"), ("atan", "atan"), ("asinh", "asinh"),
    ("acosh", "acosh"), ("atanh", "atanh"), ("cbrt", "cbrt"), ("not", "bitwise_not"),
    ("population_count", "population_count"), ("clz", "clz"),
):  # fmt: skip
    LOWERINGS[_op_name] = _lax_unary_lowering(_lax_name)


def round_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.round with the recorded method (0: away from zero, 1: to nearest even)."""
    from jax import lax

    method = lax.RoundingMethod(int(_param(eqn, "rounding_method")))
    return (lax.round(x, method),)


LOWERINGS["round"] = round_lowering


# -- integer_pow and stop_gradient ----------------------------------------------------------------


def integer_pow_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.integer_pow."""
    from jax import lax

    return (lax.integer_pow(x, int(eqn.params["y"])),)


LOWERINGS["integer_pow"] = integer_pow_lowering


def stop_gradient_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.stop_gradient (so a JAX transform of the lowered program sees it too)."""
    from jax import lax

    return (lax.stop_gradient(x),)


LOWERINGS["stop_gradient"] = stop_gradient_lowering
