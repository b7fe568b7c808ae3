"""Lowerings of the windowed reductions (``runtime.core.ops`` family ``window``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

import functools
from typing import Any

from passes.lower_jax._common import LOWERINGS, Lowered, _storage
from runtime.core.graph import Eqn
from runtime.core.kernels import scalar_array

# -- windowed reductions ---------------------------------------------------------------------


def _window(eqn: Eqn) -> dict[str, Any]:
    p = eqn.params
    return {
        "window_dimensions": tuple(int(k) for k in p["window_dimensions"]),
        "window_strides": tuple(int(s) for s in p["window_strides"]),
        "padding": tuple((int(lo), int(hi)) for lo, hi in p["padding"]),
        "base_dilation": tuple(int(b) for b in p["base_dilation"]),
        "window_dilation": tuple(int(d) for d in p["window_dilation"]),
    }


def _reduce_window(eqn: Eqn, x: Any, init: Any, computation: Any) -> Lowered:
    import jax.numpy as jnp
    from jax import lax

    w = _window(eqn)
    return (lax.reduce_window(x, jnp.asarray(init), computation, w["window_dimensions"], w["window_strides"],
                              w["padding"], w["base_dilation"], w["window_dilation"]),)  # fmt: skip


def reduce_window_sum_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_window with lax.add from 0 (lax's reduce_window_sum)."""
    from jax import lax

    return _reduce_window(eqn, x, scalar_array(0, eqn.inputs[0].dtype), lax.add)


LOWERINGS["reduce_window_sum"] = reduce_window_sum_lowering


def reduce_window_max_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_window with lax.max from lax's max identity (lax's reduce_window_max)."""
    from jax import lax

    from runtime.core.kernels.reductions import _extreme_identity

    return _reduce_window(eqn, x, _extreme_identity(_storage(eqn.inputs[0].dtype), True), lax.max)


LOWERINGS["reduce_window_max"] = reduce_window_max_lowering


def reduce_window_min_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reduce_window with lax.min from lax's min identity (lax's reduce_window_min)."""
    from jax import lax

    from runtime.core.kernels.reductions import _extreme_identity

    return _reduce_window(eqn, x, _extreme_identity(_storage(eqn.inputs[0].dtype), False), lax.min)


LOWERINGS["reduce_window_min"] = reduce_window_min_lowering


def _select_prim(eqn: Eqn) -> Any:
    from jax import lax

    return lax.ge_p if eqn.params["select_prim"] == "ge" else lax.le_p


def select_and_gather_add_lowering(eqn: Eqn, tangents: Any, operand: Any) -> Lowered:
    """lax's select_and_gather_add (jax._src.lax.windowed_reductions; it has no public name)."""
    from jax._src.lax.windowed_reductions import _select_and_gather_add

    w = _window(eqn)
    return (_select_and_gather_add(tangents, operand, _select_prim(eqn), w["window_dimensions"],
                                   w["window_strides"], w["padding"], w["base_dilation"],
                                   w["window_dilation"]),)  # fmt: skip


LOWERINGS["select_and_gather_add"] = select_and_gather_add_lowering


def select_and_scatter_add_lowering(eqn: Eqn, source: Any, operand: Any) -> Lowered:
    """lax's select_and_scatter_add; with a dilation (which lax's does not take), the transpose
    (``jax.linear_transpose``) of lax's select_and_gather_add written out tap by tap in lax ops."""
    import jax
    from jax._src.lax.windowed_reductions import _select_and_scatter_add

    w = _window(eqn)
    if all(b == 1 for b in w["base_dilation"]) and all(d == 1 for d in w["window_dilation"]):
        return (_select_and_scatter_add(source, operand, _select_prim(eqn), w["window_dimensions"],
                                        w["window_strides"], w["padding"]),)  # fmt: skip
    gather = functools.partial(_gather_by_taps, operand=operand, select=eqn.params["select_prim"], w=w)
    (out,) = jax.linear_transpose(gather, operand)(source)
    return (out,)


LOWERINGS["select_and_scatter_add"] = select_and_scatter_add_lowering


def _gather_by_taps(tangents: Any, *, operand: Any, select: str, w: dict[str, Any]) -> Any:
    """select_and_gather_add as a sum over the window's taps of strided slices (linear in ``tangents``)."""
    import itertools

    import jax.numpy as jnp
    from jax import lax

    big = jnp.inf if select == "ge" else -jnp.inf
    pads = [(lo, hi, b - 1) for (lo, hi), b in zip(w["padding"], w["base_dilation"], strict=True)]
    px = lax.pad(operand, jnp.asarray(-big, operand.dtype), pads)
    pt = lax.pad(tangents, jnp.asarray(0, tangents.dtype), pads)
    geometry = zip(px.shape, w["window_dimensions"], w["window_dilation"], w["window_strides"], strict=True)
    out_shape = [max(0, (n - (1 + (k - 1) * d)) // s + 1) for n, k, d, s in geometry]
    best = val = None
    for offsets in itertools.product(*(range(k) for k in w["window_dimensions"])):
        start = [o * d for o, d in zip(offsets, w["window_dilation"], strict=True)]
        limit = [st + (n - 1) * s + 1 for st, n, s in zip(start, out_shape, w["window_strides"], strict=True)]
        cx = lax.slice(px, start, limit, w["window_strides"])
        ct = lax.slice(pt, start, limit, w["window_strides"])
        if best is None or val is None:
            best, val = cx, ct
            continue
        keep = (best >= cx) if select == "ge" else (best <= cx)
        best, val = lax.select(keep, best, cx), lax.select(keep, val, ct)
    return jnp.zeros(out_shape, tangents.dtype) if val is None else val
