"""JVP and VJP rules of the elementwise binary ops: ``add``, ``sub``, ``mul``, ``div``, ``rem``,
``pow``, ``max``, ``min``, ``atan2`` and ``complex`` (the comparisons, logical, shift and integer
ops, ``floor_div`` and ``nextafter`` are declared non-differentiable).

Each rule is a named function followed by its registration line; the trailing comment states the
identity it implements. The conventions are those of the elementwise rules (``autodiff.derivatives``).
"""

from __future__ import annotations

from collections.abc import Sequence

from autodiff.derivatives._common import (
    Primals,
    Tangents,
    _conj,
    _jvp_out,
    _like,
    _replace_zero,
    _scalar,
    _single_ct,
    _vjp_in,
)
from autodiff.rules import JVP_RULES, SAVES_NOTHING, VJP_RULES, VJP_SAVES, Positions, saves_other_operand
from autodiff.zeros import TangentLike, Zero, add_any, is_zero
from runtime.core.lax import abs as absolute
from runtime.core.lax import (
    add,
    convert,
    div,
    eq,
    floor_div,
    imag,
    log,
    mul,
    neg,
    real,
    reciprocal,
    select,
    sign,
    square,
    sub,
)
from runtime.core.lax import complex as make_complex
from runtime.core.lax import pow as power
from runtime.core.tensor import Tensor

# -- elementwise binary --------------------------------------------------------------------


def add_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (tx, ty), (out,) = tangents, outputs
    return [add_any(_jvp_out(tx, out), _jvp_out(ty, out))]  # d(x + y) = dx + dy
JVP_RULES["add"] = add_jvp


def add_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x, y) = _single_ct(cotangents), primals
    gx = _vjp_in(ct, x) if needs[0] else Zero.like(x)
    gy = _vjp_in(ct, y) if needs[1] else Zero.like(y)
    return [gx, gy]  # x-bar = ct, y-bar = ct
VJP_RULES["add"] = add_vjp
VJP_SAVES["add"] = SAVES_NOTHING


def sub_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (tx, ty), (out,) = tangents, outputs
    if is_zero(tx):
        return [_jvp_out(neg(ty), out)]  # type: ignore[arg-type]
    if is_zero(ty):
        return [_jvp_out(tx, out)]
    return [sub(_jvp_out(tx, out), _jvp_out(ty, out))]  # type: ignore[arg-type]  # d(x - y) = dx - dy
JVP_RULES["sub"] = sub_jvp


def sub_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x, y) = _single_ct(cotangents), primals
    gx = _vjp_in(ct, x) if needs[0] else Zero.like(x)
    gy = _vjp_in(neg(ct), y) if needs[1] else Zero.like(y)
    return [gx, gy]  # x-bar = ct, y-bar = -ct
VJP_RULES["sub"] = sub_vjp
VJP_SAVES["sub"] = SAVES_NOTHING


def mul_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (x, y), (tx, ty), (out,) = primals, tangents, outputs
    dx = Zero.like(out) if is_zero(tx) else _jvp_out(mul(tx, y), out)  # type: ignore[arg-type]
    dy = Zero.like(out) if is_zero(ty) else _jvp_out(mul(x, ty), out)  # type: ignore[arg-type]
    return [add_any(dx, dy)]  # d(x y) = y dx + x dy
JVP_RULES["mul"] = mul_jvp


def mul_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x, y) = _single_ct(cotangents), primals
    gx = _vjp_in(mul(ct, _conj(y)), x) if needs[0] else Zero.like(x)
    gy = _vjp_in(mul(ct, _conj(x)), y) if needs[1] else Zero.like(y)
    return [gx, gy]  # x-bar = ct conj(y), y-bar = ct conj(x)
VJP_RULES["mul"] = mul_vjp
VJP_SAVES["mul"] = saves_other_operand


def _inverse_square(y: Tensor) -> Tensor:
    return reciprocal(square(y))  # 1 / (y y): lax.integer_pow(y, -2), rounded as XLA rounds it


def div_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (x, y), (tx, ty), (out,) = primals, tangents, outputs
    dx = Zero.like(out) if is_zero(tx) else _jvp_out(div(tx, y), out)  # type: ignore[arg-type]
    dy = Zero.like(out) if is_zero(ty) else _jvp_out(mul(mul(neg(ty), x), _inverse_square(y)), out)  # type: ignore[arg-type]
    return [add_any(dx, dy)]  # d(x / y) = dx / y - x dy / y**2 (JAX's form, so narrow floats round alike)
JVP_RULES["div"] = div_jvp


def _div_saves(needs: Sequence[bool]) -> Positions:
    return ((0, 1) if needs[1] else (1,), ())  # x-bar reads y; y-bar reads x and y


def div_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x, y) = _single_ct(cotangents), primals
    gx = _vjp_in(div(ct, _conj(y)), x) if needs[0] else Zero.like(x)
    gy = _vjp_in(neg(mul(mul(ct, _conj(_inverse_square(y))), _conj(x))), y) if needs[1] else Zero.like(y)
    return [gx, gy]  # x-bar = ct / conj(y), y-bar = -ct conj(x / y**2) (the transpose of the JVP)
VJP_RULES["div"] = div_vjp
VJP_SAVES["div"] = _div_saves


def _trunc_quotient(x: Tensor, y: Tensor) -> Tensor:
    """trunc(x / y) = sign(x / y) floor(|x / y|); piecewise constant (floor_div carries no tangent)."""
    q = div(x, y)
    return mul(sign(q), floor_div(absolute(q), _like(1, q)))


def rem_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (x, y), (tx, ty), (out,) = primals, tangents, outputs
    dx = _jvp_out(tx, out)
    dy = Zero.like(out) if is_zero(ty) else _jvp_out(neg(mul(ty, _trunc_quotient(x, y))), out)  # type: ignore[arg-type]
    return [add_any(dx, dy)]  # d rem(x, y) = dx - trunc(x / y) dy
JVP_RULES["rem"] = rem_jvp


def rem_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x, y) = _single_ct(cotangents), primals
    gx = _vjp_in(ct, x) if needs[0] else Zero.like(x)
    gy = _vjp_in(neg(mul(ct, _conj(_trunc_quotient(x, y)))), y) if needs[1] else Zero.like(y)
    return [gx, gy]  # x-bar = ct, y-bar = -ct trunc(x / y)
VJP_RULES["rem"] = rem_vjp


def _pow_dx(x: Tensor, y: Tensor) -> Tensor:
    return mul(y, power(x, sub(y, _scalar(1, y))))  # y x**(y-1)


def _pow_dy(x: Tensor, out: Tensor) -> Tensor:
    return mul(log(_replace_zero(x)), out)  # log(x) x**y (0 where x == 0, as JAX)


def pow_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (x, y), (tx, ty), (out,) = primals, tangents, outputs
    dx = Zero.like(out) if is_zero(tx) else _jvp_out(mul(tx, _pow_dx(x, y)), out)  # type: ignore[arg-type]
    dy = Zero.like(out) if is_zero(ty) else _jvp_out(mul(ty, _pow_dy(x, out)), out)  # type: ignore[arg-type]
    return [add_any(dx, dy)]  # d x**y = y x**(y-1) dx + log(x) x**y dy
JVP_RULES["pow"] = pow_jvp


def pow_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x, y), (out,) = _single_ct(cotangents), primals, outputs
    gx = _vjp_in(mul(ct, _conj(_pow_dx(x, y))), x) if needs[0] else Zero.like(x)
    gy = _vjp_in(mul(ct, _conj(_pow_dy(x, out))), y) if needs[1] else Zero.like(y)
    return [gx, gy]  # x-bar = ct conj(y x**(y-1)), y-bar = ct conj(log(x) x**y)
VJP_RULES["pow"] = pow_vjp


def _tie_weight(a: Tensor, b: Tensor, out: Tensor) -> Tensor:
    """1 where ``a`` alone is the result, 1/2 where both are, 0 elsewhere (JAX's balanced split)."""
    one, zero, half = _like(1, out), _like(0, out), _like(0.5, out)
    return select(eq(a, out), select(eq(b, out), half, one), zero)


def _extremum_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (x, y), (tx, ty), (out,) = primals, tangents, outputs
    dx = Zero.like(out) if is_zero(tx) else mul(_jvp_out(tx, out), _tie_weight(x, y, out))  # type: ignore[arg-type]
    dy = Zero.like(out) if is_zero(ty) else mul(_jvp_out(ty, out), _tie_weight(y, x, out))  # type: ignore[arg-type]
    return [add_any(dx, dy)]


def _extremum_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x, y), (out,) = _single_ct(cotangents), primals, outputs
    gx = _vjp_in(mul(ct, _tie_weight(x, y, out)), x) if needs[0] else Zero.like(x)
    gy = _vjp_in(mul(ct, _tie_weight(y, x, out)), y) if needs[1] else Zero.like(y)
    return [gx, gy]


def max_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _extremum_jvp(primals, tangents, outputs)  # d max(x, y) = [x > y] dx + [y > x] dy, ties split 1/2
JVP_RULES["max"] = max_jvp


def max_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _extremum_vjp(cotangents, primals, outputs, needs)  # x-bar = ct [x > y] (+ ct/2 on ties), same for y
VJP_RULES["max"] = max_vjp


def min_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _extremum_jvp(primals, tangents, outputs)  # d min(x, y) = [x < y] dx + [y < x] dy, ties split 1/2
JVP_RULES["min"] = min_jvp


def min_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _extremum_vjp(cotangents, primals, outputs, needs)  # x-bar = ct [x < y] (+ ct/2 on ties), same for y
VJP_RULES["min"] = min_vjp


def atan2_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (x, y), (tx, ty), (out,) = primals, tangents, outputs
    r2 = add(square(x), square(y))
    dx = Zero.like(out) if is_zero(tx) else _jvp_out(mul(tx, div(y, r2)), out)  # type: ignore[arg-type]
    dy = Zero.like(out) if is_zero(ty) else _jvp_out(mul(ty, div(neg(x), r2)), out)  # type: ignore[arg-type]
    return [add_any(dx, dy)]  # d atan2(x, y) = (y dx - x dy) / (x**2 + y**2)
JVP_RULES["atan2"] = atan2_jvp


def atan2_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x, y) = _single_ct(cotangents), primals
    r2 = add(square(x), square(y))
    gx = _vjp_in(mul(ct, _conj(div(y, r2))), x) if needs[0] else Zero.like(x)
    gy = _vjp_in(mul(ct, _conj(div(neg(x), r2))), y) if needs[1] else Zero.like(y)
    return [gx, gy]  # x-bar = ct y / (x**2 + y**2), y-bar = -ct x / (x**2 + y**2)
VJP_RULES["atan2"] = atan2_vjp


def complex_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (_, y), (tx, ty), (out,) = primals, tangents, outputs
    if is_zero(tx) and is_zero(ty):
        return [Zero.like(out)]
    if is_zero(ty):
        return [_jvp_out(convert(tx, out.dtype), out)]  # type: ignore[arg-type]  # dx embedded: one op
    re = _scalar(0, y) if is_zero(tx) else tx  # a 0-d zero broadcasts (lax's scalar rule)
    return [_jvp_out(make_complex(re, ty), out)]  # type: ignore[arg-type]  # d (x + i y) = dx + i dy
JVP_RULES["complex"] = complex_jvp


def complex_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x, y) = _single_ct(cotangents), primals
    # <ct, dx + i dy> = Re(ct) dx + Im(ct) dy under the real inner product
    gx = _vjp_in(real(ct), x) if needs[0] else Zero.like(x)
    gy = _vjp_in(imag(ct), y) if needs[1] else Zero.like(y)
    return [gx, gy]  # x-bar = Re ct, y-bar = Im ct
VJP_RULES["complex"] = complex_vjp
VJP_SAVES["complex"] = SAVES_NOTHING
