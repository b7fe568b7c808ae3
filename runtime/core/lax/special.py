"""The op functions of special functions (erf, gamma family, Bessel, zeta).

Each function plans, checks and runs one op (or a short
composition of ops) through the executor; the conventions are in ``runtime.core.lax``.
"""

from __future__ import annotations

from runtime.core import ops
from runtime.core.executor import apply_binary
from runtime.core.lax._common import Operand, _one
from runtime.core.tensor import Tensor

__all__ = [
    "bessel_i0e",
    "bessel_i1e",
    "digamma",
    "erf",
    "erf_inv",
    "erfc",
    "igamma",
    "igamma_grad_a",
    "igammac",
    "lgamma",
    "polygamma",
    "zeta",
]


def erf(x: Operand) -> Tensor:
    """The error function (real floats)."""
    return _one(ops.erf, x)


def erfc(x: Operand) -> Tensor:
    """The complementary error function 1 - erf(x), accurate where erf(x) is near 1."""
    return _one(ops.erfc, x)


def erf_inv(x: Operand) -> Tensor:
    """The inverse error function on [-1, 1]."""
    return _one(ops.erf_inv, x)


def lgamma(x: Operand) -> Tensor:
    """log|Gamma(x)|."""
    return _one(ops.lgamma, x)


def digamma(x: Operand) -> Tensor:
    """The digamma function, the derivative of lgamma."""
    return _one(ops.digamma, x)


def polygamma(m: Operand, x: Operand) -> Tensor:
    """The m-th derivative of digamma (m a whole number >= 0, no derivative in m)."""
    return apply_binary(ops.polygamma, m, x)


def zeta(x: Operand, q: Operand) -> Tensor:
    """The Hurwitz zeta function sum_i (q + i)**-x (no derivative, as in JAX)."""
    return apply_binary(ops.zeta, x, q)


def igamma(a: Operand, x: Operand) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x)."""
    return apply_binary(ops.igamma, a, x)


def igammac(a: Operand, x: Operand) -> Tensor:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return apply_binary(ops.igammac, a, x)


def igamma_grad_a(a: Operand, x: Operand) -> Tensor:
    """d igamma(a, x) / da (no derivative of its own, as in JAX)."""
    return apply_binary(ops.igamma_grad_a, a, x)


def bessel_i0e(x: Operand) -> Tensor:
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0."""
    return _one(ops.bessel_i0e, x)


def bessel_i1e(x: Operand) -> Tensor:
    """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1."""
    return _one(ops.bessel_i1e, x)
