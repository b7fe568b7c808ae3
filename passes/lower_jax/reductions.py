"""Lowerings of the reductions and scans (``runtime.core.ops`` families ``reduce``, ``scan``; and
``reduce_precision``, as in ``runtime.core.kernels``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from typing import Any

from passes.lower_jax._common import LOWERINGS, Lowered
from runtime.core import dtypes as dt
from runtime.core.graph import Eqn

# -- reductions -------------------------------------------------------------------------------


def reduce_sum_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_sum."""
    from jax import lax

    return (lax.reduce_sum(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_sum"] = reduce_sum_lowering


def reduce_prod_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_prod."""
    from jax import lax

    return (lax.reduce_prod(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_prod"] = reduce_prod_lowering


def reduce_max_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_max."""
    from jax import lax

    return (lax.reduce_max(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_max"] = reduce_max_lowering


def reduce_min_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_min."""
    from jax import lax

    return (lax.reduce_min(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_min"] = reduce_min_lowering


def argmax_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.argmax over the one recorded axis."""
    from jax import lax

    (axis,) = eqn.params["axes"]
    return (lax.argmax(x, int(axis), dt.dtype(eqn.params["index_dtype"]).storage),)


LOWERINGS["argmax"] = argmax_lowering


def argmin_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.argmin over the one recorded axis."""
    from jax import lax

    (axis,) = eqn.params["axes"]
    return (lax.argmin(x, int(axis), dt.dtype(eqn.params["index_dtype"]).storage),)


LOWERINGS["argmin"] = argmin_lowering


def reduce_and_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_and."""
    from jax import lax

    return (lax.reduce_and(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_and"] = reduce_and_lowering


def reduce_or_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_or."""
    from jax import lax

    return (lax.reduce_or(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_or"] = reduce_or_lowering


def reduce_xor_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_xor."""
    from jax import lax

    return (lax.reduce_xor(x, tuple(int(a) for a in eqn.params["axes"])),)


LOWERINGS["reduce_xor"] = reduce_xor_lowering


def reduce_precision_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_precision."""
    from jax import lax

    p = eqn.params
    return (lax.reduce_precision(x, exponent_bits=int(p["exponent_bits"]), mantissa_bits=int(p["mantissa_bits"])),)


LOWERINGS["reduce_precision"] = reduce_precision_lowering


def cumsum_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cumsum."""
    from jax import lax

    return (lax.cumsum(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cumsum"] = cumsum_lowering


def cumprod_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cumprod."""
    from jax import lax

    return (lax.cumprod(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cumprod"] = cumprod_lowering


def cummax_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cummax."""
    from jax import lax

    return (lax.cummax(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cummax"] = cummax_lowering


def cummin_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cummin."""
    from jax import lax

    return (lax.cummin(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cummin"] = cummin_lowering


def cumlogsumexp_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.cumlogsumexp."""
    from jax import lax

    return (lax.cumlogsumexp(x, axis=int(eqn.params["axis"]), reverse=bool(eqn.params["reverse"])),)


LOWERINGS["cumlogsumexp"] = cumlogsumexp_lowering
