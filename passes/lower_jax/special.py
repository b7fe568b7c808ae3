"""Lowerings of the special functions (erf, lgamma, igamma ...): each is the ``jax.lax`` function of
the same name.

The conventions are in ``passes.lower_jax``.
"""

from __future__ import annotations

from passes.lower_jax._common import LOWERINGS, _lax_binary_lowering, _lax_unary_lowering

# the special functions: each is the lax function of the same name
LOWERINGS["erf"] = _lax_unary_lowering("erf")
LOWERINGS["erfc"] = _lax_unary_lowering("erfc")
LOWERINGS["erf_inv"] = _lax_unary_lowering("erf_inv")
LOWERINGS["lgamma"] = _lax_unary_lowering("lgamma")
LOWERINGS["digamma"] = _lax_unary_lowering("digamma")
LOWERINGS["bessel_i0e"] = _lax_unary_lowering("bessel_i0e")
LOWERINGS["bessel_i1e"] = _lax_unary_lowering("bessel_i1e")
LOWERINGS["polygamma"] = _lax_binary_lowering("polygamma")
LOWERINGS["zeta"] = _lax_binary_lowering("zeta")
LOWERINGS["igamma"] = _lax_binary_lowering("igamma")
LOWERINGS["igammac"] = _lax_binary_lowering("igammac")
LOWERINGS["igamma_grad_a"] = _lax_binary_lowering("igamma_grad_a")
