"""The parity sweep's rows of the special functions (``runtime.core.ops`` section "special functions").

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows. No row compares
values exactly: the kernels evaluate XLA's expansions, but under them NumPy's exp / log / sin round
differently from XLA's own (tests/runtime/test_special.py bounds the distance per dtype).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from autodiff.parity._common import PyScalar, Spec, _as_float, _jax_modules, _lax
from autodiff.parity.cases_binary import _binary_spec
from autodiff.parity.cases_unary import _unary_spec
from runtime.core import lax as F

_NOT_EXACT: frozenset[str] = frozenset()


def _inside_unit(operands: list[Any]) -> bool:
    """erf_inv: operands inside (-1, 1), away from its poles at +-1."""
    (x,) = operands
    return bool(np.all(np.abs(_as_float(x)) < 0.9))


def _zeta_valid(operands: list[Any]) -> bool:
    """zeta(x, q): x > 1, where the series converges (x = 1 is its pole)."""
    return bool(np.all(_as_float(operands[0]) > 1.1))


def _trigamma_ref(x: Any) -> Any:
    return _lax().polygamma(_lax().full_like(x, 1), x)


def _trigamma_jnp(x: Any) -> Any:
    # jax.scipy.special.polygamma wants an integer m; castwise's (lax's) takes the float 1.0, which
    # promotes with x as jax.numpy promotes a Python float
    return _lax().polygamma(*_promote_inexact(1.0, x))


def _jsp() -> Any:
    return _jax_modules()[0].scipy.special


#: The mixed-dtype references under policy ``jax``: jax.scipy.special's functions, which convert
#: integer and bool operands as jax.numpy does (igamma_grad_a has none: lax's, after that conversion).
_JSP: dict[str, Callable[..., Any]] = {
    "zeta": lambda x, q: _jsp().zeta(x, q),
    "igamma": lambda a, x: _jsp().gammainc(a, x),
    "igammac": lambda a, x: _jsp().gammaincc(a, x),
    "igamma_grad_a": lambda a, x: _lax().igamma_grad_a(*_promote_inexact(a, x)),
}


def _promote_inexact(*xs: Any) -> list[Any]:
    from jax._src.numpy.util import promote_args_inexact  # what jax.scipy.special's functions call

    return list(promote_args_inexact("special", *xs))


def _special_binary(name: str, valid: Callable[[list[Any]], bool] | None = None) -> Spec:
    spec = _binary_spec(name, name, None, ("pos", "pos"), exact=_NOT_EXACT, valid=valid)
    return replace(spec, jnp=_JSP[name])


def specs() -> list[Spec]:
    """The sweep's rows of the special functions."""
    return [
        _unary_spec("erf", exact=_NOT_EXACT),
        _unary_spec("erfc", exact=_NOT_EXACT),
        _unary_spec("erf_inv", exact=_NOT_EXACT, valid=_inside_unit),
        _unary_spec("lgamma", domain="pos", exact=_NOT_EXACT),
        _unary_spec("digamma", domain="pos", exact=_NOT_EXACT),
        _unary_spec("bessel_i0e", exact=_NOT_EXACT),
        _unary_spec("bessel_i1e", exact=_NOT_EXACT),
        # polygamma has no derivative in m (JAX neither): the row holds m = 1 (trigamma), a Python float
        Spec("polygamma", "polygamma", lambda x: F.polygamma(1.0, x), _trigamma_ref, ("x",), ((3,),), ("pos",),
             plan_layout=(PyScalar("float"), 0), exact=_NOT_EXACT, jnp=_trigamma_jnp),
        _special_binary("zeta", _zeta_valid),
        _special_binary("igamma"),
        _special_binary("igammac"),
        _special_binary("igamma_grad_a"),
    ]  # fmt: skip
