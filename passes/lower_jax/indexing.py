"""Lowerings of the indexing ops (``runtime.core.ops`` families ``gather``, ``scatter``, ``dynamic_slice``,
``dynamic_update_slice``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from passes.lower_jax._common import LOWERINGS, Lowered, _const, _param, x64_enabled
from runtime.core import shapes
from runtime.core.graph import Eqn
from runtime.core.kernels import scalar_array

# -- indexing ---------------------------------------------------------------------------------


def _mode(eqn: Eqn, default: shapes.Mode) -> Any:
    from jax import lax

    name = shapes.parse_mode(_param(eqn, "mode"), default)
    return {
        "clip": lax.GatherScatterMode.CLIP,
        "fill_or_drop": lax.GatherScatterMode.FILL_OR_DROP,
        "promise_in_bounds": lax.GatherScatterMode.PROMISE_IN_BOUNDS,
    }[name]


def gather_lowering(eqn: Eqn, operand: Any, start_indices: Any) -> Lowered:
    """lax.gather with the same dimension numbers, an explicit mode, and the fill value in the operand dtype."""
    from jax import lax

    dn = shapes.gather_dimension_numbers(eqn.params["dimension_numbers"])
    fill = _param(eqn, "fill_value")
    if fill is not None:
        fill = scalar_array(fill, eqn.inputs[0].dtype).item()
    out = lax.gather(
        operand,
        start_indices,
        lax.GatherDimensionNumbers(
            offset_dims=dn.offset_dims,
            collapsed_slice_dims=dn.collapsed_slice_dims,
            start_index_map=dn.start_index_map,
            operand_batching_dims=dn.operand_batching_dims,
            start_indices_batching_dims=dn.start_indices_batching_dims,
        ),
        tuple(int(s) for s in eqn.params["slice_sizes"]),
        mode=_mode(eqn, shapes.GATHER_DEFAULT_MODE),
        fill_value=fill,
    )
    return (out,)


LOWERINGS["gather"] = gather_lowering


def _scatter_args(eqn: Eqn) -> dict[str, Any]:
    from jax import lax

    dn = shapes.scatter_dimension_numbers(eqn.params["dimension_numbers"])
    return {
        "dimension_numbers": lax.ScatterDimensionNumbers(
            update_window_dims=dn.update_window_dims,
            inserted_window_dims=dn.inserted_window_dims,
            scatter_dims_to_operand_dims=dn.scatter_dims_to_operand_dims,
            operand_batching_dims=dn.operand_batching_dims,
            scatter_indices_batching_dims=dn.scatter_indices_batching_dims,
        ),
        "indices_are_sorted": bool(_param(eqn, "indices_are_sorted")),
        "unique_indices": bool(_param(eqn, "unique_indices")),
        "mode": _mode(eqn, shapes.SCATTER_DEFAULT_MODE),
    }


def scatter_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter"] = scatter_lowering


def scatter_add_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter_add with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter_add(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter_add"] = scatter_add_lowering


def scatter_mul_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter_mul with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter_mul(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter_mul"] = scatter_mul_lowering


def scatter_min_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter_min with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter_min(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter_min"] = scatter_min_lowering


def scatter_max_lowering(eqn: Eqn, operand: Any, scatter_indices: Any, updates: Any) -> Lowered:
    """lax.scatter_max with the same dimension numbers and an explicit mode."""
    from jax import lax

    return (lax.scatter_max(operand, scatter_indices, updates, **_scatter_args(eqn)),)


LOWERINGS["scatter_max"] = scatter_max_lowering


def _start_indices(starts: Sequence[Any]) -> list[Any]:
    """Start indices of one integer dtype (lax requires it; castwise allows a mix).

    A mix goes to int64 when x64 is on (int32 otherwise); uint64 values beyond
    the signed range saturate first, so an out-of-range start stays out of range
    (and clamps to the end) instead of wrapping negative.
    """
    from jax import lax

    kinds = {np.dtype(s.dtype) for s in starts}
    if len(kinds) <= 1:
        return list(starts)
    target, limit = (np.dtype(np.int64), 2**63 - 1) if x64_enabled() else (np.dtype(np.int32), 2**31 - 1)
    out = []
    for s in starts:
        d = np.dtype(s.dtype)
        if d.kind == "u" and int(np.iinfo(d).max) > limit:
            s = lax.min(s, _const(limit, s))
        out.append(lax.convert_element_type(s, target))
    return out


def dynamic_slice_lowering(eqn: Eqn, operand: Any, *start_indices: Any) -> Lowered:
    """lax.dynamic_slice with starts clamped into range (no negative wrap-around)."""
    from jax import lax

    sizes = tuple(int(s) for s in eqn.params["slice_sizes"])
    starts = _start_indices(start_indices)
    return (lax.dynamic_slice(operand, starts, sizes, allow_negative_indices=False),)


LOWERINGS["dynamic_slice"] = dynamic_slice_lowering


def dynamic_update_slice_lowering(eqn: Eqn, operand: Any, update: Any, *start_indices: Any) -> Lowered:
    """lax.dynamic_update_slice with starts clamped into range (no negative wrap-around)."""
    from jax import lax

    starts = _start_indices(start_indices)
    return (lax.dynamic_update_slice(operand, update, starts, allow_negative_indices=False),)


LOWERINGS["dynamic_update_slice"] = dynamic_update_slice_lowering
