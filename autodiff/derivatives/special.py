"""JVP and VJP rules of the special functions (erf, lgamma, igamma, bessel_i0e ...), as JAX defines
them in ``jax._src.lax.special``.

Each is real-valued: the derivative is a real factor, the JVP multiplies the tangent by it and the
VJP the cotangent. Rules follow the conventions of the elementwise rules (``autodiff.derivatives``: one
named function, then its registration); ``zeta`` and ``igamma_grad_a`` are declared non-differentiable,
as JAX gives them no rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import ml_dtypes

from autodiff.derivatives._common import _jvp_out, _scalar, _single_ct, _vjp_in
from autodiff.rules import JVP_RULES, SAVES_INPUT, SAVES_OUTPUT, VJP_RULES, VJP_SAVES, Positions
from autodiff.zeros import TangentLike, Zero, add_any, is_zero
from runtime.core.errors import CastwiseError
from runtime.core.lax import (
    abs,  # noqa: A004
    add,
    bessel_i0e,
    bessel_i1e,
    digamma,
    exp,
    full,
    gt,
    igamma_grad_a,
    lgamma,
    log,
    mul,
    neg,
    polygamma,
    reciprocal,
    select,
    sign,
    square,
    sub,
)
from runtime.core.tensor import Tensor

Tangents = Sequence[TangentLike]
Primals = Sequence[Tensor]

#: Both the input and the output (bessel_i0e / bessel_i1e's derivatives read both).
SAVES_INPUT_AND_OUTPUT: Positions = ((0,), (0,))


def _unary_jvp(t: TangentLike, deriv: Tensor) -> list[TangentLike]:
    return [mul(t, deriv)]  # type: ignore[arg-type]


def _unary_vjp(cotangents: Tangents, deriv: Tensor) -> list[TangentLike]:
    return [mul(_single_ct(cotangents), deriv)]


# -- erf, erfc, erf_inv ---------------------------------------------------------------------------


def _erf_deriv(x: Tensor) -> Tensor:
    return mul(_scalar(2 / math.sqrt(math.pi), x), exp(neg(square(x))))  # 2/sqrt(pi) exp(-x**2)


def erf_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _unary_jvp(tangents[0], _erf_deriv(primals[0]))  # d erf x = 2/sqrt(pi) exp(-x**2) dx


JVP_RULES["erf"] = erf_jvp


def erf_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _unary_vjp(cotangents, _erf_deriv(primals[0]))  # x-bar = ct 2/sqrt(pi) exp(-x**2)


VJP_RULES["erf"] = erf_vjp
VJP_SAVES["erf"] = SAVES_INPUT


def erfc_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _unary_jvp(tangents[0], neg(_erf_deriv(primals[0])))  # d erfc x = -2/sqrt(pi) exp(-x**2) dx


JVP_RULES["erfc"] = erfc_jvp


def erfc_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _unary_vjp(cotangents, neg(_erf_deriv(primals[0])))  # x-bar = -ct 2/sqrt(pi) exp(-x**2)


VJP_RULES["erfc"] = erfc_vjp
VJP_SAVES["erfc"] = SAVES_INPUT


def _erf_inv_deriv(out: Tensor) -> Tensor:
    return mul(_scalar(math.sqrt(math.pi) / 2, out), exp(square(out)))  # sqrt(pi)/2 exp(erf_inv(x)**2)


def erf_inv_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _unary_jvp(tangents[0], _erf_inv_deriv(outputs[0]))  # from the output, as JAX


JVP_RULES["erf_inv"] = erf_inv_jvp


def erf_inv_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _unary_vjp(cotangents, _erf_inv_deriv(outputs[0]))


VJP_RULES["erf_inv"] = erf_inv_vjp
VJP_SAVES["erf_inv"] = SAVES_OUTPUT


# -- lgamma, digamma, polygamma -------------------------------------------------------------------


def lgamma_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _unary_jvp(tangents[0], digamma(primals[0]))  # d lgamma x = digamma(x) dx


JVP_RULES["lgamma"] = lgamma_jvp


def lgamma_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _unary_vjp(cotangents, digamma(primals[0]))


VJP_RULES["lgamma"] = lgamma_vjp
VJP_SAVES["lgamma"] = SAVES_INPUT


def _trigamma(x: Tensor) -> Tensor:
    return polygamma(_scalar(1.0, x), x)


def digamma_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _unary_jvp(tangents[0], _trigamma(primals[0]))  # d digamma x = polygamma(1, x) dx


JVP_RULES["digamma"] = digamma_jvp


def digamma_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _unary_vjp(cotangents, _trigamma(primals[0]))


VJP_RULES["digamma"] = digamma_vjp
VJP_SAVES["digamma"] = SAVES_INPUT


class NoDerivativeError(CastwiseError, NotImplementedError):
    """A derivative JAX does not define either (polygamma in m)."""


def _no_m_derivative() -> NoDerivativeError:
    return NoDerivativeError("polygamma(m, x): no derivative with respect to m (JAX defines none either)")


def _next_polygamma(m: Tensor, x: Tensor) -> Tensor:
    return polygamma(add(m, _scalar(1.0, m)), x)


def polygamma_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    (m, x), (tm, tx), (out,) = primals, tangents, outputs
    if not is_zero(tm):
        raise _no_m_derivative()
    if is_zero(tx):
        return [Zero.like(out)]
    return [_jvp_out(mul(tx, _next_polygamma(m, x)), out)]  # type: ignore[arg-type]  # d = polygamma(m+1, x) dx


JVP_RULES["polygamma"] = polygamma_jvp


def polygamma_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    ct, (m, x) = _single_ct(cotangents), primals
    if needs[0]:
        raise _no_m_derivative()
    gx = _vjp_in(mul(ct, _next_polygamma(m, x)), x) if needs[1] else Zero.like(x)
    return [Zero.like(m), gx]


VJP_RULES["polygamma"] = polygamma_vjp


# -- igamma, igammac --------------------------------------------------------------------------------


def _igamma_dx(a: Tensor, x: Tensor) -> Tensor:
    # exp(-x + (a - 1) log x - lgamma(a)): the integrand x**(a-1) e**-x / Gamma(a)
    return exp(sub(add(neg(x), mul(sub(a, _scalar(1.0, a)), log(x))), lgamma(a)))


def _igamma_da(a: Tensor, x: Tensor, negate: bool) -> Tensor:
    d = igamma_grad_a(a, x)
    return neg(d) if negate else d


def _igamma_dx_signed(a: Tensor, x: Tensor, negate: bool) -> Tensor:
    d = _igamma_dx(a, x)
    return neg(d) if negate else d


def _igamma_family_jvp(primals: Primals, tangents: Tangents, outputs: Primals, negate: bool) -> list[TangentLike]:
    (a, x), (ta, tx), (out,) = primals, tangents, outputs
    ga = Zero.like(out) if is_zero(ta) else _jvp_out(mul(ta, _igamma_da(a, x, negate)), out)  # type: ignore[arg-type]
    gx = Zero.like(out) if is_zero(tx) else _jvp_out(mul(tx, _igamma_dx_signed(a, x, negate)), out)  # type: ignore[arg-type]
    return [add_any(ga, gx)]


def _igamma_family_vjp(
    cotangents: Tangents, primals: Primals, needs: Sequence[bool], negate: bool
) -> list[TangentLike]:
    ct, (a, x) = _single_ct(cotangents), primals
    ga = _vjp_in(mul(ct, _igamma_da(a, x, negate)), a) if needs[0] else Zero.like(a)
    gx = _vjp_in(mul(ct, _igamma_dx_signed(a, x, negate)), x) if needs[1] else Zero.like(x)
    return [ga, gx]


def igamma_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _igamma_family_jvp(primals, tangents, outputs, False)  # d P = igamma_grad_a da + x**(a-1)e**-x/G(a) dx


JVP_RULES["igamma"] = igamma_jvp


def igamma_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _igamma_family_vjp(cotangents, primals, needs, False)


VJP_RULES["igamma"] = igamma_vjp


def igammac_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _igamma_family_jvp(primals, tangents, outputs, True)  # Q = 1 - P: both partials negated


JVP_RULES["igammac"] = igammac_jvp


def igammac_vjp(cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]) -> list[TangentLike]:
    return _igamma_family_vjp(cotangents, primals, needs, True)


VJP_RULES["igammac"] = igammac_vjp


# -- bessel_i0e, bessel_i1e -------------------------------------------------------------------------


def _i0e_deriv(x: Tensor, out: Tensor) -> Tensor:
    return sub(bessel_i1e(x), mul(sign(x), out))  # i1e(x) - sign(x) i0e(x)


def bessel_i0e_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _unary_jvp(tangents[0], _i0e_deriv(primals[0], outputs[0]))


JVP_RULES["bessel_i0e"] = bessel_i0e_jvp


def bessel_i0e_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]
) -> list[TangentLike]:
    return _unary_vjp(cotangents, _i0e_deriv(primals[0], outputs[0]))


VJP_RULES["bessel_i0e"] = bessel_i0e_vjp
VJP_SAVES["bessel_i0e"] = SAVES_INPUT_AND_OUTPUT


def _i1e_deriv(x: Tensor, out: Tensor) -> Tensor:
    # i0e(x) - i1e(x) (sign(x) + 1/x), with x kept off 0 (where the limit is 1/2), as JAX writes it
    eps = float(ml_dtypes.finfo(x.dtype.storage).eps)
    shape = tuple(x.shape)
    not_tiny = gt(abs(x), _scalar(eps, x))
    safe_x = select(not_tiny, x, full(shape, eps, x.dtype))
    d = sub(bessel_i0e(safe_x), mul(out, add(sign(safe_x), reciprocal(safe_x))))
    return select(not_tiny, d, full(shape, 0.5, x.dtype))


def bessel_i1e_jvp(primals: Primals, tangents: Tangents, outputs: Primals) -> list[TangentLike]:
    return _unary_jvp(tangents[0], _i1e_deriv(primals[0], outputs[0]))


JVP_RULES["bessel_i1e"] = bessel_i1e_jvp


def bessel_i1e_vjp(
    cotangents: Tangents, primals: Primals, outputs: Primals, needs: Sequence[bool]
) -> list[TangentLike]:
    return _unary_vjp(cotangents, _i1e_deriv(primals[0], outputs[0]))


VJP_RULES["bessel_i1e"] = bessel_i1e_vjp
VJP_SAVES["bessel_i1e"] = SAVES_INPUT_AND_OUTPUT
