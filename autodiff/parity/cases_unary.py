"""The parity sweep's rows of the elementwise unary ops (``runtime.core.ops`` families ``unary``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autodiff.parity._common import _ALL_EXACT, _INT_EXACT, _REAL_EXACT, Spec, _as_float, _jnp, _lax
from runtime.core import lax as F


def _lax_conj(x: Any) -> Any:
    # castwise conj keeps a real float real (like jnp.conj); lax.conj makes it complex.
    jnp = _jnp()
    if jnp.issubdtype(x.dtype, jnp.floating):
        return x
    return _lax().conj(x)


def _inside_unit(operands: list[Any]) -> bool:
    """asin / acos / atanh: real operands inside (-1, 1), away from the singular ends (complex: any)."""
    (x,) = operands
    return bool(np.iscomplexobj(x) or np.all(np.abs(_as_float(x)) < 0.9))


def _above_one(operands: list[Any]) -> bool:
    """acosh: real operands above 1, away from the singular end (complex: any)."""
    (x,) = operands
    return bool(np.iscomplexobj(x) or np.all(_as_float(x) > 1.1))


def _unary_spec(name: str, lax_ref: Callable[..., Any] | None = None, domain: str = "any",
                exact: frozenset[str] = _INT_EXACT,
                valid: Callable[[list[Any]], bool] | None = None) -> Spec:  # fmt: skip
    """An elementwise unary op on shape [3]; the lax reference defaults to ``lax.<name>``."""
    fn = getattr(F, name)
    if lax_ref is None:

        def lax_ref(x: Any, _n: str = name) -> Any:
            return getattr(_lax(), _n)(x)

    return Spec(name, name, fn, lax_ref, ("x",), ((3,),), (domain,), plan_layout=(0,), exact=exact, valid=valid)


def specs() -> list[Spec]:
    """The sweep's rows of the elementwise unary ops."""
    return [
        _unary_spec("neg", exact=_ALL_EXACT),
        _unary_spec("abs", domain="nonzero", exact=_REAL_EXACT),
        _unary_spec("sign", domain="nonzero", exact=_REAL_EXACT),
        _unary_spec("exp"),
        _unary_spec("log", domain="pos"),
        _unary_spec("expm1"),
        _unary_spec("log1p", domain="pos"),
        _unary_spec("sin"),
        _unary_spec("cos"),
        _unary_spec("tanh"),
        _unary_spec("logistic"),
        _unary_spec("sqrt", domain="pos", exact=_REAL_EXACT),
        _unary_spec("rsqrt", domain="pos"),
        _unary_spec("conj", _lax_conj, exact=_ALL_EXACT),
        _unary_spec("real", exact=_ALL_EXACT),
        _unary_spec("imag", exact=_ALL_EXACT),
        _unary_spec("square", exact=_REAL_EXACT),
        _unary_spec("reciprocal", domain="nonzero", exact=_REAL_EXACT),
        _unary_spec("floor", exact=_REAL_EXACT),
        _unary_spec("ceil", exact=_REAL_EXACT),
        Spec("round", "round", lambda x: F.round(x, 0), lambda x: _lax().round(x, _lax().RoundingMethod(0)),
             ("x",), ((3,),), ("any",), plan_layout=(0,), exact=_REAL_EXACT),
        Spec("round-even", "round", lambda x: F.round(x, 1), lambda x: _lax().round(x, _lax().RoundingMethod(1)),
             ("x",), ((3,),), ("any",), plan_layout=(0,), exact=_REAL_EXACT),
        _unary_spec("is_finite", exact=_REAL_EXACT),
        _unary_spec("exp2"),
        _unary_spec("sinh"),
        _unary_spec("cosh"),
        _unary_spec("tan"),
        _unary_spec("asin", valid=_inside_unit),
        _unary_spec("acos", valid=_inside_unit),
        _unary_spec("atan"),
        _unary_spec("asinh"),
        _unary_spec("acosh", domain="pos", valid=_above_one),
        _unary_spec("atanh", valid=_inside_unit),
        _unary_spec("cbrt", domain="nonzero"),
        Spec("not", "not", F.logical_not, lambda x: _lax().bitwise_not(x), ("x",), ((3,),), ("any",),
             plan_layout=(0,), exact=_ALL_EXACT),
        _unary_spec("population_count", exact=_ALL_EXACT),
        _unary_spec("clz", exact=_ALL_EXACT),
        Spec("integer_pow", "integer_pow", lambda x: F.integer_pow(x, 3), lambda x: _lax().integer_pow(x, 3),
             ("x",), ((3,),), ("any",), plan_layout=(0,), exact=_INT_EXACT),
        Spec("integer_pow-negative", "integer_pow", lambda x: F.integer_pow(x, -2),
             lambda x: _lax().integer_pow(x, -2), ("x",), ((3,),), ("nonzero",), plan_layout=(0,)),
        _unary_spec("stop_gradient", exact=_ALL_EXACT),
    ]  # fmt: skip
