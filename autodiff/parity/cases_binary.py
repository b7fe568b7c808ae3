"""The parity sweep's rows of the elementwise binary ops (``runtime.core.ops`` families ``binary``,
``compare``, ``logical``).

``specs()`` returns them; ``cases.build_specs`` assembles every family's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autodiff.parity._common import _ALL_EXACT, _INT_EXACT, _REAL_EXACT, Spec, _as_float, _jnp, _lax
from runtime.core import lax as F


def _lax_pow(x: Any, y: Any) -> Any:
    # castwise accepts int ** int with jnp.power's algorithm (a documented departure
    # from lax.pow, which refuses integer bases): the reference follows the same split.
    jnp = _jnp()
    if jnp.issubdtype(x.dtype, jnp.integer):
        return jnp.power(x, y)
    return _lax().pow(x, y)


def _lax_floor_div(x: Any, y: Any) -> Any:
    return _jnp().floor_divide(x, y)  # no lax primitive: castwise follows jnp.floor_divide


def _rem_valid(operands: list[Any]) -> bool:
    """rem jumps where x / y is an integer: keep the ratio's fraction away from 0 and 1."""
    x, y = (_as_float(np.real(o) if np.iscomplexobj(o) else o) for o in operands)
    ratio = np.abs(x / y)
    frac = ratio - np.floor(ratio)
    return bool(np.all((frac > 0.05) & (frac < 0.95)))


def _binary_spec(name: str, lax_name: str | Callable[..., Any], jnp_name: str | None,
                 domains: tuple[str, str] = ("any", "any"), exact: frozenset[str] = _REAL_EXACT,
                 valid: Callable[[list[Any]], bool] | None = None, scalar_not_exact: bool = False) -> Spec:  # fmt: skip
    """An elementwise binary op: promoted operands, Python scalars allowed, shape [3]."""
    fn = getattr(F, {"and": "logical_and", "or": "logical_or", "xor": "logical_xor"}.get(name, name))
    if callable(lax_name):
        lax_ref = lax_name
    else:

        def lax_ref(x: Any, y: Any, _n: str = lax_name) -> Any:
            return getattr(_lax(), _n)(x, y)

    jnp_ref = None
    if jnp_name is not None:

        def jnp_ref(x: Any, y: Any, _n: str = jnp_name) -> Any:
            return getattr(_jnp(), _n)(x, y)

    return Spec(name, name, fn, lax_ref, ("x", "y"), ((3,), (3,)), domains, jnp_ref, promoted=(0, 1),
                scalar_ok=(0, 1), plan_layout=(0, 1), exact=exact, valid=valid,
                scalar_not_exact=scalar_not_exact)  # fmt: skip


def specs() -> list[Spec]:
    """The sweep's rows of the elementwise binary ops."""
    return [
        _binary_spec("add", "add", "add", exact=_ALL_EXACT),
        _binary_spec("sub", "sub", "subtract", exact=_ALL_EXACT),
        _binary_spec("mul", "mul", "multiply"),
        _binary_spec("div", "div", "true_divide", ("any", "nonzero"), scalar_not_exact=True),
        _binary_spec("rem", "rem", "fmod", ("any", "nonzero"), valid=_rem_valid),
        _binary_spec("pow", _lax_pow, "power", ("pos", "exponent"), exact=_INT_EXACT),
        _binary_spec("max", "max", "maximum", exact=_ALL_EXACT),
        _binary_spec("min", "min", "minimum", exact=_ALL_EXACT),
        _binary_spec("atan2", "atan2", "arctan2", exact=_INT_EXACT),
        _binary_spec("floor_div", _lax_floor_div, "floor_divide", ("any", "nonzero")),
        *(_binary_spec(n, n, j, exact=_ALL_EXACT) for n, j in
          (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
           ("ge", "greater_equal"))),
        *(_binary_spec(n, f"bitwise_{n}", f"bitwise_{n}", exact=_ALL_EXACT) for n in ("and", "or", "xor")),
        *(_binary_spec(n, n, None, exact=_ALL_EXACT)
          for n in ("shift_left", "shift_right_arithmetic", "shift_right_logical", "nextafter")),
        _binary_spec("complex", "complex", None, exact=_ALL_EXACT),
    ]  # fmt: skip
