"""Lowerings of the elementwise binary ops (``runtime.core.ops`` families ``binary``, ``compare``,
``logical``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from typing import Any

from passes.lower_jax._common import LOWERINGS, Lowered, _const, _full_shape, _kind, _lax_binary_lowering
from runtime.core.graph import Eqn

# -- elementwise binary -----------------------------------------------------------------------


def add_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.add."""
    from jax import lax

    return (lax.add(*_full_shape(eqn, x, y)),)


LOWERINGS["add"] = add_lowering


def sub_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.sub."""
    from jax import lax

    return (lax.sub(*_full_shape(eqn, x, y)),)


LOWERINGS["sub"] = sub_lowering


def mul_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.mul."""
    from jax import lax

    return (lax.mul(*_full_shape(eqn, x, y)),)


LOWERINGS["mul"] = mul_lowering


def div_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.div (XLA's total integer division: x / 0 == -1)."""
    from jax import lax

    return (lax.div(*_full_shape(eqn, x, y)),)


LOWERINGS["div"] = div_lowering


def rem_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.rem (sign of the dividend; integer x % 0 == x)."""
    from jax import lax

    return (lax.rem(*_full_shape(eqn, x, y)),)


LOWERINGS["rem"] = rem_lowering


def _int_pow(x: Any, y: Any) -> Any:
    # castwise's integer pow (runtime/core/kernels/binary.py: _int_pow), in lax ops: binary
    # exponentiation over every bit of a non-negative exponent with wrapping multiplies, and
    # the value truncated toward zero for a negative one (1, +-1 for -1, else 0: PyTorch's
    # powi). jnp.power reads the low 6 bits only, of the two's complement for y < 0.
    import numpy as np
    from jax import lax

    zero, one = _const(0, y), _const(1, y)
    signed = _kind(y) == "int"
    bits = lax.select(lax.lt(y, lax.full_like(y, zero)), lax.full_like(y, zero), y) if signed else y
    acc, base = lax.full_like(x, _const(1, x)), x
    for _ in range(8 * np.dtype(y.dtype).itemsize):
        acc = lax.select(lax.ne(lax.bitwise_and(bits, one), zero), lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        bits = lax.shift_right_logical(bits, one)
    if not signed:
        return acc
    x_one = lax.full_like(x, _const(1, x))
    x_minus_one = lax.full_like(x, _const(-1, x))
    odd = lax.ne(lax.bitwise_and(y, one), zero)
    truncated = lax.select(
        lax.eq(x, x_one), x_one,
        lax.select(lax.eq(x, x_minus_one), lax.select(odd, x_minus_one, x_one), lax.full_like(x, _const(0, x))),
    )  # fmt: skip
    return lax.select(lax.lt(y, lax.full_like(y, zero)), truncated, acc)


def pow_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.pow for floats and complex; castwise's integer pow (``_int_pow``, in lax ops) for integers."""
    from jax import lax

    x, y = _full_shape(eqn, x, y)
    if _kind(x) in ("int", "uint"):
        return (_int_pow(x, y),)
    return (lax.pow(x, y),)


LOWERINGS["pow"] = pow_lowering


def max_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.max (NaN-propagating; complex lexicographic)."""
    from jax import lax

    return (lax.max(*_full_shape(eqn, x, y)),)


LOWERINGS["max"] = max_lowering


def min_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.min (NaN-propagating; complex lexicographic)."""
    from jax import lax

    return (lax.min(*_full_shape(eqn, x, y)),)


LOWERINGS["min"] = min_lowering


def atan2_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.atan2(x, y)."""
    from jax import lax

    return (lax.atan2(*_full_shape(eqn, x, y)),)


LOWERINGS["atan2"] = atan2_lowering


def floor_div_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """Python ``//`` with jnp.floor_divide's algorithm, in lax ops.

    Unsigned: lax.div. Signed: lax.div, minus one where the signs differ and
    the remainder is not zero. Floats: CPython's float_divmod (rem, corrected
    dividend, div, sign fix, round half away from zero).
    """
    from jax import lax

    x, y = _full_shape(eqn, x, y)
    if _kind(x) == "uint":
        return (lax.div(x, y),)
    if _kind(x) in ("int", "uint"):
        quotient = lax.div(x, y)
        zero = lax.full_like(x, _const(0, x))
        fix = lax.bitwise_and(lax.ne(lax.sign(x), lax.sign(y)), lax.ne(lax.rem(x, y), zero))
        return (lax.select(fix, lax.sub(quotient, lax.full_like(x, _const(1, x))), quotient),)
    zero = lax.full_like(x, _const(0, x))
    mod = lax.rem(x, y)
    corrected = lax.select(lax.eq(y, zero), x, lax.sub(x, mod))
    div = lax.div(corrected, y)
    fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.sign(y), lax.sign(mod)))
    div = lax.select(fix, lax.sub(div, lax.full_like(x, _const(1, x))), div)
    return (lax.round(div, lax.RoundingMethod.AWAY_FROM_ZERO),)


LOWERINGS["floor_div"] = floor_div_lowering


def eq_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.eq."""
    from jax import lax

    return (lax.eq(*_full_shape(eqn, x, y)),)


LOWERINGS["eq"] = eq_lowering


def ne_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.ne."""
    from jax import lax

    return (lax.ne(*_full_shape(eqn, x, y)),)


LOWERINGS["ne"] = ne_lowering


def lt_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.lt."""
    from jax import lax

    return (lax.lt(*_full_shape(eqn, x, y)),)


LOWERINGS["lt"] = lt_lowering


def le_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.le."""
    from jax import lax

    return (lax.le(*_full_shape(eqn, x, y)),)


LOWERINGS["le"] = le_lowering


def gt_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.gt."""
    from jax import lax

    return (lax.gt(*_full_shape(eqn, x, y)),)


LOWERINGS["gt"] = gt_lowering


def ge_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.ge."""
    from jax import lax

    return (lax.ge(*_full_shape(eqn, x, y)),)


LOWERINGS["ge"] = ge_lowering


def and_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.bitwise_and (logical on bool)."""
    from jax import lax

    return (lax.bitwise_and(*_full_shape(eqn, x, y)),)


LOWERINGS["and"] = and_lowering


def or_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.bitwise_or (logical on bool)."""
    from jax import lax

    return (lax.bitwise_or(*_full_shape(eqn, x, y)),)


LOWERINGS["or"] = or_lowering


def xor_lowering(eqn: Eqn, x: Any, y: Any) -> Lowered:
    """lax.bitwise_xor (logical on bool)."""
    from jax import lax

    return (lax.bitwise_xor(*_full_shape(eqn, x, y)),)


LOWERINGS["xor"] = xor_lowering


for _op_name in ("shift_left", "shift_right_arithmetic", "shift_right_logical", "nextafter", "complex"):
    LOWERINGS[_op_name] = _lax_binary_lowering(_op_name)
