"""Lowerings of the structural ops (``runtime.core.ops`` family ``structural``).

Each rule is a named function followed by its registration in ``LOWERINGS``; the conventions are
in ``passes.lower_jax``.
"""

from __future__ import annotations

from typing import Any

from passes.lower_jax._common import LOWERINGS, Lowered, _param, _storage
from runtime.core import dtypes as dt
from runtime.core.graph import Eqn
from runtime.core.kernels import scalar_array

# -- structural -------------------------------------------------------------------------------


def reshape_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.reshape."""
    from jax import lax

    return (lax.reshape(x, tuple(int(n) for n in eqn.params["new_sizes"])),)


LOWERINGS["reshape"] = reshape_lowering


def transpose_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.transpose."""
    from jax import lax

    return (lax.transpose(x, tuple(int(p) for p in eqn.params["permutation"])),)


LOWERINGS["transpose"] = transpose_lowering


def broadcast_in_dim_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.broadcast_in_dim."""
    from jax import lax

    shape = tuple(int(n) for n in eqn.params["shape"])
    dims = tuple(int(d) for d in eqn.params["broadcast_dimensions"])
    return (lax.broadcast_in_dim(x, shape, dims),)


LOWERINGS["broadcast_in_dim"] = broadcast_in_dim_lowering


def slice_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.slice."""
    from jax import lax

    strides = _param(eqn, "strides")
    return (
        lax.slice(
            x,
            tuple(int(s) for s in eqn.params["start_indices"]),
            tuple(int(s) for s in eqn.params["limit_indices"]),
            None if strides is None else tuple(int(s) for s in strides),
        ),
    )


LOWERINGS["slice"] = slice_lowering


def pad_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.pad, the padding value converted to the operand dtype as castwise's convert does."""
    import jax.numpy as jnp
    from jax import lax

    value = jnp.asarray(scalar_array(_param(eqn, "padding_value"), eqn.inputs[0].dtype))
    config = tuple((int(lo), int(hi), int(interior)) for lo, hi, interior in eqn.params["padding_config"])
    return (lax.pad(x, value, config),)


LOWERINGS["pad"] = pad_lowering


def reverse_lowering(eqn: Eqn, x: Any) -> Lowered:
    """lax.rev."""
    from jax import lax

    return (lax.rev(x, tuple(int(d) for d in eqn.params["dimensions"])),)


LOWERINGS["reverse"] = reverse_lowering


def iota_lowering(eqn: Eqn) -> Lowered:
    """lax.broadcasted_iota."""
    from jax import lax

    shape = tuple(int(n) for n in eqn.params["shape"])
    return (lax.broadcasted_iota(_storage(eqn.params["dtype"]), shape, int(eqn.params["dimension"])),)


LOWERINGS["iota"] = iota_lowering


def full_lowering(eqn: Eqn) -> Lowered:
    """lax.full, the fill value converted to the dtype as castwise's convert does (ints wrap)."""
    import jax.numpy as jnp
    from jax import lax

    target = dt.dtype(eqn.params["dtype"])
    fill = jnp.asarray(scalar_array(eqn.params["fill_value"], target))
    return (lax.full(tuple(int(n) for n in eqn.params["shape"]), fill, target.storage),)


LOWERINGS["full"] = full_lowering


def sort_lowering(eqn: Eqn, *operands: Any) -> Lowered:
    """lax.sort of every operand by the first ``num_keys``."""
    from jax import lax

    out = lax.sort(
        tuple(operands),
        dimension=int(eqn.params["dimension"]),
        is_stable=bool(_param(eqn, "is_stable")),
        num_keys=int(_param(eqn, "num_keys")),
    )
    return tuple(out)


LOWERINGS["sort"] = sort_lowering


def top_k_lowering(eqn: Eqn, operand: Any) -> Lowered:
    """lax.top_k along the last axis: (values, int32 indices)."""
    from jax import lax

    values, indices = lax.top_k(operand, int(eqn.params["k"]))
    return (values, indices)


LOWERINGS["top_k"] = top_k_lowering


def split_lowering(eqn: Eqn, operand: Any) -> Lowered:
    """lax.split into ``sizes`` along ``axis``."""
    from jax import lax

    return tuple(lax.split(operand, tuple(int(n) for n in eqn.params["sizes"]), axis=int(eqn.params["axis"])))


LOWERINGS["split"] = split_lowering


def optimization_barrier_lowering(eqn: Eqn, *xs: Any) -> Lowered:
    """lax.optimization_barrier of every operand together."""
    from jax import lax

    return tuple(lax.optimization_barrier(tuple(xs)))


LOWERINGS["optimization_barrier"] = optimization_barrier_lowering
