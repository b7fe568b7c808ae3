"""Lowering of ``convert`` (``runtime.core.ops`` family ``convert``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from typing import Any

from passes.lower_jax._common import LOWERINGS, Lowered, _kind, with_weak_type
from runtime.core import dtypes as dt
from runtime.core.graph import Eqn


def convert_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.convert_element_type to the target's storage; complex -> bool is ``x != 0`` (either
    part, as castwise's kernel and jnp.astype give it), complex -> float or int takes lax.real first."""
    from jax import lax

    target = dt.dtype(eqn.params["new_dtype"])
    if _kind(x) == "complex" and target.kind == "bool":
        return (lax.ne(x, lax.full_like(x, 0)),)  # lax.convert_element_type would read the real part only
    if _kind(x) == "complex" and target.kind != "complex":
        x = lax.real(x)  # what castwise (and XLA) mean, stated instead of warned about
    if eqn.params.get("weak_type"):
        return (with_weak_type(x, True, target.storage),)  # jax.numpy's weak convert
    return (lax.convert_element_type(x, target.storage),)


LOWERINGS["convert"] = convert_lowering


def bitcast_convert_type_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.bitcast_convert_type to the target's storage dtype."""
    from jax import lax

    return (lax.bitcast_convert_type(x, eqn.params["new_dtype"].storage),)


LOWERINGS["bitcast_convert_type"] = bitcast_convert_type_lowering
