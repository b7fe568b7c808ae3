"""JVP and VJP rules of the elementwise unary ops: ``neg`` ... ``reciprocal``, the exponentials,
trigonometric and hyperbolic functions (``floor``, ``ceil``, ``round``, ``is_finite`` and the integer
ops are declared non-differentiable).

Each rule is a named function followed by its registration line; the trailing comment states the
identity it implements. The conventions are those of the elementwise rules (``autodiff.derivatives``).
"""

from __future__ import annotations

from collections.abc import Sequence

from autodiff.derivatives._common import (
    Primals,
    Tangents,
    _cast,
    _conj,
    _is_complex,
    _like,
    _replace_zero,
    _scalar,
    _single_ct,
    _zero_in,
)
from autodiff.rules import JVP_RULES, SAVES_INPUT, SAVES_NOTHING, SAVES_OUTPUT, VJP_RULES, VJP_SAVES
from autodiff.zeros import TangentLike, Zero
from runtime.core.lax import (
    add,
    conj,
    convert,
    cos,
    cosh,
    div,
    ge,
    imag,
    integer_pow,
    log,
    mul,
    neg,
    real,
    reciprocal,
    rsqrt,
    select,
    sin,
    sinh,
    square,
    sub,
)
from runtime.core.tensor import Tensor

# -- helpers ------------------------------------------------------------------------------


def _zero_out(outputs: Primals) -> list[TangentLike]:
    return [Zero.like(o) for o in outputs]


def _holomorphic_unary_jvp(t: TangentLike, deriv: Tensor) -> list[TangentLike]:
    return [mul(t, deriv)]  # type: ignore[arg-type]


def _holomorphic_unary_vjp(ct: Tensor, deriv: Tensor) -> list[TangentLike]:
    return [mul(ct, _conj(deriv))]


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


# -- integer_pow ------------------------------------------------------------------------------------


def _integer_pow_deriv(x: Tensor, y: int) -> Tensor:
    return mul(_scalar(y, x), integer_pow(x, y - 1))  # y x**(y - 1), as JAX's rule computes it


def integer_pow_jvp(primals: Primals, tangents: Tangents, outputs: Primals, y: int) -> list[TangentLike]:
    if y == 0:
        return _zero_out(outputs)  # x**0 = 1 is constant
    return _holomorphic_unary_jvp(tangents[0], _integer_pow_deriv(primals[0], y))  # d x**y = y x**(y-1) dx
JVP_RULES["integer_pow"] = integer_pow_jvp


def integer_pow_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool], y: int
) -> list[TangentLike]:
    if y == 0:
        return [Zero.like(primals[0])]  # x**0 = 1 is constant
    ct = _single_ct(cotangents)
    return _holomorphic_unary_vjp(ct, _integer_pow_deriv(primals[0], y))  # x-bar = ct conj(y x**(y-1))
VJP_RULES["integer_pow"] = integer_pow_vjp
VJP_SAVES["integer_pow"] = SAVES_INPUT
