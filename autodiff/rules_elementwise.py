"""JVP and VJP rules of the elementwise ops: binary, unary, convert, select, clamp.

Each rule is a named function followed by its registration line; the trailing
comment states the identity it implements. Rules are written with the runtime's
op functions only, so under a recorder they record a derivative program of
vocabulary ops (differentiable again).

Conventions (see ``autodiff.rules``):

* Tangents have the output's dtype and shape, cotangents the input's. The
  operands of a binary op already share one dtype (the recorder wrote the
  promotion down as ``convert`` equations), so rules combine same-dtype values
  and build their constants with ``full`` in the exact dtype needed (no reliance
  on the active policy's treatment of Python scalars).
* Reverse mode uses the real inner product ``<a, b> = Re(sum(conj(a) * b))``: for
  a holomorphic op with derivative ``f'(z)`` the JVP is ``t -> f'(z) t`` and the
  VJP ``ct -> ct * conj(f'(z))``; non-holomorphic ops (``abs``, ``real``,
  ``imag``, ``conj``, ``convert``) use their derived adjoints.
* A symbolic ``Zero`` tangent contributes nothing and costs no op; a cotangent
  is only computed for inputs with ``needs[i]`` True.
* ``max``/``min`` split ties equally (as JAX does); ``clamp`` follows
  ``jax.lax.clamp``'s JVP (ties send no gradient anywhere).
"""

from __future__ import annotations

from collections.abc import Sequence

from autodiff.rules import (
    JVP_RULES,
    SAVES_INPUT,
    SAVES_NOTHING,
    SAVES_OUTPUT,
    VJP_RULES,
    VJP_SAVES,
    Positions,
    saves_other_operand,
)
from autodiff.zeros import TangentLike, Zero, add_any, is_zero
from runtime.core.dtypes import DType
from runtime.core.lax import abs as absolute
from runtime.core.lax import (
    add,
    broadcast_in_dim,
    conj,
    convert,
    cos,
    cosh,
    div,
    eq,
    floor_div,
    full,
    ge,
    gt,
    imag,
    log,
    logical_and,
    lt,
    mul,
    neg,
    real,
    reciprocal,
    reduce_sum,
    reshape,
    rsqrt,
    select,
    select_n,
    sign,
    sin,
    sinh,
    square,
    sub,
)
from runtime.core.lax import complex as make_complex
from runtime.core.lax import pow as power
from runtime.core.tensor import Tensor

Tangents = Sequence[TangentLike]
Primals = Sequence[Tensor]

# -- helpers ------------------------------------------------------------------------------


def _const(value: bool | int | float | complex, shape: tuple[int, ...], dtype: DType) -> Tensor:
    """A constant array of exactly ``dtype`` and ``shape``."""
    return full(shape, value, dtype)


_SCALARS: dict[tuple[bool | int | float | complex, type, DType], Tensor] = {}


def _scalar(value: bool | int | float | complex, x: Tensor) -> Tensor:
    """A 0-d constant of ``x``'s dtype: binary ops broadcast it (lax's scalar rule), so
    no array of ``x``'s shape is filled. Made once per (value, dtype) and read-only."""
    key = (value, type(value), x.dtype)
    constant = _SCALARS.get(key)
    if constant is None:
        constant = _const(value, (), x.dtype)
        constant._array.flags.writeable = False
        _SCALARS[key] = constant
    return constant


def _like(value: bool | int | float | complex, x: Tensor) -> Tensor:
    return _const(value, tuple(x.shape), x.dtype)


def _is_complex(x: Tensor | DType) -> bool:
    d = x if isinstance(x, DType) else x.dtype
    return d.kind == "complex"


def _conj(x: Tensor) -> Tensor:
    """conj(x), without an op for real dtypes."""
    return conj(x) if _is_complex(x) else x


def _cast(x: Tensor, dtype: DType) -> Tensor:
    """convert(x, dtype), without an op when the dtype already matches."""
    return x if x.dtype is dtype else convert(x, dtype)


def _broadcast_to(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``t`` broadcast (NumPy rules: leading axes, size-1 axes) to ``shape``."""
    if tuple(t.shape) == tuple(shape):
        return t
    lead = len(shape) - t.ndim
    return broadcast_in_dim(t, shape, tuple(range(lead, len(shape))))


def _unbroadcast(ct: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``ct`` back to ``shape``: the transpose of ``_broadcast_to``."""
    shape = tuple(shape)
    if tuple(ct.shape) == shape:
        return ct
    lead = ct.ndim - len(shape)
    axes = list(range(lead))
    axes += [lead + i for i, n in enumerate(shape) if n == 1 and ct.shape[lead + i] != 1]
    out = reduce_sum(ct, axes) if axes else ct
    return out if tuple(out.shape) == shape else reshape(out, shape)


def _replace_zero(x: Tensor) -> Tensor:
    """x with its zeros replaced by ones (a safe divisor / log argument)."""
    return select(eq(x, _like(0, x)), _like(1, x), x)


def _jvp_out(t: TangentLike, out: Tensor) -> TangentLike:
    """A tangent contribution broadcast to the output's shape (Zero stays Zero)."""
    return t if is_zero(t) else _broadcast_to(t, tuple(out.shape))  # type: ignore[arg-type]


def _vjp_in(ct: Tensor, x: Tensor) -> Tensor:
    """A cotangent contribution summed back to the input's shape."""
    return _unbroadcast(ct, tuple(x.shape))


def _zero_out(outputs: Primals) -> list[TangentLike]:
    return [Zero.like(o) for o in outputs]


def _zero_in(primals: Primals) -> list[TangentLike]:
    return [Zero.like(x) for x in primals]


def _single_ct(cotangents: Tangents) -> Tensor:
    (ct,) = cotangents
    assert not is_zero(ct), "the engine never calls a VJP rule with only zero cotangents"
    return ct  # type: ignore[return-value]


def _holomorphic_unary_jvp(t: TangentLike, deriv: Tensor) -> list[TangentLike]:
    return [mul(t, deriv)]  # type: ignore[arg-type]


def _holomorphic_unary_vjp(ct: Tensor, deriv: Tensor) -> list[TangentLike]:
    return [mul(ct, _conj(deriv))]


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


# -- elementwise unary ---------------------------------------------------------------------


def neg_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (t,) = tangents
    return [neg(t)]  # type: ignore[arg-type]  # d(-x) = -dx
JVP_RULES["neg"] = neg_jvp


def neg_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return [neg(_single_ct(cotangents))]  # x-bar = -ct
VJP_RULES["neg"] = neg_vjp
VJP_SAVES["neg"] = SAVES_NOTHING


def abs_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (x,), (t,), (out,) = primals, tangents, outputs
    if _is_complex(x):
        unit = div(conj(x), _replace_zero(convert(out, x.dtype)))
        return [real(mul(t, unit))]  # type: ignore[arg-type]  # d|z| = Re(conj(z) dz) / |z|
    return [select(ge(x, _like(0, x)), t, neg(t))]  # type: ignore[arg-type]  # d|x| = sign(x) dx (+dx at 0, as JAX)
JVP_RULES["abs"] = abs_jvp


def abs_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x,), (out,) = _single_ct(cotangents), primals, outputs
    if _is_complex(x):
        unit = div(x, _replace_zero(convert(out, x.dtype)))
        return [mul(convert(ct, x.dtype), unit)]  # z-bar = ct z / |z|
    return [select(ge(x, _like(0, x)), ct, neg(ct))]  # x-bar = sign(x) ct (+ct at 0)
VJP_RULES["abs"] = abs_vjp
VJP_SAVES["abs"] = ((0,), (0,))  # x, and |x| for complex


def sign_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _zero_out(outputs)  # d sign(x) = 0 (almost everywhere)
JVP_RULES["sign"] = sign_jvp


def sign_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _zero_in(primals)  # x-bar = 0
VJP_RULES["sign"] = sign_vjp
VJP_SAVES["sign"] = SAVES_NOTHING


def exp_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], outputs[0])  # d exp x = exp x dx
JVP_RULES["exp"] = exp_jvp


def exp_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), outputs[0])  # x-bar = ct conj(exp x)
VJP_RULES["exp"] = exp_vjp
VJP_SAVES["exp"] = SAVES_OUTPUT


def log_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return [div(tangents[0], primals[0])]  # type: ignore[arg-type]  # d log x = dx / x
JVP_RULES["log"] = log_jvp


def log_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return [div(_single_ct(cotangents), _conj(primals[0]))]  # x-bar = ct / conj(x)
VJP_RULES["log"] = log_vjp
VJP_SAVES["log"] = SAVES_INPUT


def expm1_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (out,) = outputs
    return _holomorphic_unary_jvp(tangents[0], add(out, _scalar(1, out)))  # d expm1 x = (expm1 x + 1) dx
JVP_RULES["expm1"] = expm1_jvp


def expm1_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    (out,) = outputs
    return _holomorphic_unary_vjp(_single_ct(cotangents), add(out, _scalar(1, out)))  # x-bar = ct conj(exp x)
VJP_RULES["expm1"] = expm1_vjp
VJP_SAVES["expm1"] = SAVES_OUTPUT


def log1p_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (x,) = primals
    return [div(tangents[0], add(x, _like(1, x)))]  # type: ignore[arg-type]  # d log1p x = dx / (1 + x)
JVP_RULES["log1p"] = log1p_jvp


def log1p_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    (x,) = primals
    return [div(_single_ct(cotangents), _conj(add(x, _like(1, x))))]  # x-bar = ct / conj(1 + x)
VJP_RULES["log1p"] = log1p_vjp
VJP_SAVES["log1p"] = SAVES_INPUT


def sin_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], cos(primals[0]))  # d sin x = cos x dx
JVP_RULES["sin"] = sin_jvp


def sin_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), cos(primals[0]))  # x-bar = ct conj(cos x)
VJP_RULES["sin"] = sin_vjp
VJP_SAVES["sin"] = SAVES_INPUT


def cos_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], neg(sin(primals[0])))  # d cos x = -sin x dx
JVP_RULES["cos"] = cos_jvp


def cos_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), neg(sin(primals[0])))  # x-bar = -ct conj(sin x)
VJP_RULES["cos"] = cos_vjp
VJP_SAVES["cos"] = SAVES_INPUT


def _tanh_deriv(out: Tensor) -> Tensor:
    return sub(_scalar(1, out), mul(out, out))  # 1 - tanh(x)**2 (|tanh| <= 1: the product cannot overflow)


def tanh_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _tanh_deriv(outputs[0]))  # d tanh x = (1 - tanh(x)**2) dx
JVP_RULES["tanh"] = tanh_jvp


def tanh_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), _tanh_deriv(outputs[0]))  # x-bar = ct conj(1 - tanh**2)
VJP_RULES["tanh"] = tanh_vjp
VJP_SAVES["tanh"] = SAVES_OUTPUT


def _logistic_deriv(out: Tensor) -> Tensor:
    return mul(out, sub(_scalar(1, out), out))  # s (1 - s)


def logistic_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _logistic_deriv(outputs[0]))  # d s(x) = s(x) (1 - s(x)) dx
JVP_RULES["logistic"] = logistic_jvp


def logistic_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), _logistic_deriv(outputs[0]))  # x-bar = ct conj(s (1 - s))
VJP_RULES["logistic"] = logistic_vjp
VJP_SAVES["logistic"] = SAVES_OUTPUT


def sqrt_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (out,) = outputs
    return [div(tangents[0], add(out, out))]  # type: ignore[arg-type]  # d sqrt x = dx / (2 sqrt x)
JVP_RULES["sqrt"] = sqrt_jvp


def sqrt_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    (out,) = outputs
    return [div(_single_ct(cotangents), _conj(add(out, out)))]  # x-bar = ct / conj(2 sqrt x)
VJP_RULES["sqrt"] = sqrt_vjp
VJP_SAVES["sqrt"] = SAVES_OUTPUT


def _rsqrt_deriv(x: Tensor, out: Tensor) -> Tensor:
    return mul(_like(-0.5, out), div(out, x))  # -x**(-3/2) / 2 = -rsqrt(x) / (2 x)


def rsqrt_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _rsqrt_deriv(primals[0], outputs[0]))  # d rsqrt x = -rsqrt(x)/(2x) dx
JVP_RULES["rsqrt"] = rsqrt_jvp


def rsqrt_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    deriv = _rsqrt_deriv(primals[0], outputs[0])
    return _holomorphic_unary_vjp(_single_ct(cotangents), deriv)  # x-bar = ct conj(-rsqrt(x) / (2 x))
VJP_RULES["rsqrt"] = rsqrt_vjp
VJP_SAVES["rsqrt"] = ((0,), (0,))


def conj_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return [conj(tangents[0])]  # d conj z = conj dz (linear)
JVP_RULES["conj"] = conj_jvp


def conj_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    # conj is its own adjoint; a real input (should conj ever return complex for it) takes the real part
    return [_cast(conj(_single_ct(cotangents)), primals[0].dtype)]  # z-bar = conj(ct)
VJP_RULES["conj"] = conj_vjp
VJP_SAVES["conj"] = SAVES_NOTHING


def real_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    return [_cast(real(t), out.dtype)]  # type: ignore[arg-type]  # d Re z = Re dz
JVP_RULES["real"] = real_jvp


def real_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return [_cast(_single_ct(cotangents), primals[0].dtype)]  # z-bar = complex(ct, 0)
VJP_RULES["real"] = real_vjp
VJP_SAVES["real"] = SAVES_NOTHING


def imag_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (x,), (t,), (out,) = primals, tangents, outputs
    if not _is_complex(x):
        return [Zero.like(out)]  # the imaginary part of a real value is constantly 0
    return [imag(t)]  # type: ignore[arg-type]  # d Im z = Im dz
JVP_RULES["imag"] = imag_jvp


def imag_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (x,) = _single_ct(cotangents), primals
    if not _is_complex(x):
        return [Zero.like(x)]
    return [mul(convert(ct, x.dtype), _like(1j, x))]  # z-bar = i ct
VJP_RULES["imag"] = imag_vjp
VJP_SAVES["imag"] = SAVES_NOTHING


def _square_deriv(x: Tensor) -> Tensor:
    return add(x, x)  # 2 x


def square_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _square_deriv(primals[0]))  # d x**2 = 2 x dx
JVP_RULES["square"] = square_jvp


def square_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), _square_deriv(primals[0]))  # x-bar = ct conj(2 x)
VJP_RULES["square"] = square_vjp
VJP_SAVES["square"] = SAVES_INPUT


def _reciprocal_deriv(out: Tensor) -> Tensor:
    return neg(square(out))  # -1 / x**2


def reciprocal_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _reciprocal_deriv(outputs[0]))  # d (1/x) = -dx / x**2
JVP_RULES["reciprocal"] = reciprocal_jvp


def reciprocal_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]
) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), _reciprocal_deriv(outputs[0]))  # x-bar = -ct conj(1/x**2)
VJP_RULES["reciprocal"] = reciprocal_vjp
VJP_SAVES["reciprocal"] = SAVES_OUTPUT


# -- exponentials, trigonometric and hyperbolic ------------------------------------------------
# (floor, ceil, round, is_finite, nextafter and the integer ops are declared non-differentiable:
# their outputs carry no tangent, as JAX's zero JVPs say.)


def _exp2_deriv(x: Tensor, out: Tensor) -> Tensor:
    return mul(out, log(_scalar(2, out)))  # log(2) 2**x (log(2) in the operand's dtype, as JAX)


def exp2_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _exp2_deriv(primals[0], outputs[0]))  # d 2**x = log 2 2**x dx
JVP_RULES["exp2"] = exp2_jvp


def exp2_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    deriv = _exp2_deriv(primals[0], outputs[0])
    return _holomorphic_unary_vjp(_single_ct(cotangents), deriv)  # x-bar = ct conj(log 2 2**x)
VJP_RULES["exp2"] = exp2_vjp
VJP_SAVES["exp2"] = SAVES_OUTPUT


def sinh_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], cosh(primals[0]))  # d sinh x = cosh x dx
JVP_RULES["sinh"] = sinh_jvp


def sinh_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), cosh(primals[0]))  # x-bar = ct conj(cosh x)
VJP_RULES["sinh"] = sinh_vjp
VJP_SAVES["sinh"] = SAVES_INPUT


def cosh_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], sinh(primals[0]))  # d cosh x = sinh x dx
JVP_RULES["cosh"] = cosh_jvp


def cosh_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), sinh(primals[0]))  # x-bar = ct conj(sinh x)
VJP_RULES["cosh"] = cosh_vjp
VJP_SAVES["cosh"] = SAVES_INPUT


def _tan_deriv(out: Tensor) -> Tensor:
    return add(_scalar(1, out), square(out))  # 1 + tan(x)**2, from the output (as JAX)


def tan_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _tan_deriv(outputs[0]))  # d tan x = (1 + tan(x)**2) dx
JVP_RULES["tan"] = tan_jvp


def tan_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), _tan_deriv(outputs[0]))  # x-bar = ct conj(1 + tan**2)
VJP_RULES["tan"] = tan_vjp
VJP_SAVES["tan"] = SAVES_OUTPUT


def _asin_deriv(x: Tensor) -> Tensor:
    return rsqrt(sub(_scalar(1, x), square(x)))  # 1 / sqrt(1 - x**2)


def asin_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _asin_deriv(primals[0]))  # d asin x = dx / sqrt(1 - x**2)
JVP_RULES["asin"] = asin_jvp


def asin_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), _asin_deriv(primals[0]))  # x-bar = ct conj(1/sqrt(1-x**2))
VJP_RULES["asin"] = asin_vjp
VJP_SAVES["asin"] = SAVES_INPUT


def _acos_deriv(x: Tensor) -> Tensor:
    return neg(_asin_deriv(x))  # -1 / sqrt(1 - x**2)


def acos_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _acos_deriv(primals[0]))  # d acos x = -dx / sqrt(1 - x**2)
JVP_RULES["acos"] = acos_jvp


def acos_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), _acos_deriv(primals[0]))  # x-bar = -ct conj(1/sqrt(1-x**2))
VJP_RULES["acos"] = acos_vjp
VJP_SAVES["acos"] = SAVES_INPUT


def _atan_denominator(x: Tensor) -> Tensor:
    return add(_scalar(1, x), square(x))  # 1 + x**2


def atan_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return [div(tangents[0], _atan_denominator(primals[0]))]  # type: ignore[arg-type]  # d atan x = dx / (1 + x**2)
JVP_RULES["atan"] = atan_jvp


def atan_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return [div(_single_ct(cotangents), _conj(_atan_denominator(primals[0])))]  # x-bar = ct / conj(1 + x**2)
VJP_RULES["atan"] = atan_vjp
VJP_SAVES["atan"] = SAVES_INPUT


def _asinh_deriv(x: Tensor) -> Tensor:
    return rsqrt(add(square(x), _scalar(1, x)))  # 1 / sqrt(x**2 + 1)


def asinh_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _asinh_deriv(primals[0]))  # d asinh x = dx / sqrt(x**2 + 1)
JVP_RULES["asinh"] = asinh_jvp


def asinh_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    deriv = _asinh_deriv(primals[0])
    return _holomorphic_unary_vjp(_single_ct(cotangents), deriv)  # x-bar = ct conj(1 / sqrt(x**2 + 1))
VJP_RULES["asinh"] = asinh_vjp
VJP_SAVES["asinh"] = SAVES_INPUT


def _acosh_deriv(x: Tensor) -> Tensor:
    return rsqrt(sub(square(x), _scalar(1, x)))  # 1 / sqrt(x**2 - 1) (JAX's form: the domain is x >= 1)


def acosh_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _acosh_deriv(primals[0]))  # d acosh x = dx / sqrt(x**2 - 1)
JVP_RULES["acosh"] = acosh_jvp


def acosh_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    deriv = _acosh_deriv(primals[0])
    return _holomorphic_unary_vjp(_single_ct(cotangents), deriv)  # x-bar = ct conj(1 / sqrt(x**2 - 1))
VJP_RULES["acosh"] = acosh_vjp
VJP_SAVES["acosh"] = SAVES_INPUT


def _atanh_deriv(x: Tensor) -> Tensor:
    one = _scalar(1, x)
    return mul(reciprocal(add(one, x)), reciprocal(sub(one, x)))  # 1 / ((1 + x) (1 - x)), factored as JAX


def atanh_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _atanh_deriv(primals[0]))  # d atanh x = dx / (1 - x**2)
JVP_RULES["atanh"] = atanh_jvp


def atanh_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), _atanh_deriv(primals[0]))  # x-bar = ct conj(1/(1-x**2))
VJP_RULES["atanh"] = atanh_vjp
VJP_SAVES["atanh"] = SAVES_INPUT


def _cbrt_deriv(out: Tensor) -> Tensor:
    return div(_scalar(1 / 3, out), square(out))  # 1 / (3 cbrt(x)**2), from the output (as JAX)


def cbrt_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _holomorphic_unary_jvp(tangents[0], _cbrt_deriv(outputs[0]))  # d cbrt x = dx / (3 cbrt(x)**2)
JVP_RULES["cbrt"] = cbrt_jvp


def cbrt_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _holomorphic_unary_vjp(_single_ct(cotangents), _cbrt_deriv(outputs[0]))  # x-bar = ct / (3 cbrt(x)**2)
VJP_RULES["cbrt"] = cbrt_vjp
VJP_SAVES["cbrt"] = SAVES_OUTPUT


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


# -- convert ----------------------------------------------------------------------------------


def convert_jvp(
    primals: Primals, tangents: Tangents, outputs: Primals, new_dtype: DType, weak_type: bool = False
) -> list[TangentLike]:
    (t,), (out,) = tangents, outputs
    if not out.dtype.is_inexact:
        return [Zero.like(out)]  # integer / bool results carry no tangent
    return [_cast(t, out.dtype)]  # type: ignore[arg-type]  # d convert(x) = convert(dx) (real part when to real)
JVP_RULES["convert"] = convert_jvp


def convert_vjp(
    cotangents: Tangents,
    primals: Primals,
    outputs: Primals,
    needs: Sequence[bool],
    new_dtype: DType,
    weak_type: bool = False,
) -> list[TangentLike]:
    (ct,), (x,), (out,) = cotangents, primals, outputs
    if is_zero(ct) or not out.dtype.is_inexact or not x.dtype.is_inexact:
        return [Zero.like(x)]
    # The adjoint of each real-linear convert is the convert back: complex -> real
    # keeps the real part (the adjoint of embedding a real input in the complex
    # plane), real -> complex embeds (the adjoint of taking the real part), widths
    # just change.
    return [_cast(ct, x.dtype)]  # type: ignore[arg-type]  # x-bar = convert(ct, x.dtype)
VJP_RULES["convert"] = convert_vjp
VJP_SAVES["convert"] = SAVES_NOTHING


# -- select, clamp ----------------------------------------------------------------------------


def _zeros_like(x: Tensor | Zero) -> Tensor:
    return _const(0, tuple(x.shape), x.dtype)


def select_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (pred, _, _), (_, tt, tf), (out,) = primals, tangents, outputs
    if is_zero(tt) and is_zero(tf):
        return [Zero.like(out)]
    on_true = _zeros_like(out) if is_zero(tt) else _broadcast_to(tt, tuple(out.shape))  # type: ignore[arg-type]
    on_false = _zeros_like(out) if is_zero(tf) else _broadcast_to(tf, tuple(out.shape))  # type: ignore[arg-type]
    return [select(pred, on_true, on_false)]  # d select(p, a, b) = select(p, da, db)
JVP_RULES["select"] = select_jvp


def select_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (pred, on_true, on_false) = _single_ct(cotangents), primals
    zeros = _zeros_like(ct) if needs[1] or needs[2] else None
    gt_ = _vjp_in(select(pred, ct, zeros), on_true) if needs[1] else Zero.like(on_true)
    gf = _vjp_in(select(pred, zeros, ct), on_false) if needs[2] else Zero.like(on_false)
    return [Zero.like(pred), gt_, gf]  # a-bar = select(p, ct, 0), b-bar = select(p, 0, ct)
VJP_RULES["select"] = select_vjp


def select_n_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    which, (out,) = primals[0], outputs
    if all(is_zero(t) for t in tangents[1:]):
        return [Zero.like(out)]
    shape = tuple(out.shape)
    cases = [_zeros_like(out) if is_zero(t) else _broadcast_to(t, shape) for t in tangents[1:]]  # type: ignore[arg-type]
    return [select_n(which, *cases)]  # d select_n(w, *xs) = select_n(w, *dxs)
JVP_RULES["select_n"] = select_n_jvp


def select_n_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, which, cases = _single_ct(cotangents), primals[0], primals[1:]
    zeros = _zeros_like(ct) if any(needs[1:]) else None
    result: list[TangentLike] = [Zero.like(which)]
    for i, x in enumerate(cases):
        if needs[i + 1]:
            picked = [ct if j == i else zeros for j in range(len(cases))]
            result.append(_vjp_in(select_n(which, *picked), x))
        else:
            result.append(Zero.like(x))
    return result  # x_i-bar = select_n(w, 0, .., ct at i, .., 0)
VJP_RULES["select_n"] = select_n_vjp
VJP_SAVES["select_n"] = SAVES_INPUT


def _clamp_mask(i: int, lo: Tensor, x: Tensor, hi: Tensor) -> Tensor:
    """Where clamp's result follows input ``i`` for derivative purposes (jax.lax.clamp's JVP).

    ``lo`` where ``lo > x`` and ``lo < hi``; ``x`` strictly inside ``(lo, hi)``;
    ``hi`` where ``hi < x``. Ties send the derivative nowhere.
    """
    if i == 0:
        return logical_and(gt(lo, x), lt(lo, hi))
    if i == 1:
        return logical_and(gt(x, lo), lt(x, hi))
    return lt(hi, x)


def clamp_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (out,) = outputs
    result: TangentLike = Zero.like(out)
    for i, t in enumerate(tangents):
        if not is_zero(t):
            mask = _clamp_mask(i, *primals)
            part = select(mask, _broadcast_to(t, tuple(out.shape)), _zeros_like(out))  # type: ignore[arg-type]
            result = add_any(result, part)
    return [result]  # d clamp = [lo > x, lo < hi] d lo + [lo < x < hi] dx + [hi < x] d hi
JVP_RULES["clamp"] = clamp_jvp


def clamp_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct = _single_ct(cotangents)
    zeros = _zeros_like(ct)
    return [
        _vjp_in(select(_clamp_mask(i, *primals), ct, zeros), p) if need else Zero.like(p)
        for i, (p, need) in enumerate(zip(primals, needs, strict=True))
    ]  # each input's cotangent is ct where the result followed it, 0 elsewhere
VJP_RULES["clamp"] = clamp_vjp
